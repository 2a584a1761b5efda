"""The README is the front door: short, and every link in it leads somewhere real."""

import re
from pathlib import Path
from urllib.parse import unquote

import pytest
from markdown.extensions.toc import slugify

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)


def _links() -> list[str]:
    return [t for t in LINK.findall(README.read_text(encoding="utf-8")) if "://" not in t]


def _anchors(page: Path) -> set[str]:
    """The ids the site gives the page's headings (Python-Markdown's toc slugs)."""
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return {slugify(re.sub(r"[`*]", "", h), "-") for h in HEADING.findall(text)}


def test_it_is_short():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 150


def test_it_links_into_the_docs():
    assert any(link.startswith("docs/guides/") for link in _links())


@pytest.mark.parametrize("link", _links())
def test_relative_links_resolve(link: str):
    path, _, anchor = unquote(link).partition("#")
    target = (ROOT / path) if path else README
    assert target.is_file(), f"{link}: {target} does not exist"
    if anchor:
        assert anchor in _anchors(target), f"{link}: no heading with the id {anchor!r}"


def test_the_screenshot_is_small():
    assert (ROOT / "docs" / "assets" / "dashboard.png").stat().st_size < 150_000
