"""The study object (gradcomp.study): every check across config keys names its key, the
schema takes its kinds from the registries (a wrong kind is refused by key), command-line
strings are converted by the schema's types.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from types import MappingProxyType

import pytest
import yaml

from conftest import REPO, TINY_CONFIG
from gradcomp.errors import ConfigError
from gradcomp.study import DEFAULT_RESOURCES, build_study, load_study
from gradcomp.study.config import load_schema, validate_config

SCHEMA = REPO / "workflow/schemas/config.schema.yaml"
DEFAULT = yaml.safe_load((REPO / "config/config.yaml").read_text())


def config(**changes) -> dict:
    """The default config with ``changes`` ("a.b.c" -> value, "__" for the dots) applied."""
    c = copy.deepcopy(DEFAULT)
    for path, value in changes.items():
        *parents, last = path.split("__")
        node = c
        for part in parents:
            node = node[part]
        node[last] = value
    return c


def overlaid(*names: str) -> dict:
    """config/config.yaml with the named config files laid over it, key by key, as
    Snakemake's ``--configfile`` does."""

    def update(base: dict, new: Mapping) -> dict:
        for key, value in new.items():
            if isinstance(value, Mapping) and isinstance(base.get(key), dict):
                update(base[key], value)
            else:
                base[key] = copy.deepcopy(value)
        return base

    c = copy.deepcopy(DEFAULT)
    for name in names:
        update(c, yaml.safe_load((REPO / "config" / name).read_text()))
    return c


@pytest.mark.slow
@pytest.mark.parametrize(
    "names",
    [(), ("paper.yaml",), ("paper.yaml", "smoke-paper.yaml"), ("m22.yaml",), ("decisive.yaml",)],
)
def test_shipped_configs_build(names) -> None:
    """Every shipped config, as the docs run it, passes every check (planted bug: the paper
    smoke's full runs without the distortion study's variant, which stopped the smoke)."""
    load_study(overlaid(*names), SCHEMA)


def test_tiny_config_builds() -> None:
    load_study(copy.deepcopy(TINY_CONFIG), SCHEMA)


def test_study_reads_the_config() -> None:
    """Checked against values written out by hand for a small config (planted bugs: a variant
    lost or doubled in the product of rates and M; a compressor with another sparsifier or a
    whole-update kind counted as pairable, or the top-K float32 one left out; a resource not
    taken from the config)."""
    c = config(
        lossy__compressors=[
            {"name": "none", "quantizer": "none"},
            {"name": "uniform", "quantizer": "uniform", "rates": [2, 4]},
            {
                "name": "gennorm",
                "quantizer": "lloyd",
                "family": "gennorm",
                "rates": [4],
                "M": [0, 2],
            },  # fmt: skip
            {"name": "qsgd", "quantizer": "qsgd", "rates": [4], "sparsifier": "none"},
            {"name": "psgd", "compressor": "powersgd", "rates": [1, 2]},
        ],
        lossy__full_runs=["uniform/R4_M0", "gennorm"],
        lossy__one_round__variants=["uniform", "gennorm/R4_M2"],
        lossy__verdicts__questions=[{"test": "gennorm", "M": 2, "reference": "uniform"}],
        resources={"federated": {"mem_mb": 123}},
    )
    study = load_study(c, SCHEMA)
    labels = [v.label for v in study.lossy.variants]
    assert labels == [
        "none/R32_M0", "uniform/R2_M0", "uniform/R4_M0", "gennorm/R4_M0", "gennorm/R4_M2",
        "qsgd/R4_M0", "psgd/R1_M0", "psgd/R2_M0",
    ]  # fmt: skip
    assert study.lossy.compressor_kinds == {
        "none": "none", "uniform": "uniform", "gennorm": "lloyd", "qsgd": "qsgd",
        "psgd": "powersgd",
    }  # fmt: skip
    assert study.lossy.pairable == ("gennorm", "none")  # top-K of the same fraction
    assert study.lossy.reference.label == "none/R32_M0"
    assert study.lossy.has_full_runs("gennorm", 4, 2) and study.lossy.has_full_runs("uniform", 4, 0)
    assert not study.lossy.has_full_runs("uniform", 2, 0)
    assert study.lossy.spec("gennorm", 4, 2)["M"] == 2.0
    assert study.lossy.distortion_study.label == "gennorm/R4_M2"
    assert study.resource("federated", "mem_mb") == 123
    assert study.resource("federated", "runtime") == DEFAULT_RESOURCES["runtime"] == 60
    assert study.lossless.models == ("resnet20", "cnn") and study.figures.lossless_run == 0
    # the primary pass: the named variants and the reference; every variant on warm start 0
    assert study.lossy.one_round_primary == (
        "none/R32_M0", "uniform/R2_M0", "uniform/R4_M0", "gennorm/R4_M2",
    )  # fmt: skip
    assert study.lossy.one_round_labels(study.lossy.warm_start_seeds[0]) == labels
    assert study.lossy.one_round_labels(study.lossy.warm_start_seeds[1]) == list(
        study.lossy.one_round_primary
    )
    (q,) = study.lossy.verdicts.questions
    assert (q.test, q.M, q.reference, q.reference_M) == ("gennorm", 2, "uniform", 0)


