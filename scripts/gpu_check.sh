#!/usr/bin/env bash
# What paper scale costs on one GPU, measured in under 8 minutes, before a cluster is paid:
#
#   scripts/gpu_check.sh CIFAR10_PATH [--dry-run | --tiny] [--workdir DIR]
#
#  1. the CUDA tests (compressors and whole-model coding's symbol counts on the device equal
#     the CPU's);
#  2. one epoch of each paper-L model of config/paper.yaml (resnet50v2, densenet121, vgg16)
#     on all 50,000 training images, with its gradient dumps, through the workflow's
#     train_lossless rule;
#  3. one federated round of paper Y's cnn (2 users, 3 local epochs: paper.yaml's);
#  4. the cost table of those jobs (rule, model, images, seconds, MB from their benchmark
#     files): DIR/results/tables/costs.{tsv,md};
#  5. the DDP hook on a one-rank NCCL group, one GPU, each of its exchanges
#     (scripts/ddp_hook_check.py; written without a GPU, untested on one: docs/distributed.md).
#
# CIFAR10_PATH: a torchvision cifar-10-batches-py folder or an image-folder tree
# (train/<class>/*, test/<class>/*), as config key cifar10. The jobs run under
# config/paper.yaml with a small overlay written to DIR/gpu-check.yaml (1 run of 1 epoch,
# 1 seed of 1 round, device cuda); DIR defaults to ./gpu-check.
#   --dry-run  only plan the jobs (snakemake -n) and print step 5's command: no GPU, no
#              data read.
#   --tiny     the same jobs on CPU on 100 / 20 images of CIFAR10_PATH, step 5 with gloo on
#              the CPU (checks this script end to end without a GPU; tests/test_costs.py
#              runs it).
# PYTHON (default: the repository's .venv/bin/python, else python3) runs pytest and
# snakemake.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-}"
if [ -z "$PYTHON" ]; then
    if [ -x "$REPO/.venv/bin/python" ]; then PYTHON="$REPO/.venv/bin/python"; else PYTHON=python3; fi
fi

usage() { sed -n '2,25p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }
log() { echo "gpu_check: $*" >&2; }

DATA="" MODE=gpu WORK="$PWD/gpu-check"
while [ $# -gt 0 ]; do
    case "$1" in
        --dry-run) MODE=dry ;;
        --tiny) MODE=tiny ;;
        --workdir) WORK="$2"; shift ;;
        -h|--help) usage 0 ;;
        -*) log "unknown option $1"; usage ;;
        *) [ -z "$DATA" ] || { log "one CIFAR10_PATH only"; usage; }; DATA="$1" ;;
    esac
    shift
done
[ -n "$DATA" ] || { log "missing CIFAR10_PATH (a cifar-10-batches-py folder or image-folder tree)"; usage; }
if [ "$MODE" != dry ] && [ ! -d "$DATA" ]; then
    log "CIFAR10_PATH $DATA is not a folder"
    exit 2
fi
DATA="$(cd "$DATA" 2>/dev/null && pwd || echo "$DATA")"
mkdir -p "$WORK"
WORK="$(cd "$WORK" && pwd)"

MODELS=(resnet50v2 densenet121 vgg16)
if [ "$MODE" = tiny ]; then
    DEVICE=cpu SUBSETS="train_subset: 100, test_subset: 20" THREADS=1
else
    DEVICE=cuda SUBSETS="train_subset: null, test_subset: null" THREADS=8
fi
cat > "$WORK/gpu-check.yaml" <<EOF
# written by scripts/gpu_check.sh ($MODE): on top of config/paper.yaml (whose
# lossless.coding.stream, auto, has the training jobs code every tensor: docs/cluster.md)
cifar10: $DATA
data: {$SUBSETS, pretrain_subset: null}
device: $DEVICE
lossless: {runs: 1, epochs: 1, threads: $THREADS}
lossy: {seeds: [0], rounds: 1, threads: $THREADS}
EOF

TARGETS=()
for m in "${MODELS[@]}"; do TARGETS+=("results/lossless/$m/run0/train_log.tsv"); done
TARGETS+=("results/lossy/cnn/none/R32_M0/seed0/rounds.tsv")
SNAKE=("$PYTHON" -m snakemake -s "$REPO/Snakefile" --directory "$WORK" "${TARGETS[@]}"
       --configfile "$REPO/config/paper.yaml" "$WORK/gpu-check.yaml" --cores "$THREADS")
export PYTHONPATH="$REPO/src${PYTHONPATH:+:$PYTHONPATH}"

HOOK_DEVICE=cuda
[ "$MODE" = tiny ] && HOOK_DEVICE=cpu
HOOK=("$PYTHON" "$REPO/scripts/ddp_hook_check.py" --device "$HOOK_DEVICE")

if [ "$MODE" = dry ]; then
    "${SNAKE[@]}" -n
    log "5/5 would run: OMP_NUM_THREADS=1 ${HOOK[*]}"
    exit 0
fi

start=$SECONDS
if [ "$MODE" = gpu ]; then
    "$PYTHON" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' || {
        log "torch sees no CUDA device (use --tiny for the CPU check)"; exit 1; }
    log "1/5 CUDA tests"
    (cd "$REPO" && "$PYTHON" -m pytest -q -x -k cuda tests/test_compressors.py tests/test_field_compressors.py \
        tests/test_stream_counts.py)
else
    log "1/5 CUDA tests: skipped (--tiny)"
fi
log "2-3/5 one epoch of ${MODELS[*]}, one federated round of the cnn ($((SECONDS - start)) s so far)"
"${SNAKE[@]}"
log "4/5 cost table ($((SECONDS - start)) s so far)"
"$PYTHON" - "$WORK" "${MODELS[@]}" cnn <<'EOF'
import json
import sys
from pathlib import Path

from gradcomp.costs import table_costs

work, models = Path(sys.argv[1]), sys.argv[2:]
summary = json.loads((work / "results/data/cifar10.json").read_text())
table = table_costs(
    work / "results/benchmarks", work / "results/tables/costs.tsv",
    work / "results/tables/costs.md", models=models, images=summary["n_train"],
    title=f"gpu_check: one epoch per paper-L model, one federated round of the cnn, "
    f"{summary['n_train']} training images",
)
print(table.to_string(index=False))
EOF
log "5/5 the DDP hook on a one-rank $([ "$HOOK_DEVICE" = cuda ] && echo NCCL || echo gloo) group ($((SECONDS - start)) s so far)"
OMP_NUM_THREADS=1 "${HOOK[@]}"
log "done in $((SECONDS - start)) s: $WORK/results/tables/costs.md"
