# Shared helpers: target lists, wildcard constraints, per-run settings.
#
# Settings that only say *where* a job runs (threads, device) are not params: they do not
# trigger reruns, so moving the study to another machine reuses its results.

from gradcomp.compression.specs import compressor_variants, entry_kind, variant_label


wildcard_constraints:
    model="[a-z0-9]+",
    run=r"\d+",
    epoch=r"\d+",
    compressor="[a-z][a-z0-9]*",
    rate=r"\d+",
    m=r"\d+",
    seed=r"\d+",


CIFAR10_CACHE = "results/data/cifar10.pt"
CIFAR10_SUMMARY = "results/data/cifar10.json"
DEFAULT_RESOURCES = {"mem_mb": 4000, "runtime": 60, "gpu": 0}
FIGURES = config["figures"]


def rule_resource(rule_name, key):
    """Config resources.<rule>.<key> (mem_mb, runtime in minutes, gpu), else the default."""
    return config["resources"].get(rule_name, {}).get(key, DEFAULT_RESOURCES[key])


# ---- paper L ------------------------------------------------------------------------

LOSSLESS = config["lossless"]
LOSSLESS_RUN = "results/lossless/{model}/run{run}"
POSITIONS_TSV = "results/lossless/{model}/positions.tsv"

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


def lossless_runs():
    """(model, run) pairs of paper L's study."""
    return [(m, r) for m in LOSSLESS["models"] for r in range(LOSSLESS["runs"])]


def run_dir(model, run):
    """Folder of one paper-L training run."""
    return LOSSLESS_RUN.format(model=model, run=run)


def dump_paths(model="{model}", run="{run}"):
    """The per-epoch gradient dumps of one training run (epochs 1..E)."""
    return [f"{run_dir(model, run)}/grads/epoch{e}.safetensors" for e in range(1, LOSSLESS["epochs"] + 1)]


def model_runs_file(wildcards, name):
    """``name`` (fits.tsv, coding.tsv) of every run of the wildcard's model."""
    return [f"{run_dir(wildcards.model, r)}/{name}" for r in range(LOSSLESS["runs"])]


def figure_run_file(wildcards, name):
    """A file of the run shown in L1/L2 (config figures.lossless_run)."""
    return f"{run_dir(wildcards.model, FIGURES['lossless_run'])}/{name}"


