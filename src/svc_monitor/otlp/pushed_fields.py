"""One push connection's pushed values, each with its freshness.

A value stays valid for OTEL_METRICS_STALE_AFTER_MS from the time we received it; the
point's own timestamp only decides which of two values for one field is newer (one from
the future counts as now). Keyspace and commandstats entries are capped per connection;
an entry counts against its cap only while its `keys`/`calls` value is fresh, so entries
that went quiet free their slots.

Values are kept as (value, point_ns, received_ms) tuples: a push near the size limit
carries some 20,000 points, and a tuple is the cheapest thing to make per point.
"""

from typing import TypeVar

from svc_monitor.engine.info import FieldValue, ParsedInfo, Scalar

K = TypeVar("K")

MAX_DATABASES = 256
MAX_COMMANDS = 1024

Value = tuple[Scalar, int, int]  # value, point time (ns, clamped to now), received (ms)


class PushedFields:
    """The latest value of every pushed field of one connection."""

    __slots__ = ("commands", "databases", "last_received_ms", "plain", "stale_after_ms")

    def __init__(self, stale_after_ms: int) -> None:
        self.stale_after_ms = stale_after_ms
        self.plain: dict[tuple[str, str], Value] = {}
        self.databases: dict[str, dict[str, Value]] = {}
        self.commands: dict[str, dict[str, Value]] = {}
        self.last_received_ms: int | None = None

    def put(self, section: str, field: str, value: Scalar, at_ns: int, now_ms: int) -> None:
        _keep_newer(self.plain, (section, field), value, at_ns, now_ms, self.stale_after_ms)

    def put_entry(
        self, composite: str, entry: str, field: str, value: Scalar, at_ns: int, now_ms: int
    ) -> bool:
        """A keyspace (`db0`) or commandstats (`get`) entry's field; False when the entry
        is new and its cap is full even after freeing quiet entries."""
        entries = self.databases if composite == "keyspace" else self.commands
        fields = entries.get(entry)
        if fields is None:
            cap, counted = (
                (MAX_DATABASES, "keys") if composite == "keyspace" else (MAX_COMMANDS, "calls")
            )
            if len(entries) >= cap and not self._free(entries, counted, cap, now_ms):
                return False
            fields = entries[entry] = {}
        _keep_newer(fields, field, value, at_ns, now_ms, self.stale_after_ms)
        return True

    def _free(
        self, entries: dict[str, dict[str, Value]], counted: str, cap: int, now_ms: int
    ) -> bool:
        oldest_fresh = now_ms - self.stale_after_ms
        for name in [
            name
            for name, fields in entries.items()
            if (kept := fields.get(counted)) is None or kept[2] < oldest_fresh
        ]:
            del entries[name]
        return len(entries) < cap

    def any_fresh(self, now_ms: int) -> bool:
        return self.last_received_ms is not None and (
            now_ms - self.last_received_ms < self.stale_after_ms
        )

    def fresh_info(self, now_ms: int, server: dict[str, FieldValue]) -> ParsedInfo:
        """INFO-shaped: only the fields still fresh; absent ones stay absent (never 0)."""
        oldest = now_ms - self.stale_after_ms
        sections: dict[str, dict[str, FieldValue]] = {"server": dict(server)} if server else {}
        for (section, field), (value, _, received) in self.plain.items():
            if received >= oldest:
                sections.setdefault(section, {})[field] = value
        keyspace = _fresh_entries(self.databases, "keys", oldest, prefix="")
        if keyspace:
            sections["keyspace"] = keyspace
        commands = _fresh_entries(self.commands, "calls", oldest, prefix="cmdstat_")
        if commands:
            sections["commandstats"] = commands
        return ParsedInfo(sections, 0)


def _keep_newer(
    values: dict[K, Value],
    key: K,
    value: Scalar,
    at_ns: int,
    now_ms: int,
    stale_after_ms: int,
) -> None:
    kept = values.get(key)
    if kept is None or at_ns >= kept[1] or now_ms - kept[2] >= stale_after_ms:
        values[key] = (value, at_ns, now_ms)


def _fresh_entries(
    entries: dict[str, dict[str, Value]], counted: str, oldest: int, *, prefix: str
) -> dict[str, FieldValue]:
    """Entries whose counted field is fresh, with their fresh fields."""
    found: dict[str, FieldValue] = {}
    for name, fields in entries.items():
        kept = fields.get(counted)
        if kept is None or kept[2] < oldest:
            continue
        found[prefix + name] = {f: v[0] for f, v in fields.items() if v[2] >= oldest}
    return found
