"""A user's model from outside src/ (config ``user_models``): refused by name when it cannot
be built, and through the workflow (the shared run), a lossless run and a federated run
train it (docs/extending.md's example, run as given)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from conftest import REPO, TINY_CONFIG, doc_blocks, write_imagefolder_tree
from gradcomp.errors import ConfigError
from gradcomp.study import load_study

SCHEMA = REPO / "workflow/schemas/config.schema.yaml"


def doc_block(marker: str) -> str:
    """The fenced block of docs/extending.md whose first line is ``# marker``."""
    return next(b for b in doc_blocks("extending.md") if b.startswith(f"# {marker}"))


def config_with(user_models: dict, models: list[str]) -> dict:
    c = yaml.safe_load(yaml.safe_dump(TINY_CONFIG))
    c["cifar10"] = "download"
    c["user_models"] = user_models
    c["lossless"]["models"] = models
    return c


@pytest.fixture
def user_module(tmp_path: Path, monkeypatch) -> Path:
    (tmp_path / "mymodels.py").write_text(doc_block("mymodels.py"))
    (tmp_path / "notamodel.py").write_text("class Thing:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


@pytest.mark.parametrize(
    ("user_models", "models", "says"),
    [
        ({}, ["mine"], "config key 'lossless.models': unknown model 'mine'"),
        ({}, ["cnnn"], "(did you mean 'cnn'?)"),
        ({"mine": "nosuch:Net"}, ["mine"], "config key 'user_models.mine': cannot import"),
        ({"mine": "notamodel:Thing"}, ["mine"], "is not a torch.nn.Module class"),
        ({"cnn": "mymodels:Wide"}, ["cnn"], "'cnn' is a built-in model's name"),
    ],
)
def test_a_model_that_cannot_be_built_stops_before_any_job(
    user_module, user_models, models, says
) -> None:
    with pytest.raises(ConfigError) as info:
        load_study(config_with(user_models, models), SCHEMA)
    assert says in str(info.value)


def test_a_user_model_builds_like_a_built_in(user_module) -> None:
    study = load_study(config_with({"mine": "mymodels:Wide"}, ["mine"]), SCHEMA)
    assert study.model_class("mine") == {"model_class": "mymodels:Wide"}
    assert study.model_class("mlp") == {}  # a built-in's params stay as they were
    from gradcomp.models import build_model

    model = build_model("mine", seed=0, model_class="mymodels:Wide")
    assert [n for n, _ in model.named_parameters()] == [
        "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"
    ]  # fmt: skip


@pytest.mark.slow
def test_the_documented_model_trains_through_the_workflow(shared_run: Path) -> None:
    """The shared run takes the documented model and config file's keys (conftest's
    shared_config): a lossless run and a federated run train ``wide``, the page's class (its
    width: 64 hidden units, the mlp's 32)."""
    from gradcomp.lossless.dumps import read_dump

    user = yaml.safe_load(doc_block("mine.yaml"))
    config = yaml.safe_load((shared_run / "tiny.yaml").read_text())
    assert config["user_models"] == user["user_models"]
    assert set(user["lossless"]["models"]) <= set(config["lossless"]["models"])
    assert config["lossy"]["models"] == user["lossy"]["models"]
    # the shared run dumps fc2.weight alone of this model (tests/workflow/test_stream.py's case)
    dump = read_dump(shared_run / "results/lossless/wide/run0/grads/epoch2.safetensors")
    assert dump.tensors["epoch_avg"]["fc2.weight"].shape == (10, 64)  # its width
    rounds = shared_run / "results/lossy/wide/uniform/R2_M0/seed0/rounds.tsv"
    table = pd.read_csv(rounds, sep="\t")
    assert set(table["model"]) == {"wide"} and table["test_acc"].notna().all()


@pytest.mark.slow  # a Snakemake plan of the default study: 14 s of the fast tier's 60
def test_the_console_script_finds_a_model_in_the_folder_it_runs_in(tmp_path: Path) -> None:
    """``snakemake`` (the console script, as the README runs it, whose sys.path does not hold
    the working folder as ``python -m snakemake``'s does) plans the default study with the
    documented model and config file (planted bug: the Snakefile without the working folder
    on its path, which refused ``mymodels`` as not importable)."""
    import os
    import subprocess
    import sys

    (tmp_path / "mymodels.py").write_text(doc_block("mymodels.py"))
    (tmp_path / "mine.yaml").write_text(doc_block("mine.yaml"))
    tree = write_imagefolder_tree(tmp_path / "cifar", n_train=40, n_test=20)
    script = Path(sys.executable).with_name("snakemake")
    proc = subprocess.run(
        [str(script), "-s", str(REPO / "Snakefile"), "-n", "--cores", "1", "--configfile",
         "mine.yaml", "--config", f"cifar10={tree}",
         # subsets the small folder holds (-n refuses the default 5,000: issue 54)
         "data={train_subset: 10, test_subset: 10, pretrain_subset: 10}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "train_lossless" in proc.stdout + proc.stderr