def figure_epochs():
    """The early, middle and last epoch shown in L1."""
    last = LOSSLESS["epochs"]
    return sorted({1, (last + 1) // 2, last})


def train_settings(wildcards):
    """gradcomp.lossless.train.TrainSettings keyword arguments of one run (threads and
    device are added by the script)."""
    return dict(
        model=wildcards.model,
        seed=int(wildcards.run),
        epochs=LOSSLESS["epochs"],
        batch_size=LOSSLESS["batch_size"],
        lr=LOSSLESS["lr"],
        loss_reduction=LOSSLESS["loss_reduction"],
        momentum=LOSSLESS["momentum"],
        augment=LOSSLESS["augment"],
        dump_tensors=list(LOSSLESS["dump_tensors"].get(wildcards.model, ["*"])),
    )


def lossless_targets():
    """L1-L5 per model, as PNG and PDF, T1 and T2, and every run's dumps and log."""
    out = []
    for model in LOSSLESS["models"]:
        for fig in ("L1", "L2", "L3", "L4", "L5"):
            out += [f"results/figures/{fig}_{model}.{ext}" for ext in ("png", "pdf")]
    out += [f"results/tables/{t}.{ext}" for t in ("T1", "T2") for ext in ("tsv", "md")]
    for model, run in lossless_runs():
        out += dump_paths(model, run)
        out.append(f"{run_dir(model, run)}/train_log.tsv")
    return out


# ---- paper Y ------------------------------------------------------------------------

LOSSY = config["lossy"]
LOSSY_RUN = "results/lossy/{model}/{compressor}/R{rate}_M{m}/seed{seed}"
# One checked spec per (name, rate, M): gradcomp.compression.specs is the only place that
# knows the compressor keys (the config was already validated with it).
_VARIANTS = compressor_variants(LOSSY)
VARIANTS = {(v.name, v.rate, v.M): v.spec for v in _VARIANTS}
QUANTIZER_OF = {entry["name"]: entry_kind(entry) for entry in LOSSY["compressors"]}

_y4 = FIGURES["y4"]
_y4_full = LOSSY["full_runs"] is None or (
    _y4["compressor"] in LOSSY["full_runs"]
    or variant_label(_y4["compressor"], _y4["rate"], _y4["M"]) in LOSSY["full_runs"]
)
if (_y4["compressor"], _y4["rate"], _y4["M"]) not in VARIANTS or not _y4_full:
    raise ValueError(
        f"config key 'figures.y4': {_y4['compressor']} R{_y4['rate']} M{_y4['M']} is not a "
        f"configured compressor variant with full runs (lossy.compressors gives "
        f"{sorted(VARIANTS)}, lossy.full_runs {LOSSY['full_runs']})"
    )


ONE_ROUND = LOSSY["one_round"]
_reference = [v for v in VARIANTS if v[0] == ONE_ROUND["reference"]]
if len(_reference) != 1:
    raise ValueError(
        f"config key 'lossy.one_round.reference': {ONE_ROUND['reference']!r} must name a "
        f"compressor of lossy.compressors with exactly one variant (found {_reference})"
    )
BASELINE = LOSSY["baseline"]
if BASELINE not in QUANTIZER_OF:
    raise ValueError(
        f"config key 'lossy.baseline': {BASELINE!r} is not a compressor of lossy.compressors "
        f"({', '.join(QUANTIZER_OF)})"
    )
if len({r for c, r, _ in VARIANTS if c == BASELINE}) < 2:
    raise ValueError(
        f"config key 'lossy.baseline': {BASELINE!r} needs two or more rates, so that T5 has "
        "a rate curve to compare the others with"
    )


def _sent_the_same_way(spec):
    """What R means for a spec: bits per kept value of one sparsifier and keep fraction."""
    sparsifier = spec.get("sparsifier") or ("topk" if spec.get("topk") else "none")
    return ("quantizer" in spec, sparsifier, spec.get("topk"), spec.get("topk_budget_percent"))


_base_way = {_sent_the_same_way(s) for (c, _, _), s in VARIANTS.items() if c == BASELINE}
#: Compressors paired with the baseline at the same R in T3/T4 (R means the same thing).
PAIRABLE = sorted(
    name
    for name in QUANTIZER_OF
    if name != BASELINE
    and {_sent_the_same_way(s) for (c, _, _), s in VARIANTS.items() if c == name} == _base_way
)


WARM_START = LOSSY["warm_start"]
WARM_START_FILE = "results/lossy/{model}/warm_start.pt"
if WARM_START is not None and not config["data"].get("pretrain_subset"):
    raise ValueError(
        "config key 'lossy.warm_start' needs a pretraining pool: set data.pretrain_subset "
        "(images outside data.train_subset), or lossy.warm_start: null to start from scratch"
    )


def warm_start_input(wildcards):
    """The warm start file of the wildcard's model, or nothing when the study starts from
    scratch (lossy.warm_start: null)."""
    return {} if WARM_START is None else {"warm_start": WARM_START_FILE.format(model=wildcards.model)}


def warm_start_settings(wildcards):
    """gradcomp.lossy.warm_start.WarmStartSettings keyword arguments."""
    return dict(model=wildcards.model, **WARM_START)


def one_round_specs(wildcards):
    """Label ({name}/R{rate}_M{M}) -> spec of every compressor variant, for the one-round study."""
    return {v.label: v.spec for v in _VARIANTS}


def lossy_dir(model, compressor, rate, m, seed):
    """Folder of one federated run."""
    return LOSSY_RUN.format(model=model, compressor=compressor, rate=rate, m=m, seed=seed)


FULL_RUNS = LOSSY["full_runs"] if LOSSY["full_runs"] is not None else list(QUANTIZER_OF)
_LABELS = {variant_label(c, r, m): (c, r, m) for c, r, m in VARIANTS}
_unknown = sorted(set(FULL_RUNS) - set(QUANTIZER_OF) - set(_LABELS))
if _unknown:
    raise ValueError(
        f"config key 'lossy.full_runs': {_unknown} are neither compressors of "
        f"lossy.compressors ({', '.join(QUANTIZER_OF)}) nor variant labels "
        f"({', '.join(_LABELS)})"
    )


def has_full_runs(c, r, m):
    """Whether variant (c, r, m) gets full federated runs (lossy.full_runs names its
    compressor or its label)."""
    return c in FULL_RUNS or variant_label(c, r, m) in FULL_RUNS


def lossy_run_files(model, name):
    """One file (rounds.tsv, uplink.tsv, ...) of every full federated run of ``model``."""
    return [
        f"{lossy_dir(model, c, r, m, s)}/{name}"
        for c, r, m in VARIANTS
        if has_full_runs(c, r, m)
        for s in LOSSY["seeds"]
    ]


def compressor_spec(wildcards):
    """The gradcomp.compression.build_compressor spec of one federated run."""
    return VARIANTS[(wildcards.compressor, int(wildcards.rate), int(wildcards.m))]


def federated_settings(wildcards):
    """gradcomp.lossy.federated.FederatedSettings keyword arguments of one run (threads and
    device are added by the script)."""
    return dict(
        model=wildcards.model,
        seed=int(wildcards.seed),
        n_users=LOSSY["users"],
        rounds=LOSSY["rounds"],
        local_epochs=LOSSY["local_epochs"],
        batch_size=LOSSY["batch_size"],
        lr=LOSSY["lr"],
        validation_fraction=LOSSY["validation_fraction"],
        validation_split=LOSSY["validation_split"],
        optimizer_state=LOSSY["optimizer_state"],
    )


def y4_snapshot(wildcards):
    """Update snapshot of the run figures Y4 and Y5 show (figures.y4, first seed)."""
    run = lossy_dir(wildcards.model, _y4["compressor"], _y4["rate"], _y4["M"], LOSSY["seeds"][0])
    return f"{run}/update.safetensors"


def one_round_files(model):
    """The one-round study's table of every seed of ``model``."""
    return [f"results/lossy/{model}/one_round/seed{s}.tsv" for s in ONE_ROUND["seeds"]]


def one_round_settings(wildcards):
    """federated_settings with the one-round study's number of rounds."""
    return {**federated_settings(wildcards), "rounds": ONE_ROUND["rounds"]}


def lossy_targets():
    """Y1-Y7 per model, as PNG and PDF, T3-T5."""
    out = []
    for model in LOSSY["models"]:
        for fig in ("Y1", "Y2", "Y3", "Y4", "Y5", "Y6", "Y7"):
            out += [f"results/figures/{fig}_{model}.{ext}" for ext in ("png", "pdf")]
    out += [f"results/tables/{t}.{ext}" for t in ("T3", "T4", "T5") for ext in ("tsv", "md")]
    return out


COSTS = [f"results/tables/costs.{ext}" for ext in ("tsv", "md")]


def all_targets():
    """Everything `rule all` asks for: both papers' figures and tables, and what they cost."""
    return lossless_targets() + lossy_targets() + COSTS