BAD = [
    ("figures.lossless_run", {"figures__lossless_run": 2}),
    ("lossless.coding.families", {"lossless__fit__families": ["norm", "laplace"]}),
    ("lossless.coding.kinds", {"lossless__fit__kinds": ["last_batch"]}),
    ("lossy.distortion_study", {"lossy__distortion_study__rate": 3}),  # no such variant
    ("lossy.distortion_study", {"lossy__full_runs": ["none"]}),  # no full runs
    ("lossy.one_round.reference", {"lossy__one_round__reference": "nope"}),
    ("lossy.one_round.reference", {"lossy__one_round__reference": "uniform"}),  # 3 variants
    ("lossy.baseline", {"lossy__baseline": "nope"}),
    ("lossy.baseline", {"lossy__baseline": "float16"}),  # one rate
    ("lossy.full_runs", {"lossy__full_runs": ["gennorm", "uniform/R9_M0"]}),
    ("lossy.warm_start", {"data__pretrain_subset": None}),
    ("lossy.one_round.variants", {"lossy__one_round__variants": ["nope"]}),
    (
        "lossy.verdicts.questions.0.test",
        {"lossy__verdicts__questions": [{"test": "nope", "reference": "uniform", "M": 0}]},
    ),  # noqa: E501
    (
        "lossy.verdicts.questions.0.M",
        {"lossy__verdicts__questions": [{"test": "gennorm", "reference": "uniform", "M": 5}]},
    ),  # noqa: E501
    # one reference configuration: gennorm has R1, R2, R4 at M2 (no R3); none with exact;
    # not the test configuration itself; on the same kept set only
    (
        "lossy.verdicts.questions.0.reference_rate",
        {
            "lossy__verdicts__questions": [
                {
                    "test": "kmeans",
                    "M": 2,
                    "rates": [1],
                    "reference": "gennorm",
                    "reference_M": 2,
                    "reference_rate": 3,
                }
            ]
        },
    ),  # fmt: skip
    (
        "lossy.verdicts.questions.0.reference_rate",
        {
            "lossy__verdicts__questions": [
                {"test": "gennorm", "M": 2, "rates": [1], "reference": "exact", "reference_rate": 1}
            ]
        },
    ),  # fmt: skip
    (
        "lossy.verdicts.questions.0.reference_rate",
        {
            "lossy__verdicts__questions": [
                {
                    "test": "gennorm",
                    "M": 2,
                    "rates": [1],
                    "reference": "gennorm",
                    "reference_rate": 1,
                }
            ]
        },
    ),  # fmt: skip
    (
        "lossy.verdicts.questions.0.match",
        {
            "lossy__verdicts__questions": [
                {
                    "test": "kmeans",
                    "M": 2,
                    "rates": [1],
                    "reference": "gennorm",
                    "reference_rate": 1,
                    "match": "frontier",
                }
            ]
        },
    ),  # fmt: skip
    # gauss runs only on the first warm start: not a curve of the primary pass
    (
        "lossy.verdicts.questions.0.test",
        {"lossy__verdicts__questions": [{"test": "gauss", "reference": "uniform", "M": 0}]},
    ),  # noqa: E501
]


def test_a_question_against_one_reference_configuration() -> None:
    """``reference_rate``: the reference is its one configuration at that rate and
    reference_M (the test's M where it has it), matched on the kept set, read at its own bits
    (interpolation none); the label names its rate (planted bugs: the rate dropped, so that
    it is the curve question again; the test's M taken for an explicit reference_M)."""
    questions = [
        {"test": "ecsq", "M": 2, "rates": [2, 3], "reference": "gennorm", "reference_rate": 1},
        {"test": "kmeans", "M": 2, "rates": [1], "reference": "gennorm", "reference_M": 0,
         "reference_rate": 2},
        {"test": "ecsq", "M": 2, "rates": [2], "reference": "gennorm"},
    ]  # fmt: skip
    study = load_study(config(lossy__verdicts__questions=questions), SCHEMA)
    q = study.lossy.verdicts.questions
    assert [(x.test, x.rate, x.reference, x.reference_M, x.reference_rate) for x in q] == [
        ("ecsq", 2, "gennorm", 2, 1), ("ecsq", 3, "gennorm", 2, 1),
        ("kmeans", 1, "gennorm", 0, 2), ("ecsq", 2, "gennorm", 2, None),
    ]  # fmt: skip
    assert [(x.match, x.interpolation) for x in q] == [("kept_set", "none")] * 3 + [
        ("kept_set", "convex")
    ]
    assert q[0].label == "ecsq R2 M2 vs gennorm R1 M2, same kept set"
    assert q[3].label == "ecsq R2 M2 vs gennorm M2, kept set"


