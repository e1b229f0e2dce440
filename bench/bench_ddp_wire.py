"""DDP training on a rate-limited link: DDP's default, PyTorch's hooks, gradcomp's hook.

Two gloo CPU ranks (one torch thread each) train paper Y's CNN and ResNet20 on the CIFAR-10
stand-in (a stratified subset, each rank its own minibatches, Adam) with every configuration
of :data:`CONFIGS`: DDP's default all-reduce, PyTorch's ``fp16_compress_hook`` and
``powerSGD_hook`` (rank 4, all gradients in one bucket), gradcomp's hook with ten specs, and
the compute-only floor (a hook that returns the rank's own bucket: no exchange, the limit no
compressor can beat).

Phase "time", once per link rate (``--rates``, Mbit/s): the ranks run inside a network
namespace of their own whose loopback carries a tbf limit (`bench/netns.py`; both ranks'
traffic shares the one filter, as on a shared medium; 1500-byte frames, a burst of 4 ms at the
rate, no added delay, queue capped at 50 ms).
Per model, ``--rounds`` rounds of every configuration, ``--steps`` timed steps each after
``--warmup`` untimed ones (configurations interleaved, so that the shared machine's load hits
them alike). Per configuration: the median and the spread (min-max) of ms per step on rank 0
(barrier, forward, backward with the exchange, Adam step), the bytes rank 0 handed to the
collectives per step (gradcomp's ``StepBits.wire_bytes``; for DDP's default and PyTorch's
hooks the float32 / float16 bucket or PowerSGD's P and Q, counted from the shapes), and rank
0's CPU ms per step (``time.process_time``: all its threads, so compute, compression and the
gloo threads; minus the floor's, what the exchange costs in CPU).

Phase "accuracy", without a limit (training does not depend on the rate): per seed
(``--acc-seeds``; the seed sets the initialisation, the batches, the dropout draws and the
compressors' streams, the same for every configuration of that seed) every configuration
trains ``--acc-steps`` steps, then rank 0's test accuracy on ``--test-subset`` images. The
seed is the unit: per configuration the accuracy lost against DDP's default of the same seed,
its Student-t interval over the seeds, Holm over the comparisons, and a verdict (equivalent:
TOST within ``--margin``; better / worse; else undecided) beside the smallest difference the
seeds detect (:func:`gradcomp.statistics.paired.seed_verdicts`). The floor's ranks train apart
(no exchange), so it is not compared.

    python bench/bench_ddp_wire.py --phases accuracy --out /tmp/acc.json
    python bench/bench_ddp_wire.py --phases time --out /tmp/time.json
    python bench/bench_ddp_wire.py --phases time --rates 100 --rounds 6 --out /tmp/t100.json
    python bench/bench_ddp_wire.py --report /tmp/acc.json /tmp/time.json /tmp/t100.json

(what docs/distributed.md shows; ``--data`` names the CIFAR-10 tree, decoded once into
``--cache``). Without root, ``unshare`` or ``tc`` it says so and times one unlimited run. On
the 2-core development machine the accuracy phase took 32 minutes (5 seeds x 12
configurations x 2 models x 80 steps), the timing 9 (10 Mbit/s 6 of them: DDP's default alone
takes 3.9 s a step there), the 6-round 100 Mbit/s run 3; fewer ``--models`` / ``--rates`` /
``--acc-seeds`` / ``--configs`` (a subset of :data:`CONFIGS`; DDP's default and the floor
always run) for less.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from netns import limited_command, link_limit_available  # bench/netns.py, beside this script
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook
from torch.nn.parallel import DistributedDataParallel

from gradcomp.data import load_cifar10, prepare_cifar10
from gradcomp.distributed import CompressionHookState, compression_hook
from gradcomp.models import build_model
from gradcomp.statistics.paired import seed_verdicts
from gradcomp.training import evaluate, to_float_batch

WORLD = 2
TORCH_PSGD_RANK = 4
#: name -> gradcomp spec, or one of "default", "torch_fp16", "torch_powersgd", "floor"
CONFIGS = {
    "floor": "floor",
    "default": "default",
    "torch_fp16": "torch_fp16",
    "torch_powersgd_r4": "torch_powersgd",
    "none": {"quantizer": "none"},
    "float16": {"quantizer": "float16"},
    "uniform_R2_top10": {"quantizer": "uniform", "rate": 2, "topk": 0.1},
    "lloyd_gennorm_R2_M2_top10": {
        "quantizer": "lloyd",
        "family": "gennorm",
        "rate": 2,
        "M": 2,
        "topk": 0.1,
    },  # fmt: skip
    "signsgd_ef": {"quantizer": "scaled_sign", "error_feedback": True},
    "qsgd_R4": {"quantizer": "qsgd", "rate": 4},
    "powersgd_r4_ef": {"compressor": "powersgd", "rate": 4, "error_feedback": True},
    # the smallest sketch the config check accepts (smaller ones are worse than sending nothing)
    "count_sketch_R100": {"compressor": "count_sketch", "rate": 100},
}


def floor_hook(state, bucket):
    """No exchange: the rank's own gradients, as a completed future."""
    fut = torch.futures.Future()
    fut.set_result(bucket.buffer())
    return fut


