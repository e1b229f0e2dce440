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
import textwrap
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from gradcomp.answers import _num, decided, first_model, markdown_of
from gradcomp.artifacts import write_text
from gradcomp.lossy.distortion_study import DESIGN_NAMES
from gradcomp.lossy.verdict_comparison import AGREEMENTS, beside
from gradcomp.names import LAWS, coder
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


class MissingTable(Exception):
    """A block's table is not in the folder (another config, or a run not yet made)."""


def _read(tables: Path, name: str) -> pd.DataFrame:
    path = tables / f"{name}.tsv"
    if not path.exists():
        raise MissingTable(name)
    return pd.read_csv(path, sep="\t", keep_default_na=True)


def _verdicts(tables: Path) -> pd.DataFrame:
    return first_model(_read(tables, "verdicts"))


def _ci(mean: float, lo: float, hi: float) -> str:
    return f"{_num(mean)} [{_num(lo)}, {_num(hi)}]"


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _wrap(text: str) -> str:
    """Prose wrapped at 100 columns (the docs' lines stay under 120)."""
    return textwrap.fill(text, 100, break_long_words=False, break_on_hyphens=False)


def _and(words: Sequence[str]) -> str:
    words = list(words)
    return ", ".join(words[:-1]) + " and " + words[-1] if len(words) > 1 else "".join(words)


# --- paper L: T1 and T2 ----------------------------------------------------------------


def _t1_raw(tables: Path, accounting: str = "exact", scaling: str = "none") -> pd.DataFrame:
    """T1's bits per entry (mean and sd) as model x coder, one scaling and accounting."""
    t1 = _read(tables, "T1")
    t1 = t1[(t1["scaling"] == scaling) & (t1["accounting"] == accounting)]
    return t1.pivot_table(index="model", columns="coder",
                          values=["bits_per_entry_mean", "bits_per_entry_sd", "runs"])  # fmt: skip


def block_runs(tables: Path) -> str:
    """What the run was: models and runs of paper L, warm starts and questions of paper Y."""
    t1, v = _t1_raw(tables), _verdicts(tables)
    runs = t1["runs"].max(axis=1).astype(int)
    families = v.groupby("family", sort=False).size()
    return _wrap(
        f"Paper L: {_and([f'{m} ({n} runs)' for m, n in runs.items()])}. Paper Y: "
        f"{v['model'].iloc[0]}, {int(v['units'].max())} {v['design'].iloc[0]}, "
        f"{len(v)} primary questions in {len(families)} Holm families "
        f"({_and([f'{f}: {n}' for f, n in families.items()])}), equivalence within "
        f"{v['margin'].iloc[0]:g} nats of test loss."
    )


def block_fits(tables: Path) -> str:
    """Claim 1 from T2: GenNorm against Norm per (dump kind, depth) cell, median trimmed W2."""
    t2 = _read(tables, "T2")
    rows, lower = [], []
    for model, t in t2.groupby("model"):
        cells = t.pivot_table(index=["kind", "position"], columns="family",
                              values=["w2_mean", "tail_log10_err_mean"])  # fmt: skip
        w2, tail = cells["w2_mean"], cells["tail_log10_err_mean"]
        med = w2.median()
        rows.append([model, f"{(tail['gennorm'] < tail['norm']).sum()} of {len(cells)}",
                     f"{(w2['gennorm'] < w2['norm']).sum()} of {len(cells)}",
                     *(f"{med[f]:.2f}" for f in LAWS)])  # fmt: skip
        low = w2.xs("lower", level="position")
        others = low.drop(columns="gennorm")
        lower.append(f"{model} {low['gennorm'].min():.1f}-{low['gennorm'].max():.1f} against "
                     f"{others.min().min():.2f}-{others.max().max():.2f}")  # fmt: skip
    laws = [f"median W2: {law}" if i == 0 else law for i, law in enumerate(LAWS.values())]
    header = ["model", "tail error below Norm's", "trimmed W2 below Norm's", *laws]
    return (
        _table(header, rows)
        + "\n\n"
        + _wrap(
            "The exception is the lower (input-side) tensor, where GenNorm's trimmed W2 is "
            + "; ".join(lower)
            + " for the other families (each cell a mean over runs and epochs)."
        )
    )


