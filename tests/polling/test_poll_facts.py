"""The facts each poll leaves in live state for Prometheus (pipe/facts.py), and the
poll counts, against real Valkey 9.1, Redis 7 and a Valkey cluster."""

import statistics
from collections.abc import Callable, Iterator
from typing import TypeVar

import pytest
import valkey.asyncio as avalkey
from valkey import exceptions as vx
from valkey.cluster import ValkeyCluster

from svc_monitor.pipe.facts import (
    AclFacts,
    ClientFacts,
    ClusterFacts,
    CommandlogFacts,
    Facts,
    SlowlogFacts,
)
from tests.detection.helpers import person, run
from tests.fixtures.app import AppFactory, RunningApp, free_port, target_of
from tests.fixtures.servers import HOST, EngineKind, RunningServer, ServerFactory
from tests.fixtures.waiting import eventually

F = TypeVar("F", bound=Facts)

FAST = {
    "ANOMALY_POLL_INTERVAL_MS": 100,
    "SLOWLOG_POLL_INTERVAL_MS": 200,
    "AUDIT_POLL_INTERVAL_MS": 150,
    "CLIENT_ANALYTICS_POLL_INTERVAL_MS": 150,
}
# Every command is slow, and the ring holds far more than a test adds.
LOGS_EVERYTHING = {"slowlog-log-slower-than": "0", "slowlog-max-len": "1024"}
USERS = [
    "limited on >pw ~allowed:* +get +set +ping",
    "watcher on >watcher-pw ~* &* +@all -slowlog|len",
]
KINDS: list[EngineKind] = ["valkey", "redis7"]


async def facts_of(
    app: RunningApp,
    kind: type[F],
    where: Callable[[F], bool] = lambda _: True,
    *,
    connection_id: str = "env-default",
    within: float = 10.0,
) -> F:
    """The connection's facts of `kind` once `where` holds for them."""
    found: list[F] = []

    async def ready() -> bool:
        facts = app.services.live_state.facts(connection_id, kind)
        found[:] = [facts] if facts is not None and where(facts) else []
        return bool(found)

    await eventually(ready, within=within)
    return found[0]


def passes(
    app: RunningApp, kind: str, *, ok: bool = True, connection_id: str = "env-default"
) -> int:
    return app.services.live_state.polls.passes.get((connection_id, kind, ok), 0)


@pytest.fixture(scope="module", params=KINDS)
def server(
    request: pytest.FixtureRequest, server_factory: ServerFactory
) -> Iterator[RunningServer]:
    started = server_factory.start(request.param, config=LOGS_EVERYTHING, acl_users=USERS)
    yield started
    server_factory.stop(started)


@pytest.fixture(scope="module")
def large_logging(server_factory: ServerFactory) -> Iterator[RunningServer]:
    # Far above the monitor's own requests and replies (INFO is a few kB).
    config = {
        "commandlog-request-larger-than": "100000",
        "commandlog-reply-larger-than": "100000",
    }
    started = server_factory.start("valkey", config=config)
    yield started
    server_factory.stop(started)


@pytest.fixture(scope="module")
def cluster(valkey_cluster: list[RunningServer]) -> list[RunningServer]:
    return valkey_cluster


class TestSlowlogFacts:
    async def test_length_newest_id_and_patterns_follow_slow_commands(
        self, memory_app_factory: AppFactory, server: RunningServer
    ):
        async with memory_app_factory(**FAST, **target_of(server)) as app:
            await facts_of(app, SlowlogFacts)
            with server.client() as conn:
                for i in range(30):
                    conn.set(f"user:{i}", "v")
                length = conn.slowlog_len()
                logged = conn.slowlog_get(128)
            newest = logged[0]["id"]
            facts = await facts_of(
                app, SlowlogFacts, lambda f: f.last_id is not None and f.last_id >= newest
            )
        durations = [e["duration"] for e in logged if e["command"].startswith(b"SET user:")]
        by_pattern = {p.pattern: p for p in facts.patterns}
        sets = by_pattern["SET user:*"]
        assert sets.count == 30 == len(durations)
        assert sets.avg_duration_us == pytest.approx(statistics.mean(durations), abs=0.01)
        read = sum(p.count for p in facts.patterns)
        assert sets.percentage == pytest.approx(100 * 30 / read, abs=0.01)
        assert sum(p.percentage for p in facts.patterns) == pytest.approx(100, abs=0.5)
        assert facts.length is not None
        assert length <= facts.length <= 1024

    async def test_a_user_refused_slowlog_len_still_gets_the_newest_id(
        self, memory_app_factory: AppFactory, server: RunningServer
    ):
        async with memory_app_factory(
            **FAST, **target_of(server), DB_USERNAME="watcher", DB_PASSWORD="watcher-pw"
        ) as app:
            facts = await facts_of(app, SlowlogFacts, lambda f: f.last_id is not None)
        assert facts.length is None
        assert facts.patterns


