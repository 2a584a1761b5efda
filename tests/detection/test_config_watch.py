"""ConfigChanged and AclModified on the event bus, from the config_watch poll on real servers."""

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from svc_monitor.detection import config_watch
from svc_monitor.detection.config_watch import parse_config
from svc_monitor.event_types.access import AclModified, ConfigChanged
from svc_monitor.events import Event, Subscription
from tests.detection.helpers import address, person, run
from tests.fixtures.app import AppFactory, RunningApp
from tests.fixtures.servers import EngineKind, RunningServer, ServerFactory
from tests.fixtures.waiting import eventually

WATCH_MS = 150
KINDS: list[EngineKind] = ["valkey", "redis7", "redis6"]
FAST = {"CONFIG_WATCH_INTERVAL_MS": WATCH_MS, "ANOMALY_POLL_INTERVAL_MS": 100}

Watched = ConfigChanged | AclModified


class Events:
    """ConfigChanged and AclModified the app published since the test subscribed."""

    def __init__(self, app: RunningApp) -> None:
        self._subscription: Subscription = app.services.bus.subscribe("test-config-watch")
        self._seen: list[Event] = []

    def of(self, kind: type[Watched], **match: Any) -> list[Any]:
        self._seen += self._subscription.pending()
        return [
            e
            for e in self._seen
            if isinstance(e, kind) and all(getattr(e, k) == v for k, v in match.items())
        ]

    async def wait(self, kind: type[Watched], **match: Any) -> Any:
        async def arrived() -> bool:
            return bool(self.of(kind, **match))

        await eventually(arrived)
        return self.of(kind, **match)[0]


async def watching(app: RunningApp, connection_id: str = "env-default") -> None:
    """Return once a whole config_watch pass ran with the engine identified: its baseline."""
    connections = app.services.connections

    async def identified() -> bool:
        seen = connections.last_seen(await connections.get(connection_id))
        return bool(seen and seen.identity and app.features.supervisor.loops_of(connection_id))

    await eventually(identified)
    loop = app.features.supervisor.loops_of(connection_id)["config_watch"]
    # A tick counts when it starts: the next one started after detection, and the one
    # after it starts only once that pass has finished.
    first = loop.ticks + 2

    async def passed() -> bool:
        return loop.ticks >= first

    await eventually(passed)


async def passes(app: RunningApp, n: int, connection_id: str = "env-default") -> None:
    loop = app.features.supervisor.loops_of(connection_id)["config_watch"]
    until = loop.ticks + n

    async def done() -> bool:
        return loop.ticks >= until

    await eventually(done)


def settings_for(server: RunningServer, **more: Any) -> dict[str, Any]:
    return {"DB_HOST": server.host, "DB_PORT": server.port, **FAST, **more}


@pytest.fixture(params=KINDS)
def server(
    request: pytest.FixtureRequest, server_factory: ServerFactory
) -> Iterator[RunningServer]:
    started = server_factory.start(request.param)
    yield started
    server_factory.stop(started)


@pytest.fixture
async def app(memory_app_factory: AppFactory, server: RunningServer) -> AsyncIterator[RunningApp]:
    async with memory_app_factory(**settings_for(server)) as running:
        yield running