def block_huffman(tables: Path) -> str:
    """Claim 2 from T1: the Huffman codes of the fitted laws, raw FP8, every side bit."""
    t1 = _t1_raw(tables)["bits_per_entry_mean"]
    slip = _t1_raw(tables, accounting="slip")["bits_per_entry_mean"]
    amax = _t1_raw(tables, scaling="amax")["bits_per_entry_mean"]
    h = "huffman_gennorm"
    rows = [[m, f"{r[h]:.3f}", f"{r['huffman_norm']:.3f}", f"{r['huffman_norm'] - r[h]:.3f}",
             f"{r['entropy']:.3f}", f"{r['lz78']:.3f}", f"{r[h] - slip.loc[m, h]:.2f}",
             f"{amax.loc[m, h] - r[h]:.3f}"] for m, r in t1.iterrows()]  # fmt: skip
    return _table(["model", "GenNorm's code", "Norm's code", "Norm costs more",
                   "i.i.d. entropy", "LZ78", "`slip` saves", "`amax` costs"], rows)  # fmt: skip


#: the i.i.d. references shown beside the coders that go below the i.i.d. entropy
IID = ("entropy", "ans_gennorm")


def block_coders(tables: Path) -> str:
    """Paper L's next step from T1: every coder below the i.i.d. entropy on every model (the
    ones that model the entries' dependence), then the i.i.d. references, mean ± sd."""
    raw = _t1_raw(tables)
    mean, sd = raw["bits_per_entry_mean"], raw["bits_per_entry_sd"]
    below = mean.columns[(mean.lt(mean["entropy"], axis=0)).all()]
    names = [*mean.loc[:, below].mean().sort_values().index, *(c for c in IID if c in mean)]
    cells = [[f"{mean.loc[m, c]:.3f} ± {sd.loc[m, c]:.3f}" for m in mean.index] for c in names]
    rows = [[f"`{c}`", coder(c), *cell] for c, cell in zip(names, cells, strict=True)]
    best = mean[names].idxmin(axis=1)
    lines = [
        f"{m}: `{best[m]}` {mean.loc[m, best[m]]:.2f} against the i.i.d. entropy's "
        f"{mean.loc[m, 'entropy']:.2f}; shuffling the entries costs lzma "
        f"{mean.loc[m, 'lzma_shuffled'] - mean.loc[m, 'lzma']:.2f} bits per entry"
        for m in mean.index
    ]
    return _table(["coder", "what", *mean.index], rows) + "\n\n" + _wrap("; ".join(lines) + ".")


# --- paper Y: the verdicts ---------------------------------------------------------------


def _short(question: str) -> str:
    """A question label without its kept set's words (``on top-K 45.2%`` -> ``(45.2%)``, the
    test's bits of a question against one configuration joined in: ``(45.2%, 0.50 bits)``).

    >>> _short("kmeans R1 M2 on top-K 45.2% (0.50 bits) vs uniform R2 M0 (1.00 bits), same kept")
    'kmeans R1 M2 (45.2%, 0.50 bits) vs uniform R2 M0 (1.00 bits), same kept'
    """
    question = re.sub(r" on top-K ([\d.]+%) \(([\d.]+ bits)\)", r" (\1, \2)", question)
    return re.sub(r" on top-K ([\d.]+%)", r" (\1)", question).replace(" on dense", "")


def _bits(r: Any) -> str:
    """A verdict row's bits per entry: the test's, and the reference's where the question
    compares one reference configuration at its own bits (``reference_rate``)."""
    ref = getattr(r, "reference_bits", np.nan)
    if isinstance(ref, (int, float)) and np.isfinite(ref):
        return f"{r.bits_per_entry:.2f} vs {ref:.2f}"
    return f"{r.bits_per_entry:.2f}"


def block_verdicts(tables: Path) -> str:
    """Every primary question: its verdict, loss difference at matched bits, detectable size."""
    v = _verdicts(tables)
    parts = []
    for family, t in v.groupby("family", sort=False):
        rows = [[_short(r.question), _bits(r),
                 decided(r._asdict()).removesuffix(" nats"), f"{r.min_detectable:.3g}",
                 f"**{r.verdict}**" if r.verdict != "undecided" else r.verdict]
                for r in t.itertuples()]  # fmt: skip
        parts.append(f"**{family}** ({len(t)} questions):\n\n" + _table(
            ["question", "bits/entry", "loss diff. [decided interval], nats", "detectable",
             "verdict"], rows
        ))  # fmt: skip
    return "\n\n".join(parts)


