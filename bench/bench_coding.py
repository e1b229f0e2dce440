"""Throughput of the lossless coders on FP8-quantized GenNorm-like gradients.

Run: ``.venv/bin/python bench/bench_coding.py [--n 10000000] [--dahuffman-n 100000]
[--only-real]``

Data: ``--n`` samples of scipy.stats.gennorm(0.8, scale=1e-3) quantized to FP8 E5M2 (signed
symbols, alphabet 247).  The Huffman code is designed from the model pmf of the FP8 bins
(floored so that every observed symbol is codable), as in paper L.

Then the coders that model dependence on ``--n`` symbols of a per-channel source (rows of
4000 GenNorm(0.8) entries, each row its own scale 2**uniform(-14, -8), the sign kept from
one entry to the next with probability 0.8): the adaptive context coder's and the
per-channel GenNorm coder's encode and decode speed against the i.i.d. ANS in the same run
(targets for the context coder: encode >= 20 M symbols/s, decode >= 10 M symbols/s), and
their rates beside the i.i.d. entropy and lzma.

Then the context coders on real tensors (``bench/data/real_fp8_sample.npz``: FP8 E5M2
symbols of 5 resnet20 and 2 cnn epoch-average gradients, epoch 3 of a 5,000-image run,
79k entries): ``cm_context`` and ``cm_fast`` per tensor and as one message, and
``ans_context``, encode and decode M symbols per CPU second and bits per entry, beside zpaq
-m5 where installed, and the CPU cost of one call on a 1-entry tensor (the per-call
overhead). ``--only-real`` runs this part alone.

``--runs DIR [DIR ...]`` runs the same comparison on the dumps of a workflow run
(``results/lossless/<model>/run<r>``: every epoch-average tensor the fits keep, at least
``--skip-below`` entries, FP8 E5M2 of the unscaled values, rows = output channels, as
``code_lossless`` codes them): per tensor, and one message per epoch (the tensors of an
epoch in the order the model sends them) against zpaq -m5 on that epoch's bytes as one file.

Reports symbols/s for gradcomp's Huffman encode and decode (best of ``--repeat``) against
the pure-Python ``dahuffman`` package on ``--dahuffman-n`` symbols, bytes/s for LZ78 on the
FP8 byte string, and the rates (bits per entry) of all coders for context.  Every roundtrip
is verified exactly; the exit status is 1 if one fails.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import scipy.stats
import torch

from gradcomp.coding import (
    HuffmanCode,
    ans_decode,
    ans_encode,
    cm,
    cm_fast,
    entropy_bits,
    general_purpose_bits,
    lz78_decode,
    lz78_encode,
)
from gradcomp.coding.base import TensorSymbols
from gradcomp.coding.byte_coders import fp8_bytes
from gradcomp.coding.cm import CMCoder
from gradcomp.coding.cm_fast import CMFastCoder
from gradcomp.coding.context import ContextCoder
from gradcomp.coding.gennorm_channel import GenNormChannelCoder
from gradcomp.coding.pmf import empirical_pmf, floor_and_renormalise, model_pmf
from gradcomp.coding.zpaq import zpaq_bits
from gradcomp.quantization.grids import get_grid

SAMPLE = Path(__file__).parent / "data" / "real_fp8_sample.npz"

TARGET = 30e6  # symbols/s, encode and decode
MESSAGE_CODERS = {"cm_context": cm, "cm_fast": cm_fast}  # coders of a message: name -> module


def best_time(fn, repeat: int):
    """(best wall time in s, last result) over ``repeat`` calls.

    The process CPU time of the best call is kept in ``best_time.cpu``: on a shared machine
    it shows what an idle core would do.
    """
    best, out = float("inf"), None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        if wall < best:
            best, best_time.cpu = wall, cpu
    return best, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--dahuffman-n", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only-real", action="store_true", help="only the real tensors' part")
    ap.add_argument("--runs", nargs="+", type=Path, help="workflow run folders: their dumps")
    ap.add_argument("--skip-below", type=int, default=256)
    args = ap.parse_args()
    if args.runs:
        ok = all([bench_run(run, args.repeat, args.skip_below) for run in args.runs])
        print("all roundtrips exact" if ok else "ROUNDTRIP FAILURE")
        return 0 if ok else 1
    if args.only_real:
        ok = bench_real(args.repeat)
        print("all roundtrips exact" if ok else "ROUNDTRIP FAILURE")
        return 0 if ok else 1
    ok = True

    dist = scipy.stats.gennorm(0.8, scale=1e-3)
    x = dist.rvs(args.n, random_state=np.random.default_rng(args.seed)).astype(np.float32)
    q = get_grid("fp8_e5m2")
    t_q, (sym, n_sat) = best_time(lambda: q.encode(x), 1)
    counts, emp = empirical_pmf(sym, q.n_levels)
    pmf = floor_and_renormalise(model_pmf(dist.cdf, q.edges, sf=dist.sf), must_cover=counts > 0)
    code = HuffmanCode.from_pmf(pmf)
    n = sym.size
    print(
        f"data: {n} gennorm(0.8, 1e-3) entries -> FP8 E5M2, {np.count_nonzero(counts)} "
        f"symbols used, {n_sat} saturated, quantize {n / t_q / 1e6:.1f} M/s"
    )
    print(f"code: {code}")

    t_enc, bits = best_time(lambda: code.encode(sym), args.repeat)
    c_enc = best_time.cpu
    t_dec, dec = best_time(lambda: code.decode(bits, n), args.repeat)
    c_dec = best_time.cpu
    rt = bool(np.array_equal(dec, sym)) and len(bits) == code.charged_bits(counts)
    ok &= rt
    enc_rate, dec_rate = n / t_enc, n / t_dec
    print(
        f"gradcomp Huffman: encode {enc_rate / 1e6:.1f} M symbols/s, decode "
        f"{dec_rate / 1e6:.1f} M symbols/s on {n} symbols, roundtrip exact: {rt}"
    )
    print(
        f"  per CPU second: encode {n / c_enc / 1e6:.1f} M/s, decode {n / c_dec / 1e6:.1f} "
        "M/s (wall < CPU rate means other processes shared the cores)"
    )
    print(
        f"  target {TARGET / 1e6:.0f} M/s: encode {'met' if enc_rate >= TARGET else 'MISSED'}"
        f", decode {'met' if dec_rate >= TARGET else 'MISSED'}"
    )

    try:
        from dahuffman import HuffmanCodec
    except ImportError:
        print("dahuffman not installed: comparison skipped")
    else:
        m = min(args.dahuffman_n, n)
        sub = sym[:m].tolist()
        codec = HuffmanCodec.from_frequencies({s: float(p) for s, p in enumerate(pmf) if p > 0})
        t_de, blob = best_time(lambda: codec.encode(sub), 1)
        t_dd, back = best_time(lambda: codec.decode(blob), 1)
        rt_d = back == sub
        ok &= rt_d
        de_rate, dd_rate = m / t_de, m / t_dd
        print(
            f"dahuffman: encode {de_rate / 1e6:.3f} M symbols/s, decode {dd_rate / 1e6:.3f} "
            f"M symbols/s on {m} symbols, roundtrip exact: {rt_d}"
        )
        print(
            f"  speed-up gradcomp / dahuffman: encode {enc_rate / de_rate:.0f}x, decode "
            f"{dec_rate / dd_rate:.0f}x"
        )

    fp8 = torch.from_numpy(x).to(torch.float8_e5m2).view(torch.uint8).numpy().tobytes()
    t_lz, (idx, nxt) = best_time(lambda: lz78_encode(fp8), 1)
    t_lzd, back = best_time(lambda: lz78_decode(idx, nxt), 1)
    rt_lz = back == fp8
    ok &= rt_lz
    lz_bits = sum((k - 1).bit_length() for k in range(1, idx.size + 1)) + 8 * nxt.size
    print(
        f"LZ78: parse {len(fp8) / t_lz / 1e6:.2f} M bytes/s, decode "
        f"{len(fp8) / t_lzd / 1e6:.2f} M bytes/s on {len(fp8)} FP8 bytes, "
        f"{idx.size} phrases, roundtrip exact: {rt_lz}"
    )

    t_ans, words = best_time(lambda: ans_encode(sym, pmf), 1)
    t_ansd, back = best_time(lambda: ans_decode(words, n, pmf), 1)
    rt_ans = bool(np.array_equal(back, sym))
    ok &= rt_ans
    print(
        f"ANS (constriction): encode {n / t_ans / 1e6:.1f} M/s, decode {n / t_ansd / 1e6:.1f} "
        f"M/s, roundtrip exact: {rt_ans}"
    )

    t_gp, gp = best_time(lambda: general_purpose_bits(fp8), 1)
    print(f"rates in bits per entry (general-purpose compressors took {t_gp:.1f} s):")
    rates = {
        "FP8 raw": 8.0,
        "empirical entropy": entropy_bits(emp),
        "Huffman(model pmf)": len(bits) / n,
        "ANS(model pmf)": 32 * words.size / n,
        "LZ78": lz_bits / n,
        **{k: v / n for k, v in gp.items()},
    }
    for name, r in rates.items():
        print(f"  {name:20s} {r:7.4f}")
    ok &= bench_dependence(args.n, args.seed, args.repeat)
    ok &= bench_real(args.repeat)
    print("all roundtrips exact" if ok else "ROUNDTRIP FAILURE")
    return 0 if ok else 1


def bench_dependence(n: int, seed: int, repeat: int) -> bool:
    """Context and per-channel coders against i.i.d. ANS on a per-channel source, best of
    ``repeat`` runs each (wall time; the CPU-time rate beside it)."""
    q = get_grid("fp8_e5m2")
    cols = 4000
    rows = max(1, n // cols)
    rng = np.random.default_rng(seed)
    scale = 2.0 ** rng.uniform(-14, -8, size=(rows, 1))
    v = scipy.stats.gennorm(0.8).rvs((rows, cols), random_state=rng).astype(np.float32) * scale
    # signs: a Markov chain along each row that keeps the previous sign with probability 0.8
    flips = rng.random((rows, cols)) < 0.2
    signs = np.where(np.cumsum(flips, axis=1) % 2 == 0, 1.0, -1.0)
    sym = q.encode(np.abs(v) * signs)[0]
    x = TensorSymbols(sym, q)
    m = sym.size
    mags = x.magnitudes.ravel()
    counts, emp = empirical_pmf(mags, q.n_magnitudes)
    pmf = floor_and_renormalise(emp, must_cover=counts > 0)
    t_enc, words = best_time(lambda: ans_encode(mags, pmf), repeat)
    t_dec, back = best_time(lambda: ans_decode(words, m, pmf), repeat)
    ok = bool(np.array_equal(back, mags))
    load = ", ".join(f"{a:.2f}" for a in os.getloadavg())
    print(f"per-channel source: {rows} x {cols} FP8 symbols (load average {load})")
    print(
        f"  i.i.d. ANS (magnitudes): encode {m / t_enc / 1e6:.1f} M/s, decode "
        f"{m / t_dec / 1e6:.1f} M/s, roundtrip exact: {ok}"
    )
    for coder in (ContextCoder(), GenNormChannelCoder()):
        te, stream = best_time(lambda c=coder: c.encode(x), repeat)
        ce = best_time.cpu
        td, back = best_time(lambda c=coder, s=stream: c.decode(s, q, {}), repeat)
        cd = best_time.cpu
        exact = bool(np.array_equal(back, sym))
        ok &= exact
        line = (
            f"  {coder.name}: encode {m / te / 1e6:.1f} M/s ({t_enc / te:.2f} x i.i.d. ANS; "
            f"{m / ce / 1e6:.1f} per CPU s), decode {m / td / 1e6:.1f} M/s ({t_dec / td:.2f} x; "
            f"{m / cd / 1e6:.1f} per CPU s), {stream.bits / m:.4f} bits/entry, roundtrip "
            f"exact: {exact}"
        )
        if coder.name == "ans_context":
            line += (
                f"; targets 20 / 10 M/s: encode {'met' if m / te >= 20e6 else 'MISSED'}, "
                f"decode {'met' if m / td >= 10e6 else 'MISSED'}"
            )
        print(line)
    data = fp8_bytes(q.decode(sym), q)
    print(
        f"  i.i.d. entropy {entropy_bits(emp) + x.signs.size / m:.4f}, lzma "
        f"{general_purpose_bits(data)['lzma'] / m:.4f} bits/entry"
    )
    return ok


def bench_run(run: Path, repeat: int, skip_below: int) -> bool:
    """:func:`compare` on the dumps of one workflow run, one message per epoch."""
    from gradcomp.coding.base import as_rows
    from gradcomp.lossless.dumps import read_dump

    q = get_grid("fp8_e5m2")
    epochs = []
    for path in sorted(run.glob("grads/epoch*.safetensors"), key=lambda p: int(p.stem[5:])):
        tensors = read_dump(path).tensors["epoch_avg"]
        xs = []
        for t in tensors.values():
            if t.numel() < skip_below:
                continue
            symbols, _ = q.encode(t.numpy())
            xs.append(TensorSymbols(symbols.reshape(as_rows(tuple(t.shape))), q))
        epochs.append(xs)
    if not epochs:
        raise SystemExit(f"{run}: no grads/epoch*.safetensors")
    return compare(epochs, f"{run} ({len(epochs)} epochs, one message each)", repeat)


def bench_real(repeat: int) -> bool:
    """:func:`compare` on the committed real tensors, as one message."""
    q = get_grid("fp8_e5m2")
    with np.load(SAMPLE) as f:
        xs = [TensorSymbols(f[k].astype(np.int64), q) for k in f.files]
    return compare([xs], f"real tensors ({SAMPLE.name})", repeat)


def compare(messages: list[list[TensorSymbols]], label: str, repeat: int) -> bool:
    """The context coders on real tensors, ``messages`` a list of messages (each a list of
    tensors): M symbols per CPU second (best of ``repeat``) and bits per entry, every stream
    decoded and checked; zpaq -m5 beside them, per tensor and one file per message, and on
    how many tensors each coder is below zpaq."""
    q = get_grid("fp8_e5m2")
    xs = [x for m in messages for x in m]
    n = sum(x.symbols.size for x in xs)
    for mod in MESSAGE_CODERS.values():
        mod.encode_message(xs[:1])  # numba compiles (or loads its cache) outside the timing
    ok = True
    load = ", ".join(f"{a:.2f}" for a in os.getloadavg())
    print(f"{label}: {len(xs)} tensors, {n} entries, per CPU second (load average {load})")
    data = [fp8_bytes(q.decode(x.symbols), q) for x in xs]
    zpaq_each = [zpaq_bits(d) for d in data]
    sizes = np.cumsum([0] + [len(m) for m in messages])
    bounds = zip(sizes[:-1], sizes[1:], strict=True)
    zpaq_one = sum(zpaq_bits(b"".join(data[a:b])) for a, b in bounds)

    def cpu(fn):
        best, out = float("inf"), None
        for _ in range(repeat):
            c0 = time.process_time()
            out = fn()
            best = min(best, time.process_time() - c0)
        return best, out

    for name, mod in MESSAGE_CODERS.items():
        te, msgs = cpu(lambda m=mod: [m.encode_message(xm) for xm in messages])
        td, back = cpu(
            lambda m=mod, s=msgs: [
                m.decode_message(b, [x.shape for x in xm], q)
                for b, xm in zip(s, messages, strict=True)
            ]
        )
        exact = all(
            np.array_equal(b, x.symbols)
            for bm, xm in zip(back, messages, strict=True)
            for b, x in zip(bm, xm, strict=True)
        )
        ok &= exact
        bits = 8 * sum(len(b) for b in msgs)
        print(
            f"  {name}, one stream per message: encode {n / te / 1e6:.2f} M/s, decode "
            f"{n / td / 1e6:.2f} M/s, {bits / n:.4f} bits/entry (zpaq one file per message "
            f"{zpaq_one / n:.4f}), roundtrip exact: {exact}"
        )
    for coder in (CMCoder(), CMFastCoder(), ContextCoder()):
        te, streams = cpu(lambda c=coder: [c.encode(x) for x in xs])
        td, back = cpu(lambda c=coder, s=streams: [c.decode(t, q, {}) for t in s])
        exact = all(np.array_equal(b, x.symbols) for b, x in zip(back, xs, strict=True))
        ok &= exact
        bits = [t.bits for t in streams]
        below = sum(b < z for b, z in zip(bits, zpaq_each, strict=True))
        print(
            f"  {coder.name}, per tensor: encode {n / te / 1e6:.2f} M/s, decode "
            f"{n / td / 1e6:.2f} M/s, {sum(bits) / n:.4f} bits/entry (zpaq "
            f"{sum(zpaq_each) / n:.4f}; below it on {below} of {len(xs)} tensors), roundtrip "
            f"exact: {exact}"
        )
    # what a call costs apart from its symbols: fresh statistics, tables, the compiled call
    one = [TensorSymbols(xs[0].symbols[:1, :1], q)] * 1000
    for name, mod in MESSAGE_CODERS.items():
        t1, _ = cpu(lambda m=mod: [m.encode_message([x]) for x in one])
        print(f"  {name}: {t1 / len(one) * 1e6:.1f} CPU microseconds per call on a 1-entry "
              "tensor")  # fmt: skip
    print("  (zpaq -m5 net of its container; nan: zpaq not installed)")
    return ok


if __name__ == "__main__":
    sys.exit(main())
