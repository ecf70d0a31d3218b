"""The type stubs (_messageframe.pyi) match the module: mypy's stubtest
compares every name, signature and class of the stubs with the runtime."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_stubs_match_the_extension_module(tmp_path: Path) -> None:
    config = tmp_path / "mypy.ini"
    # The benchmark module imports libraries that ship no stubs.
    config.write_text("[mypy]\nignore_missing_imports = True\n")
    run = subprocess.run([sys.executable, "-m", "mypy.stubtest", "--mypy-config-file", str(config), "messageframe"],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_package_is_typed() -> None:
    import messageframe

    pkg = Path(messageframe.__file__).parent
    assert (pkg / "py.typed").is_file() and (pkg / "_messageframe.pyi").is_file()
