"""Parse a raw INFO reply in one pass: a pure function, no I/O.

INFO is read as raw bytes (no client callback) because valkey-py's own parser costs
noticeably more CPU per call (bench/info_parse.py measures both), and INFO is the hottest
reply the poller handles.

The reply is untrusted text from a server we do not control, so the parser never raises on
content, only on size (`InfoTooLarge`), and every value it keeps is a `str`, an `int`, a
finite `float`, or (in the composite sections) a flat dict of those.

Choices made here, each pinned by a test in tests/engine/test_info.py:

- Lines end at CRLF, LF or any other boundary `str.splitlines()` knows (CR, VT, FF, NEL,
  U+2028...): real replies use CRLF, and one C-level split beats stripping "\r" per line;
  the extra boundaries only ever show up in hostile replies, where they just make more
  (malformed) lines. A missing final newline is fine.
- Sections: a line starting with `#` is a header; `# Name` starts section `name`
  (lower-cased, inner spaces kept, so Valkey 9's `# Cluster Info` becomes "cluster info").
  A header seen twice merges into one section; a header with an empty or unprintable
  name is a malformed line. Every header makes a section, empty ones too. Field lines
  before any header go to a section named "", which exists only when there are such lines.
- Fields: `name:value` split on the first colon, since values hold colons
  (`master_host:::1`). In the composite sections the split is on the last colon instead:
  their values never contain one, while old servers wrote `cmdstat_host::calls=...`.
  Names must be non-empty, printable and contain no space; other lines are malformed.
- Scalars: an ASCII decimal integer becomes `int` (one too long for `int()`'s digit limit
  stays `str`); a fixed-point decimal (`1.03`, `-0.5`) that is finite becomes `float`;
  anything else, `nan`, `inf`, `1e5`, `98.81%` and empty included, stays `str`. Fields
  that hold identifiers or versions stay `str` even when they look numeric:
  `master_replid2:0000000000000000000000000000000000000000` is not the number 0.
- Composite sections (keyspace, commandstats, errorstats, latencystats): the value is a
  `k=v,k=v` list parsed into a dict with the same scalar rules; items without `=` or with
  an empty key are dropped, and a value with no items at all gives an empty dict.
- Malformed lines (no colon, bad name, longer than 64 KiB) are skipped and counted in
  `skipped_lines`; blank lines are not counted. Duplicate fields: the last one wins.
- Size: input longer than `max_bytes` raises `InfoTooLarge` rather than being cut, so a
  caller never mistakes half a reply for a whole one. For `str` input the limit counts
  characters.
- Bytes are decoded as UTF-8 with errors="replace": INFO is ASCII, but a hostile server
  must not be able to crash the poller.
"""

import math
from collections.abc import Callable, Iterator, Mapping, Set as AbstractSet
from dataclasses import dataclass
from typing import Literal

from svc_monitor.kit.versions import release_parts

Scalar = str | int | float
FieldValue = Scalar | dict[str, Scalar]

DEFAULT_MAX_BYTES = 4 * 1024 * 1024

# Real INFO lines are under 1 KiB (the longest are paths); anything this long is junk,
# and skipping it keeps one hostile line from becoming one huge stored value.
MAX_LINE_CHARS = 64 * 1024

# What storage's integer columns hold: a larger value is no reading a server makes.
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_NOT_FINITE = frozenset({"inf", "infinity", "nan"})
_FLOAT_BOUND = float(2**63)  # a gauge past this is no reading, and its square overflows

# A fixed-point decimal this short has at most 308 integer digits, below float's max
# (1.8e308), so it cannot overflow to inf.
_ALWAYS_FINITE_CHARS = 308

# Field names already validated, so the hot loop can skip validating them again: one set
# lookup instead of four checks per line, about 14% of a parse of the Valkey 9.1 reply
# (bench/info_parse.py: 126 us against 146 us). A pure memo: results are the same with it
# cold, warm or full (tested). Bounded, so a server inventing names cannot grow it
# without limit; once full, new names just take the checked path.
_KNOWN_NAMES_MAX = 8192
_known_names: set[str] = set()
_NO_NAMES: frozenset[str] = frozenset()
# Header lines seen, with the section each names (a memo like _known_names).
_header_sections: dict[str, str] = {}
# Field names asked for by `ParsedInfo.get` that may be searched for in a plain reply.
_lookup_names: set[str] = set()

