"""The documentation stays true to the code and short. Its relative links resolve: every
``[text](target)`` and ``![alt](target)`` in README.md, config/README.md and docs/*.md that is
not a URL names a file or folder of the repository, and a ``#anchor`` names one of the target's
headings by GitHub's own slug rule (or an ``<a name>`` anchor). docs/ stays under 15,000 words,
no line of docs/*.md or README.md is over 120 characters, and each page says its one purpose
first. And what the docs name exists: docs/library.md names every rule (its package overview is
for readers, not held to the folders), every config key a page (or the schema's descriptions)
names is in the schema, and the extending guide's files are there."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from conftest import REPO

PAGES = [REPO / "README.md", REPO / "config" / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def relative_links(text: str) -> list[str]:
    """Targets of the Markdown links in ``text`` that are not URLs or mail addresses."""
    return [t for t in LINK.findall(text) if not re.match(r"[a-z][a-z0-9+.-]*:", t)]


def slug(heading: str) -> str:
    """GitHub's anchor of a heading (its renderer's rule): the text as rendered (inline code
    and emphasis marks gone), lower case, every character that is not a letter, digit, space,
    hyphen or underscore dropped, each space a hyphen."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every anchor of ``page``: its headings' slugs, a repeated slug numbered -1, -2, ... as
    GitHub does, and the names of ``<a name="...">`` / ``<a id="...">`` anchors."""
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    found: set[str] = set()
    for heading in re.findall(r"^#+ (.+)$", text, flags=re.M):
        base = slug(heading)
        name, n = base, 0
        while name in found:
            n += 1
            name = f"{base}-{n}"
        found.add(name)
    return found | set(re.findall(r'<a (?:name|id)="([^"]+)"', text))


def test_slug_is_githubs_rule(tmp_path: Path) -> None:
    """Known examples of GitHub's slugs (planted bug: the old rule that dropped underscores,
    which broke the README's link to ``cm_fast``)."""
    assert slug("cm_fast") == "cm_fast"
    assert slug("R(D)") == "rd"
    assert slug("FP8 / E5M2") == "fp8--e5m2"
    assert slug("i.i.d. entropy") == "iid-entropy"
    assert slug("`cm_context`: context-mixing binary arithmetic coder") == (
        "cm_context-context-mixing-binary-arithmetic-coder"
    )
    assert slug("Why 1,000 test images per run") == "why-1000-test-images-per-run"
    assert slug("The follow-up (M22)") == "the-follow-up-m22"
    page = tmp_path / "p.md"
    page.write_text('# Setup\n## Setup\n## Setup\n<a name="here"></a>\n```\n# not a heading\n```\n')
    assert anchors(page) == {"setup", "setup-1", "setup-2", "here"}


def broken_links(page: Path) -> list[str]:
    """The links of ``page`` whose file (or heading) does not exist."""
    bad = []
    for target in relative_links(page.read_text()):
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            bad.append(target)
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            bad.append(target)
    return bad


def test_link_checker_finds_a_planted_broken_link(tmp_path: Path) -> None:
    """The checker itself: a missing file, a missing heading and a bad image are reported,
    URLs and good links are not (planted bug: a checker that returns nothing)."""
    (tmp_path / "b.md").write_text("# Why 1,000 test images\n")
    page = tmp_path / "a.md"
    page.write_text(
        "[ok](b.md) [ok](b.md#why-1000-test-images) [web](https://example.org/x.md)\n"
        "[gone](c.md) [nohead](b.md#other) ![img](figures/none.png) [self](#top)\n# Top\n"
    )
    assert broken_links(page) == ["c.md", "b.md#other", "figures/none.png"]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve(page: Path) -> None:
    """Planted bug: rename docs/results.md (or a heading a link points at) and this fails."""
    assert page.exists()
    assert broken_links(page) == []


def test_readme_is_short_and_links_the_docs() -> None:
    """The README stays a five-minute read and points at every page of docs/."""
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    linked = {(REPO / t.partition("#")[0]).resolve() for t in relative_links(readme)}
    for page in PAGES[2:]:
        assert page.resolve() in linked, f"README does not link {page.name}"


