# Shared helpers: target lists, wildcard constraints, per-run settings.
#
# Settings that only say *where* a job runs (threads, device) are not params: they do not
# trigger reruns, so moving the study to another machine reuses its results. The device is
# a string resource (DEVICE) for that reason.

# Everything here reads the study object (gradcomp.study, built and checked once in the
# Snakefile; the config is read nowhere else). Params are its pieces as plain data
# (gradcomp.study.frozen.plain): checked specs that a job rebuilds without checking again.

import dataclasses
from types import SimpleNamespace

from gradcomp.compression.specs import variant_label
from gradcomp.plotting.standard import internal_names
from gradcomp.study.frozen import plain


wildcard_constraints:
    model="[a-z0-9]+",
    run=r"\d+",
    epoch=r"\d+",
    compressor="[a-z][a-z0-9]*",
    rate=r"\d+",
    m=r"\d+",
    seed=r"\d+",
    ws=r"\d+|none",


CIFAR10_CACHE = "results/data/cifar10.pt"
CIFAR10_SUMMARY = "results/data/cifar10.json"
FIGURES = STUDY.figures
#: Where the training jobs run (config device): a resource, not a param.
DEVICE = STUDY.device


def rule_resource(rule_name, key):
    """Config resources.<rule>.<key> (mem_mb, runtime in minutes, gpu), else the default
    (gradcomp.study.DEFAULT_RESOURCES): the config is the one place resources are set."""
    return STUDY.resource(rule_name, key)


# ---- paper L ------------------------------------------------------------------------

LOSSLESS = STUDY.lossless
LOSSLESS_RUN = "results/lossless/{model}/run{run}"
POSITIONS_TSV = "results/lossless/{model}/positions.tsv"

# Whole-model coding in the training job (lossless.coding.stream): with any model streaming,
# every training job declares coded_all.tsv (a header only where its model does not stream)
# and code_lossless reads it; with none (the default config) the DAG is as without it. The
# training job's settings, streamed coding included: LOSSLESS.train_settings (lossless.smk).
ANY_STREAMED = any(LOSSLESS.streamed.values())


def lossless_runs():
    """(model, run) pairs of paper L's study."""
    return [(m, r) for m in LOSSLESS.models for r in range(LOSSLESS.runs)]


def run_dir(model, run):
    """Folder of one paper-L training run."""
    return LOSSLESS_RUN.format(model=model, run=run)


def dump_paths(model="{model}", run="{run}"):
    """The per-epoch gradient dumps of one training run (epochs 1..E)."""
    return [f"{run_dir(model, run)}/grads/epoch{e}.safetensors" for e in range(1, LOSSLESS.epochs + 1)]


def model_runs_file(wildcards, name):
    """``name`` (fits.tsv, coding.tsv) of every run of the wildcard's model."""
    return [f"{run_dir(wildcards.model, r)}/{name}" for r in range(LOSSLESS.runs)]


def figure_run_file(wildcards, name):
    """A file of the run shown in L1/L2 (config figures.lossless_run; they show its last
    epoch)."""
    return f"{run_dir(wildcards.model, FIGURES.lossless_run)}/{name}"


def coded_all(model="{model}", run="{run}"):
    """The training job's coding rows of every tensor (``[]`` when no model streams)."""
    return [f"{run_dir(model, run)}/coded_all.tsv"] if ANY_STREAMED else []


def lossless_targets():
    """L1-L5 and L5b per model, as PNG and PDF, T1 and T2, and every run's dumps and log."""
    out = []
    for model in LOSSLESS.models:
        for fig in ("L1", "L2", "L3", "L4", "L5", "L5b"):
            out += [f"results/figures/{fig}_{model}.{ext}" for ext in ("png", "pdf")]
    out += [f"results/tables/{t}.{ext}" for t in ("T1", "T2") for ext in ("tsv", "md")]
    for model, run in lossless_runs():
        out += dump_paths(model, run)
        out.append(f"{run_dir(model, run)}/train_log.tsv")
    return out


# ---- paper Y ------------------------------------------------------------------------

