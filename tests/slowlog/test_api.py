"""Slow-log and command-log routes against real servers: live reads, history that outlives a
reset and a restart, COMMANDLOG on Valkey 9.1 and its 501 elsewhere, data isolation."""

import asyncio
import random
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fixtures.app import AppFactory, RunningApp, target_of
from tests.fixtures.servers import HOST, RunningServer, ServerFactory
from tests.fixtures.waiting import eventually

FAST = {
    "ANOMALY_POLL_INTERVAL_MS": 100,
    "SLOWLOG_POLL_INTERVAL_MS": 100,
    "ENGINE_CONNECT_TIMEOUT_MS": 5000,
    "ENGINE_COMMAND_TIMEOUT_MS": 1000,
}
# Every command is slow; the ring is big enough that a test's commands outlive the polls
# (which are logged too) between two reads.
LOGS_EVERYTHING = {"slowlog-log-slower-than": "0", "slowlog-max-len": "1024"}
LARGE = {
    "commandlog-request-larger-than": "1000",
    "commandlog-reply-larger-than": "1000",
    "commandlog-large-request-max-len": "1024",
    "commandlog-large-reply-max-len": "1024",
}
UNSUPPORTED = {
    "statusCode": 501,
    "message": "Failed to get commandlog: COMMANDLOG not supported on this database version",
    "error": "Not Implemented",
}
SLOWLOG_ROUTES = [
    ("GET", "/api/metrics/slowlog"),
    ("GET", "/api/metrics/slowlog/length"),
    ("DELETE", "/api/metrics/slowlog"),
    ("GET", "/api/metrics/slowlog/patterns"),
    ("GET", "/api/slowlog-analytics/entries"),
]
RENAMED_AWAY = (
    "SLOWLOG is not available on this server: the command is renamed or disabled "
    "(managed providers disable it on some plans). The server answered: unknown command "
    "'SLOWLOG'"
)
COMMANDLOG_ROUTES = [
    ("GET", "/api/metrics/commandlog"),
    ("GET", "/api/metrics/commandlog/length"),
    ("DELETE", "/api/metrics/commandlog"),
    ("GET", "/api/metrics/commandlog/patterns"),
    ("GET", "/api/commandlog-analytics/entries"),
]


async def tagged(
    app: RunningApp,
    tag: str,
    path: str = "/api/slowlog-analytics/entries",
    headers: dict[str, str] | None = None,
    **params: Any,
) -> list[dict[str, Any]]:
    """Stored (or live) entries whose arguments mention `tag`."""
    response = await app.client.get(path, params={"limit": 10000, **params}, headers=headers)
    assert response.status_code == 200, response.text
    return [r for r in response.json() if any(tag in a for a in r["args"])]


def new_tag() -> str:
    """A tag for one test's keys: letters beyond hex, so key patterns keep it verbatim."""
    return "".join(random.choices("ghijklmnopqrstuvwxyz", k=12))


def keys_of(rows: list[dict[str, Any]]) -> list[str]:
    return sorted(r["args"][1] for r in rows)


async def ticks_pass(app: RunningApp, kind: str, count: int, connection: str = "env-default"):
    supervisor = app.features.supervisor

    async def started() -> bool:
        return kind in supervisor.loops_of(connection)

    await eventually(started)
    loop = supervisor.loops_of(connection)[kind]
    start = loop.ticks

    async def passed() -> bool:
        return loop.ticks >= start + count

    await eventually(passed)


@pytest.fixture(scope="module")
def logging_valkey(server_factory: ServerFactory) -> Iterator[RunningServer]:
    server = server_factory.start("valkey", config={**LOGS_EVERYTHING, **LARGE})
    yield server
    server_factory.stop(server)