DOCS = sorted((REPO / "docs").glob("*.md"))


def test_docs_read_in_an_afternoon() -> None:
    """docs/*.md hold at most 15,000 words (``cat docs/*.md | wc -w``), every word counted,
    generated blocks included; planted bug: a page that grows back its history."""
    words = sum(len(page.read_text().split()) for page in DOCS)
    assert words <= 15_000, f"docs/ holds {words} words"


@pytest.mark.parametrize("page", [REPO / "README.md", *DOCS], ids=lambda p: p.name)
def test_no_line_over_120_characters(page: Path) -> None:
    """Prose and code wrap at 120; a Markdown table row (``|``) or a block marker (``<!--``)
    cannot wrap and is left out."""
    long = [
        i + 1 for i, line in enumerate(page.read_text().splitlines())
        if len(line) > 120 and not line.startswith(("|", "<!--"))
    ]  # fmt: skip
    assert long == [], f"{page.name}: lines over 120 characters: {long}"


@pytest.mark.parametrize("page", DOCS, ids=lambda p: p.name)
def test_each_page_says_its_purpose_first(page: Path) -> None:
    """A page opens with its title, then one sentence that says what the page is for."""
    lines = page.read_text().splitlines()
    assert lines[0].startswith("# ") and lines[1] == ""
    assert lines[2].startswith("This page "), f"{page.name} does not say its purpose first"


# --- docs that name the code: checked against the code, so that they cannot go stale ----

SRC = REPO / "src" / "gradcomp"
SCHEMA = yaml.safe_load((REPO / "workflow" / "schemas" / "config.schema.yaml").read_text())


def rule_names() -> set[str]:
    """Every ``rule x:`` of the workflow except the target rule ``all``."""
    files = [REPO / "Snakefile", *sorted((REPO / "workflow" / "rules").glob("*.smk"))]
    names = {m for f in files for m in re.findall(r"^rule (\w+):", f.read_text(), flags=re.M)}
    return names - {"all"}


def test_library_map_names_every_rule() -> None:
    """Planted bug that fails it: a new rule without its row in docs/library.md."""
    text = (REPO / "docs" / "library.md").read_text()
    assert len(rule_names()) > 20
    assert sorted(r for r in rule_names() if f"`{r}`" not in text) == []


def test_t1_caption_and_coder_guide_name_every_builtin_coder() -> None:
    """Planted bug that fails it: a new built-in coder without a word in T1's caption or
    docs/coders.md (T1's caption missed 6 of the 22 before this test)."""
    from gradcomp.coding.registry import builtin_specs

    names = [n.replace("gennorm", "<family>") if n.split("_")[0] in ("huffman", "xent") else n
             for n in builtin_specs(("gennorm",))]  # fmt: skip
    assert len(names) > 20
    for page in (REPO / "workflow" / "report" / "T1.rst", REPO / "docs" / "coders.md"):
        text = page.read_text()
        assert [n for n in names if f"``{n}``" not in text and f"`{n}`" not in text] == [], page


def schema_has(path: list[str], node: dict | None = None) -> bool:
    """Whether the key path exists in the schema; ``<i>`` or ``<model>`` stand for an array
    index or a free property name, ``*`` for any key."""
    node = SCHEMA if node is None else node
    while "$ref" in node:
        target = SCHEMA
        for part in node["$ref"].lstrip("#/").split("/"):
            target = target[part]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    if not path:
        return True
    head, rest = path[0], path[1:]
    if head == "*":
        return bool(node.get("properties"))
    if head.startswith("<") and head.endswith(">"):
        child = node.get("items") or node.get("additionalProperties")
        return isinstance(child, dict) and schema_has(rest, child)
    if head in node.get("properties", {}):
        return schema_has(rest, node["properties"][head])
    free = node.get("additionalProperties")
    if isinstance(free, dict) and head in node.get("propertyNames", {}).get("enum", [head]):
        return schema_has(rest, free)  # a free property name written out
    items = node.get("items")
    if isinstance(items, dict) and head in items.get("properties", {}):
        return schema_has(path, items)  # an array index left implicit
    return False


