"""Replicas share the polling: each connection polled by exactly one live replica, a killed
replica's connections taken over within the timeout and two INFO intervals, a paused
replica fenced off what it lost. Real svc-monitor processes on one real PostgreSQL, real
Valkey servers; what each server received is read from the server itself."""

import asyncio
import contextlib
import itertools
import signal
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any, cast

import psutil
import pytest

from tests.fixtures.app import RunningApp, make_settings, running_app, target_of
from tests.fixtures.receiver import Receiver
from tests.fixtures.replica_processes import (
    ReplicaProcess,
    eventually,
    replica_env,
    replica_process,
)
from tests.fixtures.servers import RunningServer, ServerFactory

HEARTBEAT_MS, TIMEOUT_MS = 250, 1000
HISTORY_SAMPLE_S = 1.0  # a history sample every poll, so the takeover's gap shows
FAST = {
    "REPLICA_HEARTBEAT_MS": HEARTBEAT_MS,
    "REPLICA_TIMEOUT_MS": TIMEOUT_MS,
    "HISTORY_SAMPLE_INTERVAL_MS": int(HISTORY_SAMPLE_S * 1000),
    "NODE_ENV": "development",  # webhooks to a loopback receiver over http
}
INFO_INTERVAL_S = 1.0  # the default ANOMALY_POLL_INTERVAL_MS
# The longest a connection may go unpolled when its replica dies.
TAKEOVER_BOUND_S = TIMEOUT_MS / 1000 + 2 * INFO_INTERVAL_S

pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def fleet(
    server_factory: ServerFactory, request: pytest.FixtureRequest
) -> Iterator[list[RunningServer]]:
    size: int = request.param
    servers = [server_factory.start("valkey", config={"hz": "1"}) for _ in range(size)]
    try:
        yield servers
    finally:
        for server in servers:
            server_factory.stop(server)


async def add_all(app: RunningApp, servers: list[RunningServer]) -> dict[str, RunningServer]:
    """Every server but the default one added through the API: connection id -> server."""
    by_id: dict[str, RunningServer] = {}
    (default,) = (await app.client.get("/api/connections")).json()
    by_id[default["id"]] = servers[0]
    for n, server in enumerate(servers[1:], start=1):
        added = await app.client.post(
            "/api/connections", json={"name": f"s{n}", "host": server.host, "port": server.port}
        )
        assert added.status_code == 201, added.text
        by_id[added.json()["id"]] = server
    return by_id


async def holdings(app: RunningApp) -> dict[str, set[str]]:
    """Live replica id -> the connection ids it holds, as storage says."""
    got = await app.client.get("/api/replicas")
    assert got.status_code == 200, got.text
    return {r["id"]: set(r["ownedConnections"]) for r in got.json()["replicas"] if r["live"]}


async def balanced(app: RunningApp, ids: set[str], replicas: int) -> dict[str, set[str]]:
    held = await holdings(app)
    assert len(held) == replicas, held
    everything = [c for owned in held.values() for c in owned]
    assert sorted(everything) == sorted(ids)  # each exactly once
    fair = len(ids) / replicas
    assert all(0.7 * fair <= len(owned) <= 1.3 * fair for owned in held.values()), held
    return held


def info_calls(server: RunningServer) -> int:
    stats = cast(dict[str, Any], server.client().info("commandstats"))
    return int(stats.get("cmdstat_info", {}).get("calls", 0))


def info_socket_commands(process: ReplicaProcess, server: RunningServer) -> int:
    """Commands the server has run on this replica's INFO poll connection: its open
    connections to the server (from the process's sockets) whose last command was INFO.
    The connections other polls use may still finish a pass that was in flight when the
    replica lost its lease (what that pass brings back is dropped, not written); a new
    INFO poll starts only under a lease."""
    ports = {
        c.laddr.port
        for c in psutil.Process(process.pid).net_connections(kind="tcp")
        if c.raddr and c.raddr.port == server.port
    }
    total = 0
    for client in cast(list[dict[str, str]], server.client().client_list()):
        if int(client["addr"].rsplit(":", 1)[1]) in ports and client["cmd"] == "info":
            total += int(client.get("tot-cmds", 0))
    return total