class TestSlowlogHistory:
    async def test_history_outlives_a_reset_each_entry_once(
        self, app_factory: AppFactory, logging_valkey: RunningServer
    ):
        tag = new_tag()
        async with app_factory(**FAST, **target_of(logging_valkey)) as app:
            with logging_valkey.client() as conn:
                for i in range(5):
                    conn.set(f"{tag}:early:{i}", "v")

            async def early_stored() -> bool:
                return len(await tagged(app, tag)) == 5

            await eventually(early_stored)
            reset = await app.client.delete("/api/metrics/slowlog")
            assert reset.status_code == 200
            assert reset.json() == {"success": True}
            assert await tagged(app, tag, "/api/metrics/slowlog", count=1000) == []
            with logging_valkey.client() as conn:
                for i in range(5):
                    conn.set(f"{tag}:late:{i}", "v")

            async def late_stored() -> bool:
                return len(await tagged(app, tag)) == 10

            await eventually(late_stored)
            await ticks_pass(app, "slowlog", 2)
            rows = await tagged(app, tag)
        assert keys_of(rows) == sorted(
            [f"{tag}:early:{i}" for i in range(5)] + [f"{tag}:late:{i}" for i in range(5)]
        )
        assert [r["startedAt"] for r in rows] == sorted(
            (r["startedAt"] for r in rows), reverse=True
        )
        node = f"{logging_valkey.host}:{logging_valkey.port}"
        assert {r["node"] for r in rows} == {node}
        assert all(r["command"] == "SET" and r["duration"] >= 0 for r in rows)

    async def test_a_burst_longer_than_one_read_is_stored_whole(
        self, memory_app_factory: AppFactory, logging_valkey: RunningServer
    ):
        tag = new_tag()
        async with memory_app_factory(**FAST, **target_of(logging_valkey)) as app:
            with logging_valkey.client() as conn:
                conn.set(f"{tag}:first", "v")

            async def first_stored() -> bool:
                return len(await tagged(app, tag)) == 1

            await eventually(first_stored)
            # 400 entries in one round trip: more than one poll's read of the newest 128,
            # fewer than the server's ring of 1024 holds.
            with logging_valkey.client() as conn, conn.pipeline(transaction=False) as pipe:
                for i in range(400):
                    pipe.set(f"{tag}:{i}", "v")
                pipe.execute()
            path = "/api/commandlog-analytics/entries"

            async def all_stored() -> bool:
                slow = await tagged(app, tag)
                commandlog = await tagged(app, tag, path, type="slow")
                return len(slow) == len(commandlog) == 401

            # Four polls of 128 or more: generous, as a loaded machine stretches each one.
            await eventually(all_stored, within=30)
            await ticks_pass(app, "slowlog", 2)
            assert len(await tagged(app, tag)) == 401  # and nothing stored twice

    async def test_filters_window_and_paging(
        self, memory_app_factory: AppFactory, logging_valkey: RunningServer
    ):
        tag = new_tag()
        async with memory_app_factory(**FAST, **target_of(logging_valkey)) as app:
            with logging_valkey.client() as conn:
                conn.set(f"{tag}:a", "v")
                conn.get(f"{tag}:a")
                conn.get(f"{tag}:b")

            async def stored() -> bool:
                return len(await tagged(app, tag)) == 3

            await eventually(stored)
            gets = await tagged(app, tag, command="get")
            assert keys_of(gets) == [f"{tag}:a", f"{tag}:b"]
            everything = await tagged(app, tag)
            newest = everything[0]
            slowest = max(r["duration"] for r in everything)
            assert all(
                r["duration"] >= slowest for r in await tagged(app, tag, minDuration=slowest)
            )
            window = await tagged(app, tag, **{"from": newest["startedAt"] + 1000})
            assert window == []
            page = await app.client.get(
                "/api/slowlog-analytics/entries", params={"limit": 1, "offset": 1}
            )
            assert len(page.json()) == 1
            bad = await app.client.get("/api/slowlog-analytics/entries?minDuration=-1")
            assert bad.status_code == 422
            assert bad.json()["fields"] == ["minDuration"]

    async def test_live_reads_newest_first(
        self, memory_app_factory: AppFactory, logging_valkey: RunningServer
    ):
        tag = new_tag()
        async with memory_app_factory(**target_of(logging_valkey)) as app:
            with logging_valkey.client() as conn:
                conn.client_setname("live-reader")
                conn.set(f"{tag}:1", "v")
                conn.set(f"{tag}:2", "v")
            live = await tagged(app, tag, "/api/metrics/slowlog", count=50)
            length = (await app.client.get("/api/metrics/slowlog/length")).json()
            default = (await app.client.get("/api/metrics/slowlog")).json()
            too_many = await app.client.get("/api/metrics/slowlog?count=10001")
        assert [r["args"][1] for r in live] == [f"{tag}:2", f"{tag}:1"]
        assert live[0]["id"] > live[1]["id"]
        assert live[0]["clientName"] == "live-reader"
        assert live[0]["clientAddress"].startswith("127.0.0.1:")
        assert length["length"] >= 2
        assert len(default) == 10
        assert too_many.status_code == 422
        assert too_many.json()["fields"] == ["count"]


