"""parse_info and its helpers, on recorded replies from real servers and on hostile input."""

import math
import sys
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from svc_monitor.engine import info as info_module
from svc_monitor.engine.info import (
    DEFAULT_MAX_BYTES,
    CarriedSections,
    FieldValue,
    InfoTooLarge,
    ParsedInfo,
    detect_engine,
    engine_version,
    parse_info,
    parse_subfields,
    parse_version,
)

REPLIES = Path(__file__).parent / "replies"

REDIS_62_SECTIONS = {
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "modules",
    "commandstats",
    "errorstats",
    "cluster",
    "keyspace",
}
REDIS_70_SECTIONS = REDIS_62_SECTIONS | {"latencystats"}
# Valkey 9.1 adds TLS, an always-present "Cluster Info" (empty when standalone) and
# "Scripting Engines".
VALKEY_91_SECTIONS = REDIS_70_SECTIONS | {"tls", "cluster info", "scripting engines"}


def reply(name: str) -> bytes:
    return (REPLIES / name).read_bytes()


def parsed(name: str) -> ParsedInfo:
    return parse_info(reply(name))


def lines(*text: str) -> bytes:
    return "".join(f"{line}\r\n" for line in text).encode()


def assert_declared_types(info: ParsedInfo) -> None:
    """Every value is str, int (not bool) or finite float, or a flat dict of those."""

    def assert_scalar(value: object) -> None:
        assert type(value) in (str, int, float), repr(value)
        if isinstance(value, float):
            assert math.isfinite(value)

    assert type(info.skipped_lines) is int
    assert info.skipped_lines >= 0
    for section, fields in info.sections.items():
        assert type(section) is str
        assert type(fields) is dict
        for name, value in fields.items():
            assert type(name) is str
            assert name
            if isinstance(value, dict):
                for key, sub in value.items():
                    assert type(key) is str
                    assert_scalar(sub)
            else:
                assert_scalar(value)


ALL_REPLIES = [
    pytest.param("valkey-9.1/info_everything.txt", id="valkey-9.1"),
    pytest.param("valkey-9.1/info_cluster_node.txt", id="valkey-9.1-cluster-node"),
    pytest.param("redis-7.0/info_everything.txt", id="redis-7.0-master-with-replica"),
    pytest.param("redis-7.0/info_replica.txt", id="redis-7.0-replica"),
    pytest.param("redis-6.2/info_everything.txt", id="redis-6.2"),
]
# The replies from servers that ran the workload in replies/README.md (the replica got
# its keys through replication but ran no commands of its own).
WORKLOAD_REPLIES = [
    pytest.param("valkey-9.1/info_everything.txt", id="valkey-9.1"),
    pytest.param("redis-7.0/info_everything.txt", id="redis-7.0"),
    pytest.param("redis-6.2/info_everything.txt", id="redis-6.2"),
]


