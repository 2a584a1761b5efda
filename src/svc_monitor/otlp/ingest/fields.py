"""One push connection's pushed values, each with its freshness.

A value stays valid for OTEL_METRICS_STALE_AFTER_MS from the time we received it; the
point's own timestamp only decides which of two values for one field is newer (one from
the future counts as now). Keyspace, commandstats and latencystats entries are capped per
connection; an entry counts against its cap only while its `keys`/`calls` value (any
percentile, for latencystats) is fresh, so entries that went quiet free their slots.

Values are kept as (value, point_ns, received_ms) tuples: a push near the size limit
carries some 20,000 points, and a tuple is the cheapest thing to make per point.
"""

from dataclasses import dataclass

from svc_monitor.engine.info import FieldValue, Scalar

MAX_DATABASES = 256
MAX_COMMANDS = 1024

Value = tuple[Scalar, int, int]  # value, point time (ns, clamped to now), received (ms)

# PushedFields.put() and Composite.put() run once per pushed point, so each keeps the newer value in
# line rather than through a shared helper: the newer point wins, and any point replaces
# a value that went stale (so a clock far ahead cannot pin one).


class PushedFields:
    """The latest value of every pushed field of one connection."""

    __slots__ = (
        "commandstats",
        "keyspace",
        "last_received_ms",
        "latencystats",
        "plain",
        "stale_after_ms",
    )

    def __init__(self, stale_after_ms: int) -> None:
        self.stale_after_ms = stale_after_ms
        # By section, then field: fresh_sections() renders a section in one pass.
        self.plain: dict[str, dict[str, Value]] = {}
        self.keyspace = Composite(MAX_DATABASES, "keys", "", stale_after_ms)
        self.commandstats = Composite(MAX_COMMANDS, "calls", "cmdstat_", stale_after_ms)
        self.latencystats = Composite(
            MAX_COMMANDS, None, "latency_percentiles_usec_", stale_after_ms
        )
        self.last_received_ms: int | None = None

    def put(self, section: str, field: str, value: Scalar, at_ns: int, now_ms: int) -> None:
        fields = self.plain.get(section)
        if fields is None:
            fields = self.plain[section] = {}
        kept = fields.get(field)
        if kept is None or at_ns >= kept[1] or now_ms - kept[2] >= self.stale_after_ms:
            fields[field] = (value, at_ns, now_ms)

    def composite(self, section: str) -> "Composite":
        """The entries of `keyspace` (`db0`), `commandstats` or `latencystats` (`get`)."""
        if section == "keyspace":
            return self.keyspace
        return self.latencystats if section == "latencystats" else self.commandstats

    def any_fresh(self, now_ms: int) -> bool:
        return self.last_received_ms is not None and (
            now_ms - self.last_received_ms < self.stale_after_ms
        )

    def fresh_sections(
        self, now_ms: int, server: dict[str, FieldValue]
    ) -> dict[str, dict[str, FieldValue]]:
        """INFO sections (for a ParsedInfo) of only the fields still fresh; absent ones
        stay absent (never 0)."""
        oldest = now_ms - self.stale_after_ms
        sections: dict[str, dict[str, FieldValue]] = {"server": dict(server)} if server else {}
        for section, fields in self.plain.items():
            fresh: dict[str, FieldValue] = {}
            for field, (value, _, received) in fields.items():  # cheaper than a comprehension
                if received >= oldest:
                    fresh[field] = value
            if section not in sections:
                if fresh:
                    sections[section] = fresh
            else:  # server: the versions first
                sections[section].update(fresh)
        for name, composite in (
            ("keyspace", self.keyspace),
            ("commandstats", self.commandstats),
            ("latencystats", self.latencystats),
        ):
            entries = composite.fresh(oldest)
            if entries:
                sections[name] = entries
        return sections


@dataclass(frozen=True, slots=True)
class _Rendered:
    section: dict[str, FieldValue]
    oldest: int  # the freshness threshold it was rendered at
    least_received: int  # the earliest receipt among the values it shows


class Composite:
    """The capped entries of one composite section, and their last rendering.

    A wide instance pushes up to 1,024 commands and 256 databases, and every request that
    touches the connection renders them for the pipe. While no value changed and none of
    those shown went stale, fresh() hands back the section it rendered last time instead
    of building ~1,300 dicts again (and consumers can tell it is the same by identity).
    The cache is one section per composite, dropped by any put that changes what it
    would show."""

    __slots__ = ("_rendered", "cap", "counted", "entries", "prefix", "stale_after_ms")

    def __init__(self, cap: int, counted: str | None, prefix: str, stale_after_ms: int) -> None:
        self.cap = cap
        # The field whose freshness keeps an entry (and its slot); None: any of its fields.
        self.counted = counted
        self.prefix = prefix  # INFO's name for an entry: `cmdstat_get`
        self.stale_after_ms = stale_after_ms
        self.entries: dict[str, dict[str, Value]] = {}
        self._rendered: _Rendered | None = None

    def put(self, entry: str, field: str, value: Scalar, at_ns: int, now_ms: int) -> bool:
        """False when the entry is new and the cap is full even after freeing quiet
        entries."""
        fields = self.entries.get(entry)
        if fields is None:
            if len(self.entries) >= self.cap and not self._free(now_ms):
                return False
            fields = self.entries[entry] = {}
        kept = fields.get(field)
        if kept is None:
            self._rendered = None
        else:
            stale = now_ms - kept[2] >= self.stale_after_ms
            if at_ns < kept[1] and not stale:
                return True  # an older point: the kept value stands
            # A stale value was not shown; 1 and 1.0 are equal but render differently.
            if stale or kept[0] != value or type(kept[0]) is not type(value):
                self._rendered = None
        fields[field] = (value, at_ns, now_ms)
        return True

    def _free(self, now_ms: int) -> bool:
        oldest_fresh = now_ms - self.stale_after_ms
        for name in [
            name for name, fields in self.entries.items() if self._kept_since(fields) < oldest_fresh
        ]:
            del self.entries[name]
        self._rendered = None
        return len(self.entries) < self.cap

    def fresh(self, oldest: int) -> dict[str, FieldValue]:
        """Entries whose counted field is fresh, with their fresh fields. Not to be
        changed: it may be handed out again."""
        held = self._rendered
        # Valid while time has not gone back (a value stale then would be fresh again)
        # and every value it shows is still fresh.
        if held is not None and held.oldest <= oldest <= held.least_received:
            return held.section
        found: dict[str, FieldValue] = {}
        least = 1 << 62
        counted = self.counted
        for name, fields in self.entries.items():
            if counted is not None:  # in line: this loop runs per entry on every render
                kept = fields.get(counted)
                if kept is None or kept[2] < oldest:
                    continue
            elif self._kept_since(fields) < oldest:
                continue
            # A plain loop: cheaper than a comprehension here, and it finds `least` too.
            fresh: dict[str, Scalar] = {}
            for field, (value, _, received) in fields.items():
                if received >= oldest:
                    fresh[field] = value
                    if received < least:
                        least = received
            found[self.prefix + name] = fresh
        self._rendered = _Rendered(found, oldest, least)
        return found

    def _kept_since(self, fields: dict[str, Value]) -> int:
        """When the value that keeps this entry was received; -1 when there is none."""
        if self.counted is None:
            return max((kept[2] for kept in fields.values()), default=-1)
        kept = fields.get(self.counted)
        return -1 if kept is None else kept[2]