@pytest.fixture
def restartable(server_factory: ServerFactory) -> Iterator[list[RunningServer]]:
    """A Valkey that logs every command and can be stopped and started again on its port;
    the list holds the running one (a restart gives it a new pid)."""
    current = [
        server_factory.start(
            "valkey", config={"slowlog-log-slower-than": "0", "slowlog-max-len": "1024"}
        )
    ]
    yield current
    server_factory.stop(current[0])


class TestServerRestart:
    async def test_ids_starting_again_are_stored_and_nothing_twice(
        self,
        memory_app_factory: AppFactory,
        server_factory: ServerFactory,
        restartable: list[RunningServer],
    ):
        import valkey

        tag = new_tag()
        server = restartable[0]
        async with memory_app_factory(**FAST, DB_HOST=HOST, DB_PORT=server.port) as app:
            # Let the monitor's own logged commands push the ids up first.
            await ticks_pass(app, "slowlog", 5)
            with valkey.Valkey(host=HOST, port=server.port) as conn:
                for i in range(5):
                    conn.set(f"{tag}:before:{i}", "v")

            async def before_stored() -> bool:
                return len(await tagged(app, tag)) == 5

            await eventually(before_stored)
            # Entries are told apart by (id, start second): the brief, fast restart here must
            # not reuse ids within the second the old process logged them.
            await asyncio.sleep(1.1)
            server_factory.stop(server)
            restartable[0] = server_factory.start_again(server)
            with valkey.Valkey(host=HOST, port=server.port) as conn:
                for i in range(3):
                    conn.set(f"{tag}:after:{i}", "v")

            async def after_stored() -> bool:
                return len(await tagged(app, tag)) == 8

            await eventually(after_stored, within=20)
            await ticks_pass(app, "slowlog", 2)
            rows = await tagged(app, tag)
        before = [r for r in rows if ":before:" in r["args"][1]]
        after = [r for r in rows if ":after:" in r["args"][1]]
        assert len(before) == 5
        assert len(after) == 3
        # The new process counted from 0 again: its ids are lower than the old ones.
        assert max(r["id"] for r in after) < min(r["id"] for r in before)