class TestAclFacts:
    async def test_denials_are_summed_by_reason_and_by_user(
        self, memory_app_factory: AppFactory, server: RunningServer
    ):
        with server.client() as admin:
            admin.acl_log_reset()
        async with memory_app_factory(**FAST, **target_of(server)) as app:
            quiet = await facts_of(app, AclFacts)
            conn = person(server, username="limited", password="pw")
            try:
                await run(conn, "SET", "allowed:1", "v")
                for _ in range(2):
                    with pytest.raises(vx.ResponseError):
                        await run(conn, "GET", "secret:1")
                with pytest.raises(vx.ResponseError):
                    await run(conn, "DEL", "allowed:1")
                with pytest.raises(vx.AuthenticationError):
                    await run(conn, "AUTH", "limited", "not-the-password")
            finally:
                await conn.aclose()
            facts = await facts_of(app, AclFacts, lambda f: f.denied >= 4)
        assert quiet.denied == 0
        assert quiet.by_reason == {}
        assert facts.denied == 4
        assert facts.by_reason == {"key": 2, "command": 1, "auth": 1}
        assert facts.by_user == {"limited": 4}


class TestClientFacts:
    async def test_counts_by_name_and_user_and_the_peak_stays(
        self, memory_app_factory: AppFactory, server: RunningServer
    ):
        async with memory_app_factory(**FAST, **target_of(server)) as app:
            await facts_of(app, ClientFacts)
            opened = [_named(server, "worker") for _ in range(3)]
            opened += [person(server, username="limited", password="pw") for _ in range(2)]
            try:
                for conn in opened:
                    await run(conn, "PING")
                busy = await facts_of(
                    app,
                    ClientFacts,
                    lambda f: f.by_name.get("worker") == 3 and f.by_user.get("limited") == 2,
                )
            finally:
                for conn in opened:
                    await conn.aclose()
            after = await facts_of(app, ClientFacts, lambda f: "worker" not in f.by_name)
        assert sum(busy.by_name.values()) == busy.current == sum(busy.by_user.values())
        assert busy.by_name["unnamed"] >= 2
        assert busy.by_name["svc-monitor"] >= 1  # the monitor's own connections count too
        assert busy.peak >= busy.current
        assert after.current <= busy.current - 5
        assert after.peak >= busy.current


class TestCommandlogFacts:
    async def test_large_requests_and_replies_are_counted_with_their_patterns(
        self, memory_app_factory: AppFactory, large_logging: RunningServer
    ):
        value = "x" * 200_000
        async with memory_app_factory(**FAST, **target_of(large_logging)) as app:
            empty = await facts_of(app, CommandlogFacts)
            with large_logging.client() as conn:
                for i in range(3):
                    conn.set(f"big:{i}", value)
                for i in range(2):
                    conn.get(f"big:{i}")
            facts = await facts_of(
                app, CommandlogFacts, lambda f: f.large_request >= 3 and f.large_reply >= 2
            )
        assert (empty.large_request, empty.large_reply) == (0, 0)
        assert (facts.large_request, facts.large_reply) == (3, 2)
        [request] = facts.large_request_patterns
        [reply] = facts.large_reply_patterns
        assert (request.pattern, request.count, request.percentage) == ("SET big:*", 3, 100.0)
        assert (reply.pattern, reply.count, reply.percentage) == ("GET big:*", 2, 100.0)
        # For these logs the entry's third field, and so the average, is a size in bytes.
        assert 200_000 < request.avg_duration_us < 200_100
        assert 200_000 < reply.avg_duration_us < 200_100


