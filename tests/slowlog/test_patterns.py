"""The pattern rule of slowlog/command_patterns.py, and pattern analysis over a real
server's entries."""

import asyncio
from collections.abc import Iterator

import pytest

from svc_monitor.engine.slowlog import LogEntry
from svc_monitor.slowlog.command_patterns import analyze, command_pattern, normalize_key
from tests.fixtures.app import AppFactory, target_of
from tests.fixtures.servers import RunningServer, ServerFactory


class TestNormalizeKey:
    @pytest.mark.parametrize(
        ("key", "pattern"),
        [
            ("user:1001", "user:*"),
            ("user:1001:profile", "user:*:profile"),
            ("order-17/items/3", "order-*/items/*"),
            ("session:3f2b8c1e-9a4d-4e6f-8b1a-2c3d4e5f6a7b", "session:*"),
            ("obj:5f3a9b2c7d1e", "obj:*"),  # a hex id
            ("cache:deadbeef", "cache:deadbeef"),  # hex letters only: a word, kept
            ("cache:abc", "cache:abc"),
            ("v2:config", "v*:config"),
            ("user1001", "user*"),
            ("1001", "*"),
            ("plain", "plain"),
            ("bin:\ufffd\ufffd", "*"),  # bytes that were not UTF-8
            ("tab\tkey", "*"),
            ("x" * 150, "x" * 100 + "..."),
        ],
    )
    def test_variable_parts_become_stars(self, key: str, pattern: str):
        assert normalize_key(key) == pattern


class TestCommandPattern:
    @pytest.mark.parametrize(
        ("args", "pattern"),
        [
            (["GET", "user:1001"], "GET user:*"),
            (["get", "user:1001"], "GET user:*"),
            (["SET", "user:1", "secret value", "EX", "60"], "SET user:*"),
            (["HSET", "h:9", "field", "value"], "HSET h:*"),
            (["MGET", "user:1", "user:2", "cart:7"], "MGET user:* cart:*"),
            (["DEL", "a:1", "b:1", "c:1", "d:1"], "DEL a:* b:* c:* ..."),
            (["MSET", "a:1", "v1", "b:2", "v2"], "MSET a:* b:*"),
            (["BLPOP", "q:1", "q:2", "5"], "BLPOP q:*"),
            (["RENAME", "tmp:1", "final:1"], "RENAME tmp:* final:*"),
            (["EVAL", "return 1", "2", "k:1", "j:2", "arg"], "EVAL k:* j:*"),
            (["EVALSHA", "abc", "notanumber"], "EVALSHA"),
            (["CLIENT", "SETNAME", "secret-name"], "CLIENT SETNAME"),
            (["config", "get", "maxmemory"], "CONFIG GET"),
            (["OBJECT", "ENCODING", "user:5"], "OBJECT ENCODING user:*"),
            (["MEMORY", "USAGE", "user:5", "SAMPLES", "0"], "MEMORY USAGE user:*"),
            (["SCAN", "0", "MATCH", "user:*"], "SCAN"),
            (["PING"], "PING"),
            (["INFO", "everything"], "INFO"),
            ([], "UNKNOWN"),
        ],
    )
    def test_command_and_key_patterns(self, args: list[str], pattern: str):
        assert command_pattern(args) == pattern


def entry(entry_id: int, duration: int, *args: str) -> LogEntry:
    return LogEntry(entry_id, 1_700_000_000_000 + entry_id, duration, args, "127.0.0.1:1", None)


class TestAnalyze:
    def test_groups_counts_shares_and_durations(self):
        entries = [
            entry(4, 30, "GET", "user:3"),
            entry(3, 10, "GET", "user:2"),
            entry(2, 20, "GET", "user:1"),
            entry(1, 100, "SET", "cart:1", "x" * 500),
        ]
        result = analyze(entries, analyzed_at=5)
        assert result.totalEntries == 4
        assert result.analyzedAt == 5
        first, second = result.patterns
        assert (first.pattern, first.count, first.percentage) == ("GET user:*", 3, 75.0)
        assert (first.avgDuration, first.maxDuration, first.minDuration) == (20.0, 30, 10)
        assert [e.id for e in first.examples] == [4, 3, 2]
        assert (second.pattern, second.totalDuration) == ("SET cart:*", 100)
        assert second.examples[0].args[2] == "x" * 128  # shortened
        assert [(c.command, c.count) for c in result.byCommand] == [("GET", 3), ("SET", 1)]

    def test_nothing_to_analyse(self):
        result = analyze([], analyzed_at=1)
        assert (result.totalEntries, result.patterns, result.byCommand) == (0, [], [])


@pytest.fixture(scope="module")
def pattern_server(server_factory: ServerFactory) -> Iterator[RunningServer]:
    server = server_factory.start(
        "valkey",
        config={"slowlog-log-slower-than": "0", "commandlog-request-larger-than": "1000"},
    )
    yield server
    server_factory.stop(server)


class TestPatternRoutes:
    async def test_patterns_of_stored_entries_of_a_real_server(
        self, memory_app_factory: AppFactory, pattern_server: RunningServer
    ):
        async with memory_app_factory(
            SLOWLOG_POLL_INTERVAL_MS=100, ANOMALY_POLL_INTERVAL_MS=100, **target_of(pattern_server)
        ) as app:
            with pattern_server.client() as conn:
                for i in range(10):
                    conn.get(f"patuser:{1000 + i}")
                for i in range(3):
                    conn.set(f"patbig:{i}", "x" * 2000)
            for _ in range(100):
                body = (await app.client.get("/api/metrics/slowlog/patterns?count=10000")).json()
                large = (
                    await app.client.get(
                        "/api/metrics/commandlog/patterns",
                        params={"type": "large-request", "count": 10000},
                    )
                ).json()
                found = {p["pattern"]: p for p in body["patterns"]}
                found_large = {p["pattern"]: p for p in large["patterns"]}
                if "GET patuser:*" in found and "SET patbig:*" in found_large:
                    break
                await asyncio.sleep(0.1)
            default = (await app.client.get("/api/metrics/slowlog/patterns")).json()
        gets = found["GET patuser:*"]
        assert gets["count"] == 10
        assert gets["command"] == "GET"
        assert 0 < gets["percentage"] <= 100
        assert gets["maxDuration"] >= gets["avgDuration"] >= gets["minDuration"] >= 0
        assert len(gets["examples"]) == 3
        assert body["totalEntries"] >= 13
        assert found_large["SET patbig:*"]["count"] == 3
        assert found_large["SET patbig:*"]["minDuration"] >= 2000  # bytes
        assert default["totalEntries"] <= 128