# What `str.splitlines()` breaks an ASCII line on besides CR and LF.
_OTHER_LINE_BREAKS = ("\x0b", "\x0c", "\x1c", "\x1d", "\x1e")

_COMPOSITE_SECTIONS = frozenset({"keyspace", "commandstats", "errorstats", "latencystats"})

# Identifiers and versions: text that can look like a number (a fresh server reports
# master_replid2 as forty zeros, redis_git_sha1 as "00000000"), so conversion would lose it.
_TEXT_FIELDS = frozenset(
    {
        "run_id",
        "master_replid",
        "master_replid2",
        "redis_git_sha1",
        "redis_build_id",
        "redis_version",
        "valkey_version",
        "gcc_version",
        "executable",
        "config_file",
        "availability_zone",
        "master_host",
        "tls_server_cert_serial",
        "tls_client_cert_serial",
        "tls_ca_cert_serial",
    }
)

_isfinite = math.isfinite


class InfoTooLarge(ValueError):
    """The reply is longer than the parser agreed to read."""


@dataclass(frozen=True, slots=True)
class CarriedSections:
    """Sections of an earlier, fuller INFO read that a slimmer read carries on with: the
    per-second read asks only for what is judged each second, and the rest of the default
    INFO comes from the last full read (docs/features/polling-and-history.md#info-cadence).

    The sections stay in `source`, the full read itself, parsed there only if someone reads
    them (most passes nobody does), and shared by every reply that carries them.
    """

    read_at_ms: int  # when the full read that these sections come from was received
    source: "ParsedInfo"
    names: frozenset[str]


