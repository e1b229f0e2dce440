"""The config is read once: the Snakefile builds the study (gradcomp.study) from it, and no
rule, script or library module reads a raw config key (``config[...]``, ``config.get(...)``,
``sm.config``, ``snakemake.config``, or the config handed on as ``f(config)``), nor does a
report caption (workflow/report/*.rst: Snakemake renders them with Jinja, where
``snakemake.config`` is at hand); a caption names its config keys as text.

The study package (gradcomp.study.config validates the dict, gradcomp.study.build builds the
study from it, each section in a module of the package) is the one reader; the Snakefile's
single ``load_study(config, ...)`` the one hand-over.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import REPO

#: ``config`` as a name that is indexed, has an attribute read, is called or handed on.
RAW_READ = re.compile(r"(?<![\w.])(?:sm\.|snakemake\.)?config\s*(?:\[|\.|\(|,|\))")
#: The study package's modules, the one reader.
ALLOWED_MODULES = {str(p.relative_to(REPO)) for p in (REPO / "src/gradcomp/study").glob("*.py")}
HAND_OVER = "STUDY = load_study(config, "
#: A Jinja tag of a report caption, ``{{ ... }}`` or ``{% ... %}`` (over lines too).
JINJA_TAG = re.compile(r"\{[{%].*?[}%]\}", re.DOTALL)


def code_lines(text: str) -> list[tuple[int, str]]:
    """(line number, code) with docstrings, string literals and comments blanked."""
    text = re.sub(r'"""(?:.|\n)*?"""', lambda m: "\n" * m.group().count("\n"), text)
    strings = re.compile(r"\"[^\"\n]*\"|'[^'\n]*'")
    return [
        (i, strings.sub('""', line).split("#", 1)[0]) for i, line in enumerate(text.splitlines(), 1)
    ]


def raw_reads(text: str) -> list[str]:
    """The code lines of ``text`` that read the config, other than the study's hand-over."""
    return [
        f"{i}: {line.strip()}"
        for i, line in code_lines(text)
        if RAW_READ.search(line) and not line.strip().startswith(HAND_OVER)
    ]


def template_reads(text: str) -> list[str]:
    """The lines of a report caption where it reads the config: ``snakemake.config``
    anywhere, or ``config`` inside a Jinja tag; prose that names a key is not a read."""
    starts = [m.start() for m in JINJA_TAG.finditer(text) if re.search(r"\bconfig\b", m.group())]
    starts += [m.start() for m in re.finditer(r"snakemake\.config\b", text)]
    lines = text.splitlines()
    numbers = sorted({text.count("\n", 0, at) + 1 for at in starts})
    return [f"{i}: {lines[i - 1].strip()}" for i in numbers]


def report_captions() -> list[Path]:
    return sorted((REPO / "workflow/report").glob("*.rst"))


def workflow_files() -> list[Path]:
    files = [REPO / "Snakefile", *sorted((REPO / "workflow/rules").glob("*.smk"))]
    files += sorted((REPO / "workflow/scripts").glob("*.py"))
    return files + [
        p for p in sorted((REPO / "src/gradcomp").rglob("*.py"))
        if p.relative_to(REPO).as_posix() not in ALLOWED_MODULES
    ]  # fmt: skip


@pytest.mark.parametrize(
    "planted",
    [
        'STREAMED = stream_enabled(config["lossless"], m)',
        "    device=sm.config['device'],",
        "    device=snakemake.config.get('device'),",
        'x = config.get("lossy", {})',
        "CODERS = coder_specs(config)",
    ],
)
def test_the_check_finds_a_planted_read(planted: str) -> None:
    """The detector itself (planted bugs: each way of reading the config it must see)."""
    found = raw_reads(f"# a comment: config[x]\n{planted}\n")
    assert len(found) == 1 and found[0].startswith("2: ")


@pytest.mark.parametrize(
    "planted",
    [
        '{% set L = snakemake.config["lossless"] %}',
        "SGD at lr {{ snakemake.config.lossless.lr }} and",
        'rounds {{ config["lossy"]["rounds"] }} each',
        '{% if snakemake.config["lossless"]["loss_reduction"]\n   == "sum" %} (sum)',
    ],
)
def test_the_check_finds_a_planted_template_read(planted: str) -> None:
    """The caption detector itself: each way a Jinja caption can read the config."""
    prose = "Caption text; config ``lossless.lr`` (the config), {{ model }}, config."
    found = template_reads(f"{prose}\n{planted}\n")
    assert len(found) == 1 and found[0].startswith("2: ")


def test_no_report_caption_reads_the_config() -> None:
    """Planted bug: workflow.rst's ``{% set L = snakemake.config["lossless"] %}`` (its values
    went stale against the study; the caption names the keys instead)."""
    reads = {
        path.relative_to(REPO).as_posix(): found
        for path in report_captions()
        if (found := template_reads(path.read_text()))
    }
    assert report_captions() and reads == {}


def test_nothing_but_the_study_reads_the_config() -> None:
    """Planted bug: a rule reading ``config["lossless"]`` again, a script ``sm.config``."""
    reads = {
        path.relative_to(REPO).as_posix(): found
        for path in workflow_files()
        if (found := raw_reads(path.read_text()))
    }
    assert reads == {}


def test_the_snakefile_hands_the_config_over_once() -> None:
    """The Snakefile's one use of the config builds the study (the validation and every
    check across keys run there, once)."""
    lines = [line for _, line in code_lines((REPO / "Snakefile").read_text())]
    assert sum(line.startswith(HAND_OVER) for line in lines) == 1
    assert sum(bool(re.search(r"(?<![\w.])config(?![\w])", line)) for line in lines) == 1
