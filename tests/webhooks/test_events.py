"""Every webhook event, from what a real server does to a signed request a receiver
verifies with the secret (HMAC over "<timestamp>.<raw body>", timing-safe, 5-minute
window). anomaly.detected is published on the bus here as its detector publishes it;
tests/anomaly drives the detector itself from a real server's INFO."""

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager as AsyncContextManager
from typing import Any

import pytest
import valkey

from svc_monitor.event_types.detection import AnomalyDetected
from tests.fixtures.app import AppFactory, RunningApp
from tests.fixtures.licensing import SigningKey
from tests.fixtures.receiver import Received, Receiver
from tests.fixtures.servers import CLUSTER_SLOTS, RunningServer, ServerFactory
from tests.fixtures.waiting import eventually

SECRET = "whsec-events-0123456789abcdef"
FAST = {
    "NODE_ENV": "development",
    "ANOMALY_POLL_INTERVAL_MS": 100,  # the INFO poll
    "AUDIT_POLL_INTERVAL_MS": 200,
    "CONFIG_WATCH_INTERVAL_MS": 200,
    "SLOWLOG_POLL_INTERVAL_MS": 200,
    "COMMANDSTATS_POLL_INTERVAL_MS": 200,
    "HISTORY_SAMPLE_INTERVAL_MS": 60_000,
}


class Watch:
    """An app watching one server, with one webhook to the receiver."""

    def __init__(self, app: RunningApp, receiver: Receiver) -> None:
        self.app = app
        self.receiver = receiver

    async def subscribe(self, events: list[str], **overrides: Any) -> dict[str, Any]:
        body = {"name": "e2e", "url": self.receiver.url(), "events": events, "secret": SECRET}
        answer = await self.app.client.post("/api/webhooks", json={**body, **overrides})
        assert answer.status_code == 201, answer.text
        hook: dict[str, Any] = answer.json()
        return hook

    async def delivered(self, event: str, *, within: float = 15) -> Received:
        """The first request for `event`, checked as a receiver following
        docs/features/webhooks.md#signatures would."""

        def arrived() -> list[Received]:
            return [r for r in self.receiver.requests if r.event == event]

        async def any_arrived() -> bool:
            return bool(arrived())

        await eventually(any_arrived, within=within)
        request = arrived()[0]
        assert request.verified(SECRET), "signature does not verify with the secret"
        assert not request.verified(SECRET + "x")
        envelope = request.json
        assert envelope["event"] == event
        assert envelope["id"] == request.headers["X-Webhook-Delivery-Id"]
        return request


@pytest.fixture
def enterprise(signing_key: SigningKey) -> dict[str, Any]:
    return {"SVC_OFFLINE_LICENSE": signing_key.mint(tier="enterprise")}


Watching = Callable[[RunningServer], AsyncContextManager[Watch]]


@pytest.fixture
def watch(
    memory_app_factory: AppFactory, receiver: Receiver, enterprise: dict[str, Any]
) -> Watching:
    """Watch a server with an enterprise-tier app (every event allowed), fast polls."""

    @contextlib.asynccontextmanager
    async def watching(server: RunningServer) -> AsyncIterator[Watch]:
        settings = {"DB_HOST": server.host, "DB_PORT": server.port, **FAST, **enterprise}
        async with memory_app_factory(**settings) as app:
            yield Watch(app, receiver)

    return watching


async def until_polled(w: Watch) -> None:
    """The first INFO poll has read the server (readings start from there)."""
    async with asyncio.timeout(10):
        while True:
            answer = await w.app.client.get("/api/metrics/info")
            if answer.status_code == 200:
                return
            await asyncio.sleep(0.05)


class TestInstanceHealth:
    async def test_kill_gives_instance_down_and_restart_instance_up(
        self, server_factory: ServerFactory, fresh: Any, watch: Watching
    ) -> None:
        server = fresh("valkey")
        async with watch(server) as w:
            await w.subscribe(["instance.down", "instance.up"])
            await until_polled(w)
            server_factory.stop(server)
            down = (await w.delivered("instance.down")).json
            assert down["instance"] == {
                "host": server.host,
                "port": server.port,
                "connectionId": down["instance"]["connectionId"],
            }
            assert down["data"]["reason"]
            server_factory.start_again(server)
            up = (await w.delivered("instance.up", within=30)).json
        assert up["data"]["reason"] == "recovered"
        assert [r.event for r in w.receiver.requests] == ["instance.down", "instance.up"]


