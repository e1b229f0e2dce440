"""Every docstring example of the library runs and prints what it says (the examples are
the library's reference for a reader; a wrong one is a wrong doc)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import gradcomp

MODULES = sorted(m.name for m in pkgutil.walk_packages(gradcomp.__path__, prefix="gradcomp."))


def test_the_library_has_examples() -> None:
    found = sum(
        len([t for t in doctest.DocTestFinder().find(importlib.import_module(m)) if t.examples])
        for m in MODULES
    )
    assert found >= 20, found


@pytest.mark.slow
@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(
        module, optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS, report=True
    )
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed"
