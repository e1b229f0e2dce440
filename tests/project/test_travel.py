"""scripts/travel.py, what docs/extending.md cites: the files a compressor kind or a coder
touches, counted from the product's files (planted bug in the counter: counting a name inside
a longer one, which made ``tcq`` travel to every ``tcq_*`` identifier)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from conftest import REPO

SCRIPT = REPO / "scripts/travel.py"


def run(*names: str) -> dict[str, int]:
    proc = subprocess.run([sys.executable, str(SCRIPT), *names], capture_output=True,
                          text=True, timeout=300, check=True)  # fmt: skip
    return {n: int(c) for n, c in re.findall(r"^(\w+): (\d+) files$", proc.stdout, re.M)}


def test_the_counts_docs_extending_cites_are_the_scripts() -> None:
    counts = run("tcq", "ecsq", "cm_fast", "powersgd", "count_sketch")
    doc = (REPO / "docs/extending.md").read_text()
    for name, n in counts.items():
        assert f"`{name}`: {n} files" in doc, (name, n)
    assert counts["tcq"] <= 8 and counts["ecsq"] <= 8 and counts["cm_fast"] <= 6  # the limits


def test_a_word_is_matched_whole(tmp_path) -> None:
    sys.path.insert(0, str(REPO / "scripts"))
    from travel import travel

    (tmp_path / "a.py").write_text("x = 'tcq'\n")
    (tmp_path / "b.py").write_text("tcq_states = 8\nfrom m import tcq_quantizer\n")
    found = travel("tcq", [tmp_path / "a.py", tmp_path / "b.py"])
    assert [p.rsplit("/", 1)[-1] for p in found] == ["a.py"]


def _module_file(obj) -> str:
    return "src/" + obj.__module__.replace(".", "/") + ".py"


@pytest.mark.slow
def test_the_rate_is_read_where_the_docs_say_and_in_at_most_8_files() -> None:
    counts = run("--rate")
    assert f"`rate`: {counts['rate']} files" in (REPO / "docs/extending.md").read_text()
    assert counts["rate"] <= 8


def test_the_rate_tracer_sees_each_kind_of_read_and_no_hand_on() -> None:
    """Against the code's own landmarks, found independently of the tracer: the registry's
    class for the entry's quantizer (reads ``spec['rate']``), the module of ``check_rate``
    (compares the value), of ``expand_entries`` (reads the entry's ``rates``) and of the study's
    lossy section (reads ``variant.rate``) are reads; the modules that only hand on the spec
    are not (planted bugs: a tracer that tags no value misses the spec check, one that watches
    no spec misses the quantizer, one that records every call counts the hand-ons)."""
    sys.path.insert(0, str(REPO / "scripts"))
    from travel import rate_reads

    from gradcomp.compression.entries import expand_entries
    from gradcomp.compression.registry import QUANTIZERS
    from gradcomp.compression.spec_checks import check_rate
    from gradcomp.compression.specs import CheckedSpec
    from gradcomp.lossy.federated import run_federated
    from gradcomp.lossy.federated_stage import federated_stage
    from gradcomp.study import lossy, questions
    from gradcomp.wire.users import compressor_factory

    for entry, kind in (("gennorm", "lloyd"), ("uniform", "uniform")):
        reads = rate_reads(entry)
        for obj in (QUANTIZERS[kind], check_rate, expand_entries, lossy.build_lossy):
            assert _module_file(obj) in reads, (entry, obj)
        for obj in (compressor_factory, run_federated, federated_stage):
            assert _module_file(obj) not in reads, (entry, obj)
        assert _module_file(questions.build_verdicts) in reads  # the questions' rates
        assert "workflow/rules/common.smk" in reads and "Snakefile" not in reads
    assert CheckedSpec.__getitem__.__module__ == "gradcomp.compression.checked_spec"  # restored