class ParsedInfo:
    """An INFO reply split into sections; the typed getters never raise.

    Sections are parsed lazily, each on first access and then kept: the poller reads
    INFO every second but most consumers look at a few fields of a few sections, and
    parsing the sections nobody reads was ~a third of a poll's CPU (bench/poll_fanout.py).
    In a plain reply (every real one: see _Context) `get` goes further and finds the one
    line it wants without splitting the section at all, so a poll that reads a few fields
    of memory, clients and stats makes a few strings instead of a few hundred.
    The result of any access is exactly what a whole parse would give (tested).
    """

    __slots__ = (
        "_blocks",
        "_context",
        "_done",
        "_header_skips",
        "_skipped",
        "carried",
        "rejected",
    )

    def __init__(self, sections: Mapping[str, dict[str, FieldValue]], skipped_lines: int) -> None:
        """A fully parsed reply (as tests and pushed data build one)."""
        self._done: dict[str, dict[str, FieldValue]] = dict(sections)
        self._blocks: dict[str, list[tuple[int, int]]] = {}
        self._context: _Context | None = None
        self._header_skips = skipped_lines
        self._skipped = 0
        # Fields read through get_int/get_float whose number no counter or gauge can hold
        # (past 64 bits, inf, nan): left out as if absent, and named here for the poll.
        self.rejected: set[tuple[str, str]] | None = None
        # Sections this reply did not read but carries on from an earlier read; None when
        # every section here was read with this reply.
        self.carried: CarriedSections | None = None

    @classmethod
    def _lazy(
        cls, blocks: dict[str, list[tuple[int, int]]], context: "_Context", header_skips: int
    ) -> "ParsedInfo":
        info = cls({}, header_skips)
        info._blocks = blocks
        info._context = context
        # Lines before any header form section "" only when one of them is a field.
        if "" in blocks and not info._section(""):
            del info._done[""]
        return info

    @property
    def sections(self) -> Mapping[str, dict[str, FieldValue]]:
        return _Sections(self)

    def carry(self, carried: CarriedSections) -> None:
        """Carry on the sections of `carried` this reply lacks; a section read with this
        reply keeps its own fields."""
        fresh = {name for name in carried.names if name in self._done or name in self._blocks}
        if fresh:  # never with the reads the poller makes; kept honest for any other
            carried = CarriedSections(carried.read_at_ms, carried.source, carried.names - fresh)
        self.carried = carried

    def is_carried(self, section: str) -> bool:
        """Whether `section` came from an earlier read rather than with this reply."""
        carried = self.carried
        return carried is not None and section in carried.names

    def take(self, name: str) -> "ParsedInfo":
        """Section `name` moved out into a ParsedInfo of its own (with no sections when
        this one has none of that name): one read of several sections hands each reader
        only its part, as if each had read its own."""
        taken = ParsedInfo({}, 0)
        fields = self._done.pop(name, None)
        if fields is not None:
            taken._done[name] = fields
        ranges = self._blocks.pop(name, None)
        if ranges is not None:
            # Parsed now, not lazily: a lazy section would keep the whole reply's text
            # alive for as long as its reader keeps the section (the latest commandstats
            # are kept per connection, so that was a second INFO reply each).
            assert self._context is not None
            composite = name in _COMPOSITE_SECTIONS
            taken._done[name], taken._skipped = _parse_ranges(self._context, ranges, composite)
        return taken

    @property
    def skipped_lines(self) -> int:
        for name in list(self._blocks):
            self._section(name)
        return self._header_skips + self._skipped

    def _names(self) -> list[str]:
        names = list(self._done)
        names.extend(n for n in self._blocks if n not in self._done and n != "")
        if self.carried is not None:
            names.extend(self.carried.names)
        return names

    def _section(self, name: str) -> dict[str, FieldValue] | None:
        fields = self._done.get(name)
        if fields is not None:
            return fields
        ranges = self._blocks.pop(name, None)
        if ranges is None:
            carried = self.carried
            if carried is not None and name in carried.names:
                return carried.source._section(name)
            return None
        assert self._context is not None
        fields, skipped = _parse_ranges(self._context, ranges, name in _COMPOSITE_SECTIONS)
        self._skipped += skipped
        self._done[name] = fields
        return fields

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ParsedInfo):
            return NotImplemented
        return (dict(self.sections), self.skipped_lines) == (
            dict(other.sections),
            other.skipped_lines,
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ParsedInfo(sections={dict(self.sections)!r}, skipped_lines={self.skipped_lines})"

    def get(self, section: str, field: str) -> FieldValue | None:
        # Callers name sections in lower case: a parsed one is then one dict lookup away,
        # which the detectors' ~60 reads per observation notice (bench/detectors.py).
        fields = self._done.get(section)
        if fields is None:
            name = section.lower()
            context = self._context
            if context is not None and context.plain and name not in _COMPOSITE_SECTIONS:
                ranges = self._blocks.get(name)
                if ranges is not None and name and _lookup_name(field):
                    return _find(context.text, ranges, field)
            carried = self.carried
            if carried is not None and name in carried.names:
                return carried.source.get(name, field)
            fields = self._section(name)
            if fields is None:
                return None
        return fields.get(field)

    def get_int(self, section: str, field: str) -> int | None:
        """The value when it is an integer a 64-bit counter holds; None when absent or
        anything else (an integer past 64 bits is counted in `rejected`)."""
        value = self.get(section, field)
        # The exact type: bool is an int subclass; the parser never makes one, but a
        # hand-built ParsedInfo could, and True is not a count.
        if type(value) is not int:
            return None
        if not _INT64_MIN <= value <= _INT64_MAX:
            self._reject(section, field)
            return None
        return value

    def get_float(self, section: str, field: str) -> float | None:
        """The value as a float when it is a finite number (ints widen); else None."""
        value = self.get(section, field)
        # Exact types, not isinstance: quicker, and bool (an int subclass) is not a number.
        if type(value) is float:
            if _isfinite(value) and -_FLOAT_BOUND < value < _FLOAT_BOUND:
                return value
            self._reject(section, field)
            return None
        if type(value) is not int:
            if type(value) is str and value.lower().lstrip("+-") in _NOT_FINITE:
                self._reject(section, field)
            return None
        if not _INT64_MIN <= value <= _INT64_MAX:
            self._reject(section, field)
            return None
        return float(value)

    def _reject(self, section: str, field: str) -> None:
        if self.rejected is None:
            self.rejected = set()
        self.rejected.add((section, field))

    def get_str(self, section: str, field: str) -> str | None:
        """The value as text (numbers via str(): a parsed "0.10" reads back "0.1").

        None when absent or a composite dict.
        """
        value = self.get(section, field)
        if isinstance(value, str):
            return value
        if isinstance(value, dict) or value is None:
            return None
        try:
            return str(value)
        except ValueError:  # an int longer than the current int/str digit limit
            return None


@dataclass(frozen=True, slots=True)
class _Context:
    """What parsing a section needs from the whole reply.

    A plain reply (ASCII, every line ending in CRLF and nothing else `splitlines()` splits
    on, no longer than a line may be: every real one) is kept as one string, `text`,
    which starts with CRLF so that every line, the first too, follows one; its ranges are
    character offsets, and one field is found without splitting a section into lines.
    Any other reply is split into `lines` up front and its ranges count lines.
    """

    text: str
    lines: list[str]
    ascii_only: bool
    known: AbstractSet[str]
    plain: bool

    def lines_of(self, ranges: list[tuple[int, int]]) -> list[str]:
        if self.plain:
            text = self.text
            if len(ranges) == 1:  # a header seen once: nearly always
                start, end = ranges[0]
                return text[start:end].split("\r\n")
            return [line for start, end in ranges for line in text[start:end].split("\r\n")]
        lines = self.lines
        return [line for first, end in ranges for line in lines[first:end]]


class _Sections(Mapping[str, dict[str, FieldValue]]):
    """The sections of a ParsedInfo, parsed as they are looked up."""

    __slots__ = ("_info",)

    def __init__(self, info: ParsedInfo) -> None:
        self._info = info

    def __getitem__(self, name: str) -> dict[str, FieldValue]:
        fields = self._info._section(name)
        if fields is None:
            raise KeyError(name)
        return fields

    def __iter__(self) -> Iterator[str]:
        return iter(self._info._names())

    def __len__(self) -> int:
        return len(self._info._names())


def parse_info(raw: bytes | str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> ParsedInfo:
    """Split a raw INFO reply into sections (parsed on first access). Raises only
    InfoTooLarge."""
    if len(raw) > max_bytes:
        raise InfoTooLarge(
            f"INFO reply is {len(raw)} bytes, more than the {max_bytes}-byte limit; "
            "refusing to parse it"
        )
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    if _is_plain(text):
        return _parse_plain(text)
    lines = text.splitlines()
    # One O(1) check for the whole reply spares an isascii() per value (str.isdigit()
    # alone also accepts digits such as "²" that int() rejects).
    context = _Context(
        text=text,
        lines=lines,
        ascii_only=text.isascii(),
        # A reply no longer than the line limit cannot hold an over-long line, so the fast
        # path needs no per-line length check; a longer reply takes the checked path.
        known=_known_names if len(text) <= MAX_LINE_CHARS else _NO_NAMES,
        plain=False,
    )
    # Only the header lines are looked at now: each section is a list of line ranges
    # (a header seen twice adds a second range to the same section).
    blocks: dict[str, list[tuple[int, int]]] = {}
    header_skips = 0
    current, start = "", 0
    for index in [i for i, line in enumerate(lines) if line[:1] == "#"]:
        if index > start:
            blocks.setdefault(current, []).append((start, index))
        start = index + 1
        section = _header_section(lines[index])
        if section:
            current = section
            blocks.setdefault(section, [])  # every header makes a section, empty ones too
        else:
            header_skips += 1  # a malformed header; its lines stay in the section before
    if start < len(lines):
        blocks.setdefault(current, []).append((start, len(lines)))
    return ParsedInfo._lazy(blocks, context, header_skips)


def _is_plain(text: str) -> bool:
    """ASCII, no longer than one line may be, and CRLF the only line break in it."""
    if len(text) > MAX_LINE_CHARS or not text.isascii():
        return False
    # One `in` per character is a memchr; a regular expression over the reply cost more
    # than the whole split it guards.
    if any(brk in text for brk in _OTHER_LINE_BREAKS):
        return False
    crlf = text.count("\r\n")
    return text.count("\r") == crlf and text.count("\n") == crlf


def _parse_plain(reply: str) -> ParsedInfo:
    """parse_info for a plain reply: the headers found by searching for CRLF "#", each
    section a list of (start, end) character ranges in `text` (lines joined by CRLF)."""
    text = "\r\n" + reply
    blocks: dict[str, list[tuple[int, int]]] = {}
    header_skips = 0
    current, start = "", 2
    find = text.find
    at = find("\r\n#")
    while at != -1:
        if at > start:
            blocks.setdefault(current, []).append((start, at))
        line_end = find("\r\n", at + 2)
        if line_end == -1:
            line_end = len(text)
        start = line_end + 2
        section = _header_section(text[at + 2 : line_end])
        if section:
            current = section
            blocks.setdefault(section, [])
        else:
            header_skips += 1
        at = find("\r\n#", line_end)
    if start < len(text):
        blocks.setdefault(current, []).append((start, len(text)))
    context = _Context(text=text, lines=[], ascii_only=True, known=_known_names, plain=True)
    return ParsedInfo._lazy(blocks, context, header_skips)


def _header_section(line: str) -> str:
    """The section a `#` line starts, or "" when it is a malformed header."""
    section = _header_sections.get(line)
    if section is not None:
        return section
    section = line[1:].strip().lower() if len(line) <= MAX_LINE_CHARS else ""
    section = section if section and section.isprintable() else ""
    if len(_header_sections) < _KNOWN_NAMES_MAX and len(line) <= MAX_LINE_CHARS:
        _header_sections[line] = section
    return section


def _lookup_name(field: str) -> bool:
    """Whether `field` can be searched for as the start of a line: a name a field line can
    have (non-empty, printable, no space) with no colon in it and no "#" first."""
    if field in _lookup_names:
        return True
    if not field or not field.isprintable() or " " in field or ":" in field or field[0] == "#":
        return False
    if len(_lookup_names) < _KNOWN_NAMES_MAX:
        _lookup_names.add(field)
    return True


def _find(text: str, ranges: list[tuple[int, int]], field: str) -> Scalar | None:
    """The value of `field` in a plain section, as a whole parse of it would give: the
    last line that starts with `field:` (duplicates: the last one wins), converted by the
    same rules. Every line follows a CRLF, so the search cannot match mid-line."""
    needle = "\r\n" + field + ":"
    for start, end in reversed(ranges):
        at = text.rfind(needle, start - 2, end)
        if at == -1:
            continue
        value_start = at + len(needle)
        value_end = text.find("\r\n", value_start, end)
        value = text[value_start : end if value_end == -1 else value_end]
        if field in _TEXT_FIELDS:
            return value
        common = _COMMON_VALUES.get(value)
        if common is not None:
            return common
        if value.isdigit():  # plain text is ASCII
            try:
                return int(value)
            except ValueError:  # past sys.get_int_max_str_digits() (4300 by default)
                return value
        return _scalar(value)
    return None


def _parse_ranges(
    context: _Context, ranges: list[tuple[int, int]], composite: bool
) -> tuple[dict[str, FieldValue], int]:
    """The fields of one section's lines, and how many of its lines were malformed."""
    ascii_only, known = context.ascii_only, context.known
    fields: dict[str, FieldValue] = {}
    split: Callable[[str, str], tuple[str, str, str]] = (
        str.rpartition if composite else str.partition
    )
    skipped = 0
    text_fields = _TEXT_FIELDS
    subfields = _subfields
    scalar = _scalar
    common_get = _COMMON_VALUES.get

    for line in context.lines_of(ranges):
        name, sep, value = split(line, ":")
        # Fast path: a name seen before (so already validated) on a field line.
        if name in known and sep:
            if composite:
                fields[name] = subfields(value, ascii_only)
            elif (common := common_get(value)) is not None:
                fields[name] = common
            elif value.isdigit() and (ascii_only or value.isascii()):
                try:
                    fields[name] = int(value)
                except ValueError:  # past sys.get_int_max_str_digits() (4300 by default)
                    fields[name] = value
            else:
                fields[name] = scalar(value)
            continue

        if not line:
            continue  # blank lines separate sections; not malformed
        if len(line) > MAX_LINE_CHARS:
            skipped += 1
            continue
        if not sep or not name or not name.isprintable() or " " in name:
            skipped += 1
            continue
        if composite:
            fields[name] = subfields(value, ascii_only)
        elif name in text_fields:
            fields[name] = value
        else:
            fields[name] = scalar(value)
        # Text fields never enter the cache: the fast path would convert them.
        if len(_known_names) < _KNOWN_NAMES_MAX and name not in text_fields:
            _known_names.add(name)
    return fields, skipped


def parse_subfields(value: str) -> dict[str, Scalar]:
    """Parse `k=v,k=v` into a dict of scalars, dropping items without `=` or a key.

    Public because a few plain-section fields use the same form and callers may want
    them split: replication `slave0:ip=...,port=...,lag=0`, server `listener0:...`,
    modules `module:name=...`, scripting engines `engine_0:...`.
    """
    return _subfields(value, value.isascii())


def _subfields(value: str, ascii_only: bool) -> dict[str, Scalar]:
    out: dict[str, Scalar] = {}
    common_get = _COMMON_VALUES.get
    for item in value.split(","):
        key, sep, sub = item.partition("=")
        if not sep or not key:
            continue
        if (common := common_get(sub)) is not None:
            out[key] = common
            continue
        # Inlined int and float paths: composite values are nearly all one or the other,
        # and a call per item would cost more than the conversion.
        if sub.isdigit() and (ascii_only or sub.isascii()):
            try:
                out[key] = int(sub)
            except ValueError:  # past the int() digit limit
                out[key] = sub
        elif (
            "." in sub
            and (ascii_only or sub.isascii())
            and sub.replace(".", "", 1).isdigit()
            and len(sub) <= _ALWAYS_FINITE_CHARS
        ):
            out[key] = float(sub)
        else:
            out[key] = _scalar(sub)
    return out


def _scalar(text: str) -> Scalar:
    """int for an ASCII decimal integer, float for a finite fixed-point decimal, else str."""
    if text.isascii():
        body = text[1:] if text[:1] in ("-", "+") else text
        if body.isdigit():
            try:
                return int(text)
            except ValueError:  # past sys.get_int_max_str_digits() (4300 by default)
                return text
        # Fixed-point only: float() would also take "nan", "inf", "1e5", "1_0" and " 1".
        if "." in body and body.replace(".", "", 1).isdigit():
            number = float(text)
            if _isfinite(number):  # enough digits overflow to inf
                return number
    return text


# Values so frequent that a dict lookup beats converting them: in the recorded replies
# "0" alone is 46% of plain values, and the lookup took a Valkey 9.1 parse from 145 us to
# 129 us. Built with _scalar, so a hit gives exactly what conversion would.
_COMMON_VALUES: dict[str, Scalar] = {
    text: _scalar(text)
    for text in (
        *map(str, range(1024)),
        "-1",
        *("0.0", "0.00", "0.000", "0.000000", "1.00"),
        *("", "ok", "no", "yes", "none", "up", "down", "master", "slave", "connected"),
        *("standalone", "cluster", "sentinel", "noeviction", "no-failover", "epoll", "0B"),
    )
}


def detect_engine(info: ParsedInfo) -> Literal["valkey", "redis"]:
    """Valkey reports valkey_version; both report redis_version (Valkey pins it at 7.2.4)."""
    return "valkey" if info.get("server", "valkey_version") is not None else "redis"


def engine_version(info: ParsedInfo) -> str | None:
    """The engine's own version: valkey_version on Valkey, not its compat redis_version.

    A Valkey release candidate reports the release's number with valkey_release_stage:rc1
    (Valkey 8.1+; "ga" for a release): it is read as "9.1.0-rc1", so that it orders before
    9.1.0 and is not taken to carry 9.1.0's fixes.
    """
    version = info.get_str("server", "valkey_version")
    if version is None:
        return info.get_str("server", "redis_version")
    stage = (info.get_str("server", "valkey_release_stage") or "ga").strip().lower()
    return version if stage in ("ga", "") else f"{version}-{stage}"


def parse_version(text: str) -> tuple[int, int, int]:
    """(major, minor, patch) for feature gates: a pre-release counts as its release
    ("8.1.0-rc1" is (8, 1, 0)), missing parts are 0, and anything that is not a version
    (junk, a part of thousands of digits) is (0, 0, 0)."""
    return release_parts(text)