def block_open(tables: Path) -> str:
    """The questions on the quantizers that stay open: undecided and not detecting the
    table's target difference (``target``, the size the run's design was asked to detect)."""
    v = _verdicts(tables)
    quant = v[v["family"] != "field"]
    limit = float(v["target"].iloc[0])
    small = quant["verdict"].ne("undecided") | (quant["min_detectable"] <= limit)
    others = [f"{_short(r.question)} (detects {r.min_detectable:.3f}"
              + (f", bracket {r.interp_bound:.3f})" if r.interpolation != "none" else ")")
              for r in quant[~small].itertuples()]  # fmt: skip
    return _wrap(
        f"Of the {len(quant)} questions on the quantizers, {int(small.sum())} are decided or "
        f"undecided with a detectable difference of at most {limit:g} nats. The others: "
        + "; ".join(others)
        + "."
    )


def _regime(tables: Path) -> str:
    """Where a run's one-round study measures: the round's start and its uncompressed
    aggregate's test accuracy, means over every trajectory (T4)."""
    t4 = _read(tables, "T4")
    r = t4.loc[t4["trajectories"].idxmax()]
    return (
        f"{int(r['units'])} {r['design']}, the round starting at {100 * r['start_acc']:.1f}% test "
        f"accuracy, the uncompressed aggregate at {100 * r['exact_acc']:.1f}%"
    )


def block_regime(tables: Path) -> str:
    """The regime of this run and of the default run (``default/`` in the tables folder)."""
    return _wrap(f"This run: {_regime(tables)}. The default run: {_regime(tables / 'default')}.")


def block_beside(tables: Path) -> str:
    """The default run's verdicts (``default/verdicts.tsv`` in the tables folder) beside this
    run's, on the questions both declared (:func:`gradcomp.lossy.verdict_comparison.beside`):
    the words that differ with both intervals, the others listed by what the pair says."""
    both = beside(_verdicts(tables / "default"), _verdicts(tables))
    parts = [f"{len(both)} questions both runs declared."]
    differ = both[both["agreement"] == AGREEMENTS[0]]
    said = {AGREEMENTS[1]: "The same word in both",
            AGREEMENTS[2]: "Decided in one run only (default / this run)",
            AGREEMENTS[3]: "Undecided in both"}  # fmt: skip
    words = {AGREEMENTS[1]: lambda r: f": {r['verdict_2']}",
             AGREEMENTS[2]: lambda r: f": {r['verdict_1']} / {r['verdict_2']}",
             AGREEMENTS[3]: lambda r: ""}  # fmt: skip
    for agreement, lead in said.items():
        own = both[both["agreement"] == agreement]
        if not own.empty:
            items = "; ".join(_short(r["question"]) + words[agreement](r)
                              for _, r in own.iterrows())  # fmt: skip
            parts.append(f"{lead} ({len(own)}): {items}.")
    text = _wrap(f"Words that differ: {len(differ)}. " + " ".join(parts))
    if differ.empty:
        return text
    rows = [[_short(r["question"]), f"{r['verdict_1']} ({decided(_side(r, '_1'))})",
             f"{r['verdict_2']} ({decided(_side(r, '_2'))})"]
            for _, r in differ.iterrows()]  # fmt: skip
    return text + "\n\n" + _table(["question", "default run", "this run"], rows)


def _side(r: pd.Series, suffix: str) -> dict[str, object]:
    """One run's columns of a :func:`beside` row, under their own names."""
    return {k.removesuffix(suffix): v for k, v in r.items() if str(k).endswith(suffix)}


def block_paper_l(tables: Path) -> str:
    """The README's paper L numbers: the shortest code against zpaq and the i.i.d. codes."""
    mean = _t1_raw(tables)["bits_per_entry_mean"]
    others = {"zpaq": "the zpaq -m5 archiver", "entropy": "the i.i.d. entropy",
              "huffman_gennorm": "GenNorm's Huffman code"}  # fmt: skip
    lines = []
    for m, r in mean.iterrows():
        best = r.idxmin()
        vs = [
            f"{'below' if r[best] < r[c] else 'above'} {w} ({r[c]:.2f})" for c, w in others.items()
        ]
        lines.append(f"{m}: `{best}` {r[best]:.2f} bits per entry, " + ", ".join(vs))
    return _wrap("; ".join(lines) + " (T1).")


