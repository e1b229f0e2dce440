"""Paper L's part of the study: the ``lossless`` section as a typed, frozen object.

:class:`LosslessSection` holds the training with dumps, the fits' settings and the coding:
the checked coders (:func:`configured_coders`, :func:`gradcomp.coding.registry.coder_specs`
with its errors re-raised naming ``lossless.coding.coders.<i>``), the (name, colour) pairs L5
draws (:func:`l5_coders`) and the streamed coding's settings (:func:`stream_settings`,
:func:`streams`). :func:`build_lossless` runs the checks across ``lossless`` keys.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from gradcomp.coding.registry import CoderEntryError, CoderSpec, coder_specs
from gradcomp.errors import ConfigError
from gradcomp.lossless.stream import SAMPLE, StreamSettings
from gradcomp.study.frozen import freeze

__all__ = [
    "CODER_PRESENTATION",
    "CODING_CHECKED",
    "LosslessSection",
    "build_lossless",
    "configured_coders",
    "l5_coders",
    "stream_settings",
    "streams",
]

#: ``lossless.coding`` keys that leave the study only as checked pieces (``coders``,
#: ``stream`` and ``sample``), not in :attr:`LosslessSection.coding`.
CODING_CHECKED = ("coders", "stream", "sample")
#: Keys of a ``lossless.coding.coders`` mapping that only say how L5 draws the coder.
CODER_PRESENTATION = ("color", "figure")
_CODERS = "lossless.coding.coders"


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


def configured_coders(coding: Mapping[str, Any]) -> tuple[CoderSpec, ...]:
    """The checked coders of a ``lossless.coding`` section, in its order (``coders: null``:
    every built-in); :class:`ConfigError` naming ``lossless.coding.coders.<i>``."""
    entries = coding.get("coders")
    if entries is not None:
        entries = [
            {k: v for k, v in e.items() if k not in CODER_PRESENTATION}
            if isinstance(e, Mapping)
            else e
            for e in entries
        ]
    try:
        return tuple(coder_specs(entries, coding.get("families", ("gennorm", "norm", "laplace"))))
    except CoderEntryError as err:
        where = _CODERS if err.index is None else f"{_CODERS}.{err.index}"
        where += f".{err.key}" if err.key else ""
        raise ConfigError(f"invalid config:\n  config key '{where}': {err.message}") from None


def l5_coders(
    coding: Mapping[str, Any], coders: Sequence[CoderSpec]
) -> tuple[tuple[str, str], ...]:
    """(name, colour) of the coders L5 draws, in order. ``coders: null`` (every built-in):
    :data:`gradcomp.plotting.palette.L5_CODERS`; a list: every entry it names but a user's
    with ``figure: false``. Colours from :func:`gradcomp.plotting.palette.coder_colors`, a
    user's ``color`` where given; no coder is dropped for want of one."""
    from gradcomp.plotting.palette import L5_CODERS, coder_colors

    entries = coding.get("coders")
    user = {e["name"]: e for e in entries or () if isinstance(e, Mapping)}
    names = [c.name for c in coders]
    if entries is None:
        names = [n for n in names if n in L5_CODERS]
    names = [n for n in names if user.get(n, {}).get("figure", True)]
    given = {n: str(user[n]["color"]) for n in names if user.get(n, {}).get("color")}
    return tuple(coder_colors(names, given).items())


def streams(lossless: Mapping[str, Any], model: str) -> bool:
    """Whether ``model``'s training job codes every tensor itself (``lossless.coding.stream``;
    ``auto``: when ``lossless.dump_tensors`` restricts the model's dumps)."""
    mode = lossless["coding"].get("stream", "auto")
    if mode != "auto":
        return bool(mode)
    patterns = (lossless.get("dump_tensors") or {}).get(model)
    return patterns is not None and "*" not in patterns


def stream_settings(lossless: Mapping[str, Any], coders: Sequence[CoderSpec]) -> StreamSettings:
    """The streamed coding of a ``lossless`` section (its ``coding`` and ``fit``), with the
    checked ``coders`` (None where ``coding.coders`` is null: every built-in)."""
    coding, fit = lossless["coding"], lossless["fit"]
    sample = {**SAMPLE, **(coding.get("sample") or {})}
    return StreamSettings(
        families=coding["families"], grid=coding["grid"], kinds=coding["kinds"],
        accountings=coding["accountings"], scalings=coding["scalings"],
        general_purpose=coding["general_purpose"],
        coders=None if coding.get("coders") is None else tuple(coders),
        verify=coding["verify"], floc=fit["floc"], zero_atom=fit["zero_atom"],
        skip_below=fit["skip_below"], sample_tensors=sample["tensors"],
        sample_epochs=sample["epochs"],
    )  # fmt: skip


def build_lossless(config: dict[str, Any], errors: list[str]) -> LosslessSection:
    """The :class:`LosslessSection` of a validated config; each failed check across keys is
    appended to ``errors`` as ``config key 'a.b': ...``."""
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
