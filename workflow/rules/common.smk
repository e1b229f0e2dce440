# Shared helpers: target lists, wildcard constraints, per-run settings.


wildcard_constraints:
    model="[a-z0-9]+",
    run=r"\d+",
    epoch=r"\d+",


CIFAR10_CACHE = "results/data/cifar10.pt"
LOSSLESS = config["lossless"]
LOSSLESS_RUN = "results/lossless/{model}/run{run}"


def lossless_runs():
    """(model, run) pairs of paper L's study."""
    return [(m, r) for m in LOSSLESS["models"] for r in range(LOSSLESS["runs"])]


def dump_paths(model="{model}", run="{run}"):
    """The per-epoch gradient dumps of one training run (epochs 1..E)."""
    base = LOSSLESS_RUN.format(model=model, run=run)
    return [f"{base}/grads/epoch{e}.safetensors" for e in range(1, LOSSLESS["epochs"] + 1)]


def train_settings(wildcards):
    """gradcomp.train.TrainSettings keyword arguments for one run (also a params: entry)."""
    return dict(
        model=wildcards.model,
        seed=int(wildcards.run),
        epochs=LOSSLESS["epochs"],
        batch_size=LOSSLESS["batch_size"],
        lr=LOSSLESS["lr"],
        momentum=LOSSLESS["momentum"],
        augment=LOSSLESS["augment"],
        dump_tensors=list(LOSSLESS["dump_tensors"].get(wildcards.model, ["*"])),
        threads=LOSSLESS["threads"],
        device=config["device"],
    )


def all_targets():
    """Everything `rule all` asks for."""
    targets = []
    for model, run in lossless_runs():
        targets += dump_paths(model, run)
        targets.append(f"{LOSSLESS_RUN.format(model=model, run=run)}/train_log.tsv")
    return targets
