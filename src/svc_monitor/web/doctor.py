"""LATENCY DOCTOR's and MEMORY DOCTOR's prose, read into what a page can show readably.

Both reports are plain text in a stable shape (Valkey's latency.c and object.c, as Redis
wrote them): paragraphs apart by blank lines, numbered findings ("1. command: 5 latency
spikes ..."), and bullets ("- Check your Slow Log ...", " * High total RSS: ...") under a
line that announces them ("Here is some advice for you:", "I detected a few issues in
this Valkey instance memory implants:"). Commands the report quotes ('CONFIG SET ...')
become code and addresses links. Anything else stays a paragraph, so a report worded
differently still reads; the page keeps the raw text beside it. Nothing here is markup:
the template escapes every piece.
"""

import re
from dataclasses import dataclass, field
from typing import Literal

from svc_monitor.web.sections import Section

BlockKind = Literal["paragraph", "steps", "points"]
PieceKind = Literal["text", "code", "link"]

_STEP = re.compile(r"^(\d+)\.\s+(.*)$")
_POINT = re.compile(r"^[-*]\s+(.*)$")
# "High total RSS: ...", "command: 5 latency spikes": a short name before the first colon.
_TITLE = re.compile(r"^([A-Za-z][\w .()/-]{0,40}?):\s+(.+)$")
# A quoted command ('CONFIG SET slowlog-log-slower-than 1000', "CONFIG SET ... <ms>.") or
# shell line ('echo never > /sys/...'); an apostrophe inside a word (can't) opens nothing.
_QUOTED = re.compile(r"(?<![\w])(['\"])((?:[A-Z]{3,}|echo|valkey-cli|redis-cli)\b[^'\"]*?)\1")
_LINK = re.compile(r"https?://[^\s'\"<>]+[^\s'\"<>.,;:!?)]")
# A lead line announcing a list worth setting apart: the doctor's advice or its findings.
_ADVICE = re.compile(r"\b(advice|advices|suggest\w*|recommend\w*|issues?|problems?)\b", re.I)


@dataclass(frozen=True, slots=True)
class Piece:
    text: str
    kind: PieceKind = "text"


@dataclass(frozen=True, slots=True)
class Item:
    """One paragraph or list entry; `title` is the short name before its colon."""

    pieces: list[Piece]
    title: str | None = None


@dataclass(slots=True)
class Block:
    kind: BlockKind
    items: list[Item] = field(default_factory=list)
    lead: list[Piece] | None = None  # the line announcing a list, shown as its heading
    advice: bool = False  # a list of advice or findings: the page sets it apart


@dataclass(frozen=True, slots=True)
class DoctorReport:
    raw: str
    blocks: list[Block]


def pieces(text: str) -> list[Piece]:
    """Running text cut into plain text, quoted commands (code) and addresses (links)."""
    found: list[tuple[int, int, Piece]] = [
        (m.start(), m.end(), Piece(m.group(2).rstrip(". "), "code")) for m in _QUOTED.finditer(text)
    ]
    for m in _LINK.finditer(text):
        if not any(start <= m.start() < end for start, end, _ in found):
            found.append((m.start(), m.end(), Piece(m.group(0), "link")))
    out: list[Piece] = []
    at = 0
    for start, end, piece in sorted(found, key=lambda f: f[0]):
        if start > at:
            out.append(Piece(text[at:start]))
        out.append(piece)
        at = end
    if at < len(text):
        out.append(Piece(text[at:]))
    return out


def _item(text: str, *, titled: bool) -> Item:
    match = _TITLE.match(text) if titled else None
    if match and len(match.group(1).split()) <= 5:
        return Item(pieces(match.group(2)), title=match.group(1))
    return Item(pieces(text))


class _Reader:
    """Reads lines into blocks: a list runs until a blank line followed by a paragraph;
    a line with no marker right under an entry continues it."""

    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self.texts: list[list[str]] = []  # each block's entries, as raw lines joined later
        self.open = False  # the last entry may still go on on the next line

    def line(self, line: str) -> None:
        text = line.strip()
        if not text:
            self.open = False
            return
        step, point = _STEP.match(text), _POINT.match(text)
        marked = step.group(2) if step else point.group(1) if point else None
        if marked is not None:
            kind: BlockKind = "steps" if step else "points"
            if not self.blocks or self.blocks[-1].kind != kind:
                self._start(kind)
            self.texts[-1].append(marked)
        elif self.open:
            self.texts[-1][-1] += " " + text
        else:
            self._start("paragraph")
            self.texts[-1].append(text)
        self.open = True

    def _start(self, kind: BlockKind) -> None:
        lead = None
        if kind != "paragraph" and self.blocks and self.blocks[-1].kind == "paragraph":
            ending = self.texts[-1][-1]
            if ending.endswith(":"):  # "Here is some advice for you:" heads the list
                self.blocks.pop()
                self.texts.pop()
                lead = ending
        block = Block(kind, lead=pieces(lead) if lead else None)
        block.advice = kind == "points" and lead is not None and bool(_ADVICE.search(lead))
        self.blocks.append(block)
        self.texts.append([])

    def report(self, raw: str) -> DoctorReport:
        for block, texts in zip(self.blocks, self.texts, strict=True):
            block.items = [_item(t, titled=block.kind != "paragraph") for t in texts]
        return DoctorReport(raw=raw, blocks=self.blocks)


def doctor_report(raw: str) -> DoctorReport:
    reader = _Reader()
    for line in raw.replace("\r\n", "\n").split("\n"):
        reader.line(line)
    return reader.report(raw.strip("\n"))


def doctor_section(read: Section[str]) -> Section[DoctorReport]:
    """A doctor's reply, read; a read that failed keeps its problem and message."""
    if read.value is None:
        return Section(problem=read.problem, message=read.message)
    return Section(doctor_report(read.value))