class TestMemory:
    async def test_filling_a_small_maxmemory_fires_memory_critical_and_compliance(
        self, fresh: Any, watch: Watching
    ) -> None:
        server = fresh("valkey", config={"maxmemory": "3mb", "maxmemory-policy": "noeviction"})
        async with watch(server) as w:
            await w.subscribe(["memory.critical", "compliance.alert"])
            await until_polled(w)
            with (
                server.client() as conn,
                contextlib.suppress(valkey.exceptions.ResponseError),  # OOM: full
            ):
                for n in range(4000):
                    conn.set(f"fill:{n}", "x" * 1000)
            critical = (await w.delivered("memory.critical")).json["data"]
            compliance = (await w.delivered("compliance.alert")).json["data"]
        assert critical["value"] > 90
        assert critical["threshold"] == 90
        assert critical["maxmemory"] == 3 * 1024 * 1024
        assert critical["usedMemory"] > 0.9 * critical["maxmemory"]
        assert compliance["maxmemoryPolicy"] == "noeviction"
        assert compliance["memoryUsedPercent"] > 80


class TestClients:
    async def test_many_clients_fire_connection_critical_and_spike(
        self, fresh: Any, watch: Watching
    ) -> None:
        server = fresh("valkey", config={"maxclients": "20"})
        async with watch(server) as w:
            await w.subscribe(
                ["connection.critical", "connection.spike"],
                thresholds={"connectionCriticalPercent": 50, "connectionSpikeCount": 8},
            )
            await until_polled(w)
            clients = [server.client() for _ in range(12)]
            try:
                for client in clients:
                    client.ping()
                critical = (await w.delivered("connection.critical")).json["data"]
                spike = (await w.delivered("connection.spike")).json["data"]
            finally:
                for client in clients:
                    client.close()
        assert critical["maxClients"] == 20
        assert critical["connectedClients"] > 10
        assert critical["value"] > 50
        assert spike["connectedClients"] > 8
        assert spike["detection"] == "threshold"


class TestAcl:
    async def test_wrong_password_fires_client_blocked(self, fresh: Any, watch: Watching) -> None:
        server = fresh("valkey", acl_users=["limited on >right ~* +get"])
        async with watch(server) as w:
            await w.subscribe(["client.blocked"])
            await until_polled(w)
            await asyncio.sleep(0.5)  # the audit poll has taken its first look
            with pytest.raises(valkey.exceptions.AuthenticationError):
                server.client(username="limited", password="wrong").ping()
            data = (await w.delivered("client.blocked")).json["data"]
        assert data["reason"] == "auth"
        assert data["username"] == "limited"
        assert data["clientInfo"].startswith("127.0.0.1:")
        assert data["count"] == 1

    async def test_denied_command_fires_acl_violation_and_audit_violation(
        self, fresh: Any, watch: Watching
    ) -> None:
        server = fresh("valkey", acl_users=["limited on >right ~* +get"])
        async with watch(server) as w:
            await w.subscribe(["acl.violation", "audit.policy.violation"])
            await until_polled(w)
            await asyncio.sleep(0.5)
            with (
                # No CLIENT SETINFO on connect: that would be a denial of its own.
                server.client(
                    username="limited", password="right", lib_name=None, lib_version=None
                ) as conn,
                pytest.raises(valkey.exceptions.NoPermissionError),
            ):
                conn.set("k", "v")
            violation = (await w.delivered("acl.violation")).json["data"]
            audit = (await w.delivered("audit.policy.violation")).json["data"]
        assert violation["username"] == "limited"
        assert violation["reason"] == "command"
        assert violation["command"] == "set"
        assert audit["violationType"] == "command"
        assert audit["violatedCommand"] == "set"
        assert audit["count"] == 1

    async def test_acl_setuser_fires_acl_modified(self, fresh: Any, watch: Watching) -> None:
        server = fresh("valkey")
        async with watch(server) as w:
            await w.subscribe(["acl.modified"])
            await until_polled(w)
            await asyncio.sleep(0.5)  # the config watch has its baseline
            with server.client() as conn:
                conn.execute_command("ACL", "SETUSER", "newcomer", "on", ">pw", "~*", "+get")
            data = (await w.delivered("acl.modified")).json["data"]
        assert data["changeType"] == "user_added"
        assert data["affectedUser"] == "newcomer"

    async def test_config_set_fires_config_changed(self, fresh: Any, watch: Watching) -> None:
        server = fresh("valkey", config={"maxmemory-policy": "noeviction"})
        async with watch(server) as w:
            await w.subscribe(["config.changed"])
            await until_polled(w)
            await asyncio.sleep(0.5)
            with server.client() as conn:
                conn.config_set("maxmemory-policy", "allkeys-lru")
            data = (await w.delivered("config.changed")).json["data"]
        assert data["configKey"] == "maxmemory-policy"
        assert (data["oldValue"], data["newValue"]) == ("noeviction", "allkeys-lru")