class TestParseInfoOnRecordedReplies:
    @pytest.mark.parametrize("name", ALL_REPLIES)
    def test_parses_every_line(self, name: str) -> None:
        assert parsed(name).skipped_lines == 0

    @pytest.mark.parametrize(
        ("name", "sections"),
        [
            pytest.param("valkey-9.1/info_everything.txt", VALKEY_91_SECTIONS, id="valkey-9.1"),
            pytest.param(
                "valkey-9.1/info_cluster_node.txt", VALKEY_91_SECTIONS, id="valkey-9.1-cluster"
            ),
            pytest.param("redis-7.0/info_everything.txt", REDIS_70_SECTIONS, id="redis-7.0"),
            pytest.param("redis-7.0/info_replica.txt", REDIS_70_SECTIONS, id="redis-7.0-replica"),
            pytest.param(
                "redis-6.2/info_everything.txt", REDIS_62_SECTIONS, id="redis-6.2-no-latencystats"
            ),
        ],
    )
    def test_has_the_sections_the_engine_emits(self, name: str, sections: set[str]) -> None:
        assert set(parsed(name).sections) == sections

    @pytest.mark.parametrize(
        ("name", "engine", "version", "parts"),
        [
            pytest.param(
                "valkey-9.1/info_everything.txt", "valkey", "9.1.2", (9, 1, 2), id="valkey"
            ),
            pytest.param(
                "valkey-9.1/info_cluster_node.txt",
                "valkey",
                "9.1.2",
                (9, 1, 2),
                id="valkey-cluster",
            ),
            pytest.param("redis-7.0/info_everything.txt", "redis", "7.0.15", (7, 0, 15), id="r7.0"),
            pytest.param(
                "redis-7.0/info_replica.txt", "redis", "7.0.15", (7, 0, 15), id="r7.0-rep"
            ),
            pytest.param("redis-6.2/info_everything.txt", "redis", "6.2.5", (6, 2, 5), id="r6.2"),
        ],
    )
    def test_detects_engine_and_version(
        self, name: str, engine: str, version: str, parts: tuple[int, int, int]
    ) -> None:
        info = parsed(name)
        assert detect_engine(info) == engine
        assert engine_version(info) == version
        assert parse_version(version) == parts

    def test_valkey_reports_a_frozen_compat_redis_version(self) -> None:
        # Valkey keeps redis_version at 7.2.4 for clients that gate on it; its own
        # version is valkey_version.
        info = parsed("valkey-9.1/info_everything.txt")
        assert info.get_str("server", "redis_version") == "7.2.4"
        assert info.get_str("server", "server_name") == "valkey"

    @pytest.mark.parametrize(
        ("name", "db0", "db3"),
        [
            pytest.param(
                "valkey-9.1/info_everything.txt",
                {"keys": 5, "expires": 2, "keys_with_volatile_items": 0},
                {"keys": 3, "expires": 1, "keys_with_volatile_items": 0},
                id="valkey-9.1-keys_with_volatile_items",
            ),
            pytest.param(
                "redis-7.0/info_everything.txt",
                {"keys": 5, "expires": 2},
                {"keys": 3, "expires": 1},
                id="redis-7.0",
            ),
            pytest.param(
                "redis-7.0/info_replica.txt",
                {"keys": 5, "expires": 2, "avg_ttl": 0},
                {"keys": 3, "expires": 1, "avg_ttl": 0},
                id="redis-7.0-replica-avg_ttl-always-0",
            ),
            pytest.param(
                "redis-6.2/info_everything.txt",
                {"keys": 5, "expires": 2},
                {"keys": 3, "expires": 1},
                id="redis-6.2",
            ),
        ],
    )
    def test_keyspace_dbs_are_dicts_of_ints(
        self, name: str, db0: dict[str, int], db3: dict[str, int]
    ) -> None:
        keyspace = parsed(name).sections["keyspace"]
        assert set(keyspace) == {"db0", "db3"}
        for db, expected in (("db0", db0), ("db3", db3)):
            fields = keyspace[db]
            assert isinstance(fields, dict)
            assert fields.items() >= expected.items()
            assert isinstance(fields["avg_ttl"], int)

    @pytest.mark.parametrize(
        ("name", "command"),
        [
            pytest.param("valkey-9.1/info_everything.txt", "get", id="valkey-9.1"),
            pytest.param("valkey-9.1/info_cluster_node.txt", "get", id="valkey-9.1-cluster"),
            pytest.param("redis-7.0/info_everything.txt", "get", id="redis-7.0"),
            # A replica counts the writes it applies from the master stream.
            pytest.param("redis-7.0/info_replica.txt", "set", id="redis-7.0-replica-set"),
            pytest.param("redis-6.2/info_everything.txt", "get", id="redis-6.2"),
        ],
    )
    def test_cmdstat_has_int_counts_and_float_mean(self, name: str, command: str) -> None:
        get = parsed(name).get("commandstats", f"cmdstat_{command}")
        assert isinstance(get, dict)
        assert set(get) == {"calls", "usec", "usec_per_call", "rejected_calls", "failed_calls"}
        assert isinstance(get["calls"], int)
        assert get["calls"] >= 1
        assert isinstance(get["usec"], int)
        assert isinstance(get["usec_per_call"], float)

    @pytest.mark.parametrize(
        ("name", "subcommand_stat"),
        [
            pytest.param("valkey-9.1/info_everything.txt", "cmdstat_client|list", id="valkey-9.1"),
            pytest.param("redis-7.0/info_everything.txt", "cmdstat_client|list", id="redis-7.0"),
            pytest.param(
                "redis-6.2/info_everything.txt", "cmdstat_client", id="redis-6.2-no-subcommands"
            ),
        ],
    )
    def test_subcommands_have_their_own_stats_from_7_0(
        self, name: str, subcommand_stat: str
    ) -> None:
        assert isinstance(parsed(name).get("commandstats", subcommand_stat), dict)

    @pytest.mark.parametrize("name", WORKLOAD_REPLIES)
    def test_errorstats_count_each_error_code(self, name: str) -> None:
        errorstats = parsed(name).sections["errorstats"]
        assert errorstats["errorstat_WRONGTYPE"] == {"count": 1}
        # A script's error code "MY:CODE" comes back with the colon replaced, so a
        # colon never reaches an errorstat name on these versions.
        assert errorstats["errorstat_MY_CODE"] == {"count": 1}
        err = errorstats["errorstat_ERR"]
        assert isinstance(err, dict)
        assert isinstance(err["count"], int)
        assert err["count"] >= 2

    def test_cluster_node_has_no_errors_yet(self) -> None:
        assert parsed("valkey-9.1/info_cluster_node.txt").sections["errorstats"] == {}

    @pytest.mark.parametrize(
        ("name", "present"),
        [
            pytest.param("valkey-9.1/info_everything.txt", True, id="valkey-9.1"),
            pytest.param("valkey-9.1/info_cluster_node.txt", True, id="valkey-9.1-cluster"),
            pytest.param("redis-7.0/info_everything.txt", True, id="redis-7.0"),
            pytest.param("redis-7.0/info_replica.txt", True, id="redis-7.0-replica"),
            pytest.param("redis-6.2/info_everything.txt", False, id="redis-6.2-none"),
        ],
    )
    def test_latencystats_present_from_7_0(self, name: str, present: bool) -> None:
        latency = parsed(name).get("latencystats", "latency_percentiles_usec_set")
        if not present:
            assert latency is None
            return
        assert isinstance(latency, dict)
        # "p99.9" is a key with a dot in it, not a number.
        assert set(latency) == {"p50", "p99", "p99.9"}
        assert all(isinstance(v, float) for v in latency.values())

    def test_replica_reports_its_master_link(self) -> None:
        info = parsed("redis-7.0/info_replica.txt")
        assert info.get_str("replication", "role") == "slave"
        assert info.get_str("replication", "master_host") == "127.0.0.1"
        assert isinstance(info.get_int("replication", "master_port"), int)
        assert info.get_str("replication", "master_link_status") == "up"
        assert info.get_int("replication", "master_sync_in_progress") == 0
        assert isinstance(info.get_int("replication", "slave_repl_offset"), int)
        assert info.get_int("replication", "slave_read_only") == 1

    def test_master_lists_its_replica_as_unsplit_text(self) -> None:
        # slave0 uses the k=v form but replication is not a composite section; callers
        # split it with parse_subfields.
        info = parsed("redis-7.0/info_everything.txt")
        assert info.get_int("replication", "connected_slaves") == 1
        slave0 = info.get_str("replication", "slave0")
        assert slave0 is not None
        fields = parse_subfields(slave0)
        assert fields["ip"] == "127.0.0.1"
        assert fields["state"] == "online"
        assert isinstance(fields["offset"], int)

    @pytest.mark.parametrize(
        ("name", "enabled", "mode"),
        [
            pytest.param("valkey-9.1/info_cluster_node.txt", 1, "cluster", id="cluster-node"),
            pytest.param("valkey-9.1/info_everything.txt", 0, "standalone", id="standalone"),
        ],
    )
    def test_cluster_enabled_flag(self, name: str, enabled: int, mode: str) -> None:
        info = parsed(name)
        assert info.get_int("cluster", "cluster_enabled") == enabled
        assert info.get_str("server", "server_mode") == mode

    def test_valkey_cluster_info_section_carries_cluster_state(self) -> None:
        info = parsed("valkey-9.1/info_cluster_node.txt")
        assert info.get_str("cluster info", "cluster_state") == "ok"
        assert info.get_int("cluster info", "cluster_slots_assigned") == 16384
        assert parsed("valkey-9.1/info_everything.txt").sections["cluster info"] == {}

    @pytest.mark.parametrize("name", ALL_REPLIES)
    def test_identifiers_of_zeros_stay_text(self, name: str) -> None:
        # A fresh server reports master_replid2 as forty zeros: an id, not the number 0.
        info = parsed(name)
        assert info.get("replication", "master_replid2") == "0" * 40
        assert info.get("server", "redis_git_sha1") == "00000000"

    def test_percent_and_human_values_stay_text(self) -> None:
        info = parsed("valkey-9.1/info_everything.txt")
        perc = info.get_str("memory", "used_memory_peak_perc")
        assert perc is not None
        assert perc.endswith("%")
        assert info.get_float("memory", "used_memory_peak_perc") is None
        assert info.get_str("memory", "used_memory_human") == "1.21M"
        assert info.get_float("memory", "mem_fragmentation_ratio") == 5.62
        assert info.get_int("persistence", "rdb_last_bgsave_time_sec") == -1

    @pytest.mark.parametrize("name", ALL_REPLIES)
    def test_values_have_the_declared_types(self, name: str) -> None:
        assert_declared_types(parsed(name))

    @pytest.mark.parametrize("name", ALL_REPLIES)
    def test_lf_only_and_no_final_newline_parse_the_same(self, name: str) -> None:
        raw = reply(name)
        expected = parse_info(raw)
        assert parse_info(raw.replace(b"\r\n", b"\n")) == expected
        assert parse_info(raw.rstrip(b"\r\n")) == expected

    @pytest.mark.parametrize("name", ALL_REPLIES)
    def test_str_input_parses_like_bytes(self, name: str) -> None:
        raw = reply(name)
        assert parse_info(raw.decode()) == parse_info(raw)

    @pytest.mark.parametrize("name", ALL_REPLIES)
    def test_name_cache_does_not_change_the_result(
        self, name: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(info_module, "_known_names", set())
        cold = parsed(name)
        warm = parsed(name)
        assert cold == warm
        # Without the cache (a full cache takes no new names) the result is the same too.
        monkeypatch.setattr(info_module, "_known_names", set())
        monkeypatch.setattr(info_module, "_KNOWN_NAMES_MAX", 0)
        assert parsed(name) == warm


class TestParseInfoLines:
    @pytest.mark.parametrize(
        ("junk", "skipped"),
        [
            pytest.param("no colon here", 1, id="no-colon"),
            pytest.param("\x00\x01\x02\x7f", 1, id="binary-no-colon"),
            pytest.param("\x00\x1b[31m:red", 1, id="binary-name"),
            pytest.param(":value", 1, id="empty-name"),
            pytest.param("two words:1", 1, id="space-in-name"),
            pytest.param("x" * 1_000_000, 1, id="1MB-line"),
            pytest.param("big:" + "x" * 1_000_000, 1, id="1MB-field"),
            pytest.param("", 0, id="blank-not-counted"),
            pytest.param("\r\n\r\n", 0, id="blank-lines-not-counted"),
        ],
    )
    def test_garbage_lines_are_skipped_and_counted(self, junk: str, skipped: int) -> None:
        raw = lines("# Server", "before:1", junk, "after:2")
        info = parse_info(raw)
        assert info.skipped_lines == skipped
        assert info.sections["server"] == {"before": 1, "after": 2}

    def test_binary_junk_bytes_do_not_crash(self) -> None:
        raw = b"# Server\r\n\xff\xfe\x00\x80\r\nos:\xc3\x28\r\nhz:10\r\n"
        info = parse_info(raw)
        assert info.skipped_lines == 1
        assert info.get_str("server", "os") == "\ufffd("
        assert info.get_int("server", "hz") == 10

    @pytest.mark.parametrize(
        ("line", "name", "value"),
        [
            pytest.param("executable:/opt/r:x", "executable", "/opt/r:x", id="path-with-colon"),
            pytest.param("master_host:::1", "master_host", "::1", id="ipv6-host"),
            pytest.param(
                "monotonic_clock:X86 TSC @ 2.5 t/us", "monotonic_clock", None, id="spaces"
            ),
            pytest.param("empty:", "empty", "", id="empty-value"),
        ],
    )
    def test_fields_split_on_the_first_colon(self, line: str, name: str, value: str | None) -> None:
        info = parse_info(lines("# Server", line))
        expected = line.partition(":")[2] if value is None else value
        assert info.sections["server"] == {name: expected}

    @pytest.mark.parametrize(
        ("line", "name", "value"),
        [
            pytest.param("errorstat_ERR:count=3", "errorstat_ERR", {"count": 3}, id="errorstat"),
            pytest.param(
                "cmdstat_client|list:calls=1,usec=2",
                "cmdstat_client|list",
                {"calls": 1, "usec": 2},
                id="pipe-in-name",
            ),
            pytest.param(
                "cmdstat_host::calls=1,usec=26",
                "cmdstat_host:",
                {"calls": 1, "usec": 26},
                id="old-redis-cmdstat_host-colon",
            ),
        ],
    )
    def test_composite_fields_split_on_the_last_colon(
        self, line: str, name: str, value: dict[str, int]
    ) -> None:
        section = "errorstats" if line.startswith("errorstat") else "commandstats"
        info = parse_info(lines(f"# {section.capitalize()}", line))
        assert info.sections[section] == {name: value}

    @pytest.mark.parametrize(
        ("header", "section"),
        [
            pytest.param("# Server", "server", id="plain"),
            pytest.param("# SERVER", "server", id="upper-case"),
            pytest.param("#Server", "server", id="no-space"),
            pytest.param("#  Server  ", "server", id="padded"),
            pytest.param("# Cluster Info", "cluster info", id="valkey-9-two-words"),
            pytest.param("# Search", "search", id="unknown-section"),
        ],
    )
    def test_headers_name_sections_in_lower_case(self, header: str, section: str) -> None:
        info = parse_info(lines(header, "field:1"))
        assert info.sections == {section: {"field": 1}}

    @pytest.mark.parametrize(
        "header",
        [pytest.param("#", id="bare-hash"), pytest.param("#   ", id="blank-name")],
    )
    def test_header_without_a_name_is_malformed(self, header: str) -> None:
        info = parse_info(lines("# Server", "a:1", header, "b:2"))
        assert info.skipped_lines == 1
        assert info.sections == {"server": {"a": 1, "b": 2}}

    def test_header_with_a_colon_is_still_a_header(self) -> None:
        info = parse_info(lines("# Odd:name", "a:1"))
        assert info.sections == {"odd:name": {"a": 1}}

    def test_empty_sections_are_kept(self) -> None:
        info = parse_info(lines("# Errorstats", "", "# Keyspace"))
        assert info.sections == {"errorstats": {}, "keyspace": {}}

    def test_fields_before_any_header_go_to_the_unnamed_section(self) -> None:
        info = parse_info(lines("loose:1", "# Server", "hz:10"))
        assert info.sections == {"": {"loose": 1}, "server": {"hz": 10}}

    def test_unnamed_section_absent_when_unused(self) -> None:
        assert "" not in parse_info(lines("# Server", "hz:10")).sections

    def test_duplicate_fields_last_one_wins(self) -> None:
        info = parse_info(lines("# Server", "hz:10", "hz:20", "# Keyspace", "db0:keys=1", "db0:"))
        assert info.sections == {"server": {"hz": 20}, "keyspace": {"db0": {}}}

    def test_duplicate_sections_merge(self) -> None:
        info = parse_info(lines("# Server", "a:1", "# Clients", "c:3", "# Server", "b:2"))
        assert info.sections == {"server": {"a": 1, "b": 2}, "clients": {"c": 3}}

    @pytest.mark.parametrize(
        "raw",
        [
            pytest.param(b"# Server\r\nhz:10\r\nos:Linux\r\n", id="crlf"),
            pytest.param(b"# Server\nhz:10\nos:Linux\n", id="lf"),
            pytest.param(b"# Server\r\nhz:10\nos:Linux", id="mixed-no-final-newline"),
            pytest.param(
                b"\r\n\r\n# Server\r\n\r\nhz:10\r\n\r\nos:Linux\r\n\r\n", id="extra-blanks"
            ),
        ],
    )
    def test_line_endings(self, raw: bytes) -> None:
        info = parse_info(raw)
        assert info.sections == {"server": {"hz": 10, "os": "Linux"}}
        assert info.skipped_lines == 0

    def test_reply_longer_than_a_line_limit_takes_the_checked_path(self) -> None:
        # Over 64 KiB in all, every line short: must parse exactly like a small reply.
        body = [f"cmdstat_c{i}:calls={i},usec=1,usec_per_call=1.00" for i in range(2000)]
        raw = lines("# Server", "hz:10", "# Commandstats", *body)
        assert len(raw) > info_module.MAX_LINE_CHARS
        info = parse_info(raw)
        assert info.skipped_lines == 0
        assert info.get("commandstats", "cmdstat_c1999") == {
            "calls": 1999,
            "usec": 1,
            "usec_per_call": 1.0,
        }


class TestParseInfoValues:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            pytest.param("0", 0, id="zero"),
            pytest.param("1234", 1234, id="int"),
            pytest.param("-5", -5, id="negative"),
            pytest.param("+5", 5, id="plus-sign"),
            pytest.param("007", 7, id="leading-zeros"),
            pytest.param("99999999999999999999999", 99999999999999999999999, id="beyond-int64"),
            pytest.param("1.03", 1.03, id="float"),
            pytest.param("-0.50", -0.5, id="negative-float"),
            pytest.param("0.000000", 0.0, id="cpu-seconds"),
            pytest.param("1.", 1.0, id="trailing-dot"),
            pytest.param(".5", 0.5, id="leading-dot"),
            pytest.param("abc", "abc", id="word"),
            pytest.param("", "", id="empty"),
            pytest.param("nan", "nan", id="nan"),
            pytest.param("inf", "inf", id="inf"),
            pytest.param("-inf", "-inf", id="minus-inf"),
            pytest.param("1e5", "1e5", id="exponent"),
            pytest.param("1.5e3", "1.5e3", id="float-exponent"),
            pytest.param("0x10", "0x10", id="hex"),
            pytest.param("1_000", "1_000", id="underscore"),
            pytest.param(" 5", " 5", id="leading-space"),
            pytest.param("1.2.3", "1.2.3", id="version-like"),
            pytest.param("98.81%", "98.81%", id="percent"),
            pytest.param("1.21M", "1.21M", id="human-size"),
            pytest.param("-", "-", id="lone-minus"),
            pytest.param("\u0663", "\u0663", id="arabic-indic-digit"),
            pytest.param("\u00b2", "\u00b2", id="superscript-two"),
            pytest.param("9" * 400 + ".5", "9" * 400 + ".5", id="float-overflowing-to-inf"),
        ],
    )
    def test_scalar_conversion(self, text: str, expected: FieldValue) -> None:
        # Twice: the second parse takes the fast path for an already-seen name.
        for _ in range(2):
            value = parse_info(lines("# Stats", f"some_field:{text}")).get("stats", "some_field")
            assert value == expected
            assert type(value) is type(expected)

    def test_integer_past_the_int_digit_limit_stays_text(self) -> None:
        digits = "9" * 5000  # int() refuses more than 4300 digits by default
        for _ in range(2):
            info = parse_info(lines("# Stats", f"huge:{digits}", f"neg:-{digits}"))
            assert info.sections["stats"] == {"huge": digits, "neg": f"-{digits}"}
            assert info.get_int("stats", "huge") is None

    def test_integer_past_a_lowered_digit_limit_stays_text(self) -> None:
        old = sys.get_int_max_str_digits()
        sys.set_int_max_str_digits(640)
        try:
            info = parse_info(lines("# Stats", f"big:{'9' * 700}", f"ok:{'9' * 600}"))
            stats = dict(info.sections["stats"])  # sections parse on first access
        finally:
            sys.set_int_max_str_digits(old)
        assert stats["big"] == "9" * 700
        assert stats["ok"] == int("9" * 600)

    @pytest.mark.parametrize(
        "field",
        [
            "run_id",
            "master_replid",
            "master_replid2",
            "redis_git_sha1",
            "redis_build_id",
            "redis_version",
            "valkey_version",
            "tls_server_cert_serial",
        ],
    )
    @pytest.mark.parametrize(
        "text", [pytest.param("0000", id="zeros"), pytest.param("7.0", id="float-like")]
    )
    def test_identifier_and_version_fields_stay_text(self, field: str, text: str) -> None:
        for _ in range(2):
            assert parse_info(lines("# Server", f"{field}:{text}")).get("server", field) == text


