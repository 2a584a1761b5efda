"""Every relative link in the README and the docs leads to a file of the repository, and to a
heading of it when it names one: a reader browsing the repository (where the site is not
built) follows the same links as a reader of the site."""

import re
from pathlib import Path
from urllib.parse import unquote

import pytest
from markdown.extensions.toc import slugify

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
CODE = re.compile(r"`[^`\n]*`")


def _prose(page: Path) -> str:
    """The page without its code: a link shown in a code block is not followed."""
    return CODE.sub("", FENCE.sub("", page.read_text(encoding="utf-8")))


def _anchors(page: Path) -> set[str]:
    """The ids the site gives the page's headings (Python-Markdown's toc slugs)."""
    headings = HEADING.findall(FENCE.sub("", page.read_text(encoding="utf-8")))
    return {slugify(re.sub(r"[`*]", "", h), "-") for h in headings}


def _links() -> list[tuple[Path, str]]:
    return [
        (page, target)
        for page in PAGES
        for target in LINK.findall(_prose(page))
        if "://" not in target and not target.startswith("mailto:")
    ]


def test_the_pages_link_to_each_other():
    assert len(_links()) > 100


@pytest.mark.parametrize(
    ("page", "link"), _links(), ids=lambda v: str(v.relative_to(ROOT)) if isinstance(v, Path) else v
)
def test_relative_links_resolve_in_the_repository(page: Path, link: str):
    path, _, anchor = unquote(link).partition("#")
    target = (page.parent / path).resolve() if path else page
    where = page.relative_to(ROOT)
    assert target.is_file(), f"{where}: {link} leads to nothing in the repository"
    assert target.is_relative_to(ROOT), f"{where}: {link} leads out of the repository"
    if anchor and target.suffix == ".md":
        assert anchor in _anchors(target), f"{where}: {link}: no heading with the id {anchor!r}"