def test_train_settings_carry_the_checked_coders_only_where_a_model_streams() -> None:
    """The training job's param: TrainSettings keywords, the streamed coding (checked coders
    as plain data, the sample) only for the model whose dumps are restricted, and the coder
    list nowhere in ``coding`` (planted bugs: stream settings given to every model, which
    would rerun every training job; the raw coder entries handed on beside the checked ones)."""
    from gradcomp.lossless.stream import StreamSettings

    study = load_study(
        config(lossless__dump_tensors={"cnn": ["conv1.weight"]},
               lossless__coding__coders=["fp8", {"name": "mine", "color": "red",
                                                  "class": "gradcomp.coding.bounds:Entropy"}]),
        SCHEMA,
    )  # fmt: skip
    lossless = study.lossless
    plain = lossless.train_settings("resnet20", 1)
    assert plain["seed"] == 1 and plain["dump_tensors"] == ["*"] and "stream" not in plain
    streamed = lossless.train_settings("cnn", 0)
    assert streamed["dump_tensors"] == ["conv1.weight"]
    rebuilt = StreamSettings.from_params(streamed["stream"])
    assert [c.name for c in rebuilt.coders] == ["fp8", "mine"] == [c.name for c in lossless.coders]
    assert rebuilt == lossless.stream
    assert not {"coders", "stream", "sample"} & set(lossless.coding)


@pytest.mark.slow
@pytest.mark.parametrize(("key", "changes"), BAD)
def test_each_cross_key_check_names_its_key(key: str, changes: dict) -> None:
    """Planted bug: any one check dropped or naming another key (the default config passes
    every check, so each failure here comes from the one change)."""
    c = validate_config(config(**changes), SCHEMA)
    with pytest.raises(ConfigError, match=f"config key '{key}'"):
        build_study(c)


def test_all_failed_checks_are_reported_at_once() -> None:
    c = validate_config(config(lossy__baseline="nope", figures__lossless_run=5), SCHEMA)
    with pytest.raises(ConfigError) as err:
        build_study(c)
    assert "'lossy.baseline'" in str(err.value) and "'figures.lossless_run'" in str(err.value)


def _mutable_parts(value, path: str = "study"):
    """Paths of the dicts, lists and sets anywhere inside ``value``."""
    if isinstance(value, (dict, list, set)):
        yield path
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _mutable_parts(getattr(value, f.name), f"{path}.{f.name}")
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _mutable_parts(item, f"{path}[{key!r}]")
    elif isinstance(value, tuple):
        for i, item in enumerate(value):
            yield from _mutable_parts(item, f"{path}[{i}]")


def test_study_is_frozen() -> None:
    """Frozen all the way down: no dict, list or set inside (planted bug: a section keeping
    the config's dict, whose keys a rule could then change for the jobs after it)."""
    study = load_study(config(), SCHEMA)
    with pytest.raises(AttributeError):
        study.lossy.baseline = "none"
    with pytest.raises(TypeError):
        study.lossy.federation["lr"] = 1.0
    with pytest.raises(TypeError):
        study.lossy.variants[0].spec["rate"] = 1
    assert list(_mutable_parts(study)) == []
    assert list(_mutable_parts((MappingProxyType({"a": [1]}),))) == ["study[0]['a']"]