class TestCommandLog:
    async def test_large_requests_and_replies_are_stored(
        self, app_factory: AppFactory, logging_valkey: RunningServer
    ):
        tag = new_tag()
        async with app_factory(**FAST, **target_of(logging_valkey)) as app:
            with logging_valkey.client() as conn:
                conn.set(f"{tag}:big", "x" * 5000)
                conn.get(f"{tag}:big")
                conn.set(f"{tag}:small", "x")

            async def both_stored() -> bool:
                path = "/api/commandlog-analytics/entries"
                requests = await tagged(app, tag, path, type="large-request")
                replies = await tagged(app, tag, path, type="large-reply")
                return bool(requests) and bool(replies)

            await eventually(both_stored)
            await ticks_pass(app, "commandlog", 2)
            path = "/api/commandlog-analytics/entries"
            requests = await tagged(app, tag, path, type="large-request")
            replies = await tagged(app, tag, path, type="large-reply")
            slow = await tagged(app, tag, path, type="slow", command="SET")
        assert [(r["args"][:2], r["type"]) for r in requests] == [
            (["SET", f"{tag}:big"], "large-request")
        ]
        assert requests[0]["duration"] >= 5000  # bytes
        assert [(r["args"], r["type"]) for r in replies] == [(["GET", f"{tag}:big"], "large-reply")]
        assert replies[0]["duration"] >= 5000
        assert keys_of(slow) == [f"{tag}:big", f"{tag}:small"]

    async def test_live_length_and_reset(
        self, memory_app_factory: AppFactory, logging_valkey: RunningServer
    ):
        tag = new_tag()
        async with memory_app_factory(**FAST, **target_of(logging_valkey)) as app:
            with logging_valkey.client() as conn:
                conn.set(f"{tag}:big", "x" * 3000)
            live = await tagged(
                app, tag, "/api/metrics/commandlog", type="large-request", count=1000
            )
            assert [r["type"] for r in live] == ["large-request"]
            length = await app.client.get("/api/metrics/commandlog/length?type=large-request")
            assert length.json()["length"] >= 1

            async def stored() -> bool:
                path = "/api/commandlog-analytics/entries"
                return bool(await tagged(app, tag, path, type="large-request"))

            await eventually(stored)
            reset = await app.client.delete("/api/metrics/commandlog?type=large-request")
            assert reset.json() == {"success": True}
            after = await tagged(
                app, tag, "/api/metrics/commandlog", type="large-request", count=1000
            )
            assert after == []
            kept = await tagged(app, tag, "/api/commandlog-analytics/entries", type="large-request")
            assert len(kept) == 1

    @pytest.mark.parametrize(("method", "path"), COMMANDLOG_ROUTES)
    async def test_unknown_type_422s_naming_it(self, api: RunningApp, method: str, path: str):
        response = await api.client.request(method, path, params={"type": "huge"})
        assert response.status_code == 422
        assert response.json()["fields"] == ["type"]

    @pytest.mark.parametrize(
        "path", ["/api/slowlog-analytics/entries", "/api/commandlog-analytics/entries"]
    )
    async def test_a_control_character_in_the_command_filter_422s_naming_it(
        self, app_factory: AppFactory, path: str
    ):
        """A NUL would reach the stored entries' query, which PostgreSQL refuses (a 500)."""
        async with app_factory() as app:
            response = await app.client.get(path, params={"command": "get\x00"})
            assert response.status_code == 422, response.text
            assert response.json()["fields"] == ["command"]

    @pytest.mark.parametrize("engine", ["redis7_server", "redis6_server"])
    async def test_every_route_501s_without_commandlog(
        self, memory_app_factory: AppFactory, request: pytest.FixtureRequest, engine: str
    ):
        server: RunningServer = request.getfixturevalue(engine)
        async with memory_app_factory(**target_of(server)) as app:
            for method, path in COMMANDLOG_ROUTES:
                for log_type in ("slow", "large-request", "large-reply"):
                    response = await app.client.request(method, path, params={"type": log_type})
                    assert response.status_code == 501, (method, path)
                    assert response.json() == UNSUPPORTED
            # The slow log itself works there.
            assert (await app.client.get("/api/metrics/slowlog/length")).status_code == 200


