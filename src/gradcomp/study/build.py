"""The study: the validated config as one typed object, with every check across keys.

:func:`load_study` validates a config against the schema (:mod:`gradcomp.study.config`: types,
ranges, defaults) and :func:`build_study` turns the validated dict into a :class:`Study` of
frozen sections (data, lossless, lossy, figures, resources), read-only all the way down: the
compressor variants with their checked specs, the checked coders and the streamed coding
(:mod:`gradcomp.study.pieces`, which names the config key of a bad entry). The checks that
relate two keys (a figure's run below ``lossless.runs``, the baseline's rates, the warm
start's pretraining pool, ...) live here and in :mod:`gradcomp.study.lossy` (paper Y's
section, its own module) and nowhere else; they are all run, and all failures are reported
at once as ``config key 'a.b': ...``. The Snakefile builds the study once; the
rules read it and hand its pieces to the jobs as plain params, and nothing else reads the
config.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from gradcomp.coding.registry import CoderSpec
from gradcomp.errors import ConfigError
from gradcomp.lossless.stream import StreamSettings
from gradcomp.study.config import validate_config
from gradcomp.study.lossy import DistortionStudy, LossySection, Question, Verdicts, build_lossy
from gradcomp.study.pieces import configured_coders, freeze, l5_coders, stream_settings, streams

__all__ = [
    "CODING_CHECKED",
    "DEFAULT_RESOURCES",
    "DataSection",
    "DistortionStudy",
    "FiguresSection",
    "LosslessSection",
    "LossySection",
    "Question",
    "Study",
    "Verdicts",
    "build_study",
    "load_study",
]

#: ``lossless.coding`` keys that leave the study only as checked pieces (``coders``,
#: ``stream`` and ``sample``), not in :attr:`LosslessSection.coding`.
CODING_CHECKED = ("coders", "stream", "sample")
#: Resources of a heavy rule that ``resources`` does not list (mem_mb, runtime in minutes, GPUs).
DEFAULT_RESOURCES = MappingProxyType({"mem_mb": 4000, "runtime": 60, "gpu": 0})


@dataclass(frozen=True)
class DataSection:
    """Which part of CIFAR-10 is cached (``cifar10`` and ``data``)."""

    source: str
    train_subset: int | None
    test_subset: int | None
    pretrain_subset: int | None
    subset_seed: int


@dataclass(frozen=True)
class LosslessSection:
    """Paper L: training with dumps (``lossless``); ``fit`` and ``positions`` are the config's
    mappings as validated (read-only), ``coding`` is ``lossless.coding`` without the keys held
    in their checked form only (:data:`CODING_CHECKED`): ``coders`` the checked coders of
    ``coding.coders``, ``l5_coders`` the (name, colour) pairs L5 draws, ``stream`` the
    streamed coding's settings (with ``coding.sample``) and ``streamed`` whether each model's
    training job streams (``coding.stream``)."""

    models: tuple[str, ...]
    runs: int
    epochs: int
    batch_size: int
    lr: float
    loss_reduction: str
    momentum: float
    augment: bool
    dump_tensors: Mapping[str, tuple[str, ...]]
    threads: int
    test_images: int | None
    fit: Mapping[str, Any]
    positions: Mapping[str, Mapping[str, str]]
    coding: Mapping[str, Any]
    coders: tuple[CoderSpec, ...]
    l5_coders: tuple[tuple[str, str], ...]
    stream: StreamSettings
    streamed: Mapping[str, bool]

    def train_settings(self, model: str, run: int) -> dict[str, Any]:
        """:class:`gradcomp.lossless.train.TrainSettings` keywords of run ``run`` of ``model``
        as plain data, a workflow param (the job adds threads and device): the streamed
        coding's settings with the checked coders (``stream``) only where the model streams,
        so that a run without streaming keeps its params."""
        return dict(
            model=model, seed=int(run), epochs=self.epochs, batch_size=self.batch_size,
            lr=self.lr, loss_reduction=self.loss_reduction, momentum=self.momentum,
            augment=self.augment, test_images=self.test_images,
            dump_tensors=list(self.dump_tensors.get(model, ["*"])),
            **({"stream": self.stream.as_params()} if self.streamed[model] else {}),
        )  # fmt: skip


@dataclass(frozen=True)
class FiguresSection:
    """Plotting choices only (``figures``): changing them reruns figure rules alone."""

    lossless_run: int
    lossless_kind: str
    histogram_bins: int
    y4_tensors: tuple[str, ...]
    #: model -> the tensors Y4 shows for that model (default ``y4_tensors``)
    model_tensors: Mapping[str, tuple[str, ...]]


@dataclass(frozen=True)
class Study:
    """The whole validated config; built by :func:`build_study`."""

    device: str
    data: DataSection
    lossless: LosslessSection
    lossy: LossySection
    figures: FiguresSection
    resources: Mapping[str, Mapping[str, int]]
    #: a user's model name -> its ``package.module:Class`` (config ``user_models``)
    user_models: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def model_class(self, model: str) -> dict[str, str]:
        """``{"model_class": path}`` for a user's model, ``{}`` for a built-in: the settings
        key a job's params carry (absent for a built-in, so its params stay as they were)."""
        path = self.user_models.get(model)
        return {} if path is None else {"model_class": path}

    def resource(self, rule: str, key: str) -> int:
        """``resources.<rule>.<key>`` (mem_mb, runtime in minutes, gpu), else the default of
        :data:`DEFAULT_RESOURCES`. The config is the one place resources are set."""
        return self.resources.get(rule, {}).get(key, DEFAULT_RESOURCES[key])