def sharing_settings(shared_postgres: dict[str, Any], server: RunningServer) -> dict[str, Any]:
    return {**target_of(server), **shared_postgres, **FAST}


@pytest.mark.parametrize("fleet", [30], indirect=True)
async def test_thirty_connections_over_three_replicas_are_each_polled_by_one(
    fleet: list[RunningServer], shared_postgres: dict[str, Any], tmp_path: Path
) -> None:
    settings = sharing_settings(shared_postgres, fleet[0])
    async with running_app(make_settings(**settings)) as app:
        by_id = await add_all(app, fleet)
        with ExitStack() as stack:
            for name in ("b", "c"):
                env = replica_env(shared_postgres, fleet[0], tmp_path / name, **FAST)
                (tmp_path / name).mkdir()
                stack.enter_context(replica_process(env, tmp_path / f"{name}.log"))
            await eventually(lambda: balanced(app, set(by_id), 3), timeout_s=30)
            await asyncio.sleep(2 * INFO_INTERVAL_S)  # any handover's last pass is over
            before = {cid: info_calls(server) for cid, server in by_id.items()}
            window_s = 6.0
            await asyncio.sleep(window_s)
            rates = {cid: (info_calls(s) - before[cid] - 1) / window_s for cid, s in by_id.items()}
            held = await balanced(app, set(by_id), 3)
    # One monitor reads INFO about once a second (the INFO poll, plus the commandstats and
    # configuration reads it shares); three would be three times that.
    assert all(0.6 <= rate <= 1.6 for rate in rates.values()), sorted(rates.values())
    assert sum(len(owned) for owned in held.values()) == 30


@contextlib.asynccontextmanager
async def two_replicas(
    fleet: list[RunningServer], shared_postgres: dict[str, Any], tmp_path: Path
) -> AsyncIterator[
    tuple[RunningApp, dict[str, RunningServer], ReplicaProcess, dict[str, set[str]]]
]:
    """This process and another sharing `fleet`, once they hold half each: the app, the
    servers by connection id, the other process, and who holds what."""
    settings = sharing_settings(shared_postgres, fleet[0])
    async with running_app(make_settings(**settings)) as app:
        by_id = await add_all(app, fleet)
        env = replica_env(shared_postgres, fleet[0], tmp_path, **FAST)
        with replica_process(env, tmp_path / "b.log") as other:
            held = await eventually(lambda: balanced(app, set(by_id), 2), timeout_s=30)
            yield app, by_id, other, held


