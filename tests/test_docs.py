"""The documentation's relative links resolve: every ``[text](target)`` and ``![alt](target)``
in README.md, config/README.md and docs/*.md that is not a URL names a file or folder of
the repository, and a ``#anchor`` on a Markdown target names one of its headings."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import REPO

PAGES = [REPO / "README.md", REPO / "config" / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def relative_links(text: str) -> list[str]:
    """Targets of the Markdown links in ``text`` that are not URLs or mail addresses."""
    return [t for t in LINK.findall(text) if not re.match(r"[a-z][a-z0-9+.-]*:", t)]


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    return {slug(h) for h in re.findall(r"^#+ (.+)$", text, flags=re.M)}


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