def object_keys(node: dict, found: set[str]) -> set[str]:
    """Names of the schema's object-valued properties at any depth (``fit``, ``one_round``)."""
    for name, sub in node.get("properties", {}).items():
        if "properties" in sub:
            found.add(name)
        object_keys(sub, found)
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            object_keys(node[key], found)
    return found


KEY = re.compile(r"^([a-z_][a-z0-9_]*(?:\.(?:[a-z0-9_]+|<\w+>|\*))+)(?=$|[\s:=,)])")
FILE_SUFFIXES = ("tsv", "md", "py", "yaml", "smk", "pt", "safetensors", "toml", "png", "pdf")


def config_keys(text: str) -> set[str]:
    """Dotted config keys written in backticks, absolute (``lossy.one_round.seeds``) or
    relative to a section (``fit.floc``); file names and Python names are not keys."""
    top, sections = set(SCHEMA["properties"]), object_keys(SCHEMA, set())
    keys = set()
    for code in re.findall(r"`([^`\n]+)`", text):
        match = KEY.match(code)
        if match and match.group(1).rsplit(".", 1)[-1] not in FILE_SUFFIXES:
            first = match.group(1).split(".")[0]
            if first in top or first in sections:
                keys.add(match.group(1))
    return keys


def key_exists(key: str) -> bool:
    parts = key.split(".")
    if parts[0] in SCHEMA["properties"]:
        return schema_has(parts)
    return any(schema_has(p[:-1] + parts) for p in section_paths(SCHEMA, []) if p[-1] == parts[0])


def section_paths(node: dict, at: list[str]) -> list[list[str]]:
    paths = []
    for name, sub in node.get("properties", {}).items():
        paths.append([*at, name])
        paths += section_paths(sub, [*at, name])
    return paths


def test_key_checker_finds_a_planted_stale_key() -> None:
    """The checker itself (planted bug: a checker that finds no key or accepts any)."""
    text = "`lossy.one_round.seeds`, `fit.floc: null`, `fit.min_entries`, `coding.tsv`, `np.x`"
    found = config_keys(text)
    assert found == {"lossy.one_round.seeds", "fit.floc", "fit.min_entries"}
    assert [k for k in sorted(found) if not key_exists(k)] == ["fit.min_entries"]
    assert key_exists("lossy.compressors.<i>.class") and key_exists("figures.*")
    assert key_exists("resources.train_lossless.runtime")
    assert not key_exists("lossy.compressors.<i>.nonsense")


def schema_descriptions(node=SCHEMA) -> str:
    if isinstance(node, dict):
        own = node.get("description", "") if isinstance(node.get("description"), str) else ""
        return own + "\n" + "\n".join(schema_descriptions(v) for v in node.values())
    if isinstance(node, list):
        return "\n".join(schema_descriptions(v) for v in node)
    return ""


@pytest.mark.parametrize(
    "page", [*PAGES, "schema"], ids=lambda p: str(p if p == "schema" else p.relative_to(REPO))
)
def test_every_config_key_the_docs_name_exists(page) -> None:
    """Planted bug that fails it: a key renamed in the schema while a page (or another key's
    description, written there without backticks) still names the old one."""
    if page == "schema":
        text = " ".join(f"`{w.rstrip('.,;:)')}`" for w in schema_descriptions().split())
    else:
        text = page.read_text()
    assert sorted(k for k in config_keys(text) if not key_exists(k)) == []


def test_extending_guide_names_files_that_exist() -> None:
    """Every file the guide's table and text point at (``compression/registry.py``,
    ``tests/study/test_study.py``, ``workflow/rules/``) exists, looked up from the repository, the
    library or the workflow folder."""
    text = (REPO / "docs" / "extending.md").read_text()
    named = set(re.findall(r"`([\w./-]+\.(?:py|yaml|smk|md)|[\w./-]+/)`", text))
    named |= {t for t in re.findall(r"\]\(\.\./([^)#\s]+)\)", text)}
    named -= {"mycompressors.py", "mine.yaml"}  # the user's own files in the example
    assert len(named) > 10
    roots = (REPO, SRC, REPO / "workflow", REPO / "workflow" / "rules")
    missing = [n for n in sorted(named) if not any((r / n).exists() for r in roots)]
    assert missing == []
