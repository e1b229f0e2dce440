"""The report's captions (``workflow/report/*.rst``): valid reStructuredText once Snakemake's
Jinja has rendered them, the study-wide paragraph (paper L's training) written once, in the
report's description, and no sentence pasted into two captions."""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from types import SimpleNamespace

import docutils.core
import jinja2
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
REPORT = REPO / "workflow" / "report"
DEFAULT = yaml.safe_load((REPO / "config" / "config.yaml").read_text())


def render(path: Path, config: dict) -> str:
    """``path`` as Snakemake renders a caption: Jinja with its settings, then docutils (here
    halting at a warning, e.g. a malformed inline literal)."""
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined)
    text = env.from_string(path.read_text()).render(snakemake=SimpleNamespace(config=config))
    docutils.core.publish_parts(
        text, writer="html", settings_overrides={"halt_level": 2, "report_level": 5}
    )
    return text


def test_the_report_names_its_description() -> None:
    assert re.search(
        r'^report: "workflow/report/workflow.rst"$', (REPO / "Snakefile").read_text(), re.M
    )


def test_description_states_paper_l_training_by_its_config_keys() -> None:
    """The paragraph names the keys behind paper L's training and the summed loss's step
    size on the mean loss, as text: the study alone reads the config, so two configs render
    the same description. Planted bugs that fail it: a key left out, or the values read
    back through ``snakemake.config`` (the text then follows the config)."""
    texts = [
        " ".join(render(REPORT / "workflow.rst", {**DEFAULT, "lossless": lossless}).split())
        for lossless in (
            {**DEFAULT["lossless"], "loss_reduction": "sum", "lr": 0.02, "batch_size": 32},
            {**DEFAULT["lossless"], "loss_reduction": "mean", "lr": 0.5, "batch_size": 8},
        )
    ]
    assert texts[0] == texts[1]
    for key in ("lossless.loss_reduction", "lossless.lr", "lossless.batch_size"):
        assert f"``{key}``" in texts[0]
    assert "each step is one of ``lossless.lr`` x ``lossless.batch_size`` on the mean" in texts[0]


@pytest.mark.parametrize("path", sorted(REPORT.glob("*.rst")), ids=lambda p: p.name)
def test_every_caption_renders(path) -> None:
    render(path, DEFAULT)


def sentences(path: Path) -> set[str]:
    text = " ".join(path.read_text().split())
    return {s for s in re.split(r"(?<=[.;])\s+", text) if len(s) >= 80}


def test_no_sentence_is_pasted_into_two_captions() -> None:
    """A long sentence in two captions says a study-wide fact twice; it belongs in the
    report's description (``workflow.rst``) or in one caption that the others name."""
    files = {p.name: sentences(p) for p in sorted(REPORT.glob("*.rst"))}
    shared = [
        (a, b, sorted(files[a] & files[b])[0][:80])
        for a, b in itertools.combinations(files, 2)
        if files[a] & files[b]
    ]
    assert not shared, shared


FIGURE_CAPTIONS = sorted(p for p in REPORT.glob("[LY][0-9]*.rst"))


@pytest.mark.parametrize("path", FIGURE_CAPTIONS, ids=lambda p: p.name)
def test_every_figure_caption_says_what_to_look_at_and_what_the_paper_shows(path) -> None:
    """A reader is told where to look and how the paper's own figure differs (planted bug:
    a new figure's caption without either)."""
    text = path.read_text()
    assert "**Look at**" in text, path.name
    assert re.search(r"\*\*(Paper [LY]|Neither paper)\*\*", text), path.name


def test_every_figure_rule_has_a_caption_file() -> None:
    rules = "\n".join(p.read_text() for p in (REPO / "workflow/rules").glob("*.smk"))
    named = set(re.findall(r'caption="\.\./report/([A-Za-z0-9_]+\.rst)"', rules))
    assert named and named <= {p.name for p in REPORT.glob("*.rst")}
    assert {p.name for p in FIGURE_CAPTIONS} <= named