class TestParseInfoCompositeSections:
    @pytest.mark.parametrize(
        ("line", "expected"),
        [
            pytest.param(
                "db0:keys=1,expires=0,avg_ttl=0,subexpiry=0",
                {"keys": 1, "expires": 0, "avg_ttl": 0, "subexpiry": 0},
                id="valkey-8.1-subexpiry",
            ),
            pytest.param(
                "db0:keys=abc,expires=,avg_ttl=-1",
                {"keys": "abc", "expires": "", "avg_ttl": -1},
                id="malformed-values-kept",
            ),
            pytest.param(
                "db0:keys=1,junk,expires=2", {"keys": 1, "expires": 2}, id="item-no-equals"
            ),
            pytest.param("db0:=5,keys=1", {"keys": 1}, id="item-empty-key"),
            pytest.param("db0:keys=1,,", {"keys": 1}, id="empty-items"),
            pytest.param("db0:a=b=c", {"a": "b=c"}, id="second-equals-in-value"),
            pytest.param("db0:garbage", {}, id="no-items"),
            pytest.param("db0:", {}, id="empty-value"),
            pytest.param("db0:keys=nan,expires=inf", {"keys": "nan", "expires": "inf"}, id="nan"),
        ],
    )
    def test_keyspace_lines_tolerate_malformed_items(
        self, line: str, expected: dict[str, object]
    ) -> None:
        info = parse_info(lines("# Keyspace", line))
        assert info.sections["keyspace"] == {"db0": expected}
        assert info.skipped_lines == 0

    def test_db_with_an_odd_name_is_kept(self) -> None:
        info = parse_info(lines("# Keyspace", "dbX:keys=1"))
        assert info.get("keyspace", "dbX") == {"keys": 1}

    def test_latency_percentile_keys_keep_their_dots(self) -> None:
        info = parse_info(
            lines("# Latencystats", "latency_percentiles_usec_get:p50=1.003,p99=3.007,p99.9=3.007")
        )
        assert info.get("latencystats", "latency_percentiles_usec_get") == {
            "p50": 1.003,
            "p99": 3.007,
            "p99.9": 3.007,
        }

    def test_composite_values_beyond_float_range_stay_text(self) -> None:
        huge = "9" * 400 + ".5"
        info = parse_info(lines("# Latencystats", f"latency_percentiles_usec_x:p50={huge}"))
        assert info.get("latencystats", "latency_percentiles_usec_x") == {"p50": huge}

    @pytest.mark.parametrize(
        "section",
        [pytest.param("replication", id="replication"), pytest.param("modules", id="modules")],
    )
    def test_k_v_values_elsewhere_stay_text(self, section: str) -> None:
        info = parse_info(lines(f"# {section}", "slave0:ip=::1,port=6380,lag=0"))
        assert info.get(section, "slave0") == "ip=::1,port=6380,lag=0"


