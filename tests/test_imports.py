"""No import cycle in gradcomp, not even one hidden by an import inside a function, and every
module imports on its own in a fresh interpreter (no module relies on another having been
imported first)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

SRC = REPO / "src"


def modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module of src/gradcomp."""
    out = {}
    for path in sorted((SRC / "gradcomp").rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def import_graph() -> dict[str, set[str]]:
    """Module -> the gradcomp modules it imports anywhere in its body (also inside functions)."""
    mods = modules()
    graph = {}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name in mods}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([node.module] if node.module else []))
                for a in node.names:
                    full = f"{base}.{a.name}"
                    deps.add(full if full in mods else base)
        graph[name] = {d for d in deps if d in mods and d != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a path that returns to its start, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(u):
        state[u] = 1
        stack.append(u)
        for v in sorted(graph[u]):
            if state.get(v) == 1:
                return stack[stack.index(v) :] + [v]
            if v not in state and (found := visit(v)):
                return found
        stack.pop()
        state[u] = 2
        return None

    for u in sorted(graph):
        if u not in state and (found := visit(u)):
            return found
    return None


def test_cycle_finder_finds_a_planted_cycle() -> None:
    """The checker itself (planted bug: a finder that never reports anything)."""
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle() -> None:
    """The study's pieces import compression.entries at module level, the schema check imports
    no compressor library, and nothing imports in a cycle (planted bug: specs importing
    gradcomp.config inside a function again)."""
    graph = import_graph()
    assert "gradcomp.compression.entries" in graph["gradcomp.study_pieces"]
    assert not [m for m in graph["gradcomp.config"] if m.startswith("gradcomp.compression")]
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph))


_ISOLATED = """
import importlib, sys, traceback
failed = []
for name in sys.argv[1:]:
    for loaded in [m for m in sys.modules if m == "gradcomp" or m.startswith("gradcomp.")]:
        del sys.modules[loaded]  # third-party modules stay loaded: only gradcomp's order counts
    try:
        importlib.import_module(name)
    except Exception:
        failed.append(name + ": " + traceback.format_exc(limit=2))
print("\\n".join(failed))
sys.exit(1 if failed else 0)
"""


@pytest.mark.slow
def test_every_module_imports_in_isolation() -> None:
    """Each gradcomp module imports with no other gradcomp module loaded before it, in one
    fresh interpreter (planted bug it catches: a module using a name that only an earlier
    import of another gradcomp module defined)."""
    proc = subprocess.run(
        [sys.executable, "-c", _ISOLATED, *sorted(modules())],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
