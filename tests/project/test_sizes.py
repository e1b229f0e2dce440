"""The library stays readable in pieces: no module of src/gradcomp over MAX_MODULE_LINES lines
and no function over MAX_FUNCTION_LINES (issue 55's limits), measured with ast."""

from __future__ import annotations

import ast

from conftest import REPO

MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 80


def oversized(source: str, name: str) -> list[str]:
    """``name`` itself when ``source`` is over the module limit, and each of its functions
    (methods and nested ones too) over the function limit, as ``name:function (lines)``."""
    n_lines = source.count("\n")
    out = [f"{name} ({n_lines} lines)"] if n_lines > MAX_MODULE_LINES else []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines = node.end_lineno - node.lineno + 1  # type: ignore[operator]
            if lines > MAX_FUNCTION_LINES:
                out.append(f"{name}:{node.name} ({lines} lines)")
    return out


def test_the_checker_finds_a_planted_long_function_and_module() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    source = f"def long():\n{body}\n\n\ndef short():\n    return 1\n"
    assert oversized(source, "m") == [f"m:long ({MAX_FUNCTION_LINES + 1} lines)"]
    assert oversized("x = 1\n" * (MAX_MODULE_LINES + 1), "m") == [
        f"m ({MAX_MODULE_LINES + 1} lines)"
    ]
    assert (
        oversized(
            source.replace(f"    x{MAX_FUNCTION_LINES - 1} = {MAX_FUNCTION_LINES - 1}\n", ""), "m"
        )
        == []
    )


def test_no_module_or_function_of_the_library_is_oversized() -> None:
    found = [
        problem
        for path in sorted((REPO / "src/gradcomp").rglob("*.py"))
        for problem in oversized(path.read_text(), str(path.relative_to(REPO)))
    ]
    assert found == []
