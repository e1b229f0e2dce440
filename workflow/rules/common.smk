# Shared helpers: target lists, wildcard constraints, per-run settings.


wildcard_constraints:
    model="[a-z0-9]+",
    run=r"\d+",
    epoch=r"\d+",
    compressor="[a-z][a-z0-9]*",
    rate=r"\d+",
    m=r"\d+",
    seed=r"\d+",


CIFAR10_CACHE = "results/data/cifar10.pt"
LOSSLESS = config["lossless"]
LOSSLESS_RUN = "results/lossless/{model}/run{run}"


def lossless_runs():
    """(model, run) pairs of paper L's study."""
    return [(m, r) for m in LOSSLESS["models"] for r in range(LOSSLESS["runs"])]


def run_dir(model, run):
    """Folder of one paper-L training run."""
    return LOSSLESS_RUN.format(model=model, run=run)


def dump_paths(model="{model}", run="{run}"):
    """The per-epoch gradient dumps of one training run (epochs 1..E)."""
    return [f"{run_dir(model, run)}/grads/epoch{e}.safetensors" for e in range(1, LOSSLESS["epochs"] + 1)]


def figure_run_file(wildcards, name):
    """A file of the run shown in L1/L2 (config figures.lossless_run)."""
    return f"{run_dir(wildcards.model, FIGURES['lossless_run'])}/{name}"


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
    targets = lossless_figures() + lossy_figures()
    for model, run in lossless_runs():
        targets += dump_paths(model, run)
        targets.append(f"{run_dir(model, run)}/train_log.tsv")
    return targets


FIGURES = config["figures"]
DEFAULT_RESOURCES = {"mem_mb": 4000, "runtime": 60, "gpu": 0}


def rule_resource(rule_name, key):
    """Config resources.<rule>.<key> (mem_mb, runtime in minutes, gpu), else the default."""
    return config["resources"].get(rule_name, {}).get(key, DEFAULT_RESOURCES[key])
CIFAR10_SUMMARY = "results/data/cifar10.json"
if FIGURES["lossless_run"] >= LOSSLESS["runs"]:
    raise ValueError(
        f"config key 'figures.lossless_run': {FIGURES['lossless_run']} is not a run "
        f"(lossless.runs = {LOSSLESS['runs']})"
    )


for key in ("families", "kinds"):
    missing = set(LOSSLESS["coding"][key]) - set(LOSSLESS["fit"][key])
    if missing:
        raise ValueError(
            f"config key 'lossless.coding.{key}': {sorted(missing)} not in lossless.fit.{key}"
        )


