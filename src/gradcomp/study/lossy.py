"""Paper Y's part of the study: the ``lossy`` section as typed, frozen objects and its checks.

:func:`compressor_variants` expands the section's compressor entries into one checked spec
per (name, rate, M) (:func:`gradcomp.compression.entries.expand_entries`, its errors
re-raised naming the config key, ``lossy.compressors.2.rates``); :class:`LossySection` holds
them with the federation's settings, :class:`DistortionStudy` Y5's study. :func:`build_lossy`
runs every check that relates two ``lossy`` keys (the baseline's rates, the one-round
reference, the warm start's pretraining pool, ...; the questions' in
:mod:`gradcomp.study.questions`) and appends each failure, naming its key, to the caller's
list; :func:`gradcomp.study.build_study` reports them all at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from gradcomp import names
from gradcomp.compression.entries import EntryError, Variant, entry_kind, expand_entries
from gradcomp.compression.specs import CheckedSpec, SpecError, check_spec, variant_label
from gradcomp.errors import ConfigError
from gradcomp.statistics.matched_bits import kept_set_of
from gradcomp.study.frozen import freeze
from gradcomp.study.questions import Verdicts, build_verdicts

__all__ = [
    "LOSSY_DEFAULTS",
    "DistortionStudy",
    "LossySection",
    "build_lossy",
    "compressor_entries",
    "compressor_variants",
]

#: Keys a ``lossy.compressors`` entry takes over from the ``lossy`` section unless it sets them.
LOSSY_DEFAULTS = (
    "topk", "topk_budget_percent", "min_entries", "error_feedback", "memory_decay", "slip",
    "lloyd_fit",
)  # fmt: skip


def compressor_entries(lossy: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A ``lossy`` section's compressor entries: ``compressors``, then ``more_compressors``
    (entries added to the list without repeating it)."""
    return [*lossy.get("compressors", []), *lossy.get("more_compressors", [])]


def _entry_key(lossy: Mapping[str, Any], index: int) -> str:
    """The config key of entry ``index`` of :func:`compressor_entries`."""
    n = len(lossy.get("compressors", []))
    return f"lossy.compressors.{index}" if index < n else f"lossy.more_compressors.{index - n}"


def compressor_variants(lossy: Mapping[str, Any]) -> list[Variant]:
    """Every (name, rate, M) of a ``lossy`` section's compressor entries
    (:func:`compressor_entries`), each with its checked spec; :class:`ConfigError` naming
    the key of every bad entry.

    >>> [v.label for v in compressor_variants(
    ...     {"compressors": [{"name": "u", "quantizer": "uniform", "rates": [1, 2]}]})]
    ['u/R1_M0', 'u/R2_M0']
    """
    defaults = {k: lossy[k] for k in LOSSY_DEFAULTS if k in lossy}
    try:
        return expand_entries(compressor_entries(lossy), defaults)
    except EntryError as err:
        lines = []
        for p in err.problems:
            where = _entry_key(lossy, p.index) + (f".{p.key}" if p.key else "")
            lines.append(f"config key '{f'lossy.{p.key}' if p.inherited else where}': {p.message}")
        raise ConfigError("invalid config:\n  " + "\n  ".join(lines)) from None


@dataclass(frozen=True)
class DistortionStudy:
    """Y5's study (``lossy.distortion_study``): the run whose update snapshot it quantizes
    (compressor, rate, M, first seed; Y4 shows the same snapshot), the tensor and the rates."""

    compressor: str
    rate: int
    M: int
    tensor: str
    rates: tuple[int, ...]
    #: coded bits per kept entry (below 1.5) of the entropy-constrained design's added points
    low_bits: tuple[float, ...]
    #: model -> the tensor quantized for that model (default ``tensor``)
    model_tensor: Mapping[str, str]

    @property
    def label(self) -> str:
        """The run's variant label ``{compressor}/R{rate}_M{M}``."""
        return variant_label(self.compressor, self.rate, self.M)


