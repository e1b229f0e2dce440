"""No import cycle in gradcomp, not even one hidden by an import inside a function, and every
module imports on its own in a fresh interpreter (no module relies on another having been
imported first)."""

from __future__ import annotations

import ast
import functools
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


@pytest.mark.slow
def test_no_import_cycle() -> None:
    """The study's lossy section imports compression.entries at module level, the schema check
    takes the kinds from the compression package and not the other way, and nothing imports
    in a cycle (planted bug: specs importing gradcomp.study.config inside a function again)."""
    graph = import_graph()
    assert "gradcomp.compression.entries" in graph["gradcomp.study.lossy"]
    assert not [m for m in graph if m.startswith("gradcomp.compression") and
                any(d.startswith("gradcomp.study") for d in graph[m])]  # fmt: skip
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


PARSE = """
import sys, yaml
sys.path.insert(0, {src!r})
from gradcomp.compression.specs import variant_label  # what the Snakefile imports
from gradcomp.study.frozen import plain
from gradcomp.study import load_study
config = yaml.safe_load(open({config!r}))
config["cifar10"] = "download"
study = load_study(config, {schema!r})
assert study.lossless.l5_coders, "L5's coders and colours are read at parse time"
print(sorted(m for m in ("matplotlib", "seaborn") if m in sys.modules))
"""


@pytest.mark.slow
def test_parsing_the_workflow_loads_no_plotting_library() -> None:
    """The Snakefile's parse (its imports and the study built from the default config, L5's
    coder colours included) loads neither matplotlib nor seaborn: the layers run one way, and
    every ``snakemake`` call, a dry run too, stays cheap (planted bug: the coder colours read
    from gradcomp.plotting.paper_l_panels, which imports matplotlib)."""
    code = PARSE.format(src=str(SRC), config=str(REPO / "config/config.yaml"),
                        schema=str(REPO / "workflow/schemas/config.schema.yaml"))  # fmt: skip
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[]"


#: Layers that run one way: (importer prefix, imported prefix it must not reach, why).
LAYERS = [
    ("gradcomp.compression", "gradcomp.lossy", "compressors know no federated training"),
    ("gradcomp.compression", "gradcomp.wire", "the kinds stand below the byte format: it reads "
     "their codes and payloads, they write their fields with gradcomp.coding.fields"),
    ("gradcomp.coding", "gradcomp.compression", "the fields and codes sit below the kinds"),
    ("gradcomp.coding", "gradcomp.lossless", "coders know no study"),
    ("gradcomp.distributed", "gradcomp.lossy", "the DDP hook builds its compressors from the "
     "compression package, not from the federated training loop"),
    ("gradcomp.study", "gradcomp.plotting.paper_l_panels", "the config's parse draws nothing"),
]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(("importer", "banned", "why"), LAYERS, ids=[x[0] for x in LAYERS])
def test_layers_import_one_way(importer: str, banned: str, why: str) -> None:
    """No module under ``importer`` imports one under ``banned``, directly or through others
    (planted bug: the DDP hook importing gradcomp.lossy.uplink for compressor_factory)."""
    graph = import_graph()
    for name in (n for n in graph if n == importer or n.startswith(importer)):
        seen, todo = set(), [name]
        while todo:
            for dep in graph[todo.pop()] - seen:
                seen.add(dep)
                todo.append(dep)
        reached = sorted(d for d in seen if d == banned or d.startswith(banned + "."))
        assert not reached, f"{name} reaches {reached}: {why}"


def imports_outside(graph: dict[str, set[str]], package: str) -> list[str]:
    """``module -> dependency`` for every import of a module of ``package`` that reaches out of
    it."""
    inside = [n for n in graph if n == package or n.startswith(package + ".")]
    return sorted(
        f"{n} -> {d}" for n in inside for d in graph[n]
        if not (d == package or d.startswith(package + "."))
    )  # fmt: skip