def torch_wire_bytes(name: str, model: torch.nn.Module) -> int | None:
    """Bytes one rank hands to the collectives per step with DDP's default or a torch hook."""
    entries = sum(p.numel() for p in model.parameters())
    if name == "default":
        return 4 * entries
    if name == "torch_fp16":
        return 2 * entries
    if name == "torch_powersgd_r4":
        total = 0
        for p in model.parameters():
            if p.ndim < 2:
                total += p.numel()
                continue
            n, m = p.shape[0], p.numel() // p.shape[0]
            r = min(TORCH_PSGD_RANK, n, m)
            total += (n + m) * r if (n + m) * r * 2 < n * m else n * m  # min_compression_rate 2
        return 4 * total
    return None


def setup(name: str, config, model_name: str, seed: int = 0):
    """(ddp, gradcomp state or None, optimizer) of one configuration, initialised by ``seed``
    (the gradcomp compressors' random streams too)."""
    model = build_model(model_name, seed=seed)
    one_bucket = {"bucket_cap_mb": 64} if config == "torch_powersgd" else {}
    ddp = DistributedDataParallel(model, **one_bucket)
    state = None
    if config == "floor":
        ddp.register_comm_hook(None, floor_hook)
    elif config == "torch_fp16":
        ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
    elif config == "torch_powersgd":
        ps = powerSGD_hook.PowerSGDState(
            process_group=None, matrix_approximation_rank=TORCH_PSGD_RANK, start_powerSGD_iter=2
        )
        ddp.register_comm_hook(ps, powerSGD_hook.powerSGD_hook)
    elif config != "default":
        state = CompressionHookState(config, model=model, seed=seed, log_every=0)
        ddp.register_comm_hook(state, compression_hook)
    return ddp, state, torch.optim.Adam(model.parameters(), lr=1e-3)


class Batches:
    """Rank ``rank``'s minibatch of step ``step``: the same for every configuration."""

    def __init__(self, data, rank: int, batch: int, stream: int = 0):
        self.images, self.labels = data.train_images, data.train_labels
        self.rank, self.batch, self.stream = rank, batch, stream

    def __call__(self, step: int):
        g = torch.Generator().manual_seed(1_000_003 * step + self.rank + 7919 * self.stream)
        idx = torch.randint(0, len(self.labels), (self.batch,), generator=g)
        return to_float_batch(self.images[idx], torch.device("cpu")), self.labels[idx]


def train_step(ddp, opt, x, y) -> None:
    opt.zero_grad(set_to_none=True)
    F.cross_entropy(ddp(x), y).backward()
    opt.step()


def worker(rank: int, args: argparse.Namespace, store: str, out: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", init_method=f"file://{store}", rank=rank, world_size=WORLD,
        timeout=timedelta(seconds=600),
    )  # fmt: skip
    data = load_cifar10(Path(args.cache))
    batches = Batches(data, rank, args.batch)
    results = {}
    for model_name in args.models:
        if args.phase == "time":
            runs = {name: setup(name, CONFIGS[name], model_name) for name in args.configs}
            results[model_name] = time_configs(runs, batches, args)
            del runs
        else:
            results[model_name] = {
                name: [] for name in args.configs
            }  # configuration -> test accuracy per seed
            for seed in range(args.acc_seeds):
                for name, acc in accuracy_of(data, rank, args, model_name, seed).items():
                    results[model_name][name].append(acc)
    if rank == 0:
        Path(out).write_text(json.dumps(results))
    dist.barrier()
    dist.destroy_process_group()


