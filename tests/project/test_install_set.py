"""The README's commands work after its first command alone (``pip install -e ".[workflow]"``),
with the versions of ``constraints.txt``, and CI runs the README's test command.

The distributions that the first command brings in are the closure of ``pyproject.toml``'s
``[project] dependencies`` and its ``workflow`` extra under their own ``Requires-Dist``
(environment markers evaluated, extras only where a requirement names them), read with
``importlib.metadata`` from the installed environment. The checks run in subprocesses that
see site-packages as that install would: a ``sitecustomize`` on ``PYTHONPATH`` replaces the
path finder by one blind to the top-level modules that other distributions installed there
(``find_spec`` answers None), and hides them from ``pkgutil.iter_modules`` (Snakemake's plugin
discovery), in every Python process those subprocesses start. Every import statement of the
library and the workflow (lazy and ``try``-guarded ones too: that install promises them) must
then work, and a
tiny workflow must run and render its ``--report``. The commands that install an extra
themselves (the test and SLURM commands) are not covered. That the library needs none of the
workflow extra: tests/project/test_light_install.py.
"""

from __future__ import annotations

import ast
import importlib.metadata as md
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[2]

SITECUSTOMIZE = r'''
import json, os, pkgutil, site, sys
from importlib.machinery import PathFinder

_ALLOWED = frozenset(json.loads(open(os.environ["GRADCOMP_CORE_MODULES"]).read()))
_SITE = tuple(os.path.realpath(p) + os.sep for p in site.getsitepackages())


def _installed(location):
    return location is not None and (os.path.realpath(location) + os.sep).startswith(_SITE)


class _OnlyCoreInstall(PathFinder):
    """The path finder, blind to top-level modules that other distributions installed in
    site-packages (find_spec answers None, as for a module that is not there)."""

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        spec = super().find_spec(name, path, target)
        if spec is None or path is not None or name in _ALLOWED:
            return spec
        if _installed(spec.origin) or any(map(_installed, spec.submodule_search_locations or [])):
            return None
        return spec


_iter_modules = pkgutil.iter_modules


def _iter_core_modules(path=None, prefix=""):
    for info in _iter_modules(path, prefix):
        where = getattr(info.module_finder, "path", None)
        if path is not None or info.name in _ALLOWED or not _installed(where):
            yield info


sys.meta_path[sys.meta_path.index(PathFinder)] = _OnlyCoreInstall
pkgutil.iter_modules = _iter_core_modules
'''


#: the extra that the README's first command installs
EXTRA = "workflow"


def core_requirements() -> list[Requirement]:
    """``[project] dependencies`` of this checkout's pyproject.toml and its :data:`EXTRA` (on
    Python 3.10, without tomllib: the installed gradcomp's requirements outside any other
    extra, their ``extra`` marker dropped)."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        reqs = [Requirement(r) for r in md.requires("gradcomp") or []]
        out = []
        for r in reqs:
            if r.marker and "extra" in str(r.marker):
                if not r.marker.evaluate({"extra": EXTRA}):
                    continue
                r.marker = None
            out.append(r)
        return out
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extra = project["optional-dependencies"][EXTRA]
    return [Requirement(r) for r in [*project["dependencies"], *extra]]


def core_closure() -> set[str]:
    """Canonical names of the distributions ``pip install -e ".[workflow]"`` installs
    (gradcomp's own requirements and, recursively, theirs)."""
    seen: set[tuple[str, frozenset[str]]] = set()
    todo = [(r, frozenset()) for r in core_requirements() if not r.marker or r.marker.evaluate()]
    names: set[str] = set()
    while todo:
        req, _ = todo.pop()
        name, extras = canonicalize_name(req.name), frozenset(req.extras)
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        names.add(name)
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            pytest.fail(f"{req} is a core requirement but is not installed")
        for line in dist.requires or []:
            sub = Requirement(line)
            if sub.marker is None or any(
                sub.marker.evaluate({"extra": e}) for e in (*sorted(extras), "")
            ):
                todo.append((sub, extras))
    return names


def core_modules() -> list[str]:
    """Top-level importable names that the closure's distributions provide."""
    closure = core_closure()
    return sorted(
        module
        for module, dists in md.packages_distributions().items()
        if any(canonicalize_name(d) in closure for d in dists)
    ) + ["gradcomp"]


@pytest.fixture(scope="module")
def core_env(tmp_path_factory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("core_install")
    (root / "site").mkdir()
    (root / "site" / "sitecustomize.py").write_text(SITECUSTOMIZE)
    (root / "modules.json").write_text(json.dumps(core_modules()))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(root / "site"), str(REPO / "src")])
    env["GRADCOMP_CORE_MODULES"] = str(root / "modules.json")
    return env


def run_python(env, *args, cwd=None) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return proc


