"""How far a compressor kind or a coder travels: the files of the product (the library, the
workflow's rules, scripts and schema; configs, tests and docs aside) that name it, which is
what adding one more of its sort touches.

    python scripts/travel.py            # every registered kind and coder, the most-travelled first
    python scripts/travel.py terngrad   # one name, its files
    python scripts/travel.py --rate     # the files that read a compressor's rate (below)

A configuration file that merely runs a kind is not counted (the default study choosing to
run it is not what adding it costs); the package's docstring map is (a new module is named
there).

A *rate* is followed, not named (the word is everywhere): :func:`rate_reads` replays one
federated run's path in this process (the default config through the study, the checked spec
as the rules hand it to the job, the users' compressors, one update sent and decoded) with the
entry's rates tagged, and records each library file that reads one: compares, formats,
converts or computes with the value, reads ``rates`` from the entry, ``rate`` from a checked
spec or from a variant. Files that only hand on the config or the spec (the Snakefile, the
schema check, the job's stage, the per-user factory, the federated loop) are not reads. The
rule files are not run here; they are read for the rate by :data:`RULE_READS`, and the schema
for the entry's ``rates``. Cited by docs/extending.md; tests/project/test_travel.py holds the
limits.
"""

from __future__ import annotations

import re
import sys
import sysconfig
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "workflow/schemas/config.schema.yaml"
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


def _library_importable() -> None:
    """The repository's ``src`` first on ``sys.path`` (once, however often it is asked)."""
    src = str(REPO / "src")
    if src not in sys.path:
        sys.path.insert(0, src)


def registered() -> dict[str, list[str]]:
    """Sort -> names: the compressor kinds (quantizers and self-contained compressors) and
    the built-in coders, from their registries."""
    _library_importable()
    from gradcomp.coding.registry import builtin_specs
    from gradcomp.compression.registry import COMPRESSORS, QUANTIZERS

    return {"compressor kind": sorted({*QUANTIZERS, *COMPRESSORS}),
            "coder": sorted(builtin_specs())}  # fmt: skip


#: How a rule file or job script reads the rate: a run folder's wildcard, a variant's field,
#: a keyword (comments aside).
RULE_READS = re.compile(r"wildcards\.rate\b|\{rate\}|\.rate\b|\brate\s*=")
_STDLIB = sysconfig.get_paths()["stdlib"]


class _Tagged(int):
    """An int that records where it is read (``_Tagged.seen``); any operation on it counts."""

    seen: Callable[[str], None] = staticmethod(lambda what: None)


def _reading(name: str) -> Callable[..., Any]:
    base = getattr(int, name)

    def op(self: int, *args: Any) -> Any:
        _Tagged.seen(f"the value ({name})")
        return base(self, *args)

    return op


for _op in (
    "eq ne lt le gt ge hash str repr format int index float bool add radd sub rsub "
    "mul rmul pow rpow lshift rlshift truediv rtruediv floordiv mod neg abs"
).split():
    setattr(_Tagged, f"__{_op}__", _reading(f"__{_op}__"))  # fmt: skip


class _Entry(dict):
    """A config entry that records where its ``rates`` are read by key."""

    def __getitem__(self, key: Any) -> Any:
        if key == "rates":
            _Tagged.seen("entry['rates']")
        return super().__getitem__(key)

    def get(self, key: Any, default: Any = None) -> Any:
        if key == "rates":
            _Tagged.seen("entry.get('rates')")
        return super().get(key, default)


@contextmanager
def _watching(record: Callable[[str], None]) -> Iterator[None]:
    """Tagged values, checked specs and variants report reads of the rate to ``record``."""
    from gradcomp.compression.entries import Variant
    from gradcomp.compression.specs import CheckedSpec

    item, attribute, seen = CheckedSpec.__getitem__, Variant.__getattribute__, _Tagged.seen

    def spec_item(self: Any, key: str) -> Any:
        if key == "rate":
            record("spec['rate']")
        return item(self, key)

    def variant_attribute(self: Any, name: str) -> Any:
        if name == "rate":
            record("variant.rate")
        return attribute(self, name)

    CheckedSpec.__getitem__, Variant.__getattribute__ = spec_item, variant_attribute  # type: ignore[method-assign]
    _Tagged.seen = staticmethod(record)  # type: ignore[assignment]
    try:
        yield
    finally:
        CheckedSpec.__getitem__, Variant.__getattribute__ = item, attribute  # type: ignore[method-assign]
        _Tagged.seen = staticmethod(seen)  # type: ignore[assignment]


def rate_reads(compressor: str = "gennorm") -> dict[str, list[str]]:
    """Repository file -> how it reads the rate of config entry ``compressor`` on one
    federated run's path (module doc): library files as the replay saw them, then the schema
    and the rule files as read. The config file that sets the value is not listed."""
    _library_importable()
    import torch
    import yaml

    from gradcomp.compression.specs import CheckedSpec
    from gradcomp.lossy.uplink import send
    from gradcomp.study import load_study
    from gradcomp.wire.users import compressor_factory

    library, found = str(REPO / "src/gradcomp"), {}

    def record(what: str) -> None:
        frame = sys._getframe(2)
        while frame is not None:  # the nearest caller in the library, through the stdlib
            name = frame.f_code.co_filename
            if name.startswith(library):
                where = str(Path(name).relative_to(REPO))
                found.setdefault(where, set()).add(f"{what}, line {frame.f_lineno}")
                return
            if not (name.startswith(_STDLIB) or name == __file__):
                return  # read by a third party (the schema validator): generic
            frame = frame.f_back

    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    config["cifar10"] = "download"
    entries = config["lossy"]["compressors"]
    if compressor not in [e["name"] for e in entries]:
        raise SystemExit(f"no entry {compressor!r} in config/config.yaml lossy.compressors")
    config["lossy"]["compressors"] = [
        _Entry(e, rates=[_Tagged(r) for r in e["rates"]]) if e["name"] == compressor else e
        for e in entries
    ]
    with _watching(record):
        study = load_study(config, SCHEMA)
        variant = next(v for v in study.lossy.variants if v.name == compressor)
        params = study.lossy.model_spec(study.lossy.models[0], variant.label).plain()
        factory = compressor_factory(CheckedSpec.trusted(params), 0)  # what the job does
        gen = torch.Generator().manual_seed(0)
        update = {"w": 1e-3 * torch.randn(64, 32, generator=gen), "b": torch.zeros(32)}
        send(factory(0), update, rnd=1, user=0, n_train=10, receiver=factory.receiver(0, 0))
    out = {f: sorted(found[f]) for f in sorted(found)}
    if re.search(r"^\s*rates:", SCHEMA.read_text(), re.M):
        out[str(SCHEMA.relative_to(REPO))] = ["the entry's rates typed"]
    rules = [REPO / "Snakefile", *sorted((REPO / "workflow").rglob("*.smk")),
             *sorted((REPO / "workflow/scripts").glob("*.py"))]  # fmt: skip
    for path in rules:
        code = [line.split("#", 1)[0] for line in path.read_text().splitlines()]
        lines = [f"line {i}" for i, line in enumerate(code, 1) if RULE_READS.search(line)]
        if lines:
            out[str(path.relative_to(REPO))] = lines
    return out


def main(argv: list[str]) -> None:
    if argv[:1] == ["--rate"]:
        reads = rate_reads(*argv[1:2])
        print(f"rate: {len(reads)} files")
        for path, how in reads.items():
            print(f"  {path}: {'; '.join(how[:4])}{' ...' if len(how) > 4 else ''}")
        return
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