def test_nested_command_line_compressors_are_converted() -> None:
    """Snakemake parses ``--config 'lossy={compressors: [...]}'`` with YAML's BaseLoader, which
    keeps every scalar a string; the schema's entry types convert them (planted bug: the
    conversion stops at the first array, leaving ``rates: ['2']``, which the spec refuses with
    "lloyd needs an integer rate in 1..16 bits, got '2'")."""
    value = "{compressors: [{name: x, quantizer: lloyd, family: gennorm, rates: [2], M: [0, 2], error_feedback: true, topk: 0.5}]}"  # noqa: E501
    given = yaml.load(value, Loader=yaml.BaseLoader)
    assert given["compressors"][0]["rates"] == ["2"]  # what Snakemake hands over
    c = config(lossy={**DEFAULT["lossy"], **given})
    validate_config(c, SCHEMA)
    entry = c["lossy"]["compressors"][0]
    assert entry["rates"] == [2] and entry["M"] == [0, 2]
    assert entry["error_feedback"] is True and entry["topk"] == 0.5
    # a value that is no number stays a string and is refused, naming the key
    bad = config(lossy={**DEFAULT["lossy"], "compressors": [{**entry, "rates": ["two"]}]})
    with pytest.raises(ConfigError, match=r"lossy\.compressors\.0\.rates\.0"):
        validate_config(bad, SCHEMA)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("entry", "key"),
    [
        ({"name": "x", "quantizer": "lloyds", "family": "gennorm", "rates": [2]}, "quantizer"),
        ({"name": "x", "compressor": "powersgdd", "rates": [1]}, "compressor"),
        ({"name": "x", "quantizer": "lloyd", "family": "gennorn", "rates": [2]}, "family"),
        ({"name": "x", "quantizer": "uniform", "memory_mode": "m23", "rates": [2]}, "memory_mode"),
    ],
)
def test_a_wrong_kind_is_refused_naming_its_key(entry, key) -> None:
    """The schema's kinds, families and modes are the code's (filled in when it loads, no
    copy in the file): a name that is not one of them is refused by its key path, with the
    registry's names as the choices."""
    bad = config()
    bad["lossy"]["compressors"] = [*bad["lossy"]["compressors"], entry]
    index = len(bad["lossy"]["compressors"]) - 1
    with pytest.raises(ConfigError, match=rf"config key 'lossy.compressors.{index}.{key}'"):
        validate_config(bad, SCHEMA)
    raw = yaml.safe_load(SCHEMA.read_text())["definitions"]["compressor_entry"]["properties"]
    assert "enum" not in raw[key] and "enum_from" in raw[key]


def _schema() -> dict:
    return load_schema(SCHEMA)


def test_entry_schema_keys_are_the_spec_entry_keys() -> None:
    """Every key the entry checker takes is typed in the schema (so command-line strings are
    converted), and the schema types no key the checker refuses."""
    from gradcomp.compression.entries import entry_keys

    entry = _schema()["definitions"]["compressor_entry"]["properties"]
    assert sorted(entry) == sorted(entry_keys())


@pytest.mark.slow
def test_command_line_compressor_list_dry_run(tmp_path) -> None:
    """The README's invitation, through Snakemake itself: the issue's exact ``--config`` value
    is no longer refused for its rate (it was: "lloyd needs an integer rate in 1..16 bits, got
    '2'"); with the keys that refer to compressors pointed at the new list, the dry run plans."""
    from conftest import run_snakemake

    exact = "lossy={compressors: [{name: x, quantizer: lloyd, family: gennorm, rates: [2]}]}"
    proc = run_snakemake(tmp_path, "-n", "--cores", "1", "--config", exact, check=False)
    out = proc.stdout + proc.stderr
    assert "needs an integer rate" not in out
    # the default baseline and distortion-study run are not in the new list: named, not a crash
    assert proc.returncode != 0 and "config key 'lossy.baseline'" in out
    full = (
        "lossy={compressors: [{name: none, quantizer: none}, "
        "{name: x, quantizer: lloyd, family: gennorm, rates: [2, 4], M: [0, 2]}], "
        "baseline: x, full_runs: null, warm_start: null, one_round: {variants: null}, "
        "verdicts: {questions: []}, "
        "distortion_study: {compressor: x, rate: '2', M: '2'}}"
    )
    proc = run_snakemake(tmp_path, "-n", "--cores", "1", "--config", full)
    assert "federated" in proc.stdout and "x/R4_M2" in proc.stdout


def test_entry_errors_speak_of_the_entry_and_the_study_names_the_key() -> None:
    """The library names the entry's index and key (no config path); the study turns that into
    the config key, ``lossy.<key>`` for a value the entry took over from the section (planted
    bugs: an inherited top-K blamed on the entry; the library naming the config's layout)."""
    from gradcomp.compression.entries import EntryError, expand_entries
    from gradcomp.study.lossy import compressor_variants

    good = {"name": "u", "quantizer": "uniform", "rates": [2]}
    bad_rates = {"name": "v", "quantizer": "uniform", "rates": []}
    with pytest.raises(EntryError) as err:
        expand_entries([good, bad_rates], {"topk": 2.0})
    problems = {(p.index, p.key, p.inherited) for p in err.value.problems}
    assert problems == {(0, "topk", True), (1, "rates", False)}
    assert "lossy" not in str(err.value) and "config key" not in str(err.value)
    with pytest.raises(ConfigError) as err:
        compressor_variants({"topk": 2.0, "compressors": [good, bad_rates]})
    assert "config key 'lossy.topk'" in str(err.value)
    assert "config key 'lossy.compressors.1.rates'" in str(err.value)