def import_statements(path: Path) -> list[str]:
    """Every absolute import statement of a Python file, at any depth (lazy imports too)."""
    tree = ast.parse(path.read_text())
    return [
        ast.unparse(node)
        for node in ast.walk(tree)
        if isinstance(node, ast.Import) or (isinstance(node, ast.ImportFrom) and node.level == 0)
    ]


def snakemake_import_statements(path: Path) -> list[str]:
    """Import lines of a Snakefile or rule file (Snakemake syntax, not plain Python)."""
    pattern = re.compile(r"^\s*((?:from\s+[\w.]+\s+)?import\s+[\w., ]+)", re.M)
    return [m.group(1).strip().rstrip(",") for m in pattern.finditer(path.read_text())]


@pytest.mark.slow
def test_blocker_hides_modules_outside_the_core_install(core_env):
    # the test extra's pytest and hypothesis are installed here, not by the README's first command
    proc = subprocess.run(
        [sys.executable, "-c", "import hypothesis"], env=core_env, capture_output=True, text=True
    )
    assert proc.returncode != 0 and "No module named 'hypothesis'" in proc.stderr
    run_python(core_env, "-c", "import numpy, snakemake, gradcomp")


@pytest.mark.slow
def test_workflow_and_library_imports_need_only_the_core_install(core_env):
    statements: list[str] = []
    for path in [*sorted((REPO / "workflow" / "scripts").glob("*.py"))]:
        statements += import_statements(path)
    for path in sorted((REPO / "src" / "gradcomp").rglob("*.py")):
        statements += import_statements(path)
    for path in [REPO / "Snakefile", *sorted((REPO / "workflow" / "rules").glob("*.smk"))]:
        statements += snakemake_import_statements(path)
    statements = sorted(set(statements))
    assert any("torch" in s for s in statements) and any("snakemake" in s for s in statements)
    code = "\n".join(f"exec({s!r}, {{}})" for s in statements)
    run_python(core_env, "-c", code)


@pytest.mark.slow
def test_snakemake_run_and_report_need_only_the_core_install(core_env, tmp_path):
    (tmp_path / "caption.rst").write_text("A number.\n")
    (tmp_path / "Snakefile").write_text(
        textwrap.dedent(
            """
            rule all:
                input: "out/table.tsv"

            rule table:
                output: report("out/table.tsv", caption="caption.rst", category="T")
                run:
                    with open(output[0], "w") as fh:
                        fh.write("x\\n1\\n")
            """
        )
    )
    snakemake = ["-m", "snakemake", "--cores", "1", "--quiet"]
    run_python(core_env, *snakemake, cwd=tmp_path)
    run_python(core_env, *snakemake, "--report", "report.html", cwd=tmp_path)
    assert "table.tsv" in (tmp_path / "report.html").read_text()


def test_conda_env_lists_the_core_requirements():
    env = yaml.safe_load((REPO / "envs" / "gradcomp.yaml").read_text())
    pip = [d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d]
    assert len(pip) == 1
    for line in pip[0]:
        assert not line.startswith(("-e", "--editable", ".", "/", "file:")), line
        assert "/" not in line and "\\" not in line, f"{line}: a path install"
    assert sorted(str(Requirement(r)) for r in pip[0]) == sorted(
        str(r) for r in core_requirements()
    )


def readme_commands() -> list[str]:
    """The README's shell commands (its ``bash`` blocks, continuation lines joined)."""
    blocks = re.findall(r"```bash\n(.*?)```", (REPO / "README.md").read_text(), re.S)
    return [c.strip() for b in blocks for c in b.replace("\\\n", " ").splitlines() if c.strip()]


def test_readme_installs_the_workflow_extra_with_the_constraints():
    """Every install of the README and of .ci/run takes constraints.txt's versions, the first
    command installs the workflow extra, and CI's last line is the README's test command (its
    install is CI's one install, with the SLURM extra)."""
    commands = readme_commands()
    assert f'pip install -c constraints.txt -e ".[{EXTRA}]"' in commands[0]
    ci = (REPO / ".ci/run").read_text()
    installs = [c for c in [*commands, *ci.splitlines()] if "pip install" in c]
    assert all("-c constraints.txt" in c for c in installs), installs
    assert sum("pip install" in line for line in ci.splitlines()) == 1
    test = [c for c in commands if "-n 2 --dist loadfile" in c]
    assert len(test) == 1
    assert ci.rstrip().splitlines()[-1] == test[0].split(" && ")[-1]


def test_constraints_pin_the_installed_closure():
    """constraints.txt pins every distribution of the README's first install, at the version
    installed here (scripts/freeze_constraints.py writes it from the venv the study ran in)."""
    pins = {}
    for line in (REPO / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[canonicalize_name(name)] = version
    for name in sorted(core_closure()):
        assert name in pins, f"{name} is installed by the README but not in constraints.txt"
        assert pins[name] == md.version(name), f"{name}: {md.version(name)} installed"
