"""Shared fixtures of the messageframe Python test suite.

The suite runs against the installed package (scripts/test builds it into
target/py first). Test data comes from the repository: the C++ interop
frames of crates/messageframe/tests/data/interop and the fuzz corpus of
fuzz/. A missing directory is a failure, never a skip.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

import messageframe as mf

ROOT = Path(__file__).resolve().parents[3]
INTEROP = ROOT / "crates" / "messageframe" / "tests" / "data" / "interop"
FUZZ = ROOT / "fuzz"

# Property tests: a fixed, bounded profile (the same examples on every run,
# so CI is repeatable and its time known); MF_HYPOTHESIS_PROFILE=long
# explores more.
settings.register_profile(
    "ci",
    max_examples=150,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    database=None,
)
settings.register_profile("long", max_examples=5000, deadline=None)
settings.load_profile(os.environ.get("MF_HYPOTHESIS_PROFILE", "ci"))


def interop_cases() -> list[tuple[str, bytes, dict[str, Any]]]:
    """(name, frame bytes, JSON description) of every C++ interop frame."""
    cases = []
    for desc in sorted(INTEROP.glob("*.json")):
        meta = json.loads(desc.read_text())
        data = (INTEROP / meta["file"]).read_bytes()
        cases.append((meta["name"], data, meta))
    if not cases:
        raise FileNotFoundError(f"no interop frames in {INTEROP}")
    return cases


def json_value(p: dict[str, Any]) -> Any:
    """A parameter's value as the JSON describes it, in Python terms."""
    v = p["value"]
    if p["type"] == "double":
        return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}.get(v, v) if isinstance(v, str) else float(v)
    return v


def same_value(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    return type(a) is type(b) and a == b


def sha256(data: Any) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def basic_frame() -> mf.Frame:
    f = mf.Frame(message_id=1001, message_type=1, source=50, target=99, timestamp=1_700_000_000_000, counter=1)
    f.add("sensor_alpha", "voltage", 12.6)
    f.add("device_core", "fw_version", "v3.2.1")
    return f
