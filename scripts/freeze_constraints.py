"""Write constraints.txt: the exact versions, in this environment, of every distribution that
gradcomp's requirements and extras bring in (``pip freeze`` filtered to the project's
closure). Run it in the venv the study ran in, after ``pip install -e ".[workflow,test,slurm]"``::

    .venv/bin/python scripts/freeze_constraints.py > constraints.txt
"""

from __future__ import annotations

import importlib.metadata as md
import platform
import sys
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

EXTRAS = ("workflow", "test", "slurm", "bench")


def closure(requirements: list[str]) -> dict[str, str]:
    """Canonical name -> installed version of ``requirements`` and, recursively, theirs
    (markers evaluated here; a requirement that is not installed is left out)."""
    pins: dict[str, str] = {}
    seen: set[tuple[str, str]] = set()
    todo = [(Requirement(r), "") for r in requirements]
    while todo:
        req, extra = todo.pop()
        name = canonicalize_name(req.name)
        if req.marker is not None and not req.marker.evaluate({"extra": extra}):
            continue
        for sub_extra in ("", *sorted(req.extras)):
            if (name, sub_extra) in seen:
                continue
            seen.add((name, sub_extra))
            try:
                dist = md.distribution(name)
            except md.PackageNotFoundError:
                continue
            pins[name] = dist.version
            todo += [(Requirement(line), sub_extra) for line in dist.requires or []]
    return pins


def main() -> None:
    import tomllib  # Python 3.11+, as the study's venv

    project = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    pins = closure([*project["dependencies"], *(r for e in EXTRAS for r in extras[e])])
    where = f"Python {platform.python_version()}, {sys.platform}"
    print(f"# The versions the study ran with ({where}),")
    print("# written by scripts/freeze_constraints.py; installs take them with")
    print('# pip install -c constraints.txt -e ".[workflow]" (README, .ci/run).')
    for name in sorted(pins):
        print(f"{name}=={pins[name]}")


if __name__ == "__main__":
    main()