def time_configs(runs, batches, args) -> dict:
    ms = {n: [] for n in runs}
    cpu = {n: [] for n in runs}
    step = 0
    for _ in range(args.rounds):
        for name, (ddp, _, opt) in runs.items():
            for i in range(args.warmup + args.steps):
                x, y = batches(step)
                step += 1
                dist.barrier()
                wall, proc = time.perf_counter(), time.process_time()
                train_step(ddp, opt, x, y)
                if i >= args.warmup:
                    ms[name].append(1000 * (time.perf_counter() - wall))
                    cpu[name].append(1000 * (time.process_time() - proc))
    out = {}
    for name, (ddp, state, _) in runs.items():
        wire = torch_wire_bytes(name, ddp.module)
        if state is not None:
            wire = statistics.mean(h.wire_bytes for h in state.history[args.warmup :])
        out[name] = {
            "ms": statistics.median(ms[name]),
            "ms_min": min(ms[name]),
            "ms_max": max(ms[name]),
            "cpu_ms": statistics.median(cpu[name]),
            "wire_bytes": 0 if name == "floor" else wire,
            "exchange": state.exchange if state is not None else name,
        }
    return out


def accuracy_of(data, rank: int, args, model_name: str, seed: int) -> dict[str, float]:
    """Rank 0's test accuracy per configuration after ``--acc-steps`` steps of training
    under ``seed``: the initialisation, the batches, the dropout draws and the compressors'
    streams, the same for every configuration of the seed (a paired design)."""
    out = {}
    batches = Batches(data, rank, args.batch, stream=seed)
    for name in args.configs:
        ddp, _, opt = setup(name, CONFIGS[name], model_name, seed)
        torch.manual_seed(10_000 + rank + 7919 * seed)  # dropout: alike across configs
        for step in range(args.acc_steps):
            train_step(ddp, opt, *batches(step))
        dist.barrier()
        _, out[name] = evaluate(
            ddp.module, data.test_images, data.test_labels, device=torch.device("cpu")
        )
    return out


def rate_key(rate) -> str:
    """The results' key of a link rate in Mbit/s ("10", "100"; "None": unlimited)."""
    return "None" if rate in (None, "None") else f"{float(rate):g}"


def load_results(path: str) -> dict:
    """A results file, its link rates keyed by :func:`rate_key`."""
    results = json.loads(Path(path).read_text())
    results["time"] = {rate_key(r): t for r, t in results["time"].items()}
    return results