def test_outside_finder_finds_a_planted_import() -> None:
    """The checker itself (planted bug: statistics.verdicts importing gradcomp.lossy again)."""
    graph = {"gradcomp.statistics": set(), "gradcomp.statistics.paired": set(),
             "gradcomp.statistics.verdicts": {"gradcomp.statistics.paired",
                                              "gradcomp.lossy.paper_y_tables"},
             "gradcomp.lossy.paper_y_tables": {"gradcomp.statistics.paired"}}  # fmt: skip
    assert imports_outside(graph, "gradcomp.statistics") == [
        "gradcomp.statistics.verdicts -> gradcomp.lossy.paper_y_tables"
    ]
    del graph["gradcomp.statistics.verdicts"]
    assert imports_outside(graph, "gradcomp.statistics") == []


@pytest.mark.slow
def test_statistics_knows_nothing_of_training() -> None:
    """gradcomp.statistics (the verdict procedure, matched bits, paired and nested designs,
    BD-rate, the simulation) imports no gradcomp module outside itself: numpy, scipy and
    pandas only; the study's labels, runs and tables come in as data."""
    graph = import_graph()
    assert "gradcomp.statistics.verdicts" in graph
    assert imports_outside(graph, "gradcomp.statistics") == []


def package_of(module: str) -> str:
    """The package a module counts in: its first component under gradcomp (a top-level module
    such as gradcomp.data is a package of its own)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Package -> the other packages its modules import (from a module import graph)."""
    out: dict[str, set[str]] = {}
    for module, deps in graph.items():
        mine = package_of(module)
        out.setdefault(mine, set()).update(package_of(d) for d in deps)
    return {p: deps - {p} for p, deps in out.items()}


#: The library's main packages, lowest floor first: a package imports only packages on floors
#: below its own (statistics knows no training, so it sits with the fits at the bottom; the
#: top-level helper modules, gradcomp.artifacts and the like, are left out).
FLOORS = [
    {"distributions", "statistics"},
    {"quantization"},
    {"coding"},
    {"compression"},
    {"wire"},
    {"distributed", "lossy", "lossless"},
    {"plotting"},
    {"study"},
]


def floor_breaks(packages: dict[str, set[str]]) -> list[str]:
    """Edges of ``packages`` that do not go down FLOORS, as ``"a -> b"``."""
    floor = {p: i for i, tier in enumerate(FLOORS) for p in tier}
    return sorted(f"{a} -> {b}" for a, deps in packages.items() for b in deps
                  if a in floor and b in floor and floor[b] >= floor[a])  # fmt: skip


@functools.cache
def src_packages() -> dict[str, frozenset[str]]:
    """The package graph of gradcomp (built once: the ast walk takes about a second)."""
    return {p: frozenset(deps) for p, deps in package_graph(import_graph()).items()}


def test_package_checks_find_planted_breaks() -> None:
    """The package checks themselves (planted bugs: a package graph that drops the edges
    between packages, a floor check that never reports an upward edge)."""
    modules_graph = {
        "gradcomp.coding.a": {"gradcomp.quantization.b"},
        "gradcomp.quantization.b": {"gradcomp.coding.c", "gradcomp.data"},
        "gradcomp.coding.c": set(),
        "gradcomp.data": set(),
    }
    packages = package_graph(modules_graph)
    assert packages == {"coding": {"quantization"}, "quantization": {"coding", "data"},
                        "data": set()}  # fmt: skip
    assert find_cycle(packages) == ["coding", "quantization", "coding"]
    assert floor_breaks(packages) == ["quantization -> coding"]
    assert floor_breaks({"study": {"coding"}, "coding": {"distributions"}}) == []


def test_no_package_cycle() -> None:
    """No cycle between gradcomp's packages, not only between its modules (planted bug: the
    entropy-constrained design back in quantization, importing coding.huffman_lengths, while
    coding imports quantization.grids; main had it)."""
    packages = {a: set(deps) for a, deps in src_packages().items()}
    assert find_cycle(packages) is None, " -> ".join(find_cycle(packages) or [])


def test_packages_import_down_their_floors() -> None:
    """Each main package imports only packages on floors below its own (planted bug:
    gradcomp.coding importing gradcomp.compression)."""
    packages = {a: set(deps) for a, deps in src_packages().items()}
    assert {"distributions", "quantization", "coding", "compression", "study"} <= set(packages)
    assert floor_breaks(packages) == []