class TestConfigChanged:
    async def test_config_set_is_announced_with_old_and_new_value_and_who(
        self, app: RunningApp, server: RunningServer
    ):
        events = Events(app)
        await watching(app)
        conn = person(server)
        try:
            addr = await address(conn)
            await run(conn, "CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
            changed = await events.wait(ConfigChanged)
        finally:
            await conn.aclose()
        assert (changed.key, changed.old_value, changed.new_value) == (
            "maxmemory-policy",
            "noeviction",
            "allkeys-lru",
        )
        assert changed.modified_by == f"default@{addr}"
        assert changed.connection_id == "env-default"
        assert [e.key for e in events.of(ConfigChanged)] == ["maxmemory-policy"]

    async def test_a_quiet_server_is_not_read_whole_again_and_fires_nothing(
        self, app: RunningApp, server: RunningServer
    ):
        events = Events(app)
        await watching(app)
        await passes(app, 5)
        load = (await app.client.get("/api/metrics/monitor-load")).json()
        calls = {c["command"]: c["calls"] for c in load["commands"]}
        # Detection's probe (CONFIG GET maxmemory) and the baseline, then nothing. Redis 6.2
        # counts our own CONFIG GETs under cmdstat_config: they must not look like a SET.
        assert calls["CONFIG GET"] == 2
        # The users are listed for the baseline, then only after an ACL write or a restart;
        # Redis 6.2 counts ACL calls as a whole, ours included, so it lists them every pass.
        if server.kind == "redis6":
            assert calls["ACL LIST"] >= 5
        else:
            assert calls["ACL LIST"] == 1
        assert events.of(ConfigChanged) == []
        assert events.of(AclModified) == []

    async def test_a_change_made_after_moving_on_is_unattributed(
        self, app: RunningApp, server: RunningServer
    ):
        events = Events(app)
        await watching(app)
        conn = person(server)
        try:
            # One write: the server runs both before it serves our CLIENT LIST.
            async with conn.pipeline(transaction=False) as pipe:
                pipe.config_set("slowlog-max-len", "321")
                pipe.ping()
                await pipe.execute()
            changed = await events.wait(ConfigChanged, key="slowlog-max-len")
        finally:
            await conn.aclose()
        assert (changed.old_value, changed.new_value) == ("128", "321")
        assert changed.modified_by == "unknown"

    async def test_credentials_are_masked(self, app: RunningApp, server: RunningServer):
        events = Events(app)
        await watching(app)
        conn = person(server)
        try:
            await run(conn, "CONFIG", "SET", "masterauth", "hunter2-secret")
            changed = await events.wait(ConfigChanged, key="masterauth")
        finally:
            await conn.aclose()
        assert (changed.old_value, changed.new_value) == ("***", "***")

    async def test_changes_made_before_watching_are_the_baseline(
        self, memory_app_factory: AppFactory, server: RunningServer
    ):
        conn = person(server)
        try:
            await run(conn, "CONFIG", "SET", "maxmemory-policy", "volatile-lru")
            await run(conn, "ACL", "SETUSER", "early", "on", ">pw", "+get")
            async with memory_app_factory(**settings_for(server)) as app:
                events = Events(app)
                await watching(app)
                await passes(app, 3)
                await run(conn, "CONFIG", "SET", "maxmemory-policy", "allkeys-lfu")
                changed = await events.wait(ConfigChanged)
                await passes(app, 3)
                seen = events.of(ConfigChanged) + events.of(AclModified)
        finally:
            await conn.aclose()
        assert (changed.old_value, changed.new_value) == ("volatile-lru", "allkeys-lfu")
        assert seen == [changed]


class TestAclModified:
    async def test_user_added_changed_and_removed(self, app: RunningApp, server: RunningServer):
        events = Events(app)
        await watching(app)
        conn = person(server)
        try:
            addr = await address(conn)
            await run(conn, "ACL", "SETUSER", "newuser", "on", ">pw", "~*", "+get")
            added = await events.wait(AclModified, change_type="user_added")
            await run(conn, "ACL", "SETUSER", "newuser", "+set")
            changed = await events.wait(AclModified, change_type="permissions_changed")
            await run(conn, "ACL", "DELUSER", "newuser")
            removed = await events.wait(AclModified, change_type="user_removed")
        finally:
            await conn.aclose()
        assert [(e.change_type, e.affected_user) for e in events.of(AclModified)] == [
            ("user_added", "newuser"),
            ("permissions_changed", "newuser"),
            ("user_removed", "newuser"),
        ]
        assert {added.modified_by, changed.modified_by, removed.modified_by} == {f"default@{addr}"}

    async def test_users_changed_across_a_restart_are_announced(
        self, memory_app_factory: AppFactory, server_factory: ServerFactory
    ):
        # A restart with another user list writes no ACL command the watch could count.
        server = server_factory.start("valkey")
        try:
            async with memory_app_factory(**settings_for(server)) as app:
                events = Events(app)
                await watching(app)
                await passes(app, 2)
                server_factory.stop(server)
                conf = server.workdir / "server.conf"
                conf.write_text(conf.read_text() + "user restarted on >pw ~* +get\n")
                server = server_factory.start_again(server)
                added = await events.wait(AclModified, change_type="user_added")
        finally:
            server_factory.stop(server)
        assert added.affected_user == "restarted"


class TestRefusals:
    async def test_config_renamed_away_degrades_quietly_and_acl_is_still_watched(
        self, memory_app_factory: AppFactory, server_factory: ServerFactory
    ):
        server = server_factory.start("valkey", config={"rename-command": 'CONFIG ""'})
        try:
            async with memory_app_factory(**settings_for(server)) as app:
                events = Events(app)
                await watching(app)
                conn = person(server)
                try:
                    await run(conn, "ACL", "SETUSER", "another", "on", "+get")
                    await events.wait(AclModified, affected_user="another")
                finally:
                    await conn.aclose()
                await passes(app, 3)
                loop = app.features.supervisor.loops_of("env-default")["config_watch"]
                load = (await app.client.get("/api/metrics/monitor-load")).json()
        finally:
            server_factory.stop(server)
        assert loop.failures == 0
        assert events.of(ConfigChanged) == []
        config_get = [c for c in load["commands"] if c["command"] == "CONFIG GET"]
        # Tried once only: by detection's probe (pipelined, so its refusal is a reply, not a
        # failed call); the watch knew from it and never asked.
        assert [(c["calls"], c["errors"]) for c in config_get] == [(1, 0)]

    @pytest.mark.parametrize("kind", KINDS)
    async def test_a_monitoring_user_without_acl_rights_still_sees_config_changes(
        self, memory_app_factory: AppFactory, server_factory: ServerFactory, kind: EngineKind
    ):
        server = server_factory.start(kind, acl_users=["watcher on >pw ~* &* +@all -acl"])
        try:
            async with memory_app_factory(
                **settings_for(server, DB_USERNAME="watcher", DB_PASSWORD="pw")
            ) as app:
                events = Events(app)
                await watching(app)
                conn = person(server)
                try:
                    await run(conn, "ACL", "SETUSER", "unseen", "on", "+get")
                    await run(conn, "CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
                    changed = await events.wait(ConfigChanged)
                finally:
                    await conn.aclose()
                await passes(app, 3)
                loop = app.features.supervisor.loops_of("env-default")["config_watch"]
                load = (await app.client.get("/api/metrics/monitor-load")).json()
        finally:
            server_factory.stop(server)
        assert changed.new_value == "allkeys-lru"
        assert loop.failures == 0
        assert events.of(AclModified) == []
        assert "ACL LIST" not in {c["command"] for c in load["commands"]}


class TestConfigKeptOnce:
    """The watch keeps every server's whole configuration: a fleet shares one copy."""

    def test_two_servers_with_the_same_settings_share_their_text(self) -> None:
        first = parse_config([b"maxmemory-policy", b"allkeys-lru", b"port", b"7001"])
        second = parse_config([b"maxmemory-policy", b"allkeys-lru", b"port", b"7002"])
        assert first == {"maxmemory-policy": "allkeys-lru", "port": "7001"}
        assert second["port"] == "7002"
        shared = next(k for k in second if k == "maxmemory-policy")
        assert shared is next(k for k in first if k == "maxmemory-policy")
        assert second["maxmemory-policy"] is first["maxmemory-policy"]

    def test_a_flood_of_distinct_values_is_read_right_and_the_table_stays_bounded(
        self,
    ) -> None:
        for batch in range(30):
            reply = [
                item for i in range(1_000) for item in (b"p%d" % i, b"value-%d-%d" % (batch, i))
            ]
            config = parse_config(reply)
            assert config["p999"] == f"value-{batch}-999"
        assert len(config_watch._SHARED) <= config_watch._SHARED_MAX
        long_value = "x" * 10_000
        assert parse_config([b"dir", long_value.encode()]) == {"dir": long_value}
        assert long_value not in config_watch._SHARED
