"""The rule detectors' own webhook events end to end, on real servers: a replica made
primary with REPLICAOF NO ONE and back (failover.completed, failover.started), and a
primary without persistence restarted empty whose replica then syncs the empty dataset
(data.loss.detected twice: valkey-io/valkey#579). Each server's real INFO is fed to a
Pro app's anomaly service as a push connection's observations, and the events reach a
real webhook receiver."""

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import valkey

from svc_monitor.anomaly.service import FLUSH_EVERY_S, AnomalyService
from svc_monitor.engine.info import parse_info
from svc_monitor.pipe.observation import Observation
from tests.anomaly.info import START_MS, info_text
from tests.fixtures.app import AppFactory, RunningApp
from tests.fixtures.licensing import SigningKey
from tests.fixtures.receiver import Receiver
from tests.fixtures.servers import RunningServer, ServerFactory
from tests.fixtures.waiting import eventually

EVENTS = ["failover.started", "failover.completed", "data.loss.detected", "anomaly.detected"]


@pytest.fixture
async def pro(memory_app_factory: AppFactory, signing_key: SigningKey) -> AsyncIterator[RunningApp]:
    licence = signing_key.mint(tier="pro")
    async with memory_app_factory(NODE_ENV="development", SVC_OFFLINE_LICENSE=licence) as app:
        yield app


class Node:
    """A push connection fed one real server's INFO, a simulated second apart."""

    def __init__(self, anomaly: AnomalyService, connection_id: str, server: RunningServer):
        self.anomaly = anomaly
        self.connection_id = connection_id
        self.server = server
        self.second = 0

    def observe(self) -> None:
        info = parse_info(info_text(self.server))
        at = START_MS + self.second * 1000
        self.anomaly.observe(Observation(self.connection_id, at, info, pushed=True))
        self.second += 1


async def node(app: RunningApp, server: RunningServer, port: int) -> Node:
    made = await app.client.post(
        "/api/connections",
        json={"source": "push", "name": f"node-{port}", "host": "10.9.9.7", "port": port},
    )
    assert made.status_code == 201, made.text
    return Node(app.app.state.features.anomaly, made.json()["id"], server)


async def settled() -> None:
    """Let the anomaly loop take in the new connections' ConnectionsChanged: it forgets a
    connection's state then, which would drop a window opened before it got to it."""
    await asyncio.sleep(2 * FLUSH_EVERY_S + 0.5)


async def subscribe(app: RunningApp, receiver: Receiver) -> None:
    hook = await app.client.post(
        "/api/webhooks", json={"name": "rules", "url": receiver.url(), "events": EVENTS}
    )
    assert hook.status_code == 201, hook.text


def hooks(receiver: Receiver, event: str) -> list[dict[str, Any]]:
    return [r.json["data"] for r in receiver.requests if r.event == event]


def replication(server: RunningServer) -> dict[str, Any]:
    with server.client() as client:
        info: dict[str, Any] = client.info("replication")
    return info


def wait_synced(replica: RunningServer, primary: RunningServer, *, within: float = 15) -> None:
    """Until the replica's link is up and it shares the primary's replication history."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        mine, theirs = replication(replica), replication(primary)
        if mine.get("master_link_status") == "up" and (
            mine["master_replid"] == theirs["master_replid"]
        ):
            return
        time.sleep(0.05)
    raise AssertionError(f"replica not in sync: {replication(replica)}")


class TestRoleChange:
    async def test_a_promotion_and_a_demotion_reach_the_receiver(
        self, pro: RunningApp, receiver: Receiver, fresh: Callable[..., RunningServer]
    ):
        await subscribe(pro, receiver)
        primary = fresh("valkey")
        replica = fresh("valkey", replica_of=primary)
        watched = await node(pro, replica, 6401)
        await settled()
        watched.observe()
        with replica.client() as client:
            client.execute_command("REPLICAOF", "NO", "ONE")
        watched.observe()
        await receiver.wait_for(1)
        [completed] = hooks(receiver, "failover.completed")
        assert (completed["previousRole"], completed["newRole"]) == ("replica", "primary")
        assert "failover completed" in completed["message"]

        with replica.client() as client:
            client.execute_command("REPLICAOF", primary.host, str(primary.port))
        wait_synced(replica, primary)
        watched.observe()
        await receiver.wait_for(2)
        [started] = hooks(receiver, "failover.started")
        assert (started["previousRole"], started["newRole"]) == ("primary", "replica")

        anomaly = watched.anomaly
        await anomaly.flush(everything=True)
        headers = {"X-Connection-Id": watched.connection_id}
        groups = (await pro.client.get("/api/anomaly/groups", headers=headers)).json()
        assert [(g["pattern"], g["severity"]) for g in groups] == [("failover", "critical")]
        await receiver.wait_for(3)
        assert [h["pattern"] for h in hooks(receiver, "anomaly.detected")] == ["failover"]


class TestDataLoss:
    async def test_a_primary_restarted_empty_and_its_wiped_replica(
        self,
        pro: RunningApp,
        receiver: Receiver,
        fresh: Callable[..., RunningServer],
        server_factory: ServerFactory,
    ):
        await subscribe(pro, receiver)
        primary = fresh("valkey")  # save "" and appendonly no: a restart loses everything
        replica = fresh("valkey", replica_of=primary)
        client: valkey.Valkey
        with primary.client() as client:
            client.mset({f"k:{i}": i for i in range(100)})
        wait_for_keys(replica, 100)
        watched_primary = await node(pro, primary, 6402)
        watched_replica = await node(pro, replica, 6403)
        await settled()
        watched_primary.observe()
        watched_replica.observe()
        old_replid = replication(primary)["master_replid"]

        server_factory.stop(primary)
        restarted = server_factory.start_again(primary)
        try:
            wait_synced(replica, restarted)
            watched_primary.server = restarted
            watched_primary.observe()
            watched_replica.observe()
            await receiver.wait_for(2)
            lost = {h["kind"]: h for h in hooks(receiver, "data.loss.detected")}
            assert set(lost) == {"primary_restarted_empty", "replica_wiped"}
            new_replid = replication(restarted)["master_replid"]
        finally:
            server_factory.stop(restarted)
        emptied = lost["primary_restarted_empty"]
        assert (emptied["previousKeys"], emptied["currentKeys"]) == (100, 0)
        assert (emptied["role"], emptied["connectedSlaves"]) == ("primary", 1)
        assert (emptied["previousReplid"], emptied["newReplid"]) == (old_replid, new_replid)
        wiped = lost["replica_wiped"]
        assert (wiped["previousKeys"], wiped["currentKeys"], wiped["role"]) == (100, 0, "replica")
        assert (wiped["previousReplid"], wiped["newReplid"]) == (old_replid, new_replid)
        assert wiped["connectedSlaves"] == 0

        anomaly = watched_primary.anomaly
        await anomaly.flush(everything=True)
        for watched in (watched_primary, watched_replica):
            headers = {"X-Connection-Id": watched.connection_id}
            groups = (await pro.client.get("/api/anomaly/groups", headers=headers)).json()
            assert [(g["pattern"], g["severity"]) for g in groups] == [("data_loss", "critical")]

        async def both_grouped() -> bool:
            return len(hooks(receiver, "anomaly.detected")) == 2

        await eventually(both_grouped)


def wait_for_keys(server: RunningServer, keys: int, *, within: float = 10) -> None:
    deadline = time.monotonic() + within
    with server.client() as client:
        while client.dbsize() != keys:
            assert time.monotonic() < deadline, f"{server.port} has {client.dbsize()} keys"
            time.sleep(0.05)