def run_phase(args, phase: str, rate: float | None) -> dict:
    """One inner run (spawning the ranks), in a limited namespace when ``rate`` is given."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.json"
        cmd = [sys.executable, __file__, "--inner", "--phase", phase, "--result", str(out)]
        cmd += ["--cache", args.cache, "--models", *args.models, "--configs", *args.configs]
        for key in ("batch", "steps", "rounds", "warmup", "acc_steps", "acc_seeds"):
            cmd += [f"--{key.replace('_', '-')}", str(getattr(args, key))]
        if rate is not None:
            cmd = limited_command(cmd, rate_mbit=rate)
        env = {**os.environ, "GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1"}
        started = time.monotonic()
        subprocess.run(cmd, check=True, env=env)
        print(f"  {phase} at {rate or 'unlimited'} Mbit/s: {time.monotonic() - started:.0f} s",
              flush=True)  # fmt: skip
        return json.loads(out.read_text())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default="../shared/data/cifar10-jpeg")
    p.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "ddp_wire_cifar.pt"))
    p.add_argument("--train-subset", type=int, default=10_000)
    p.add_argument("--test-subset", type=int, default=1_000)
    p.add_argument("--models", nargs="+", default=["cnn", "resnet20"])
    p.add_argument("--rates", nargs="+", type=float, default=[10, 100, 1000])
    p.add_argument("--batch", type=int, default=32, help="images per rank and step")
    p.add_argument("--steps", type=int, default=3, help="timed steps per configuration, round")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--warmup", type=int, default=2, help="untimed steps per configuration, round")
    p.add_argument("--acc-steps", type=int, default=80, help="training steps before the test")
    p.add_argument("--acc-seeds", type=int, default=5, help="seeds (paired units) of accuracy")
    p.add_argument("--margin", type=float, default=0.03, help="equivalence margin, accuracy")
    p.add_argument("--phases", nargs="+", default=["accuracy", "time"])
    p.add_argument(
        "--configs", nargs="+", metavar="NAME", default=list(CONFIGS),
        help="a subset of the configurations (default: all; DDP's default and the floor are "
        "always run, as the references)",
    )  # fmt: skip
    p.add_argument("--out", default=str(Path(tempfile.gettempdir()) / "ddp_wire.json"))
    p.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--phase", default="time", help=argparse.SUPPRESS)
    p.add_argument("--result", help=argparse.SUPPRESS)
    p.add_argument(
        "--report", nargs="+", metavar="JSON",
        help="only merge these results files (e.g. an accuracy run and a timing run) and print",
    )  # fmt: skip
    args = p.parse_args()
    unknown = sorted(set(args.configs) - set(CONFIGS))
    if unknown:
        p.error(f"--configs: unknown {', '.join(unknown)} (known: {', '.join(CONFIGS)})")
    args.configs = [n for n in CONFIGS if n in {"floor", "default", *args.configs}]
    if args.report:
        merged, *extras = map(load_results, args.report)
        for more in extras:
            for key in ("accuracy", "time"):
                merged[key].update(more[key])  # a later file's rate replaces an earlier's
            merged["args"] = {**more["args"], **merged["args"]}
        text = report(merged)
        Path(args.out).write_text(json.dumps(merged, indent=1))
        print(text)
        return
    if args.inner:
        with tempfile.TemporaryDirectory() as tmp:
            store = str(Path(tmp) / "store")
            mp.spawn(worker, args=(args, store, args.result), nprocs=WORLD)
        return
    if not Path(args.cache).exists():
        prepare_cifar10(
            args.data, Path(args.cache), download_root=Path(tempfile.gettempdir()),
            train_subset=args.train_subset, test_subset=args.test_subset,
        )  # fmt: skip
    ok, why = link_limit_available()
    rates: list[float | None] = list(args.rates) if ok else [None]
    if not ok:
        print(f"no rate-limited namespace ({why}): timing one unlimited run", flush=True)
    results = {"args": vars(args), "limited": ok, "why_not": why, "time": {}, "accuracy": {}}
    started = time.monotonic()
    if "accuracy" in args.phases:
        results["accuracy"] = run_phase(args, "accuracy", None)
    if "time" in args.phases:
        for rate in rates:
            results["time"][rate_key(rate)] = run_phase(args, "time", rate)
    results["total_s"] = time.monotonic() - started
    text = report(results)  # adds the accuracy verdicts to the results
    Path(args.out).write_text(json.dumps(results, indent=1))
    print(text)


#: The reference of each accuracy family: DDP's default (every configuration that trains with
#: the ranks' exchange; not the floor, whose ranks train apart) and PyTorch's PowerSGD hook
#: (gradcomp's compressors: which is ahead of it at matched accuracy).
REFERENCES = {
    "default": lambda name: name not in ("default", "floor"),
    "torch_powersgd_r4": lambda name: isinstance(CONFIGS.get(name), dict) and name != "none",
}


def accuracy_verdicts(per_seed: dict[str, list[float]], margin: float, reference: str):
    """Accuracy lost against ``reference`` (reference minus configuration, per seed) of the
    configurations of its family (:data:`REFERENCES`): :func:`gradcomp.statistics.paired.
    seed_verdicts`, Holm over the family."""
    base = per_seed[reference]
    lost = {
        name: [b - a for a, b in zip(accs, base, strict=True)]
        for name, accs in per_seed.items()
        if REFERENCES[reference](name)
    }
    return seed_verdicts(lost, margin)


def accuracy_lines(results: dict, model: str, per_seed: dict, margin: float) -> list[str]:
    """The accuracy table of ``model``: mean over seeds, and per reference of
    :data:`REFERENCES` the accuracy lost and its verdict (stored in ``results["verdicts"]``)."""
    seeds = len(per_seed["default"])
    verdicts = {
        ref: accuracy_verdicts(per_seed, margin, ref) for ref in REFERENCES if ref in per_seed
    }
    results.setdefault("verdicts", {})[model] = verdicts
    head = "| config | accuracy, mean (min-max) |"
    for ref, family in verdicts.items():
        head += f" lost vs {ref} [95 % interval] | Holm p ({len(family)}) | detectable | verdict |"
    lines = [
        f"\n{model}, test accuracy after {results['args']['acc_steps']} steps, {seeds} seeds "
        f"(accuracy lost = reference minus configuration, paired by seed, 95 % t interval "
        f"over seeds; Holm over each reference's family; equivalent: TOST within "
        f"+-{margin:g})\n",
        head,
        "|---|---|" + "---|---|---|---|" * len(verdicts),
    ]
    for name, accs in per_seed.items():
        row = f"| {name} | {statistics.mean(accs):.3f} ({min(accs):.3f}-{max(accs):.3f}) |"
        for ref, family in verdicts.items():
            v = family.get(name)
            if v is None:
                row += " reference | | | |" if name == ref else " - | | | |"
                continue
            row += (
                f" {v['mean']:+.3f} [{v['lo']:+.3f}, {v['hi']:+.3f}] | {v['p_holm']:.3g} "
                f"| {v['min_detectable']:.3f} | {v['verdict']} |"
            )
        lines.append(row)
    return lines


def summary_lines(results: dict, model: str) -> list[str]:
    """One table of ``model`` across the link rates (the one docs/distributed.md shows): per
    configuration the exchange, bytes per rank and step, median ms per step at each rate as a
    multiple of DDP's default (the slowest rate) or of the floor (the others), rank 0's CPU
    above the floor's at the middle rate, and the accuracy over seeds with its verdict."""
    rates = sorted(results["time"], key=lambda r: math.inf if r == "None" else float(r))
    timing = {rate: results["time"][rate][model] for rate in rates}
    verdicts = results.get("verdicts", {}).get(model, {}).get("default", {})
    accs = results["accuracy"].get(model, {})
    mid = rates[len(rates) // 2]
    head = "| configuration | exchange | bytes per rank and step |"
    for i, rate in enumerate(rates):
        link = "unlimited" if rate == "None" else f"{rate} Mbit/s"
        head += f" {link} ms (x {'default' if i == 0 else 'floor'}) |"
    head += f" CPU ms - floor ({mid} Mbit/s) | test accuracy | lost vs default |"
    lines = [f"\n**{model}**\n", head, "| --- | --- | ---: |" + " ---: |" * (len(rates) + 3)]
    for name in timing[rates[0]]:
        first = timing[rates[0]][name]
        row = f"| {name} | {first['exchange']} | {first['wire_bytes']:,.0f} |"
        for i, rate in enumerate(rates):
            r = timing[rate][name]
            base = timing[rate]["default" if i == 0 else "floor"]["ms"]
            row += (
                f" {r['ms']:.0f} ({r['ms_min']:.0f}-{r['ms_max']:.0f}) **{r['ms'] / base:.2f}** |"
            )
        cpu = timing[mid][name]["cpu_ms"] - timing[mid]["floor"]["cpu_ms"]
        acc = f"{statistics.mean(accs[name]):.3f}" if name in accs else "-"
        v = verdicts.get(name)
        lost = "reference" if name == "default" else "-"
        if v is not None:
            lost = f"{v['mean']:+.3f} [{v['lo']:+.3f}, {v['hi']:+.3f}] {v['verdict']}"
        lines.append(row + f" {cpu:+.0f} | {acc} | {lost} |")
    return lines


def report(results: dict) -> str:
    """Markdown tables: per model and rate, ms per step beside the default and the floor;
    per model, the test accuracy over seeds and its verdict against the default."""
    lines = []
    margin = results["args"]["margin"]
    for model in results["args"]["models"]:
        for rate, per_model in results["time"].items():
            rows = per_model[model]
            base, floor = rows["default"]["ms"], rows["floor"]["ms"]
            link = "unlimited" if rate == "None" else f"{rate} Mbit/s"
            lines += [
                f"\n{model}, {link}\n",
                "| config | ms/step (min-max) | x default | x floor | bytes/rank-step "
                "| CPU ms/step (- floor) |",
                "|---|---|---|---|---|---|",
            ]
            floor_cpu = rows["floor"]["cpu_ms"]
            for name, r in rows.items():
                lines.append(
                    f"| {name} | {r['ms']:.0f} ({r['ms_min']:.0f}-{r['ms_max']:.0f}) "
                    f"| {r['ms'] / base:.2f} | {r['ms'] / floor:.2f} | {r['wire_bytes']:,.0f} "
                    f"| {r['cpu_ms']:.0f} ({r['cpu_ms'] - floor_cpu:+.0f}) |"
                )
        per_seed = results["accuracy"].get(model)
        if per_seed:
            lines += accuracy_lines(results, model, per_seed, margin)
        if results["time"]:
            lines += summary_lines(results, model)
    return "\n".join(lines)


if __name__ == "__main__":
    main()