@pytest.mark.parametrize("fleet", [6], indirect=True)
async def test_a_killed_replica_s_connections_are_polled_again_within_the_bound(
    fleet: list[RunningServer],
    shared_postgres: dict[str, Any],
    tmp_path: Path,
    server_factory: ServerFactory,
    receiver: Receiver,
) -> None:
    async with two_replicas(fleet, shared_postgres, tmp_path) as (app, by_id, other, held):
        hook = await app.client.post(
            "/api/webhooks",
            json={"name": "down", "url": receiver.url("/down"), "events": ["instance.down"]},
        )
        assert hook.status_code == 201, hook.text
        (theirs,) = [owned for rid, owned in held.items() if f"-{other.pid}-" in rid]
        servers = [by_id[cid] for cid in theirs]
        watched, dying = sorted(theirs)[:2]
        await asyncio.sleep(2 * INFO_INTERVAL_S)
        other.signal(signal.SIGKILL)
        killed_at = time.monotonic()
        other.process.wait(timeout=10)
        server_factory.stop(by_id[dying])  # goes down while nobody polls it
        alive = [s for s in servers if s is not by_id[dying]]
        ours = {s.port: info_calls(s) + 1 for s in alive}  # +1: this read itself
        back_after: dict[int, float] = {}
        while len(back_after) < len(alive) and time.monotonic() - killed_at < 15:
            for server in alive:
                calls = info_calls(server)
                if server.port not in back_after and calls > ours[server.port]:
                    back_after[server.port] = time.monotonic() - killed_at
                ours[server.port] = max(ours[server.port], calls) + 1
            await asyncio.sleep(0.1)
        after = await holdings(app)
        await receiver.wait_for(1, path="/down", within=15)
        await asyncio.sleep(2 * INFO_INTERVAL_S)  # a second one would have come by now
        deliveries = (await app.client.get(f"/api/webhooks/{hook.json()['id']}/deliveries")).json()

        async def history() -> list[int]:
            got = await app.client.get(
                "/api/memory-analytics/snapshots",
                headers={"X-Connection-Id": watched},
                params={"limit": 1000},
            )
            taken = sorted(s["capturedAt"] for s in got.json())
            assert len(taken) >= 5, taken  # a few from after the takeover too
            return taken

        taken = await eventually(history, timeout_s=15)
    assert len(back_after) == len(alive), back_after
    # The killed one polled each up to an INFO interval before it died.
    assert max(back_after.values()) + INFO_INTERVAL_S <= TAKEOVER_BOUND_S, back_after
    assert set().union(*after.values()) == set(by_id)
    # The instance that died during the takeover: one instance.down, one delivery row.
    (down,) = receiver.on("/down")
    assert down.json["instance"]["connectionId"] == dying
    assert [d["connectionId"] for d in deliveries] == [dying]
    # Its history, from both replicas: no two samples for one poll (a sample is due a
    # second after the last, so with the polls' jitter every one or two seconds), and
    # no gap longer than the takeover.
    gaps = [(b - a) / 1000 for a, b in itertools.pairwise(taken)]
    assert min(gaps) >= HISTORY_SAMPLE_S * 0.9, gaps
    assert max(gaps) <= TAKEOVER_BOUND_S + 2 * HISTORY_SAMPLE_S, gaps


@pytest.mark.parametrize("fleet", [6], indirect=True)
async def test_a_paused_replica_sends_nothing_for_what_it_lost_and_rejoins(
    fleet: list[RunningServer], shared_postgres: dict[str, Any], tmp_path: Path
) -> None:
    async with two_replicas(fleet, shared_postgres, tmp_path) as (app, by_id, other, held):
        (other_id,) = [rid for rid in held if f"-{other.pid}-" in rid]
        lost = held[other_id]
        other.signal(signal.SIGSTOP)
        # Past the timeout, ours holds everything.
        await eventually(lambda: _holds_all(app, set(by_id)), timeout_s=TIMEOUT_MS / 1000 + 5)
        sent = {cid: info_socket_commands(other, by_id[cid]) for cid in lost}
        other.signal(signal.SIGCONT)
        resumed_at = time.monotonic()
        # For three seconds it may poll a lost server only once it holds it again. One INFO
        # more is a pass the pause caught between its lease check and its command: it goes
        # out on resuming, and what it brings back is dropped. A poll that went on would
        # send one every second.
        while time.monotonic() - resumed_at < 3:
            grew = [cid for cid in lost if info_socket_commands(other, by_id[cid]) > sent[cid] + 1]
            if grew:
                now_held = await holdings(app)
                assert set(grew) <= now_held.get(other_id, set()), (grew, now_held)
            await asyncio.sleep(0.05)
        # It rejoins: the two share the fleet again.
        await eventually(lambda: balanced(app, set(by_id), 2), timeout_s=15)


async def _holds_all(app: RunningApp, ids: set[str]) -> None:
    held = await holdings(app)
    ours = [owned for owned in held.values() if owned == ids]
    assert ours, held
