"""The package ships its ``py.typed`` marker, so that a user's type checker reads its
annotations. mypy itself (pyproject's [tool.mypy], check_untyped_defs on) is a gate of
``.ci/run`` before the tests, not a test: from an empty cache it took most of the fast tier."""

from __future__ import annotations

from conftest import REPO


def test_the_package_is_marked_typed() -> None:
    assert (REPO / "src/gradcomp/py.typed").is_file()
    assert 'gradcomp = ["py.typed"]' in (REPO / "pyproject.toml").read_text()