LOSSY = STUDY.lossy
#: The variant label with wildcards, {compressor}/R{rate}_M{m} (built by variant_label).
VARIANT_WILDCARDS = variant_label("{compressor}", "{rate}", "{m}")
LOSSY_RUN = f"results/lossy/{{model}}/{VARIANT_WILDCARDS}/seed{{seed}}"
#: Compressor name -> what builds it (its quantizer or compressor kind, or "class").
COMPRESSOR_KINDS = LOSSY.compressor_kinds
BASELINE = LOSSY.baseline
#: Compressors paired with the baseline at the same R in T3/T4 (R means the same thing).
PAIRABLE = list(LOSSY.pairable)
WARM_START = LOSSY.warm_start
#: One warm start per seed (lossy.warm_start.seeds); the full runs start from the first.
WARM_STARTS = [str(w) for w in LOSSY.warm_start_seeds] or ["none"]
WARM_START_FILE = "results/lossy/{model}/warm_start/ws{ws}.pt"
DISTORTION = LOSSY.distortion_study


WARM_START_COMMON = LOSSY.warm_start_common
#: The one pre-training every warm start continues (lossy.warm_start.common).
WARM_START_COMMON_FILE = "results/lossy/{model}/warm_start/common.pt"


def warm_start_input(wildcards):
    """The warm start file of the wildcard's model and warm start (the first for a full
    run, which has no ws wildcard), or nothing when the study starts from scratch
    (lossy.warm_start: null)."""
    ws = getattr(wildcards, "ws", WARM_STARTS[0])
    if WARM_START is None or ws == "none":
        return {}
    return {"warm_start": WARM_START_FILE.format(model=wildcards.model, ws=ws)}


def warm_start_common_input(wildcards):
    """The common pre-training a warm start continues, or nothing (lossy.warm_start.common: null)."""
    if WARM_START_COMMON is None:
        return {}
    return {"initial": WARM_START_COMMON_FILE.format(model=wildcards.model)}


def warm_start_settings(wildcards):
    """gradcomp.lossy.warm_start.WarmStartSettings keyword arguments of a warm start."""
    return dict(model=wildcards.model, seed=int(wildcards.ws), test_images=LOSSY.test_images, **plain(WARM_START), **STUDY.model_class(wildcards.model))


def warm_start_common_settings(wildcards):
    """WarmStartSettings keyword arguments of the common pre-training: the warm starts' batch
    size and lr, its own epochs and seed, over the whole pool."""
    own = plain(WARM_START_COMMON)
    return dict(model=wildcards.model, seed=own["seed"], epochs=own["epochs"], batch_size=WARM_START["batch_size"], lr=WARM_START["lr"], test_images=LOSSY.test_images, **STUDY.model_class(wildcards.model))


def one_round_variants(wildcards):
    """The variants the one-round study runs under the wildcard's warm start (every variant
    under the first, the primary pass elsewhere): compressor, rate, M and checked spec (plain)."""
    ws = None if wildcards.ws == "none" else int(wildcards.ws)
    run = set(LOSSY.one_round_labels(ws))
    return [
        dict(compressor=v.name, rate=v.rate, M=v.M, spec=LOSSY.model_spec(wildcards.model, v.label).plain())
        for v in LOSSY.variants
        if v.label in run
    ]


def lossy_dir(model, compressor, rate, m, seed):
    """Folder of one federated run."""
    return LOSSY_RUN.format(model=model, compressor=compressor, rate=rate, m=m, seed=seed)


def lossy_run_files(model, name):
    """One file (rounds.tsv, uplink.tsv, ...) of every full federated run of ``model``: the
    variants (config order) that lossy.full_runs names by compressor or label."""
    return [
        f"{lossy_dir(model, v.name, v.rate, v.M, s)}/{name}"
        for v in LOSSY.variants
        if LOSSY.has_full_runs(v.name, v.rate, v.M)
        for s in LOSSY.seeds
    ]


def compressor_spec(wildcards):
    """The checked spec (plain) of one federated run, with its model's min_entries."""
    label = variant_label(wildcards.compressor, int(wildcards.rate), int(wildcards.m))
    return LOSSY.model_spec(wildcards.model, label).plain()


def run_identity(wildcards):
    """The compressor, rate, M and warm start (its seed, -1 from scratch) that a federated run
    writes into its tables (model and seed come with its settings)."""
    first = WARM_STARTS[0]
    return dict(
        compressor=wildcards.compressor,
        rate=int(wildcards.rate),
        M=int(wildcards.m),
        warm_start=-1 if first == "none" else int(first),
    )


