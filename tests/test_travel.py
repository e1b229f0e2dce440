"""scripts/travel.py, what docs/extending.md cites: the files a compressor kind or a coder
touches, counted from the product's files (planted bug in the counter: counting a name inside
a longer one, which made ``tcq`` travel to every ``tcq_*`` identifier)."""

from __future__ import annotations

import re
import subprocess
import sys

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
