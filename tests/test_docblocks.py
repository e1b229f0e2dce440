"""The docs' numbers come from the tables (gradcomp.docblocks): the committed pages' generated
blocks are what the module makes of docs/tables (so a stale number fails here), a block's number
moves when its table's value does, an unknown block name or a missing end marker is refused by
name, a missing table leaves its block out with a message, and docs/results.md and the README's
results hold no number outside a generated block."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from conftest import REPO
from gradcomp.docblocks import BLOCKS, begin, end, main, rewrite

TABLES = REPO / "docs" / "tables"
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def test_docblocks_command_example_is_the_readmes() -> None:
    """The README names the command that rewrites its blocks, and the module's markers."""
    readme = (REPO / "README.md").read_text()
    assert "python -m gradcomp.docblocks docs/tables README.md" in readme
    assert begin("runs", "README.md") in readme and end("runs") in readme


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_committed_blocks_are_what_the_tables_give(page: Path) -> None:
    """Planted bug that fails it: a number typed by hand into a block, or a table in
    docs/tables changed without rerunning ``python -m gradcomp.docblocks docs/tables ...``."""
    text = page.read_text()
    assert rewrite(text, TABLES, BLOCKS, page.name) == text


def test_every_registered_block_is_on_a_page() -> None:
    used = {n for p in PAGES for n in re.findall(r"<!-- generated: ([\w-]+) ", p.read_text())}
    assert sorted(set(BLOCKS) - used) == []