def federated_settings(wildcards):
    """gradcomp.lossy.federated.FederatedSettings keyword arguments of one run (threads and
    device are added by the script)."""
    f = LOSSY.federation
    return dict(
        model=wildcards.model,
        seed=int(wildcards.seed),
        n_users=f["users"],
        rounds=f["rounds"],
        local_epochs=f["local_epochs"],
        batch_size=f["batch_size"],
        lr=LOSSY.model_setting(wildcards.model, "lr"),
        validation_fraction=f["validation_fraction"],
        validation_split=f["validation_split"],
        optimizer_state=f["optimizer_state"],
        test_images=f["test_images"],
        **STUDY.model_class(wildcards.model),
    )


def y4_tensors(wildcards):
    """The tensors Y4 shows for the wildcard's model (figures.model_tensors.<model>, else
    figures.y4.tensors)."""
    return list(FIGURES.model_tensors.get(wildcards.model, FIGURES.y4_tensors))


def y5_tensor(wildcards):
    """The tensor the distortion study (Y5) quantizes for the wildcard's model
    (lossy.distortion_study.model_tensor.<model>, else lossy.distortion_study.tensor)."""
    return DISTORTION.model_tensor.get(wildcards.model, DISTORTION.tensor)


def y4_snapshot(wildcards):
    """Update snapshot of lossy.distortion_study's run (first seed), which Y4 shows and the
    distortion study (Y5) quantizes."""
    d = DISTORTION
    run = lossy_dir(wildcards.model, d.compressor, d.rate, d.M, LOSSY.seeds[0])
    return f"{run}/update.safetensors"


def one_round_files(model):
    """The one-round study's table of every warm start of ``model`` (its seeds inside)."""
    return [f"results/lossy/{model}/one_round/ws{w}.tsv" for w in WARM_STARTS]


def one_round_settings(wildcards):
    """federated_settings with the one-round study's number of rounds, without the seed
    (each trajectory's comes from its warm start and nested seed)."""
    settings = federated_settings(SimpleNamespace(model=wildcards.model, seed=0))
    settings.pop("seed")
    return {**settings, "rounds": LOSSY.one_round_rounds}


def compressor_kept_sets():
    """Compressor name -> the kept set of its first variant (Y7's parts)."""
    out = {}
    for v in LOSSY.variants:
        out.setdefault(v.name, LOSSY.kept_sets[v.label])
    return out


def variant_specs():
    """Variant label -> its checked spec (plain): the paper-Y figures name each variant from
    it (gradcomp.names.variant), never by its config name."""
    return {v.label: v.spec.plain() for v in LOSSY.variants}


def verdict_questions():
    """The primary questions as plain dicts (gradcomp.statistics.verdicts)."""
    return [dataclasses.asdict(q) for q in LOSSY.verdicts.questions]


def lossy_targets():
    """Y1-Y6, Y7a-Y7c and Y8 per model, as PNG and PDF, T3-T6 and the verdicts."""
    out = []
    for model in LOSSY.models:
        for fig in ("Y1", "Y2", "Y3", "Y4", "Y5", "Y6", "Y7a", "Y7b", "Y7c", "Y8"):
            out += [f"results/figures/{fig}_{model}.{ext}" for ext in ("png", "pdf")]
    out += [f"results/tables/{t}.{ext}" for t in ("T3", "T4", "T5", "T6") for ext in ("tsv", "md")]
    out += [f"results/tables/verdicts.{ext}" for ext in ("tsv", "md")]
    return out


COSTS = [f"results/tables/costs.{ext}" for ext in ("tsv", "md")]
FIGURE_MANIFEST = "results/figures/manifest.tsv"


def figure_pngs():
    """Every figure PNG of both papers' targets (the figure manifest's rows)."""
    return [
        t for t in lossless_targets() + lossy_targets()
        if t.startswith("results/figures/") and t.endswith(".png")
    ]


def all_targets():
    """Every default target: both papers' figures and tables, their answers, what they
    cost, the figures' manifest."""
    answers = ["results/tables/answers.md"]
    return lossless_targets() + lossy_targets() + answers + COSTS + [FIGURE_MANIFEST]