class TestParseInfoSize:
    def test_reply_over_the_limit_raises(self) -> None:
        with pytest.raises(InfoTooLarge, match="limit"):
            parse_info(b"x" * 101, max_bytes=100)

    def test_reply_at_the_limit_parses(self) -> None:
        raw = lines("# Server", "hz:10")
        assert parse_info(raw, max_bytes=len(raw)).get_int("server", "hz") == 10

    def test_too_large_is_a_value_error(self) -> None:
        with pytest.raises(ValueError, match="limit"):
            parse_info("é" * 11, max_bytes=10)

    def test_default_limit_refuses_a_50mb_reply(self) -> None:
        with pytest.raises(InfoTooLarge):
            parse_info(b"a:1\r\n" * (50 * 1024 * 1024 // 5))
        assert DEFAULT_MAX_BYTES == 4 * 1024 * 1024


class TestParsedInfoGetters:
    INFO = ParsedInfo(
        sections={
            "server": {"hz": 10, "os": "Linux", "ratio": 1.5, "count_text": "12", "zero": 0},
            "keyspace": {"db0": {"keys": 1}},
            "odd": {"flag": True, "nan": math.nan, "inf": math.inf, "huge": 10**400},
        },
        skipped_lines=0,
    )

    @pytest.mark.parametrize(
        ("section", "field", "expected"),
        [
            pytest.param("server", "hz", 10, id="int"),
            pytest.param("SERVER", "hz", 10, id="section-case-insensitive"),
            pytest.param("server", "zero", 0, id="zero-not-none"),
            pytest.param("server", "os", None, id="str"),
            pytest.param("server", "count_text", None, id="numeric-str"),
            pytest.param("server", "ratio", None, id="float"),
            pytest.param("keyspace", "db0", None, id="dict"),
            pytest.param("odd", "flag", None, id="bool"),
            pytest.param("server", "missing", None, id="absent-field"),
            pytest.param("nosuch", "hz", None, id="absent-section"),
        ],
    )
    def test_get_int(self, section: str, field: str, expected: int | None) -> None:
        assert self.INFO.get_int(section, field) == expected

    @pytest.mark.parametrize(
        ("section", "field", "expected"),
        [
            pytest.param("server", "ratio", 1.5, id="float"),
            pytest.param("server", "hz", 10.0, id="int-widens"),
            pytest.param("server", "os", None, id="str"),
            pytest.param("keyspace", "db0", None, id="dict"),
            pytest.param("odd", "nan", None, id="nan"),
            pytest.param("odd", "inf", None, id="inf"),
            pytest.param("odd", "huge", None, id="int-past-float-range"),
            pytest.param("odd", "flag", None, id="bool"),
            pytest.param("server", "missing", None, id="absent"),
        ],
    )
    def test_get_float(self, section: str, field: str, expected: float | None) -> None:
        value = self.INFO.get_float(section, field)
        assert value == expected
        if expected is not None:
            assert type(value) is float

    @pytest.mark.parametrize(
        ("section", "field", "expected"),
        [
            pytest.param("server", "os", "Linux", id="str"),
            pytest.param("server", "hz", "10", id="int-as-text"),
            pytest.param("server", "ratio", "1.5", id="float-as-text"),
            pytest.param("keyspace", "db0", None, id="dict"),
            pytest.param("server", "missing", None, id="absent"),
        ],
    )
    def test_get_str(self, section: str, field: str, expected: str | None) -> None:
        assert self.INFO.get_str(section, field) == expected

    def test_get_returns_composites_whole(self) -> None:
        assert self.INFO.get("keyspace", "db0") == {"keys": 1}

    def test_parsed_info_is_frozen(self) -> None:
        with pytest.raises(AttributeError):
            self.INFO.skipped_lines = 1  # type: ignore[misc]


class TestParseSubfields:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            pytest.param(
                "ip=127.0.0.1,port=6380,state=online,offset=446,lag=0",
                {"ip": "127.0.0.1", "port": 6380, "state": "online", "offset": 446, "lag": 0},
                id="slave0",
            ),
            pytest.param(
                "name=lua,ver=1,api=1,usedby=[],options=[a|b]",
                {"name": "lua", "ver": 1, "api": 1, "usedby": "[]", "options": "[a|b]"},
                id="module",
            ),
            pytest.param("ip=::1,port=1", {"ip": "::1", "port": 1}, id="ipv6"),
            pytest.param("p=\u00b2", {"p": "\u00b2"}, id="non-ascii-digit"),
            pytest.param("", {}, id="empty"),
        ],
    )
    def test_splits_k_v_lists(self, text: str, expected: dict[str, object]) -> None:
        assert parse_subfields(text) == expected


