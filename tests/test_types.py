"""The library's annotations hold: mypy (pyproject's [tool.mypy]) finds no error in
src/gradcomp, and the package ships its ``py.typed`` marker so that a user's type checker
reads them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

pytest.importorskip("mypy", reason="mypy is in the test extra: pip install -e '.[test]'")


def test_mypy_finds_no_error_in_the_library(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache")],
        cwd=REPO, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "Success: no issues found" in proc.stdout


def test_the_package_is_marked_typed() -> None:
    assert (REPO / "src/gradcomp/py.typed").is_file()
    assert 'gradcomp = ["py.typed"]' in (REPO / "pyproject.toml").read_text()
