"""The DDP hook with three ranks, and with a failure on one rank (gloo, spawned processes).

Three ranks: every rank holds the same gradients; with the byte exchange they are bit for bit
the rank-order mean of the three ranks' bytes decoded here; with the linear exchanges they
equal the combination computed here to float32 rounding (gloo sums three ranks in an order of
its own, chunk by chunk, so the last bits may differ from a rank-order sum); ``quantizer:
none`` is bit for bit DDP's default.

Failures: bytes one rank cannot decode, a compress that raises on one rank, NaN gradients on
one rank (refused before encoding, its peer told why), a rank that exits: every remaining
rank ends with an error within the group's timeout, never hangs (the test kills the ranks
and fails after a wall limit).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import test_distributed as td
import torch

THREE = 3
#: the runs of test_distributed.SPECS made with three ranks
RUNS3 = [
    "default", "none", "topk_uniform", "lloyd_gennorm", "randomk_none", "powersgd_ef",
    "count_sketch", "uniform_ef_buckets",
]  # fmt: skip
GROUP_TIMEOUT_S = 20
WALL_S = 120


def worker3(rank: int, init_file: str, out_dir: str) -> None:
    td.start_group(rank, THREE, init_file, 120)
    results = {
        name: td.train(rank, td.SPECS[name], world=THREE, bucket_cap_mb=td.BUCKET_CAP_MB.get(name))
        for name in RUNS3
    }
    torch.save(results, Path(out_dir) / f"rank{rank}.pt")
    torch.distributed.barrier()
    torch.distributed.destroy_process_group()


@pytest.fixture(scope="module")
def runs3(tmp_path_factory) -> list[dict]:
    out = tmp_path_factory.mktemp("ddp3")
    td.spawn(worker3, THREE, out, 240)
    return [torch.load(out / f"rank{r}.pt", weights_only=False) for r in range(THREE)]


@pytest.mark.slow
def test_three_ranks_none_is_the_default_allreduce(runs3) -> None:
    for rank in range(THREE):
        for step in range(td.STEPS):
            for n, g in runs3[rank]["default"]["grads"][step].items():
                assert torch.equal(runs3[rank]["none"]["grads"][step][n], g), (rank, step, n)


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in RUNS3 if n not in ("default", "none")])
def test_three_ranks_hold_the_combination_of_what_was_sent(runs3, name) -> None:
    """Planted bugs: as test_distributed's (b'); a rank summing in its own order (then the
    ranks' gradients differ)."""
    reference = td.combined_reference(runs3, name)
    gathered = td.EXPECTED_EXCHANGE.get(name, "bytes") == "bytes"
    for step, ref in enumerate(reference):
        for rank in range(THREE):
            got = runs3[rank][name]["grads"][step]
            for n, want in ref.items():
                assert torch.equal(got[n], runs3[0][name]["grads"][step][n]), (name, rank, n)
                if gathered:
                    assert torch.equal(got[n], want), (name, rank, step, n)
                else:
                    torch.testing.assert_close(got[n], want, rtol=1e-5, atol=1e-7)
        for rank in range(THREE):
            assert runs3[rank][name]["wire_bytes"][step] == td.expected_wire_bytes(
                runs3, name, step
            )


# ------------------------------------------------------------------------------------- failures


def fault_worker(rank: int, init_file: str, out_dir: str, fault: str) -> None:
    """Train with a planted fault; write ``ok`` or the error to ``rank{r}.txt``; exit 0 (so
    that torch.multiprocessing does not kill the other ranks first)."""
    td.start_group(rank, 2, init_file, GROUP_TIMEOUT_S)
    spec = {"quantizer": "uniform", "rate": 2, "topk": 0.2, **td.SMALL}
    if fault in ("linear_raises", "nan_linear"):  # PowerSGD on its P / Q all-reduce
        spec = {"compressor": "powersgd", "rate": 2}
    model = td.tiny_net()
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    state = td.CompressionHookState(spec, model=model, seed=td.SEED, log_every=0)
    ddp.register_comm_hook(state, td.compression_hook)
    compressor = state.compressor
    if fault == "bad_bytes" and rank == 1:  # this rank's bytes truncated on their way out
        from gradcomp.distributed import exchange

        encode = exchange.encode_update
        exchange.encode_update = lambda *args: encode(*args)[:-5]
    if fault == "encode_raises" and rank == 0:

        def compress(update):
            raise RuntimeError("planted failure in compress")

        compressor.compress = compress
    if fault == "linear_raises" and rank == 0:

        def start_q(*args, **kwargs):
            raise RuntimeError("planted failure in compress")

        compressor.start_q = start_q
    message = "ok"
    try:
        for step in range(3):
            if fault == "rank_exits" and rank == 1 and step == 1:
                os._exit(0)
            x, y = td.batch(rank, step)
            if fault.startswith("nan") and rank == 0 and step == 1:
                x = x * float("nan")  # every gradient of rank 0 NaN
            torch.nn.functional.cross_entropy(ddp(x), y).backward()
    except Exception as err:
        message = f"{type(err).__name__}: {err}"
    (Path(out_dir) / f"rank{rank}.txt").write_text(message)
    os._exit(0)  # no destroy_process_group: a broken group may block in it


@pytest.mark.slow
@pytest.mark.parametrize(
    "fault, pattern",
    [
        ("bad_bytes", "rank 1|tensor|truncated|bytes"),
        ("encode_raises", "planted failure in compress|rank\\(s\\) \\[0\\]"),
        ("linear_raises", "planted failure in compress|1 of the 2 ranks"),
        ("rank_exits", ""),
        ("nan_bytes", "non-finite entries|NaN or infinite gradients"),
        ("nan_linear", "non-finite entries|NaN or infinite gradients"),
    ],
)
def test_a_failure_on_one_rank_ends_every_rank_with_an_error(tmp_path, fault, pattern) -> None:
    """Planted bugs: a rank whose compress raised skipping the sizes gather (the others then
    wait for the timeout: still an error here, but the message check fails), no timeout on
    the group (the wall limit fails the test)."""
    import re

    td.spawn(fault_worker, 2, tmp_path, WALL_S, fault)
    ranks = [1] if fault != "rank_exits" else []
    for rank in [0, *ranks]:
        text = (tmp_path / f"rank{rank}.txt").read_text()
        assert text != "ok", (fault, rank)
        assert re.search(pattern, text), (fault, rank, text[:500])
    if fault in ("encode_raises", "linear_raises"):
        assert "PeerFailedError" in (tmp_path / "rank1.txt").read_text()
        assert "planted failure" in (tmp_path / "rank0.txt").read_text()
    if fault.startswith("nan"):  # the rank with NaN names its tensor, its peer the cause
        assert "NonFiniteUpdateError" in (tmp_path / "rank0.txt").read_text()
        peer = (tmp_path / "rank1.txt").read_text()
        assert "PeerFailedError" in peer and "NaN or infinite gradients" in peer


# ------------------------------------------------------------------ training after a refusal

RECOVERY_SPECS = {
    "bytes": {"quantizer": "uniform", "rate": 2, "topk": 0.2, "error_feedback": True, **td.SMALL},
    "powersgd": {"compressor": "powersgd", "rate": 2, "error_feedback": True},
    "randomk": {"quantizer": "none", "sparsifier": "randomk", "topk": 0.3},
}
RECOVERY_STEPS, NAN_STEP = 7, 3  # steps 0..6: NaN on rank 0 at step 3, steps 4-6 train


def recovery_worker(rank: int, init_file: str, out_dir: str, name: str) -> None:
    """Train RECOVERY_STEPS steps, rank 0's batch NaN at NAN_STEP; a step whose backward
    raises is skipped (gradients zeroed, no optimizer step), as GradScaler skips an inf."""
    td.start_group(rank, 2, init_file, GROUP_TIMEOUT_S)
    model = td.tiny_net()
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    state = td.CompressionHookState(RECOVERY_SPECS[name], model=model, seed=td.SEED, log_every=0)
    ddp.register_comm_hook(state, td.compression_hook)
    opt = torch.optim.SGD(model.parameters(), lr=td.LR)
    log, params = [], []
    for step in range(RECOVERY_STEPS):
        x, y = td.batch(rank, step)
        if rank == 0 and step == NAN_STEP:
            x = x * float("nan")
        opt.zero_grad(set_to_none=True)
        try:
            torch.nn.functional.cross_entropy(ddp(x), y).backward()
        except RuntimeError as err:
            log.append(f"{step} refused: {err}")
            opt.zero_grad(set_to_none=True)
            params.append([p.detach().clone() for p in model.parameters()])
            continue
        opt.step()
        log.append(f"{step} ok")
        params.append([p.detach().clone() for p in model.parameters()])
    torch.save(
        {"log": log, "params": params, "refusals": [(s, r) for s, r, _ in state.refusals],
         "refused": [h.refused for h in state.history]},
        Path(out_dir) / f"rank{rank}.pt",
    )  # fmt: skip
    os._exit(0)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(RECOVERY_SPECS))