class TestPerformance:
    async def test_slow_commands_fire_slowlog_threshold(self, fresh: Any, watch: Watching) -> None:
        server = fresh("valkey", config={"slowlog-log-slower-than": "0"})
        async with watch(server) as w:
            await w.subscribe(["slowlog.threshold"], thresholds={"slowlogCount": 20})
            await until_polled(w)
            with server.client() as conn:
                for n in range(40):
                    conn.set(f"k{n}", n)
            data = (await w.delivered("slowlog.threshold")).json["data"]
        assert data["slowlogCount"] > 20
        assert data["threshold"] == 20

    async def test_a_slow_script_fires_latency_spike(self, fresh: Any, watch: Watching) -> None:
        server = fresh("valkey")
        busy = "local t = os.clock() while os.clock() - t < 0.2 do end return 1"
        async with watch(server) as w:
            await w.subscribe(["latency.spike"], thresholds={"latencySpikeMs": 5})
            await until_polled(w)
            await asyncio.sleep(0.5)  # commandstats has its first read
            with server.client() as conn:
                conn.eval(busy, 0)
            data = (await w.delivered("latency.spike")).json["data"]
        assert data["latencyMs"] > 5
        assert data["threshold"] == 5
        assert data["detection"] == "threshold"


class TestReadingsWithoutWebhooks:
    async def test_readings_wait_for_a_webhook_then_a_threshold_fires_at_once(
        self, fresh: Any, watch: Watching
    ) -> None:
        # Every INFO poll publishes its readings; with no webhook enabled they are not
        # queued for webhooks at all, and the first webhook gets them from the next poll.
        server = fresh("valkey", config={"maxclients": "20"})
        async with watch(server) as w:
            await until_polled(w)
            dispatcher = w.app.services.webhook_dispatcher
            queued = dispatcher.queued
            await asyncio.sleep(1)  # about ten INFO polls, thirty readings
            # At most the one let through to have a list older than REFRESH_MS reloaded.
            assert dispatcher.queued - queued <= 1
            await w.subscribe(["connection.critical"], thresholds={"connectionCriticalPercent": 1})
            data = (await w.delivered("connection.critical", within=5)).json["data"]
        assert data["connectedClients"] >= 1
        assert dispatcher.queued > queued


class TestReplication:
    async def test_a_stopped_primary_fires_replication_lag_on_the_replica(
        self, server_factory: ServerFactory, fresh: Any, watch: Watching
    ) -> None:
        primary = fresh("valkey", config={"repl-ping-replica-period": "1"})
        replica = fresh("valkey", replica_of=primary)
        async with watch(replica) as w:
            await w.subscribe(["replication.lag"], thresholds={"replicationLagSeconds": 2})
            await until_polled(w)
            server_factory.pause(primary)
            try:
                data = (await w.delivered("replication.lag")).json["data"]
            finally:
                server_factory.resume(primary)
        assert data["lagSeconds"] > 2
        assert data["masterLinkStatus"] in ("up", "down")


class TestCluster:
    async def test_losing_slot_coverage_fires_cluster_failover(
        self, server_factory: ServerFactory, watch: Watching
    ) -> None:
        nodes = server_factory.cluster("valkey", masters=3)
        seed = nodes[0]
        last = CLUSTER_SLOTS // 3 - 1
        try:
            async with watch(seed) as w:
                await w.subscribe(["cluster.failover"])
                await until_polled(w)
                await asyncio.sleep(1)  # the cluster poll has read CLUSTER INFO once
                with seed.client() as conn:
                    conn.execute_command("CLUSTER", "DELSLOTSRANGE", 0, last)
                    try:
                        data = (await w.delivered("cluster.failover")).json["data"]
                    finally:
                        conn.execute_command("CLUSTER", "ADDSLOTSRANGE", 0, last)
        finally:
            for node in reversed(nodes):
                server_factory.stop(node)
        assert (data["previousState"], data["clusterState"]) == ("ok", "fail")
        assert data["knownNodes"] == 3


class TestAnomaly:
    async def test_anomaly_detected_is_delivered(self, fresh: Any, watch: Watching) -> None:
        server = fresh("valkey")
        async with watch(server) as w:
            await w.subscribe(["anomaly.detected"])
            connection = (await w.app.client.get("/api/connections")).json()[0]["id"]
            w.app.services.bus.publish(
                AnomalyDetected(
                    connection_id=connection,
                    anomaly_id="a-1",
                    metric_type="ops_per_sec",
                    anomaly_type="spike",
                    severity="warning",
                    value=900.0,
                    baseline=100.0,
                    std_dev=50.0,
                    z_score=16.0,
                    threshold=3.0,
                    message="ops/s far above baseline",
                )
            )
            data = (await w.delivered("anomaly.detected")).json["data"]
        assert data["zScore"] == 16.0
        assert data["metricType"] == "ops_per_sec"