def figure_epochs():
    """The early, middle and last epoch shown in L1."""
    last = LOSSLESS["epochs"]
    return sorted({1, (last + 1) // 2, last})


def lossless_figures():
    """L1-L4 per model, as PNG and PDF, and T2."""
    out = []
    for model in LOSSLESS["models"]:
        for fig in ("L1", "L2", "L3", "L4", "L5"):
            out += [f"results/figures/{fig}_{model}.{ext}" for ext in ("png", "pdf")]
    out += [f"results/tables/{t}.{ext}" for t in ("T1", "T2") for ext in ("tsv", "md")]
    return out


# ---- paper Y ------------------------------------------------------------------------

LOSSY = config["lossy"]
COMPRESSORS = {spec["name"]: spec for spec in LOSSY["compressors"]}
if len(COMPRESSORS) != len(LOSSY["compressors"]):
    raise ValueError("config key 'lossy.compressors': names must be unique")
LOSSY_RUN = "results/lossy/{model}/{compressor}/R{rate}_M{m}/seed{seed}"
IMPLICIT_RATE = {"none": 32, "float16": 16}


def compressor_variants():
    """(name, rate, M) of every configured compressor; rate 32/16 for none/float16."""
    variants = []
    for i, (name, spec) in enumerate(COMPRESSORS.items()):
        quantizer = spec["quantizer"]
        key = f"lossy.compressors.{i}"
        if quantizer in IMPLICIT_RATE:
            if "rates" in spec or "M" in spec:
                raise ValueError(f"config key '{key}': {quantizer} takes no rates or M")
            variants.append((name, IMPLICIT_RATE[quantizer], 0))
            continue
        if "rates" not in spec:
            raise ValueError(f"config key '{key}.rates': required for quantizer {quantizer}")
        if (quantizer == "lloyd") != ("family" in spec):
            raise ValueError(f"config key '{key}.family': required for lloyd quantizers, and only there")
        if "M" in spec and quantizer != "lloyd":
            raise ValueError(f"config key '{key}.M': only lloyd quantizers take M")
        variants += [(name, r, m) for r in spec["rates"] for m in spec.get("M", [0])]
    return variants


COMPRESSOR_VARIANTS = compressor_variants()
_y4 = FIGURES["y4"]
if (_y4["compressor"], _y4["rate"], _y4["M"]) not in COMPRESSOR_VARIANTS:
    raise ValueError(
        f"config key 'figures.y4': {_y4} is not a configured compressor variant "
        f"(lossy.compressors gives {COMPRESSOR_VARIANTS})"
    )
if FIGURES["y5_tensor"] not in LOSSY["histogram_tensors"]:
    raise ValueError("config key 'figures.y5_tensor': must be one of lossy.histogram_tensors")


def lossy_dir(model, compressor, rate, m, seed):
    """Folder of one federated run."""
    return LOSSY_RUN.format(model=model, compressor=compressor, rate=rate, m=m, seed=seed)


def lossy_run_files(model, name):
    """One file (rounds.tsv, uplink.tsv, ...) of every federated run of ``model``."""
    return [
        f"{lossy_dir(model, c, r, m, s)}/{name}"
        for c, r, m in COMPRESSOR_VARIANTS
        for s in LOSSY["seeds"]
    ]


def compressor_spec(wildcards):
    """The gradcomp.compressors.build_compressor spec of one federated run."""
    spec = COMPRESSORS[wildcards.compressor]
    dense = spec.get("topk") == 1.0  # keep everything: no top-K, no positions to send
    return {
        "name": wildcards.compressor,
        "quantizer": spec["quantizer"],
        "family": spec.get("family"),
        "rate": int(wildcards.rate),
        "M": int(wildcards.m),
        "topk": None if dense else spec.get("topk", LOSSY["topk"]),
        "topk_budget_percent": None if dense else LOSSY["topk_budget_percent"],
        "min_entries": LOSSY["min_entries"],
        "error_feedback": LOSSY["error_feedback"],
        "memory_decay": LOSSY["memory_decay"],
        "slip": LOSSY["slip"],
    }


def federated_settings(wildcards):
    """gradcomp.federated.FederatedSettings keyword arguments of one run."""
    return dict(
        model=wildcards.model,
        seed=int(wildcards.seed),
        n_users=LOSSY["users"],
        rounds=LOSSY["rounds"],
        local_epochs=LOSSY["local_epochs"],
        batch_size=LOSSY["batch_size"],
        lr=LOSSY["lr"],
        validation_fraction=LOSSY["validation_fraction"],
        threads=LOSSY["threads"],
        device=config["device"],
        histogram_tensors=list(LOSSY["histogram_tensors"]),
    )


def y4_histograms(wildcards):
    """Histogram file of the run figure Y4 (and Y5) shows."""
    y4 = FIGURES["y4"]
    return f"{lossy_dir(wildcards.model, y4['compressor'], y4['rate'], y4['M'], LOSSY['seeds'][0])}/histograms.safetensors"


def lossy_figures():
    """Y1-Y5 per model, as PNG and PDF, and T3."""
    out = []
    for model in LOSSY["models"]:
        for fig in ("Y1", "Y2", "Y3", "Y4", "Y5"):
            out += [f"results/figures/{fig}_{model}.{ext}" for ext in ("png", "pdf")]
    out += [f"results/tables/T3.{ext}" for ext in ("tsv", "md")]
    return out
