"""Paper L's generated blocks of the docs (:mod:`gradcomp.docblocks`), from T1 and T2."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from gradcomp.docblock_text import (
    and_list,
    first_verdicts,
    markdown_table,
    read_table,
    wrap,
)
from gradcomp.names import LAWS, coder

__all__ = ["block_coders", "block_fits", "block_huffman", "block_paper_l", "block_runs"]


def _t1_raw(tables: Path, accounting: str = "exact", scaling: str = "none") -> pd.DataFrame:
    """T1's bits per entry (mean and sd) as model x coder, one scaling and accounting."""
    t1 = read_table(tables, "T1")
    t1 = t1[(t1["scaling"] == scaling) & (t1["accounting"] == accounting)]
    return t1.pivot_table(index="model", columns="coder",
                          values=["bits_per_entry_mean", "bits_per_entry_sd", "runs"])  # fmt: skip


def block_runs(tables: Path) -> str:
    """What the run was: models and runs of paper L, warm starts and questions of paper Y."""
    t1, v = _t1_raw(tables), first_verdicts(tables)
    runs = t1["runs"].max(axis=1).astype(int)
    families = v.groupby("family", sort=False).size()
    return wrap(
        f"Paper L: {and_list([f'{m} ({n} runs)' for m, n in runs.items()])}. Paper Y: "
        f"{v['model'].iloc[0]}, {int(v['units'].max())} {v['design'].iloc[0]}, "
        f"{len(v)} primary questions in {len(families)} Holm families "
        f"({and_list([f'{f}: {n}' for f, n in families.items()])}), equivalence within "
        f"{v['margin'].iloc[0]:g} nats of test loss."
    )


def block_fits(tables: Path) -> str:
    """Claim 1 from T2: GenNorm against Norm per (dump kind, depth) cell, median trimmed W2."""
    t2 = read_table(tables, "T2")
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
        markdown_table(header, rows)
        + "\n\n"
        + wrap(
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
    return markdown_table(["model", "GenNorm's code", "Norm's code", "Norm costs more",
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
    return (
        markdown_table(["coder", "what", *mean.index], rows) + "\n\n" + wrap("; ".join(lines) + ".")
    )


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
    return wrap("; ".join(lines) + " (T1).")