class TestDataIsolation:
    async def test_two_connections_never_see_each_others_entries(
        self,
        memory_app_factory: AppFactory,
        server_factory: ServerFactory,
        logging_valkey: RunningServer,
    ):
        other = server_factory.start("valkey", config={**LOGS_EVERYTHING, **LARGE})
        mine, theirs = new_tag(), new_tag()
        try:
            async with memory_app_factory(**FAST, **target_of(logging_valkey)) as app:
                added = await app.client.post(
                    "/api/connections", json={"name": "other", "host": HOST, "port": other.port}
                )
                other_id = added.json()["id"]
                with logging_valkey.client() as conn:
                    conn.set(f"{mine}:k", "x" * 2000)
                with other.client() as conn:
                    conn.set(f"{theirs}:k", "x" * 2000)
                headers = {
                    "default": {},
                    "other": {"X-Connection-Id": other_id},
                }

                async def both_stored() -> bool:
                    path = "/api/commandlog-analytics/entries"
                    a = await tagged(app, mine, path, type="large-request")
                    b = await tagged(app, theirs, path, headers["other"], type="large-request")
                    c = await tagged(app, theirs, headers=headers["other"])
                    return bool(a and b and c)

                await eventually(both_stored)
                for name, own, foreign in (
                    ("default", mine, theirs),
                    ("other", theirs, mine),
                ):
                    h = headers[name]
                    for path, params in (
                        ("/api/metrics/slowlog", {"count": 1000}),
                        ("/api/slowlog-analytics/entries", {}),
                        ("/api/metrics/commandlog", {"count": 1000, "type": "large-request"}),
                        ("/api/commandlog-analytics/entries", {"type": "large-request"}),
                    ):
                        assert await tagged(app, own, path, h, **params), (name, path)
                        assert not await tagged(app, foreign, path, h, **params), (name, path)
                    for path, params in (
                        ("/api/metrics/slowlog/patterns", {"count": 10000}),
                        ("/api/metrics/commandlog/patterns", {"type": "large-request"}),
                    ):
                        body = (await app.client.get(path, params=params, headers=h)).json()
                        seen = {p["pattern"] for p in body["patterns"]}
                        assert any(own in p for p in seen), (name, path)
                        assert not any(foreign in p for p in seen), (name, path)
        finally:
            server_factory.stop(other)


@pytest.fixture(scope="module")
def slowlog_refused(server_factory: ServerFactory) -> Iterator[RunningServer]:
    """SLOWLOG renamed away, as some managed providers ship it."""
    server = server_factory.start("valkey", config={"rename-command": 'SLOWLOG ""'})
    yield server
    server_factory.stop(server)


@pytest.fixture(scope="module")
def slowlog_denied(server_factory: ServerFactory) -> Iterator[RunningServer]:
    server = server_factory.start(
        "valkey", acl_users=["watcher on >watcher-pw ~* &* +@all -slowlog"]
    )
    yield server
    server_factory.stop(server)


class TestWithoutSlowlog:
    async def test_every_route_501s_explaining_a_renamed_slowlog(
        self, memory_app_factory: AppFactory, slowlog_refused: RunningServer
    ):
        async with memory_app_factory(**target_of(slowlog_refused)) as app:
            for method, path in SLOWLOG_ROUTES:
                response = await app.client.request(method, path)
                assert response.status_code == 501, (method, path, response.text)
                body = response.json()
                assert body["error"] == "Not Implemented"
                assert body["message"].startswith(RENAMED_AWAY), body
            connection = await app.services.connections.get("env-default")
            sent = app.services.connections.ledger(connection).costs()
        # Only detection's probe reached the server; the routes answered from what it found.
        assert sent["SLOWLOG GET"].calls == 1
        assert not {"SLOWLOG LEN", "SLOWLOG RESET"} & sent.keys()

    async def test_a_user_denied_slowlog_is_told_so_in_the_servers_words(
        self, memory_app_factory: AppFactory, slowlog_denied: RunningServer
    ):
        async with memory_app_factory(
            **target_of(slowlog_denied), DB_USERNAME="watcher", DB_PASSWORD="watcher-pw"
        ) as app:
            response = await app.client.get("/api/metrics/slowlog")
        assert response.status_code == 501
        message = response.json()["message"]
        assert message.startswith(
            "SLOWLOG is not available on this server: this connection's user is not allowed "
            "to run it (NOPERM"
        ), message

    async def test_the_same_server_as_another_user_still_has_its_slow_log(
        self, memory_app_factory: AppFactory, slowlog_denied: RunningServer
    ):
        async with memory_app_factory(**target_of(slowlog_denied)) as app:
            response = await app.client.get("/api/metrics/slowlog")
        assert response.status_code == 200, response.text