def test_an_unknown_block_is_refused_by_name(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(f"x\n{begin('nosuchblock', 'page.md')}\nold\n{end('nosuchblock')}\n")
    with pytest.raises(ValueError, match=r"page\.md.*nosuchblock"):
        main([str(TABLES), str(page)])
    page.write_text(f"x\n{begin('runs', 'page.md')}\nold\n")
    with pytest.raises(ValueError, match="without its end marker"):
        main([str(TABLES), str(page)])


def test_a_blocks_number_comes_from_its_table(tmp_path: Path) -> None:
    """Change one value in a copy of the tables (cm_fast's bits per entry on the cnn) and the
    blocks that quote it change with it; the page is rewritten in place, the rest kept."""
    tables = tmp_path / "tables"
    shutil.copytree(TABLES, tables)
    (tmp_path / "figures").mkdir()  # the gallery's manifest beside the tables, as in docs/
    shutil.copy(REPO / "docs" / "figures" / "manifest.tsv", tmp_path / "figures")
    t1 = pd.read_csv(tables / "T1.tsv", sep="\t")
    hit = (t1["model"] == "cnn") & (t1["coder"] == "cm_fast") & (t1["scaling"] == "none")
    hit &= t1["accounting"] == "exact"
    assert hit.sum() == 1
    t1.loc[hit, "bits_per_entry_mean"] = 4.321
    t1.to_csv(tables / "T1.tsv", sep="\t", index=False)
    page = tmp_path / "results.md"
    shutil.copy(REPO / "docs" / "results.md", page)
    before = page.read_text()
    main([str(tables), str(page)])
    after = page.read_text()
    assert "4.321 ± " in after and "4.321 ± " not in before
    assert "`cm_fast` 4.32 against" in after
    untouched = re.sub(
        r"<!-- generated: coders .*?<!-- end generated: coders -->", "", after, flags=re.S
    )
    assert untouched == re.sub(
        r"<!-- generated: coders .*?<!-- end generated: coders -->", "", before, flags=re.S
    )


def test_a_missing_table_leaves_its_block_out(tmp_path: Path) -> None:
    tables = tmp_path / "tables"
    shutil.copytree(TABLES, tables)
    (tables / "T6.tsv").unlink()
    text = (REPO / "docs" / "results.md").read_text()
    made = rewrite(text, tables)
    block = re.search(r"<!-- generated: limit .*?-->\n(.*?)<!-- end", made, re.S)
    assert block is not None and block.group(1) == "*Left out: the tables folder has no T6.tsv.*\n"


def outside_blocks(text: str) -> str:
    """``text`` without its generated blocks, fenced code, inline code, links' targets,
    HTML comments and anchors, figure and table names (L1, Y7a, T6), and names with digits
    (FP8, E5M2, W2, R1, M2)."""
    text = re.sub(r"<!-- generated: ([\w-]+) .*?<!-- end generated: \1 -->", "", text, flags=re.S)
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = re.sub(r"<!--.*?-->|<a [^>]*></a>|`[^`\n]*`|\]\([^)]*\)", "", text)
    return re.sub(r"\b[A-Za-z]+[\w.-]*\d\w*", "", text)


def test_results_hold_no_number_outside_a_generated_block() -> None:
    """Planted bug that fails it: a number typed into the prose of docs/results.md or of the
    README's results (an earlier run's "22 of 25")."""
    readme = (REPO / "README.md").read_text()
    results = readme[readme.index("## Results in short") : readme.index("## Documentation")]
    for name, text in (("results.md", (REPO / "docs/results.md").read_text()), ("README", results)):
        numbers = re.findall(r"[^\n]{0,30}\d[^\n]{0,10}", outside_blocks(text))
        assert numbers == [], f"{name}: numbers outside generated blocks: {numbers}"


def test_the_number_check_sees_a_planted_number() -> None:
    assert re.search(r"\d", outside_blocks("22 of 25 verdicts agree, R1 M2 on `top-K 10%`."))
    assert not re.search(r"\d", outside_blocks("FP8 E5M2, W2, L5 and Y7a; `lossy.seeds: [0]`."))


def test_the_default_beside_this_run_puts_differing_words_first(tmp_path: Path) -> None:
    """Two runs' verdicts on shared questions: a question whose decided words differ is
    listed first and counted; a question only one run declared is left out."""
    this = pd.read_csv(TABLES / "verdicts.tsv", sep="\t")
    (tmp_path / "default").mkdir()
    other = this.copy()
    decided_rows = other.index[other["verdict"].isin(["better", "worse"])]
    flipped = decided_rows[0]
    other.loc[flipped, "verdict"] = {"better": "worse", "worse": "better"}[
        other.loc[flipped, "verdict"]
    ]
    other = other.drop(index=other.index[-1])
    other.to_csv(tmp_path / "default" / "verdicts.tsv", sep="\t", index=False)
    this.to_csv(tmp_path / "verdicts.tsv", sep="\t", index=False)
    block = BLOCKS["beside"](tmp_path)
    assert block.startswith("Words that differ: 1.")
    table = block.split("\n\n", 1)[1].split("\n")
    flipped_question = this.loc[flipped, "question"].split(" on ")[0]
    assert len(table) == 3 and table[2].startswith("| " + flipped_question)
    assert f"{len(this) - 1} questions both runs declared." in " ".join(block.split())


def test_a_question_against_one_configuration_reads_with_both_bits(tmp_path: Path) -> None:
    """A verdict against one reference configuration (``reference_rate``): the verdicts block
    shows its kept set and both bits in the question and both in the bits column; the
    default-beside block matches it to the default run's question though their measured bits
    differ (planted bugs: the merge on the label with its bits, which drops it; the bits
    column with the test's bits alone)."""
    this = pd.read_csv(TABLES / "verdicts.tsv", sep="\t")
    this["reference_rate"], this["reference_bits"] = None, float("nan")
    label = "ecsq R2 M2 on top-K 45.2% ({} bits) vs gennorm R1 M2 ({} bits), same kept set"
    i = this.index[this["verdict"].isin(["better", "worse"])][0]
    this.loc[i, ["question", "reference_rate", "reference_bits", "bits_per_entry"]] = [
        label.format("0.50", "1.00"), 1, 1.0, 0.5,
    ]  # fmt: skip
    this.loc[i, "interpolation"] = "none"
    (tmp_path / "default").mkdir()
    other = this.copy()
    other.loc[i, "question"] = label.format("0.51", "1.01")
    other.loc[i, "verdict"] = {"better": "worse", "worse": "better"}[this.loc[i, "verdict"]]
    other.to_csv(tmp_path / "default" / "verdicts.tsv", sep="\t", index=False)
    this.to_csv(tmp_path / "verdicts.tsv", sep="\t", index=False)
    short = "ecsq R2 M2 (45.2%, 0.50 bits) vs gennorm R1 M2 (1.00 bits), same kept set"
    assert f"| {short} | 0.50 vs 1.00 |" in BLOCKS["verdicts"](tmp_path)
    beside = BLOCKS["beside"](tmp_path)
    assert beside.startswith("Words that differ: 1.")
    assert f"{len(this)} questions both runs declared." in " ".join(beside.split())
    assert beside.split("\n\n", 1)[1].split("\n")[2].startswith(f"| {short} |")
