"""The README is the front door: short, and leading into the docs (tests/docs/test_links.py
checks that every link leads somewhere real)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _links() -> list[str]:
    return [t for t in LINK.findall(README.read_text(encoding="utf-8")) if "://" not in t]


def test_it_is_short():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 150


def test_it_links_into_the_docs():
    assert any(link.startswith("docs/guides/") for link in _links())


def test_the_screenshot_is_small():
    assert (ROOT / "docs" / "assets" / "dashboard.png").stat().st_size < 150_000