class TestDetectEngine:
    @pytest.mark.parametrize(
        ("server", "engine"),
        [
            pytest.param({"redis_version": "7.2.4", "valkey_version": "8.0.1"}, "valkey", id="vk"),
            pytest.param({"redis_version": "7.0.15"}, "redis", id="redis"),
            pytest.param({"valkey_version": ""}, "valkey", id="valkey-empty-version"),
            pytest.param({}, "redis", id="nothing"),
        ],
    )
    def test_valkey_version_decides(self, server: dict[str, FieldValue], engine: str) -> None:
        assert detect_engine(ParsedInfo(sections={"server": server}, skipped_lines=0)) == engine

    def test_no_server_section_means_redis(self) -> None:
        assert detect_engine(ParsedInfo(sections={}, skipped_lines=0)) == "redis"


class TestEngineVersion:
    @pytest.mark.parametrize(
        ("server", "version"),
        [
            pytest.param({"redis_version": "7.2.4", "valkey_version": "9.1.2"}, "9.1.2", id="vk"),
            pytest.param({"redis_version": "6.2.5"}, "6.2.5", id="redis"),
            pytest.param({"redis_version": 7}, "7", id="number-from-odd-server"),
            pytest.param({}, None, id="none"),
            pytest.param(
                {"valkey_version": "9.1.2", "valkey_release_stage": "ga"}, "9.1.2", id="vk-ga"
            ),
            # Valkey 8.1+ reports a release candidate as the release's number plus its stage.
            pytest.param(
                {"valkey_version": "9.1.0", "valkey_release_stage": "rc1"},
                "9.1.0-rc1",
                id="vk-rc",
            ),
        ],
    )
    def test_prefers_valkey_version(
        self, server: dict[str, FieldValue], version: str | None
    ) -> None:
        info = ParsedInfo(sections={"server": server}, skipped_lines=0)
        assert engine_version(info) == version

    def test_reads_a_parsed_version_as_text(self) -> None:
        info = parse_info(lines("# Server", "redis_version:7.0"))
        assert engine_version(info) == "7.0"