@dataclass(frozen=True)
class LossySection:
    """Paper Y (``lossy``): the federation's settings and the compressor variants.

    ``variants`` holds one checked spec per (name, rate, M) in config order (``model_specs``:
    the spec each model's jobs use, with the model's ``min_entries``), ``compressor_kinds``
    maps each entry name to what builds it (a quantizer or compressor kind, or ``"class"``;
    not the dump kinds of ``lossless.fit.kinds``), ``full_runs`` is the resolved list of
    names and labels with full federated runs, ``pairable`` the compressors paired with
    ``baseline`` at the same R in T3/T4, ``reference`` the one-round study's trajectory
    variant.
    """

    models: tuple[str, ...]
    seeds: tuple[int, ...]
    threads: int
    slip: bool
    federation: Mapping[str, Any]
    min_entries: int
    variants: tuple[Variant, ...]
    model_specs: Mapping[tuple[str, str], CheckedSpec]
    compressor_kinds: Mapping[str, str]
    full_runs: tuple[str, ...]
    baseline: str
    pairable: tuple[str, ...]
    reference: Variant | None
    one_round_seeds: tuple[int, ...]
    one_round_rounds: int
    #: labels of the primary pass (run on every trajectory; the rest on the first warm start)
    one_round_primary: tuple[str, ...]
    #: the warm start's settings without its seeds (None: from scratch)
    warm_start: Mapping[str, Any] | None
    #: one warm start per seed (empty without a warm start)
    warm_start_seeds: tuple[int, ...]
    #: the common pre-training every warm start continues ({epochs, seed}; None: none)
    warm_start_common: Mapping[str, Any] | None
    test_images: int | None
    #: compressor name -> the rate curve it joins
    curves: Mapping[str, str]
    #: variant label -> the kept set it sends (:func:`gradcomp.statistics.matched_bits.kept_set_of`)
    kept_sets: Mapping[str, str]
    verdicts: Verdicts
    distortion_study: DistortionStudy
    #: model -> {lr, min_entries} overriding the section's for that model
    model_settings: Mapping[str, Mapping[str, Any]]

    def spec(self, name: str, rate: int, M: int) -> CheckedSpec:
        """The spec of variant (name, rate, M); KeyError if it is not configured."""
        for v in self.variants:
            if (v.name, v.rate, v.M) == (name, rate, M):
                return v.spec
        raise KeyError(variant_label(name, rate, M))

    def model_spec(self, model: str, label: str) -> CheckedSpec:
        """The checked spec of variant ``label`` in ``model``'s jobs."""
        return self.model_specs[(model, label)]

    def model_setting(self, model: str, key: str) -> Any:
        """``model_settings.<model>.<key>`` (lr, min_entries), else the section's own."""
        own = self.federation["lr"] if key == "lr" else self.min_entries
        return self.model_settings.get(model, {}).get(key, own)

    def one_round_labels(self, warm_start: int | None) -> list[str]:
        """Labels of the variants the one-round study runs under ``warm_start`` (a seed of
        ``warm_start_seeds``, or None without warm starts): every variant under the first,
        the primary pass under the others."""
        first = self.warm_start_seeds[0] if self.warm_start_seeds else None
        everything = [v.label for v in self.variants]
        if warm_start == first:
            return everything
        return [label for label in everything if label in self.one_round_primary]

    def display_names(self) -> dict[str, str]:
        """Readers' names (:mod:`gradcomp.names`): each variant label (``name/R{rate}_M{M}``)
        -> its variant's name, and ``{name}@M{M}`` -> the entry's method at that M (what a
        reference curve is called)."""
        out = {v.label: names.variant(v.spec, v.rate, v.M) for v in self.variants}
        for v in self.variants:
            for M in sorted({0, v.M, *(q.reference_M for q in self.verdicts.questions)}):
                out.setdefault(f"{v.name}@M{M}", names.method(v.spec, M))
        return out

    def has_full_runs(self, name: str, rate: int, M: int) -> bool:
        """Whether the variant gets full federated runs (``full_runs`` names it or its label)."""
        return name in self.full_runs or variant_label(name, rate, M) in self.full_runs