def load_study(config: dict[str, Any], schema_path: str | Path) -> Study:
    """Validate ``config`` in place against the schema (filling defaults) and build the study;
    raises :class:`ConfigError` naming every offending key."""
    return build_study(validate_config(config, schema_path))


def _lossless(config: dict[str, Any], errors: list[str]) -> LosslessSection:
    c = config["lossless"]
    if config["figures"]["lossless_run"] >= c["runs"]:
        errors.append(
            f"config key 'figures.lossless_run': {config['figures']['lossless_run']} is not a "
            f"run (lossless.runs = {c['runs']})"
        )
    for key in ("families", "kinds"):
        missing = set(c["coding"][key]) - set(c["fit"][key])
        if missing:
            errors.append(
                f"config key 'lossless.coding.{key}': {sorted(missing)} not in lossless.fit.{key}"
            )
    try:
        coders = configured_coders(c["coding"])
    except ConfigError as err:
        errors.append(str(err).removeprefix("invalid config:\n  "))
        coders = ()
    return LosslessSection(
        models=tuple(c["models"]),
        **{k: c[k] for k in ("runs", "epochs", "batch_size", "lr", "loss_reduction")},
        **{k: c[k] for k in ("momentum", "augment", "threads")},
        dump_tensors=freeze(c["dump_tensors"]),
        fit=freeze(c["fit"]),
        test_images=c["test_images"],
        positions=freeze(c["positions"]),
        coding=freeze({k: v for k, v in c["coding"].items() if k not in CODING_CHECKED}),
        coders=coders,
        l5_coders=l5_coders(c["coding"], coders),
        stream=stream_settings(c, coders),
        streamed=MappingProxyType({m: streams(c, m) for m in c["models"]}),
    )


def _data_source_errors(source: str) -> list[str]:
    """The ``cifar10`` key checked before any job: ``download``, or a local copy that
    :func:`gradcomp.data.detect_format` reads (its error names the key and the path)."""
    if source == "download":
        return []
    from gradcomp.data import DataSourceError, detect_format

    try:
        detect_format(Path(source))
    except DataSourceError as err:
        return [str(err)]
    return []


def _model_errors(config: dict[str, Any]) -> list[str]:
    """Each user model importable as a torch.nn.Module class under a name no built-in has,
    and every model the studies name built-in or a user's, each error naming its key."""
    import torch

    from gradcomp.errors import did_you_mean
    from gradcomp.models import MODELS
    from gradcomp.plugins import import_class

    errors = []
    user = config.get("user_models") or {}
    for name, path in user.items():
        where = f"config key 'user_models.{name}'"
        if name in MODELS:
            errors.append(f"{where}: {name!r} is a built-in model's name; choose another")
            continue
        try:
            cls = import_class(path)
        except ValueError as err:
            errors.append(f"{where}: {err}")
            continue
        if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module)):
            errors.append(f"{where}: {path} is not a torch.nn.Module class")
    known = [*MODELS, *user]
    for section in ("lossless", "lossy"):
        for name in config[section]["models"]:
            if name not in known:
                errors.append(
                    f"config key '{section}.models': unknown model {name!r}"
                    f"{did_you_mean(name, known)}; the built-in ones are "
                    f"{', '.join(MODELS)}, and user_models adds your own"
                )
    return errors


def build_study(config: dict[str, Any]) -> Study:
    """The :class:`Study` of a config validated by :func:`gradcomp.study.config.validate_config`.

    Raises :class:`ConfigError` listing every failed check across keys, each naming its key.
    """
    errors: list[str] = []
    errors += _data_source_errors(config["cifar10"])
    errors += _model_errors(config)
    lossless = _lossless(config, errors)
    lossy = build_lossy(config, errors)
    if errors:
        raise ConfigError("invalid config:\n  " + "\n  ".join(errors))
    d, f = config["data"], config["figures"]
    return Study(
        device=config["device"],
        data=DataSection(
            source=config["cifar10"],
            train_subset=d["train_subset"],
            test_subset=d["test_subset"],
            pretrain_subset=d.get("pretrain_subset"),
            subset_seed=d["subset_seed"],
        ),
        lossless=lossless,
        lossy=lossy,
        figures=FiguresSection(
            lossless_run=f["lossless_run"],
            lossless_kind=f["lossless_kind"],
            histogram_bins=f["histogram_bins"],
            y4_tensors=tuple(f["y4"]["tensors"]),
            model_tensors=freeze(f["model_tensors"]),
        ),
        resources=freeze(config["resources"]),
        user_models=freeze(config.get("user_models") or {}),
    )