class TestParseVersion:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            pytest.param("9.1.2", (9, 1, 2), id="full"),
            pytest.param("7.0", (7, 0, 0), id="two-parts"),
            pytest.param("7", (7, 0, 0), id="major-only"),
            pytest.param("255.255.255", (255, 255, 255), id="large-parts"),
            pytest.param(" 6.2.5 ", (6, 2, 5), id="padded"),
            pytest.param("8.1.0-rc1", (8, 1, 0), id="suffix"),
            pytest.param("1.2.3.4", (1, 2, 3), id="four-parts"),
            pytest.param("", (0, 0, 0), id="empty"),
            pytest.param("abc", (0, 0, 0), id="junk"),
            pytest.param("v7.0.0", (7, 0, 0), id="v-prefix"),
            pytest.param("255.255.255-dev", (255, 255, 255), id="valkey-unstable"),
            pytest.param("7.9.225", (7, 9, 225), id="redis-8.0-milestone"),
            pytest.param("7.0.x", (0, 0, 0), id="letter-part"),
            pytest.param("-1.2.3", (0, 0, 0), id="negative"),
            pytest.param("9" * 5000, (0, 0, 0), id="huge-major"),
            pytest.param("\u0667.0.0", (0, 0, 0), id="non-ascii-digit"),
        ],
    )
    def test_parses_leading_numeric_parts(self, text: str, expected: tuple[int, int, int]) -> None:
        assert parse_version(text) == expected