def _sent_the_same_way(spec: CheckedSpec) -> tuple:
    """What R means for a spec: bits per kept value of one sparsifier (or bit budget, which
    sets the fraction per rate); the tables pair variants on one kept set
    (:func:`gradcomp.statistics.paired.pick_baseline`), so the keep fraction is not part of it."""
    budget = spec["topk_budget_percent"]
    return (spec["quantizer"] is not None, spec["sparsifier"] or "none", budget)


def _baseline_errors(baseline: str, compressor_kinds: dict, variants: list[Variant]) -> list[str]:
    if baseline not in compressor_kinds:
        return [
            f"config key 'lossy.baseline': {baseline!r} is not a compressor of "
            f"lossy.compressors ({', '.join(compressor_kinds)})"
        ]
    if len({v.rate for v in variants if v.name == baseline}) < 2:
        return [
            f"config key 'lossy.baseline': {baseline!r} needs two or more rates, so that T5 "
            "has a rate curve to compare the others with"
        ]
    return []


def _model_specs(c: dict[str, Any], variants: list[Variant], errors: list[str]) -> dict:
    """(model, label) -> the variant's spec with the model's ``min_entries`` (where the kind
    takes one and the entry does not set it), each checked once."""
    entries = {entry["name"]: entry for entry in compressor_entries(c)}
    out = {}
    for model in c["models"]:
        own = c["model_settings"].get(model, {}).get("min_entries")
        for v in variants:
            spec = v.spec
            if own is not None and spec["min_entries"] is not None:
                if "min_entries" not in entries[v.name]:
                    try:
                        spec = check_spec({**spec.plain(), "min_entries": own})
                    except SpecError as err:
                        key = f"lossy.model_settings.{model}.min_entries"
                        errors.append(f"config key '{key}': {v.label}: {err.message}")
            out[(model, v.label)] = spec
    return out


def _full_runs(c: dict[str, Any], kinds: dict, labels: set[str], errors: list[str]) -> list:
    """The compressors and variant labels of lossy.full_runs (every compressor when null)."""
    full_runs = list(kinds) if c["full_runs"] is None else list(c["full_runs"])
    unknown = sorted(set(full_runs) - set(kinds) - labels)
    if unknown:
        errors.append(
            f"config key 'lossy.full_runs': {unknown} are neither compressors of "
            f"lossy.compressors ({', '.join(kinds)}) nor variant labels "
            f"({', '.join(labels)})"
        )
    return full_runs


def _reference(c: dict[str, Any], variants: list[Variant], errors: list[str]) -> list[Variant]:
    """The one-round study's reference variant (a list of one, when the config is right)."""
    reference = [v for v in variants if v.name == c["one_round"]["reference"]]
    if len(reference) != 1:
        errors.append(
            f"config key 'lossy.one_round.reference': {c['one_round']['reference']!r} must name "
            "a compressor of lossy.compressors with exactly one variant (found "
            f"{[v.label for v in reference]})"
        )
    return reference


def _pairable(baseline: str, kinds: dict, variants: list[Variant]) -> list[str]:
    """The compressors other than ``baseline`` whose variants are sent the way its are."""
    base_way = {_sent_the_same_way(v.spec) for v in variants if v.name == baseline}
    return sorted(
        name
        for name in kinds
        if name != baseline
        and {_sent_the_same_way(v.spec) for v in variants if v.name == name} == base_way
    )


def _distortion_study(c: dict[str, Any], labels: set[str], full_runs: list,
                      errors: list[str]) -> DistortionStudy:  # fmt: skip
    """lossy.distortion_study, whose variant must be configured with full runs."""
    d = c["distortion_study"]
    study = DistortionStudy(
        d["compressor"], d["rate"], d["M"], d["tensor"], tuple(d["rates"]),
        tuple(float(b) for b in d["low_bits"]), freeze(d["model_tensor"]),
    )  # fmt: skip
    in_full = study.compressor in full_runs or study.label in full_runs
    if study.label not in labels or not in_full:
        errors.append(
            f"config key 'lossy.distortion_study': {study.label} is not a configured compressor "
            f"variant with full runs (lossy.compressors gives {sorted(labels)}, lossy.full_runs "
            f"{c['full_runs']})"
        )
    return study