def test_issue54_ddp_trains_on_after_a_refused_step(tmp_path, name) -> None:
    """Issue 54: NaN at step 3 on rank 0; the step is refused on both ranks (backward raises
    the refusal, named), steps 4-6 train (parameters move), the replicas are bitwise equal
    after every step. Before: step 4 died in the reducer's INTERNAL ASSERT."""
    td.spawn(recovery_worker, 2, tmp_path, 4 * WALL_S, name)  # seven steps, a busy machine
    runs = [torch.load(tmp_path / f"rank{r}.pt", weights_only=False) for r in range(2)]
    for rank, run in enumerate(runs):
        log = run["log"]
        assert [line.split()[1] for line in log] == ["ok"] * 3 + ["refused:"] + ["ok"] * 3, (
            rank, log,
        )  # fmt: skip
        assert "NaN or infinite" in log[NAN_STEP] or "non-finite" in log[NAN_STEP], log
        assert [s for s, _ in run["refusals"]] == [NAN_STEP], run["refusals"]
        assert run["refused"] == [s == NAN_STEP for s in range(RECOVERY_STEPS)]
    a, b = runs
    for step in range(RECOVERY_STEPS):
        for pa, pb in zip(a["params"][step], b["params"][step], strict=True):
            assert torch.equal(pa, pb), (name, step)
    skipped, last = a["params"][NAN_STEP - 1], a["params"][NAN_STEP]
    assert all(torch.equal(p, q) for p, q in zip(skipped, last, strict=True))  # no step
    for step in range(NAN_STEP + 1, RECOVERY_STEPS):  # steps 4-6 train
        before, after = a["params"][step - 1], a["params"][step]
        assert any(not torch.equal(p, q) for p, q in zip(before, after, strict=True)), step
        assert all(bool(torch.isfinite(p).all()) for p in after), step
