"""A push connection's pushed values (otlp/ingest/fields.py): the newer point wins, stale
values leave the sections, and a composite section rendered once is handed out again only
while nothing it shows changed or went stale."""

from svc_monitor.engine.info import FieldValue
from svc_monitor.otlp.ingest.fields import PushedFields

STALE_MS = 300_000
T0 = 1_700_000_000_000  # ms


def ns(ms: int) -> int:
    return ms * 1_000_000


def commands(fields: PushedFields, now_ms: int) -> dict[str, FieldValue]:
    return fields.fresh_sections(now_ms, {}).get("commandstats", {})


def pushed_commands(**calls: int | float) -> PushedFields:
    fields = PushedFields(STALE_MS)
    for command, value in calls.items():
        fields.composite("commandstats").put(command, "calls", value, ns(T0), T0)
    return fields


class TestPlainFields:
    def test_the_newer_point_wins_and_an_older_one_is_ignored(self) -> None:
        fields = PushedFields(STALE_MS)
        fields.put("memory", "used_memory", 200, ns(T0), T0)
        fields.put("memory", "used_memory", 100, ns(T0 - 60_000), T0 + 1_000)
        assert fields.fresh_sections(T0 + 1_000, {}) == {"memory": {"used_memory": 200}}

    def test_a_stale_field_leaves_its_section_and_an_empty_section_goes(self) -> None:
        fields = PushedFields(STALE_MS)
        fields.put("memory", "used_memory", 1, ns(T0), T0)
        fields.put("clients", "connected_clients", 3, ns(T0), T0 + 200_000)
        later = T0 + STALE_MS + 1
        assert fields.fresh_sections(later, {}) == {"clients": {"connected_clients": 3}}

    def test_versions_come_first_in_the_server_section(self) -> None:
        fields = PushedFields(STALE_MS)
        fields.put("server", "uptime_in_seconds", 60, ns(T0), T0)
        sections = fields.fresh_sections(T0, {"redis_version": "7.2.5"})
        assert list(sections["server"].items()) == [
            ("redis_version", "7.2.5"),
            ("uptime_in_seconds", 60),
        ]


class TestCompositeRendering:
    def test_an_unchanged_section_is_the_same_object_again(self) -> None:
        fields = pushed_commands(get=10, set=5)
        first = commands(fields, T0)
        # The same values again, a push later: nothing the section shows changed.
        fields.composite("commandstats").put("get", "calls", 10, ns(T0 + 10_000), T0 + 10_000)
        again = commands(fields, T0 + 10_000)
        assert again is first
        assert again == {"cmdstat_get": {"calls": 10}, "cmdstat_set": {"calls": 5}}

    def test_a_changed_value_renders_a_new_section(self) -> None:
        fields = pushed_commands(get=10, set=5)
        first = commands(fields, T0)
        fields.composite("commandstats").put("get", "calls", 11, ns(T0 + 10_000), T0 + 10_000)
        again = commands(fields, T0 + 10_000)
        assert again is not first
        assert again == {"cmdstat_get": {"calls": 11}, "cmdstat_set": {"calls": 5}}
        assert first == {"cmdstat_get": {"calls": 10}, "cmdstat_set": {"calls": 5}}

    def test_an_equal_value_of_another_type_renders_as_sent(self) -> None:
        fields = pushed_commands(get=10)
        commands(fields, T0)
        fields.composite("commandstats").put("get", "calls", 10.0, ns(T0 + 1), T0 + 1)
        calls = commands(fields, T0 + 1)["cmdstat_get"]
        assert isinstance(calls, dict)
        assert type(calls["calls"]) is float

    def test_a_new_field_of_an_entry_shows(self) -> None:
        fields = pushed_commands(get=10)
        commands(fields, T0)
        fields.composite("commandstats").put("get", "usec", 99, ns(T0 + 1), T0 + 1)
        assert commands(fields, T0 + 1) == {"cmdstat_get": {"calls": 10, "usec": 99}}

    def test_an_older_point_leaves_the_section_as_it_was(self) -> None:
        fields = pushed_commands(get=10)
        first = commands(fields, T0)
        fields.composite("commandstats").put("get", "calls", 3, ns(T0 - 1_000), T0 + 1)
        assert commands(fields, T0 + 1) is first

    def test_a_value_going_stale_leaves_without_any_put(self) -> None:
        fields = pushed_commands(get=10)
        fields.composite("commandstats").put("set", "calls", 5, ns(T0 + 200_000), T0 + 200_000)
        assert len(commands(fields, T0 + 200_000)) == 2
        assert commands(fields, T0 + STALE_MS + 1) == {"cmdstat_set": {"calls": 5}}

    def test_a_stale_value_pushed_again_unchanged_shows_again(self) -> None:
        fields = pushed_commands(get=10)
        later = T0 + STALE_MS + 1
        assert commands(fields, later) == {}
        fields.composite("commandstats").put("get", "calls", 10, ns(later), later)
        assert commands(fields, later) == {"cmdstat_get": {"calls": 10}}

    def test_a_clock_stepping_back_shows_a_value_fresh_again(self) -> None:
        fields = pushed_commands(get=10)
        later = T0 + 400_000
        fields.composite("commandstats").put("set", "calls", 5, ns(later), later)
        assert commands(fields, later) == {"cmdstat_set": {"calls": 5}}
        # The wall clock went back 150 s: `get`, received at T0, is within the window again.
        assert commands(fields, later - 150_000) == {
            "cmdstat_get": {"calls": 10},
            "cmdstat_set": {"calls": 5},
        }

    def test_an_entry_freed_for_a_new_one_leaves_the_section(self) -> None:
        fields = PushedFields(STALE_MS)
        keyspace = fields.composite("keyspace")
        for n in range(256):
            assert keyspace.put(f"db{n}", "keys", 1, ns(T0), T0)
        assert len(fields.fresh_sections(T0, {})["keyspace"]) == 256
        later = T0 + STALE_MS + 1
        assert keyspace.put("db9999", "keys", 7, ns(later), later)
        assert fields.fresh_sections(later, {})["keyspace"] == {"db9999": {"keys": 7}}
