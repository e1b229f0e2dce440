"""How far a compressor kind or a coder travels: the files of the product (the library, the
workflow's rules, scripts and schema; configs, tests and docs aside) that name it, which is
what adding one more of its sort touches.

    python scripts/travel.py            # every registered kind and coder, the most-travelled first
    python scripts/travel.py terngrad   # one name, its files

A configuration file that merely runs a kind is not counted (the default study choosing to
run it is not what adding it costs); the package's docstring map is (a new module is named
there). Cited by docs/extending.md; tests/test_travel.py holds the limits.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: Where the product lives (tests, docs and config files aside).
PRODUCT = [REPO / "src/gradcomp", REPO / "workflow", REPO / "Snakefile"]


def product_files() -> list[Path]:
    out = []
    for root in PRODUCT:
        paths = [root] if root.is_file() else sorted(root.rglob("*"))
        out += [p for p in paths if p.is_file() and p.suffix in {".py", ".smk", ".yaml", ""}
                and "__pycache__" not in p.parts]  # fmt: skip
    return out


def travel(name: str, files: list[Path] | None = None) -> list[str]:
    """The product files (repository-relative) that name ``name`` as a word."""
    word = re.compile(rf"(?<![\w-]){re.escape(name)}(?![\w-])")
    found = [p for p in files or product_files() if word.search(p.read_text(errors="replace"))]
    return [str(p.relative_to(REPO)) if p.is_relative_to(REPO) else str(p) for p in found]


def registered() -> dict[str, list[str]]:
    """Sort -> names: the compressor kinds (quantizers and self-contained compressors) and
    the built-in coders, from their registries."""
    sys.path.insert(0, str(REPO / "src"))
    from gradcomp.coding.registry import builtin_specs
    from gradcomp.compression.registry import COMPRESSORS, QUANTIZERS

    return {"compressor kind": sorted({*QUANTIZERS, *COMPRESSORS}),
            "coder": sorted(builtin_specs())}  # fmt: skip


def main(argv: list[str]) -> None:
    files = product_files()
    if argv:
        for name in argv:
            found = travel(name, files)
            print(f"{name}: {len(found)} files\n  " + "\n  ".join(found))
        return
    for sort, names in registered().items():
        counts = sorted(((len(travel(n, files)), n) for n in names), reverse=True)
        print(f"{sort}: " + ", ".join(f"{n} {c}" for c, n in counts))


if __name__ == "__main__":
    main(sys.argv[1:])