def block_limit(tables: Path) -> str:
    """T6: each quantizer's distance to R(D) of the fitted GenNorm, bits, per rate at M=0
    and the paper's M=2 (as Y5 draws them; T6 holds every M)."""
    t6 = _read(tables, "T6")
    t6 = first_model(t6)
    t6 = t6[~t6["quantizer"].str.contains("survivors|gauss")]
    Ms = sorted(t6["M"].unique())
    t6 = t6[t6["M"].isin(Ms[:1] + [m for m in Ms[1:] if m == 2])]
    gap = t6.pivot_table(index=["M", "R"], columns="quantizer", values="gap_bits")
    names = list(gap.mean().sort_values().index)
    rows = [
        [f"{M:g}", f"{R:g}", *(f"{gap.loc[(M, R), n]:.2f}" for n in names)] for M, R in gap.index
    ]
    header = ["M", "R", *(DESIGN_NAMES.get(n, n) for n in names)]
    return _table(header, rows).replace("| nan ", "| - ")


def _cell(r: pd.Series, col: str) -> str:
    """``col``'s mean [lo, hi] of a row, or "-" where the row has none."""
    if f"{col}_mean" not in r or pd.isna(r[f"{col}_mean"]):
        return "-"
    return _ci(r[f"{col}_mean"], r[f"{col}_lo"], r[f"{col}_hi"])


def _variant(r: pd.Series) -> str:
    return f"{r['compressor']} R{r['rate']:g} M{r['M']:g}"


def block_bd_rates(tables: Path) -> str:
    """T5: each rate curve's BD-rate against the baseline's (percent more bits at equal loss),
    with its interval and verdict; the curves without an interval (one trajectory) left out."""
    t5 = _read(tables, "T5")
    t5 = t5[t5["bd_rate_lo"].notna()]
    rows = [[f"{r.curve} M{r.M:g}", f"{r.bits_per_entry_min:.2f}-{r.bits_per_entry_max:.2f}",
             f"{r.bd_rate_mean:+.0f}% [{r.bd_rate_lo:+.0f}, {r.bd_rate_hi:+.0f}]", r.verdict]
            for r in t5.itertuples()]  # fmt: skip
    base = t5["baseline"].iloc[0] if len(t5) else "the baseline"
    return f"Against {base}'s curve:\n\n" + _table(
        ["curve", "bits per entry", "BD-rate [interval]", "verdict"], rows
    )


def _plain(r: pd.Series, col: str, scale: float = 1.0, fmt: str = ".3f") -> str:
    """``col``'s mean [lo, hi] of a row times ``scale``, unsigned."""
    m, lo, hi = (scale * r[f"{col}_{p}"] for p in ("mean", "lo", "hi"))
    return f"{m:{fmt}} [{lo:{fmt}}, {hi:{fmt}}]"


def block_full_runs(tables: Path) -> str:
    """T3: the full federated runs' final accuracy, uplink Mbit and per-bit accuracy (accuracy
    points per Mbit), intervals over seeds."""
    t3 = _read(tables, "T3")
    rows = [[_variant(r), f"{r['units']} {r['design']}", _plain(r, "test_acc"),
             f"{r['cumulative_bits_coded'] / 1e6:.1f}",
             _plain(r, "per_bit_acc_coded", 1e8, ".2f")] for _, r in t3.iterrows()]  # fmt: skip
    return _table(["variant", "over", "final test accuracy", "uplink Mbit",
                   "accuracy points per Mbit"], rows)  # fmt: skip


def block_follow_up(tables: Path) -> str:
    """T4's descriptive variants (those run on fewer trajectories than the primary pass, M22's
    float8 and trellis-coded quantizer among them): bits, and the loss against the uncompressed
    aggregate of the same round; from the default run's tables where the folder holds them
    (``default/``: the decisive profile runs no descriptive variant)."""
    t4 = _read(tables / "default" if (tables / "default" / "T4.tsv").exists() else tables, "T4")
    t4 = t4[t4["trajectories"] < t4["trajectories"].max()]
    rows = [[_variant(r), f"{r['bits_per_entry_mean']:.2f}", _num(r["loss_increase_mean"])]
            for _, r in t4.iterrows()]  # fmt: skip
    n = int(t4["trajectories"].max()) if len(t4) else 0
    over = f"{n} trajector{'y' if n == 1 else 'ies'}"
    return f"Descriptive, on {over}, no interval:\n\n" + _table(
        ["variant", "bits/entry", "loss vs uncompressed, nats"], rows
    )


def block_costs(tables: Path) -> str:
    """The run's heavy jobs from costs.tsv: jobs, wall seconds, CPU seconds, peak memory."""
    costs = _read(tables, "costs")
    total = costs[costs["rule"] == "all"].iloc[0]
    return _wrap(
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
