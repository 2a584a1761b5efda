"""SLOWLOG GET / COMMANDLOG GET replies from real servers and from old or broken ones, and
the rule that decides which entries of a reply are new."""

from collections.abc import Iterator

import pytest

from svc_monitor.engine.client import EngineClient, EngineTarget
from svc_monitor.engine.slowlog import LogEntry, parse_log_reply
from svc_monitor.slowlog.service import Mark, select_new
from tests.fixtures.servers import EngineKind, RunningServer, ServerFactory

LOGS_EVERYTHING = {"slowlog-log-slower-than": "0"}


@pytest.fixture(scope="module", params=["valkey", "redis7", "redis6"])
def logging_server(
    request: pytest.FixtureRequest, server_factory: ServerFactory
) -> Iterator[RunningServer]:
    kind: EngineKind = request.param
    server = server_factory.start(kind, config=LOGS_EVERYTHING)
    yield server
    server_factory.stop(server)


async def raw_reply(server: RunningServer, *command: object) -> object:
    client = EngineClient(
        EngineTarget(server.host, server.port), connect_timeout_s=2, command_timeout_s=2
    )
    try:
        return await client.execute(*command)
    finally:
        await client.close()


class TestRealReplies:
    async def test_entries_of_every_engine(self, logging_server: RunningServer):
        with logging_server.client(decode_responses=False) as conn:
            conn.client_setname("replies-test")
            conn.set(b"user:\xff\xfe", b"v")  # not UTF-8: decoded with replacement chars
            conn.get("user:1001")
        entries = parse_log_reply(await raw_reply(logging_server, "SLOWLOG", "GET", 10))
        by_command = {e.args[:2]: e for e in entries}
        binary = by_command[("SET", "user:\ufffd\ufffd")]
        get = by_command[("GET", "user:1001")]
        assert binary.args == ("SET", "user:\ufffd\ufffd", "v")
        assert binary.client_name == "replies-test"
        assert binary.client_address is not None
        assert binary.client_address.startswith("127.0.0.1:")
        assert get.id > binary.id  # the GET ran later: ids grow
        assert [e.id for e in entries] == sorted((e.id for e in entries), reverse=True)
        # Server seconds became epoch ms.
        assert binary.started_at_ms % 1000 == 0
        assert binary.started_at_ms > 1_600_000_000_000
        assert binary.duration >= 0
        assert binary.command == "SET"

    async def test_commandlog_large_reply_counts_bytes(self, server_factory: ServerFactory):
        server = server_factory.start("valkey", config={"commandlog-reply-larger-than": "1000"})
        try:
            with server.client() as conn:
                conn.set("big", "x" * 5000)
                conn.get("big")
            reply = await raw_reply(server, "COMMANDLOG", "GET", 10, "large-reply")
        finally:
            server_factory.stop(server)
        entries = parse_log_reply(reply)
        big = next(e for e in entries if e.args == ("GET", "big"))
        assert big.duration >= 5000  # bytes of the reply, not microseconds


class TestOddReplies:
    def test_four_field_entries_of_old_servers(self):
        # Redis < 4.0 sent no client address or name.
        entries = parse_log_reply([[3, 1700000000, 12, [b"GET", b"k"]]])
        assert entries == [LogEntry(3, 1_700_000_000_000, 12, ("GET", "k"), None, None)]

    @pytest.mark.parametrize(
        "reply",
        [
            pytest.param(None, id="nil"),
            pytest.param(b"ERR", id="bytes"),
            pytest.param([[1, 2, 3]], id="three-fields"),
            pytest.param([[b"x", 1700000000, 1, [b"GET"]]], id="id-not-a-number"),
            pytest.param([[1, 1700000000, 1, b"GET k"]], id="args-not-a-list"),
            pytest.param([[True, 1700000000, 1, [b"GET"]]], id="bool-id"),
            pytest.param(["junk"], id="entry-not-a-list"),
        ],
    )
    def test_junk_is_skipped(self, reply: object):
        assert parse_log_reply(reply) == []

    def test_one_bad_entry_does_not_cost_the_batch(self):
        reply = [[2, 1700000001, 5, [b"SET", b"a", b"1"]], "junk", [1, 1700000000, 4, [b"GET"]]]
        assert [e.id for e in parse_log_reply(reply)] == [2, 1]

    def test_numbers_sent_as_text_are_read(self):
        (entry,) = parse_log_reply([[b"7", b"1700000000", b"9", [b"PING"], b"a:1", b"n"]])
        assert (entry.id, entry.started_at_ms, entry.duration) == (7, 1_700_000_000_000, 9)


def entry(entry_id: int, started_s: int) -> LogEntry:
    return LogEntry(entry_id, started_s * 1000, 1, ("GET", "k"), None, None)


class TestSelectNew:
    def test_first_read_takes_everything(self):
        reply = [entry(2, 20), entry(1, 10)]
        assert select_new(reply, None) == (reply, False)

    def test_only_entries_past_the_mark(self):
        new, restarted = select_new([entry(5, 50), entry(4, 40), entry(3, 30)], Mark(4, 40_000))
        assert [e.id for e in new] == [5]
        assert not restarted

    def test_nothing_new(self):
        assert select_new([entry(4, 40), entry(3, 30)], Mark(4, 40_000)) == ([], False)

    def test_lower_ids_after_a_restart_are_all_new(self):
        new, restarted = select_new([entry(1, 90), entry(0, 80)], Mark(4, 40_000))
        assert [e.id for e in new] == [1, 0]
        assert restarted

    def test_restart_that_passed_the_mark_is_seen_by_start_time(self):
        # Restarted and logged more than before: id 4 exists again, started later.
        reply = [entry(6, 96), entry(5, 95), entry(4, 94), entry(3, 93)]
        new, restarted = select_new(reply, Mark(4, 40_000))
        assert [e.id for e in new] == [6, 5, 4, 3]
        assert restarted