class TestClusterFacts:
    async def test_cluster_info_and_the_slots_with_most_keys(
        self, memory_app_factory: AppFactory, cluster: list[RunningServer]
    ):
        seed = cluster[0]
        # Keys in three slots owned by (most likely) different primaries.
        written = {"{a}": 30, "{b}": 20, "{c}": 10}
        with ValkeyCluster(host=seed.host, port=seed.port) as writer:
            slots = [writer.keyslot(tag) for tag in written]
            for tag, count in written.items():
                writer.mset({f"{tag}:{i}": "v" for i in range(count)})
        async with memory_app_factory(**FAST, **target_of(seed)) as app:
            facts = await facts_of(app, ClusterFacts, lambda f: bool(f.top_slots))
            with ValkeyCluster(host=seed.host, port=seed.port) as writer:
                writer.mset({f"{{d}}:{i}": "v" for i in range(50)})
            started = passes(app, "cluster")
            await eventually(lambda: _more(app, "cluster", started + 3))
            later = app.services.live_state.facts("env-default", ClusterFacts)
        assert facts.info["cluster_state"] == "ok"
        assert facts.info["cluster_slots_assigned"] == 16384
        assert facts.info["cluster_known_nodes"] == 3
        assert len(facts.top_slots) == 100
        top = [(s.slot, s.key_count) for s in facts.top_slots[:4]]
        assert top[:3] == list(zip(slots, written.values(), strict=True))
        assert top[3][1] == 0
        # Refreshed at most every 15 s: later passes keep the list, without {d}'s 50 keys.
        assert later is not None
        assert later.at_ms > facts.at_ms
        assert later.top_slots == facts.top_slots


class TestPollCounts:
    async def test_every_pass_of_every_kind_is_counted_with_its_duration(
        self, memory_app_factory: AppFactory, server: RunningServer
    ):
        async with memory_app_factory(**FAST, **target_of(server)) as app:
            await eventually(lambda: _more(app, "slowlog", 2))
            before = {k: passes(app, k) for k in ("info", "slowlog", "audit", "clients")}
            await eventually(lambda: _more(app, "slowlog", before["slowlog"] + 2))
            polls = app.services.live_state.polls
            after = {k: passes(app, k) for k in before}
            durations = polls.durations["info"]
            timed, total_s = durations.count, durations.total_s
            info_passes = passes(app, "info") + passes(app, "info", ok=False)
        assert all(after[k] > before[k] for k in before), (before, after)
        assert timed == info_passes
        assert 0 < total_s < timed * 1.0

    async def test_failed_passes_are_counted_as_failed(self, memory_app_factory: AppFactory):
        async with memory_app_factory(**FAST, DB_HOST=HOST, DB_PORT=free_port()) as app:
            await eventually(lambda: _failed_at_least(app, "info", 2))
            ok = passes(app, "info")
        assert ok == 0


class TestForgetting:
    async def test_an_edit_restarts_the_peak_and_a_removal_drops_every_fact(
        self, memory_app_factory: AppFactory, server: RunningServer
    ):
        async with memory_app_factory(**FAST, **target_of(server)) as app:
            added = await app.client.post(
                "/api/connections", json={"name": "extra", "host": server.host, "port": server.port}
            )
            connection_id = added.json()["id"]
            opened = [_named(server, "burst") for _ in range(5)]
            try:
                for conn in opened:
                    await run(conn, "PING")
                busy = await facts_of(
                    app,
                    ClientFacts,
                    lambda f: f.by_name.get("burst") == 5,
                    connection_id=connection_id,
                )
            finally:
                for conn in opened:
                    await conn.aclose()
            await facts_of(app, SlowlogFacts, connection_id=connection_id)
            await facts_of(app, AclFacts, connection_id=connection_id)

            supervisor, live = app.features.supervisor, app.services.live_state
            old_loop = supervisor.loops_of(connection_id)["clients"]
            await app.client.put(f"/api/connections/{connection_id}", json={"name": "renamed"})

            async def restarted() -> bool:
                loop = supervisor.loops_of(connection_id).get("clients")
                return loop is not None and loop is not old_loop and loop.last_good_ms is not None

            await eventually(restarted)
            fresh = live.facts(connection_id, ClientFacts)

            await app.client.delete(f"/api/connections/{connection_id}")

            async def all_gone() -> bool:
                facts = [
                    live.facts(connection_id, k)
                    for k in (SlowlogFacts, AclFacts, ClientFacts, CommandlogFacts)
                ]
                counted = [k for k in live.polls.passes if k[0] == connection_id]
                return facts == [None] * 4 and not counted and live.latest(connection_id) is None

            await eventually(all_gone)
        assert busy.peak >= busy.current >= 5
        # Without forgetting, the peak would still be the burst's.
        assert fresh is not None
        assert fresh.peak < busy.peak


def _named(server: RunningServer, name: str) -> avalkey.Valkey:
    return avalkey.Valkey(
        host=server.host,
        port=server.port,
        client_name=name,
        single_connection_client=True,
        lib_name=None,
        lib_version=None,
    )


async def _more(app: RunningApp, kind: str, at_least: int) -> bool:
    return passes(app, kind) >= at_least


async def _failed_at_least(app: RunningApp, kind: str, at_least: int) -> bool:
    return passes(app, kind, ok=False) >= at_least