def _primary(c: dict[str, Any], variants: list[Variant], kinds: dict, labels: set[str],
             reference: list[Variant], errors: list[str]) -> list[str]:  # fmt: skip
    """The labels of the one-round study's primary variants (with the reference's)."""
    primary_names = c["one_round"]["variants"]
    if primary_names is None:
        return [v.label for v in variants]
    unknown = sorted(set(primary_names) - set(kinds) - labels)
    if unknown:
        errors.append(
            f"config key 'lossy.one_round.variants': {unknown} are neither compressors of "
            "lossy.compressors nor variant labels (with another lossy.compressors list, "
            "set it to match, or null: every variant on every trajectory)"
        )
    return [
        v.label
        for v in variants
        if v.name in primary_names or v.label in primary_names
        or (reference and v.label == reference[0].label)
    ]  # fmt: skip


def build_lossy(config: dict[str, Any], errors: list[str]) -> LossySection:
    """The :class:`LossySection` of a validated config; each failed check across keys is
    appended to ``errors`` as ``config key 'a.b': ...``."""
    c = config["lossy"]
    variants = compressor_variants(c)
    compressor_kinds = {entry["name"]: entry_kind(entry) for entry in compressor_entries(c)}
    labels = {v.label for v in variants}
    full_runs = _full_runs(c, compressor_kinds, labels, errors)
    reference = _reference(c, variants, errors)
    baseline = c["baseline"]
    errors += _baseline_errors(baseline, compressor_kinds, variants)
    pairable = _pairable(baseline, compressor_kinds, variants)
    if c["warm_start"] is not None and not config["data"].get("pretrain_subset"):
        errors.append(
            "config key 'lossy.warm_start' needs a pretraining pool: set data.pretrain_subset "
            "(images outside data.train_subset), or lossy.warm_start: null to start from scratch"
        )
    study = _distortion_study(c, labels, full_runs, errors)
    primary = _primary(c, variants, compressor_kinds, labels, reference, errors)
    curves = {v.name: v.curve for v in variants}
    kept_sets = {v.label: kept_set_of(v.spec) for v in variants}
    verdicts = build_verdicts(c["verdicts"], variants, primary, kept_sets, errors)
    warm = None if c["warm_start"] is None else dict(c["warm_start"])
    warm_seeds = () if warm is None else tuple(warm.pop("seeds"))
    common = None if warm is None else warm.pop("common")
    model_specs = _model_specs(c, variants, errors)
    federation = (
        "users", "rounds", "local_epochs", "batch_size", "lr", "validation_fraction",
        "validation_split", "optimizer_state", "test_images",
    )  # fmt: skip
    return LossySection(
        models=tuple(c["models"]),
        seeds=tuple(c["seeds"]),
        threads=c["threads"],
        slip=c["slip"],
        federation=freeze({k: c[k] for k in federation}),
        min_entries=c["min_entries"],
        variants=tuple(variants),
        model_specs=MappingProxyType(model_specs),
        compressor_kinds=MappingProxyType(compressor_kinds),
        full_runs=tuple(full_runs),
        baseline=baseline,
        pairable=tuple(pairable),
        reference=reference[0] if reference else None,
        one_round_seeds=tuple(c["one_round"]["seeds"]),
        one_round_rounds=c["one_round"]["rounds"],
        one_round_primary=tuple(primary),
        warm_start=freeze(warm),
        warm_start_seeds=warm_seeds,
        warm_start_common=freeze(common),
        test_images=c["test_images"],
        curves=MappingProxyType(curves),
        kept_sets=MappingProxyType(kept_sets),
        verdicts=verdicts,
        distortion_study=study,
        model_settings=freeze(c["model_settings"]),
    )