# Pieces a hostile server might send, mixed so that headers, separators and odd values
# meet more often than uniformly random text would make them.
INFO_PIECES = st.sampled_from(
    [
        "# Server",
        "# Keyspace",
        "# Commandstats",
        "# Latencystats",
        "#",
        "\r\n",
        "\n",
        "\r",
        ":",
        "=",
        ",",
        "db0",
        "cmdstat_get",
        "keys=1",
        "p99.9=3.007",
        "hz",
        "run_id",
        "-",
        ".",
        "0",
        "9" * 30,
        "nan",
        "inf",
        "1e5",
        " ",
        "\x00",
        "\x85",
        "\u2028",
        "\ufffd",
        "\u00b2",
    ]
)
INFO_LIKE_TEXT = st.lists(st.one_of(INFO_PIECES, st.text(max_size=5)), max_size=60).map("".join)


class TestParseInfoProperties:
    @settings(max_examples=300, deadline=None, database=None)
    @given(raw=st.binary(max_size=2000))
    def test_never_raises_on_bytes(self, raw: bytes) -> None:
        assert_declared_types(parse_info(raw))

    @settings(max_examples=300, deadline=None, database=None)
    @given(text=st.text(max_size=2000))
    def test_never_raises_on_text(self, text: str) -> None:
        assert_declared_types(parse_info(text))

    @settings(max_examples=300, deadline=None, database=None)
    @given(text=INFO_LIKE_TEXT)
    def test_info_like_text_has_declared_types(self, text: str) -> None:
        info = parse_info(text)
        assert_declared_types(info)
        # Parsing is repeatable: the name cache warmed by the first call changes nothing.
        assert parse_info(text) == info
        if text.isascii():
            assert parse_info(text.encode()) == info

    @settings(max_examples=100, deadline=None, database=None)
    @given(raw=st.binary(max_size=300), limit=st.integers(min_value=0, max_value=300))
    def test_only_size_raises(self, raw: bytes, limit: int) -> None:
        if len(raw) > limit:
            with pytest.raises(InfoTooLarge):
                parse_info(raw, max_bytes=limit)
        else:
            assert_declared_types(parse_info(raw, max_bytes=limit))


class TestLazySections:
    """Sections parse on first access; any order of access gives the whole parse."""

    @pytest.mark.parametrize(
        "name", ["valkey-9.1/info_everything.txt", "redis-6.2/info_everything.txt"]
    )
    def test_piecemeal_access_equals_a_whole_parse(self, name: str) -> None:
        whole = parse_info(reply(name))
        expected = {section: dict(fields) for section, fields in whole.sections.items()}
        lazy = parse_info(reply(name))
        assert lazy.get_int("memory", "used_memory") == expected["memory"]["used_memory"]
        for section in reversed(list(lazy.sections)):
            assert lazy.sections[section] == expected[section]
        assert lazy.skipped_lines == whole.skipped_lines == 0
        assert lazy == whole


