"""The repository explains itself: comments and docstrings in src/ and tests/ state their
rule and point to the docs page that holds it (`docs/features/webhooks.md#signatures`),
never to documents kept outside the repository, which its reader cannot open. Every docs
page and heading such a comment names exists, slugged as the site slugs headings
(tests/docs/test_links.py)."""

import io
import re
import tokenize
from collections.abc import Iterable, Iterator
from pathlib import Path

from tests.docs.test_links import ROOT, _anchors

TREES = [ROOT / "src", ROOT / "tests"]
# Third-party files shipped as they are (their licences and bundles are not ours to word).
VENDORED = ROOT / "src" / "svc_monitor" / "web" / "static" / "vendor"
TEXT_SUFFIXES = {".html", ".js", ".css", ".sql", ".toml", ".yaml", ".yml", ".ini", ".md", ".txt"}

# Ways of citing the outside documents. Each word is written with a character class, so
# this file's own strings never match them.
OUTSIDE = re.compile(
    r"\bth[e]\s+spe[c]\b"
    r"|\bspe[c]'s\b"
    r"|\bspe[c]\s+(?:rule|limit|table)"
    r"|\(\s*(?:webhooks\s+)?spe[c]\b"  # a citation in parentheses
    r"|\bspe[c]:\s"
    r"|(?<!OpenTelemetry )(?<!OTLP )\bspecificatio[n]"  # OpenTelemetry's own is public
    r"|\.\./share[d]\b"
    r"|/share[d]/(?:spe[c]|referenc[e])\b",
    re.IGNORECASE,
)
DOC_LINK = re.compile(r"\bdocs/[\w/.-]+?\.md(?:#[\w-]+)?")


def _files() -> Iterator[Path]:
    for tree in TREES:
        for path in sorted(tree.rglob("*")):
            if not path.is_file() or path.is_relative_to(VENDORED) or "__pycache__" in path.parts:
                continue
            if path.suffix == ".py" or path.suffix in TEXT_SUFFIXES:
                yield path


def _prose(path: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of each comment and string of a Python file (where the words are,
    not the names), or of each line of any other text file."""
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".py":
        yield from enumerate(text.splitlines(), 1)
        return
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type in (tokenize.COMMENT, tokenize.STRING):
            yield token.start[0], token.string


def _matches(pattern: re.Pattern[str], paths: Iterable[Path]) -> list[tuple[str, str]]:
    """(file:line, matched text) of every match in the prose of `paths`."""
    found = []
    for path in paths:
        for first_line, text in _prose(path):
            for match in pattern.finditer(text):
                line = first_line + text.count("\n", 0, match.start())
                found.append((f"{path.relative_to(ROOT)}:{line}", match[0]))
    return found


def test_no_comment_cites_a_document_outside_the_repository():
    found = [f"{where}: {text!r}" for where, text in _matches(OUTSIDE, _files())]
    assert found == [], (
        "state the rule and link the docs page that holds it instead:\n" + "\n".join(found)
    )


def _doc_links() -> list[tuple[str, str]]:
    return _matches(DOC_LINK, (path for path in _files() if path.suffix == ".py"))


def test_comments_link_to_the_docs():
    assert len(_doc_links()) > 50


def test_every_docs_page_and_heading_a_comment_names_exists():
    broken = []
    for where, link in _doc_links():
        page, _, anchor = link.partition("#")
        target = ROOT / page
        if not target.is_file():
            broken.append(f"{where}: {link}: no such page")
        elif anchor and anchor not in _anchors(target):
            broken.append(f"{where}: {link}: no heading with the id {anchor!r}")
    assert broken == [], "\n".join(broken)
