"""`python -m messageframe.bench` runs end to end (quick mode): every backend
reads the same values and writes the same bytes (checked before timing),
and every target of the issue is judged. Its figures are not judged here:
speed is measured by the benchmark, not by tests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def test_the_benchmark_runs_every_backend_and_judges_every_target(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    run = subprocess.run([sys.executable, "-m", "messageframe.bench", "--quick", "--json", str(out)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    results = json.loads(out.read_text())
    assert results["missing"] == [], "install msgpack, ormsgpack and msgspec (scripts/python-requirements.txt)"
    names = [s["name"] for s in results["scenarios"]]
    assert names == ["small", "medium", "large", "telemetry", "attachment"]
    for s in results["scenarios"]:
        assert set(s["decode_us"]) == {"messageframe", "msgpack", "msgpack + dict", "ormsgpack", "msgspec"}
        assert set(s["encode_us"]) == {"messageframe", "msgpack", "msgpack packb only", "ormsgpack", "msgspec"}
        assert all(v > 0 for v in s["decode_us"].values())
    assert len(results["targets"]) == 13
    assert "decode + lookup + attachment length" in run.stdout and "targets" in run.stdout