class TestTakeASection:
    """One read of several sections, handed out as if each reader had read its own."""

    @pytest.mark.parametrize("name", WORKLOAD_REPLIES)
    @pytest.mark.parametrize("looked_first", [False, True])
    def test_the_taken_section_and_the_rest_equal_separate_parses(
        self, name: str, looked_first: bool
    ) -> None:
        whole = parsed(name)
        expected = dict(parsed(name).sections)
        if looked_first:  # already parsed, or still lazy: the same either way
            whole.get("commandstats", "cmdstat_info")
        taken = whole.take("commandstats")
        assert dict(taken.sections) == {"commandstats": expected.pop("commandstats")}
        assert dict(whole.sections) == expected
        assert whole.get("commandstats", "cmdstat_info") is None

    def test_a_taken_section_does_not_keep_the_reply_alive(self) -> None:
        # The latest commandstats are kept per watched server: holding the whole INFO
        # reply they were read with would cost a second reply's memory per server.
        padding = "".join(f"field_{i}:{'x' * 100}\r\n" for i in range(2_000))
        raw = f"# Server\r\n{padding}# Commandstats\r\ncmdstat_info:calls=3\r\n".encode()
        tracemalloc.start()
        try:
            whole = parse_info(raw)
            del raw
            taken = whole.take("commandstats")
            del whole
            kept, _ = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert taken.get("commandstats", "cmdstat_info") == {"calls": 3}
        assert kept < 20_000  # the reply was over 200 KB

    def test_taking_a_missing_section_takes_nothing(self) -> None:
        info = parse_info(b"# Server\r\nredis_version:7.0.0\r\n")
        assert dict(info.take("commandstats").sections) == {}
        assert dict(info.sections) == {"server": {"redis_version": "7.0.0"}}


# Replies every line of which ends in CRLF: the form real servers send, for which one
# field is looked up without parsing its whole section.
PLAIN_PIECES = st.sampled_from(
    [
        "# Server",
        "# Memory",
        "# Keyspace",
        "#",
        "\r\n",
        "\r\n",
        ":",
        "=",
        "db0",
        "hz",
        "hz_x",
        "run_id",
        "used_memory",
        "used_memory_rss",
        " ",
        "-",
        ".",
        "0",
        "7",
        "9" * 30,
        "1.5",
        "nan",
    ]
)
PLAIN_TEXT = st.lists(PLAIN_PIECES, max_size=60).map("".join)
LOOKED_UP = ["hz", "hz_x", "run_id", "used_memory", "used_memory_rss", "db0", "", "#", "a b"]


def typed(value: object) -> tuple[type, object]:
    return type(value), value  # 1 and 1.0 compare equal; a lookup must give the same type


class TestOneFieldLookedUp:
    """A field read from a section nobody parsed yet is what a whole parse would give."""

    @settings(max_examples=300, deadline=None, database=None)
    @given(text=PLAIN_TEXT)
    def test_each_lookup_equals_the_whole_parse(self, text: str) -> None:
        whole = {name: dict(fields) for name, fields in parse_info(text).sections.items()}
        for section in ["server", "memory", "keyspace", "", "absent"]:
            for field in LOOKED_UP:
                expected = whole.get(section, {}).get(field)
                assert typed(parse_info(text.encode()).get(section, field)) == typed(expected)

    @pytest.mark.parametrize("name", WORKLOAD_REPLIES)
    def test_every_field_of_a_real_reply(self, name: str) -> None:
        whole = parsed(name)
        for section, fields in whole.sections.items():
            for field, value in fields.items():
                assert typed(parsed(name).get(section.title(), field)) == typed(value)

    def test_the_last_of_duplicates_wins(self) -> None:
        raw = lines("# Memory", "used_memory:1", "used_memory:2", "x:3")
        assert parse_info(raw).get_int("memory", "used_memory") == 2

    def test_the_last_of_duplicates_wins_across_repeated_headers(self) -> None:
        raw = lines("# Memory", "used_memory:1", "# Stats", "x:1", "# Memory", "used_memory:2")
        assert parse_info(raw).get_int("memory", "used_memory") == 2

    def test_a_longer_name_sharing_the_prefix_is_not_taken(self) -> None:
        raw = lines("# Memory", "used_memory_rss:5")
        assert parse_info(raw).get("memory", "used_memory") is None
        assert parse_info(raw).get("memory", "memory_rss") is None

    def test_a_field_of_another_section_is_not_found(self) -> None:
        raw = lines("# Server", "hz:10", "# Memory", "used_memory:1")
        assert parse_info(raw).get("memory", "hz") is None
        assert parse_info(raw).get("server", "hz") == 10

    def test_the_last_line_without_a_line_end(self) -> None:
        assert parse_info(b"# Server\r\nhz:10").get("server", "hz") == 10
        assert parse_info(b"# Server\r\nhz:").get("server", "hz") == ""

    def test_identifiers_stay_text(self) -> None:
        raw = lines("# Server", "run_id:" + "0" * 40)
        assert parse_info(raw).get("server", "run_id") == "0" * 40


class TestCarriedSections:
    """A slim read carries on the sections of the last full read it did not ask for."""

    def _slim_and_full(self) -> tuple[ParsedInfo, ParsedInfo]:
        full = parse_info(
            lines("# Server", "run_id:abc", "uptime_in_seconds:100", "# Memory", "used_memory:1")
        )
        slim = parse_info(lines("# Memory", "used_memory:2"))
        return slim, full

    def test_a_carried_section_reads_as_the_full_read_had_it(self):
        slim, full = self._slim_and_full()
        slim.carry(CarriedSections(1_000, full, frozenset({"server"})))
        assert slim.get_str("server", "run_id") == "abc"
        assert slim.sections["server"] == {"run_id": "abc", "uptime_in_seconds": 100}
        assert set(slim.sections) == {"memory", "server"}
        assert slim.is_carried("server")
        assert not slim.is_carried("memory")

    def test_a_section_read_with_the_reply_is_never_replaced(self):
        slim, full = self._slim_and_full()
        slim.carry(CarriedSections(1_000, full, frozenset({"server", "memory"})))
        assert slim.get_int("memory", "used_memory") == 2
        assert not slim.is_carried("memory")
        assert slim.is_carried("server")

    def test_nothing_carried_is_parsed_until_read(self):
        slim, full = self._slim_and_full()
        slim.carry(CarriedSections(1_000, full, frozenset({"server"})))
        assert slim.get_int("memory", "used_memory") == 2
        assert "server" not in full._done  # the full read's section, still unparsed
