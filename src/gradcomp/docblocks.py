"""Generated blocks of the docs: every number a page quotes from a run, rewritten from that
run's tables by one command, so that no page can quote an earlier run.

A block is the text between two markers in a Markdown page::

    <!-- generated: NAME (python -m gradcomp.docblocks results/tables FILE rewrites it) -->
    ...
    <!-- end generated: NAME -->

:data:`BLOCKS` maps each NAME to a function of the tables folder that returns the block's
Markdown, reading the TSVs it needs (``T1.tsv``, ``verdicts.tsv``, ...). A block whose
table is missing says so in one line, never guesses. ``python -m gradcomp.docblocks TABLES
FILE [FILE ...]`` rewrites every block of every FILE (atomically); a block name that is not
registered is a ValueError naming the file and the name. The README's answers table is the
block ``answers`` (:func:`gradcomp.answers.markdown_of`).

>>> page = "Runs: " + begin("demo", "p.md") + "\\nstale\\n" + end("demo") + " done."
>>> print(rewrite(page, Path("."), {"demo": lambda tables: "fresh"}, "p.md"))
Runs: <!-- generated: demo (python -m gradcomp.docblocks results/tables p.md rewrites it) -->
fresh
<!-- end generated: demo --> done.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from gradcomp.answers import markdown_of
from gradcomp.artifacts import write_text
from gradcomp.docblock_text import MissingTable, read_table, wrap
from gradcomp.docblocks_paper_l import (
    block_coders,
    block_fits,
    block_huffman,
    block_paper_l,
    block_runs,
)
from gradcomp.docblocks_paper_y import (
    block_bd_rates,
    block_beside,
    block_follow_up,
    block_full_runs,
    block_limit,
    block_open,
    block_regime,
    block_verdicts,
)
from gradcomp.plotting.catalogue import gallery_block, headline_block

__all__ = ["BLOCKS", "begin", "end", "main", "rewrite", "rewrite_file"]

BLOCK = re.compile(
    r"(?P<begin><!-- generated: (?P<name>[\w-]+) \([^)]*\) -->)\n(?P<body>.*?)"
    r"(?P<end><!-- end generated: (?P=name) -->)",
    re.S,
)


def begin(name: str, page: str) -> str:
    """The opening marker of block ``name`` in ``page`` (the path the command is given)."""
    how = f"python -m gradcomp.docblocks results/tables {page} rewrites it"
    return f"<!-- generated: {name} ({how}) -->"


def end(name: str) -> str:
    return f"<!-- end generated: {name} -->"


def block_costs(tables: Path) -> str:
    """The run's heavy jobs from costs.tsv: jobs, wall seconds, CPU seconds, peak memory."""
    costs = read_table(tables, "costs")
    total = costs[costs["rule"] == "all"].iloc[0]
    return wrap(
        f"What its heavy jobs cost (`costs.tsv`): {int(total['jobs'])} jobs, "
        f"{total['seconds_total']:,.0f} s of job time, {total['cpu_seconds_total']:,.0f} CPU "
        f"seconds, at most {total['MB_max']:,.0f} MB in any job."
    )


#: every block a page may hold: name -> function of the tables folder
BLOCKS: dict[str, Callable[[Path], str]] = {
    "answers": markdown_of,  # the README's table, its glossary links from the repository root
    "runs": block_runs,
    "fits": block_fits,
    "huffman": block_huffman,
    "coders": block_coders,
    "verdicts": block_verdicts,
    "open": block_open,
    "paper-l": block_paper_l,
    "limit": block_limit,
    "bd-rates": block_bd_rates,
    "full-runs": block_full_runs,
    "follow-up": block_follow_up,
    "costs": block_costs,
    "beside": block_beside,
    "regime": block_regime,
    # the figures: docs/figures/manifest.tsv beside the tables folder (gradcomp.plotting.catalogue)
    "gallery": gallery_block,
    "headline": headline_block,
}


def rewrite(text: str, tables: Path, blocks: Mapping[str, Callable[[Path], str]] = BLOCKS,
            page: str = "the page") -> str:  # fmt: skip
    """``text`` with every generated block's body made anew from ``tables``."""
    unknown = [m.group("name") for m in BLOCK.finditer(text) if m.group("name") not in blocks]
    if unknown:
        raise ValueError(f"{page}: no generated block is registered as {unknown[0]!r}")
    opened = re.findall(r"<!-- generated: ([\w-]+) ", text)
    closed = [m.group("name") for m in BLOCK.finditer(text)]
    if opened != closed:
        raise ValueError(f"{page}: a generated block without its end marker: {opened} {closed}")

    def body(m: re.Match[str]) -> str:
        try:
            made = blocks[m.group("name")](Path(tables)).strip("\n")
        except MissingTable as missing:
            made = f"*Left out: the tables folder has no {missing}.tsv.*"
        return f"{m.group('begin')}\n{made}\n{m.group('end')}"

    return BLOCK.sub(body, text)


def rewrite_file(tables: str | Path, path: str | Path) -> None:
    """Rewrite the generated blocks of the page at ``path`` in place (atomically)."""
    text = Path(path).read_text()
    new = rewrite(text, Path(tables), BLOCKS, str(path))
    if new != text:
        write_text(path, new)


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m gradcomp.docblocks TABLES FILE [FILE ...]``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 2:
        raise SystemExit("usage: python -m gradcomp.docblocks TABLES_FOLDER FILE [FILE ...]")
    for path in args[1:]:
        rewrite_file(args[0], path)


if __name__ == "__main__":
    main()
