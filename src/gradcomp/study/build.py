"""The study: the validated config as one typed object, with every check across keys.

:func:`load_study` validates a config against the schema (:mod:`gradcomp.study.config`: types,
ranges, defaults) and :func:`build_study` turns the validated dict into a :class:`Study` of
frozen sections (data, lossless, lossy, figures, resources), read-only all the way down
(:mod:`gradcomp.study.frozen`). The checks that relate two keys (a figure's run below
``lossless.runs``, the baseline's rates, the warm start's pretraining pool, ...) live here and
in the sections' modules (:mod:`~gradcomp.study.lossless`, :mod:`~gradcomp.study.lossy`,
:mod:`~gradcomp.study.questions`) and nowhere else; they are all run, and all failures are
reported at once as ``config key 'a.b': ...``. The Snakefile builds the study once; the
rules read it and hand its pieces to the jobs as plain params, and nothing else reads the
config.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from gradcomp.errors import ConfigError
from gradcomp.study.config import validate_config
from gradcomp.study.frozen import freeze
from gradcomp.study.lossless import CODING_CHECKED, LosslessSection, build_lossless
from gradcomp.study.lossy import DistortionStudy, LossySection, build_lossy
from gradcomp.study.questions import Question, Verdicts

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


def _data_source_errors(source: str, data: Mapping[str, Any] | None = None) -> list[str]:
    """The ``cifar10`` key checked before any job: ``download``, or a local copy that
    :func:`gradcomp.data.detect_format` reads (its error names the key and the path); an
    image-folder copy's images per class are counted (not decoded) against ``data``'s
    subsets (:func:`gradcomp.subset_checks.subset_errors`, each error naming its key and the
    path)."""
    if source == "download":
        return []
    from gradcomp.data import DataSourceError, detect_format
    from gradcomp.subset_checks import imagefolder_counts, subset_errors

    try:
        fmt, root = detect_format(Path(source))
        if fmt != "imagefolder" or data is None:
            return []
        counts = imagefolder_counts(root)
    except DataSourceError as err:
        return [str(err)]
    return subset_errors(
        counts,
        root,
        train_subset=data.get("train_subset"),
        test_subset=data.get("test_subset"),
        pretrain_subset=data.get("pretrain_subset"),
    )


def _device_errors(config: Mapping[str, Any]) -> list[str]:
    """The ``device`` key checked before any job: a CUDA or MPS device this machine has,
    unless a rule's resources ask for a GPU (the jobs then run where one is, e.g. a
    cluster's GPU nodes)."""
    device = config["device"]
    if device in ("auto", "cpu"):
        return []
    if any(r.get("gpu", 0) for r in (config.get("resources") or {}).values()):
        return []
    import torch

    where = f"config key 'device': {device!r}"
    hint = "use device auto or cpu, or give the training rules a GPU (resources.<rule>.gpu)"
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            return [f"{where}, but this machine has no CUDA device; {hint}"]
        index = int(device.partition(":")[2] or 0)
        if index >= torch.cuda.device_count():
            return [f"{where}, but this machine has {torch.cuda.device_count()} CUDA devices"]
    if device == "mps" and not torch.backends.mps.is_available():
        return [f"{where}, but this machine has no MPS device; {hint}"]
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
    errors += _data_source_errors(config["cifar10"], config.get("data"))
    errors += _device_errors(config)
    errors += _model_errors(config)
    lossless = build_lossless(config, errors)
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
