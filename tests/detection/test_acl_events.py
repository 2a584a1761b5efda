"""AclDenied on the event bus, from the audit poll against real servers.

One event per new ACL LOG entry, and one per known entry whose count grew; entries already
in the server's log when the monitor starts watching are not announced.
"""

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import valkey.asyncio as avalkey
from valkey import exceptions as vx

from svc_monitor.event_types.access import AclDenied
from svc_monitor.events import Event, Subscription
from tests.detection.helpers import address, person, run
from tests.fixtures.app import AppFactory, RunningApp
from tests.fixtures.servers import EngineKind, RunningServer, ServerFactory
from tests.fixtures.waiting import eventually

AUDIT_MS = 150
KINDS: list[EngineKind] = ["valkey", "redis7", "redis6"]
LIMITED = ["limited on >pw ~allowed:* +get +set +ping +client|info"]


class Events:
    """What the app published on its bus since the test subscribed."""

    def __init__(self, app: RunningApp) -> None:
        self._subscription: Subscription = app.services.bus.subscribe("test-acl-events")
        self._seen: list[Event] = []

    def denied(self, **match: Any) -> list[AclDenied]:
        self._seen += self._subscription.pending()
        return [
            e
            for e in self._seen
            if isinstance(e, AclDenied) and all(getattr(e, k) == v for k, v in match.items())
        ]

    async def wait_denied(self, count: int = 1, **match: Any) -> list[AclDenied]:
        async def arrived() -> bool:
            return len(self.denied(**match)) >= count

        await eventually(arrived)
        return self.denied(**match)


async def watching(app: RunningApp, kind: str, connection_id: str = "env-default") -> None:
    """Return once a whole pass of `kind` ran with the engine identified: its baseline."""
    connections = app.services.connections

    async def identified() -> bool:
        seen = connections.last_seen(await connections.get(connection_id))
        return bool(seen and seen.identity and app.features.supervisor.loops_of(connection_id))

    await eventually(identified)
    loop = app.features.supervisor.loops_of(connection_id)[kind]
    # A tick counts when it starts: the next one started after detection, and the one
    # after it starts only once that pass has finished.
    first = loop.ticks + 2

    async def passed() -> bool:
        return loop.ticks >= first

    await eventually(passed)


async def wrong_password(conn: avalkey.Valkey, username: str = "limited") -> str:
    """AUTH with a bad password on `conn`; the address it came from."""
    addr = await address(conn)
    with pytest.raises(vx.AuthenticationError):
        await run(conn, "AUTH", username, "not-the-password")
    return addr


@pytest.fixture(params=KINDS)
def server(
    request: pytest.FixtureRequest, server_factory: ServerFactory
) -> Iterator[RunningServer]:
    started = server_factory.start(request.param, acl_users=LIMITED)
    yield started
    server_factory.stop(started)


@pytest.fixture
async def app(memory_app_factory: AppFactory, server: RunningServer) -> AsyncIterator[RunningApp]:
    async with memory_app_factory(
        DB_HOST=server.host,
        DB_PORT=server.port,
        AUDIT_POLL_INTERVAL_MS=AUDIT_MS,
        ANOMALY_POLL_INTERVAL_MS=100,
    ) as running:
        yield running


class TestWrongPassword:
    async def test_each_wrong_password_is_announced_with_user_address_and_count(
        self, app: RunningApp, server: RunningServer
    ):
        events = Events(app)
        await watching(app, "audit")
        conn = person(server)
        try:
            first_addr = await wrong_password(conn)
            first = await events.wait_denied(reason="auth", username="limited")
            # valkey-py drops a connection after an auth error: the second try comes from
            # another port, and the server counts it in the same entry.
            second_addr = await wrong_password(conn)
            both = await events.wait_denied(2, reason="auth", username="limited")
        finally:
            await conn.aclose()
        assert [(e.count, e.client_info) for e in first] == [(1, first_addr)]
        assert [(e.count, e.client_info) for e in both] == [(1, first_addr), (2, second_addr)]
        assert both[0].connection_id == "env-default"
        assert both[0].context == "toplevel"
        assert both[0].object.lower() == "auth"
        assert abs(both[1].timestamp_s * 1000 - both[1].at_ms) < 5_000

    async def test_an_entry_seen_on_later_polls_is_announced_once(
        self, app: RunningApp, server: RunningServer
    ):
        events = Events(app)
        await watching(app, "audit")
        conn = person(server)
        try:
            await wrong_password(conn)
            await events.wait_denied(reason="auth")
            await asyncio.sleep(5 * AUDIT_MS / 1000)  # the same entry, polled again and again
        finally:
            await conn.aclose()
        assert [e.count for e in events.denied()] == [1]


class TestBaseline:
    async def test_denials_logged_before_the_monitor_started_are_not_announced(
        self, memory_app_factory: AppFactory, server: RunningServer
    ):
        conn = person(server)
        try:
            await wrong_password(conn, "ghost")
            async with memory_app_factory(
                DB_HOST=server.host,
                DB_PORT=server.port,
                AUDIT_POLL_INTERVAL_MS=AUDIT_MS,
                ANOMALY_POLL_INTERVAL_MS=100,
            ) as app:
                events = Events(app)
                await watching(app, "audit")
                await wrong_password(conn)
                await events.wait_denied(username="limited")
                await asyncio.sleep(3 * AUDIT_MS / 1000)
                announced = events.denied()
        finally:
            await conn.aclose()
        assert [(e.username, e.count) for e in announced] == [("limited", 1)]


class TestDeniedCommandsAndKeys:
    async def test_a_forbidden_command_and_a_forbidden_key_are_announced_by_reason(
        self, app: RunningApp, server: RunningServer
    ):
        events = Events(app)
        await watching(app, "audit")
        conn = person(server, username="limited", password="pw")
        try:
            addr = await address(conn)
            with pytest.raises(vx.NoPermissionError):
                await run(conn, "DEL", "allowed:a")
            command = await events.wait_denied(reason="command")
            with pytest.raises(vx.NoPermissionError):
                await run(conn, "GET", "secret:b")
            key = await events.wait_denied(reason="key")
        finally:
            await conn.aclose()
        assert [(e.username, e.object, e.client_info, e.count) for e in command] == [
            ("limited", "del", addr, 1)
        ]
        assert [(e.username, e.object, e.client_info, e.count) for e in key] == [
            ("limited", "secret:b", addr, 1)
        ]


class TestStorageBackends:
    async def test_denials_are_announced_on_every_storage_backend(
        self, app_factory: AppFactory, valkey_server: RunningServer
    ):
        async with app_factory(
            AUDIT_POLL_INTERVAL_MS=AUDIT_MS, ANOMALY_POLL_INTERVAL_MS=100
        ) as app:
            events = Events(app)
            await watching(app, "audit")
            conn = person(valkey_server)
            try:
                # A user name of this test's own: the shared server's log has other entries.
                await wrong_password(conn, "backend-check")
                announced = await events.wait_denied(username="backend-check")
            finally:
                await conn.aclose()
        assert announced[-1].reason == "auth"
