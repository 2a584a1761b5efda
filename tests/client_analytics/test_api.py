"""Client analytics and live client routes against real servers."""

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import valkey.asyncio as avalkey

from svc_monitor.client_analytics.service import ClientAnalyticsService
from svc_monitor.client_analytics.store import ClientSnapshotStore
from svc_monitor.connections.models import Connection
from svc_monitor.engine.capabilities import Capabilities, EngineIdentity
from svc_monitor.engine.client import EngineClient, EngineTarget
from svc_monitor.engine.info import parse_info
from svc_monitor.pipe.live_state import LiveState
from svc_monitor.pipe.observation import Observation
from svc_monitor.pipe.pipe import Pipe
from svc_monitor.polling.clients_poll import ClientsPoller
from svc_monitor.polling.models import PollTarget
from svc_monitor.storage.database import Database
from tests.fixtures.app import AppFactory, RunningApp, make_settings
from tests.fixtures.servers import RunningServer, ServerFactory
from tests.fixtures.waiting import eventually

CLIENTS_MS = 200


@pytest.fixture
def server(server_factory: ServerFactory) -> Iterator[RunningServer]:
    started = server_factory.start("valkey")
    yield started
    server_factory.stop(started)


@pytest.fixture
async def app_clients(server: RunningServer) -> AsyncIterator[list[avalkey.Valkey]]:
    """Two named application connections and one unnamed, kept open."""
    clients = [
        avalkey.Valkey(host=server.host, port=server.port, client_name=name)
        for name in ("app-a", "app-b", None)
    ]
    try:
        for client in clients:
            await client.ping()
        yield clients
    finally:
        for client in clients:
            await client.aclose()


def at(server: RunningServer) -> dict[str, Any]:
    return {
        "DB_HOST": server.host,
        "DB_PORT": server.port,
        "CLIENT_ANALYTICS_POLL_INTERVAL_MS": CLIENTS_MS,
    }


async def get(app: RunningApp, path: str, **headers: str) -> Any:
    response = await app.client.get(path, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


async def polled_twice(app: RunningApp, **headers: str) -> None:
    async def enough() -> bool:
        stats = await get(app, "/api/client-analytics/stats", **headers)
        return bool(stats["captures"] >= 2)

    await eventually(enough)


class TestSnapshots:
    async def test_real_clients_are_snapshotted_and_the_monitor_is_not(
        self,
        app_factory: AppFactory,
        server: RunningServer,
        app_clients: list[avalkey.Valkey],
    ):
        async with app_factory(**at(server)) as app:
            await polled_twice(app)
            rows = await get(app, "/api/client-analytics/snapshots?limit=1000")
            only_a = await get(app, "/api/client-analytics/snapshots?name=app-a")
            # Polling goes on meanwhile: `to` pins the page to the rows already read.
            newest = rows[0]["capturedAt"]
            page = await get(app, f"/api/client-analytics/snapshots?limit=1&offset=1&to={newest}")
            stats = await get(app, "/api/client-analytics/stats")
        names = {r["name"] for r in rows}
        assert {"app-a", "app-b", ""} <= names
        assert "svc-monitor" not in names
        assert {r["name"] for r in only_a} == {"app-a"}
        assert only_a[0]["addr"].startswith("127.0.0.1:")
        assert only_a[0]["user"] == "default"
        assert only_a[0]["capturedAt"] > 1e12
        assert page[0]["id"] == rows[1]["id"]
        assert stats["currentConnections"] == 3
        assert stats["uniqueNames"] == 2
        assert stats["uniqueIps"] == 1
        assert {g["key"]: g["current"] for g in stats["byName"]} == {"app-a": 1, "app-b": 1, "": 1}

    async def test_analytics_routes_summarise_the_snapshots(
        self,
        memory_app_factory: AppFactory,
        server: RunningServer,
        app_clients: list[avalkey.Valkey],
    ):
        async with memory_app_factory(**at(server)) as app:
            await app_clients[0].set("k", "v")
            await polled_twice(app)
            series = await get(app, "/api/client-analytics/timeseries?bucketMs=60000")
            history = await get(app, "/api/client-analytics/history?name=app-a")
            by_addr = await get(
                app, f"/api/client-analytics/history?addr={history[0]['addr'].split(':')[0]}"
            )
            commands = await get(app, "/api/client-analytics/command-distribution")
            idle = await get(
                app,
                "/api/client-analytics/idle-connections?idleThresholdSeconds=0&minOccurrences=2",
            )
            buffers = await get(app, "/api/client-analytics/buffer-anomalies?qbufThreshold=0")
            timeline = await get(app, "/api/client-analytics/activity-timeline?name=app-b")
            spikes = await get(app, "/api/client-analytics/spike-detection")
        assert sum(p["captures"] for p in series["points"]) >= 2
        assert series["points"][-1]["maxConnections"] == 3
        assert series["points"][-1]["byName"]["app-a"] == 1
        assert {h["name"] for h in history} == {"app-a"}
        assert len(history) >= 2
        assert len(by_addr) >= 3 * 2
        a = next(d for d in commands["distribution"] if d["identifier"] == "app-a")
        assert a["topCommand"] == "set"
        assert commands["totalSnapshots"] >= 6
        assert {c["name"] for c in idle["connections"]} >= {"app-a", "app-b"}
        assert all(c["occurrences"] >= 2 for c in idle["connections"])
        assert len(buffers["anomalies"]) >= 6
        assert buffers["anomalies"][0]["severity"] in {"warning", "critical"}
        assert timeline["buckets"][-1]["uniqueClients"] == 1
        assert spikes["baseline"]["buckets"] >= 1
        assert spikes["spikes"] == []

    async def test_cleanup_prunes_older_snapshots(
        self,
        memory_app_factory: AppFactory,
        server: RunningServer,
        app_clients: list[avalkey.Valkey],
    ):
        async with memory_app_factory(**at(server)) as app:
            await polled_twice(app)
            await app.client.put("/api/settings", json={"clientAnalyticsPollIntervalMs": 600000})
            await asyncio.sleep(0.3)
            cutoff = int(time.time() * 1000)
            response = await app.client.delete(f"/api/client-analytics/cleanup?olderThan={cutoff}")
            left = await get(app, "/api/client-analytics/snapshots")
        assert response.json()["pruned"] >= 6
        assert left == []


class TestExpensiveCallRule:
    async def test_client_list_is_skipped_while_the_server_has_many_clients(
        self, server: RunningServer, app_clients: list[avalkey.Valkey]
    ):
        db = Database.from_settings(make_settings(STORAGE_TYPE="memory"))
        await db.migrate()
        client = EngineClient(
            EngineTarget(server.host, server.port), connect_timeout_s=1, command_timeout_s=1
        )
        live = LiveState()
        analytics = ClientAnalyticsService(ClientSnapshotStore(db))
        pipe = Pipe(observation_consumers=[live], facts_consumers=[live])
        poller = ClientsPoller(analytics, pipe=pipe, live_state=live)
        connection = Connection(
            id="c", name="c", host=server.host, port=server.port, username="default",
            password=None, tls=False, db=0, db_type="auto", ssh_tunnel=None, is_default=True,
            created_at=0, updated_at=0,
        )  # fmt: skip
        identity = EngineIdentity("valkey", "9.1.0", Capabilities(), False, "master")
        target = PollTarget(connection, client, identity)
        try:
            live.observe(
                Observation("c", 1, parse_info(b"# Clients\r\nconnected_clients:5001\r\n"))
            )
            await poller.poll(target)
            skipped = await analytics.stats(_filter("c"))
            live.observe(
                Observation("c", 2, parse_info(b"# Clients\r\nconnected_clients:5000\r\n"))
            )
            await poller.poll(target)
            polled = await analytics.stats(_filter("c"))
        finally:
            await client.close()
            await db.close()
        assert skipped.captures == 0
        assert polled.captures == 1
        assert polled.currentConnections == 3


def _filter(connection_id: str) -> Any:
    from svc_monitor.client_analytics.models import SnapshotFilter

    return SnapshotFilter(connection_id)


class TestLiveClients:
    async def test_list_one_and_monitor_hidden_unless_asked(
        self, api: RunningApp, valkey_server: RunningServer
    ):
        client = avalkey.Valkey(
            host=valkey_server.host, port=valkey_server.port, client_name="mine"
        )
        try:
            my_id = await client.client_id()
            listed = await get(api, "/api/metrics/clients")
            everything = await get(api, "/api/metrics/clients?includeMonitor=true")
            one = await get(api, f"/api/metrics/clients/{my_id}")
            missing = await api.client.get("/api/metrics/clients/999999999")
        finally:
            await client.aclose()
        assert my_id in {c["clientId"] for c in listed}
        assert "svc-monitor" not in {c["name"] for c in listed}
        assert "svc-monitor" in {c["name"] for c in everything}
        assert one["name"] == "mine"
        assert one["cmd"] in {"client|id", "client"}
        assert "fd" in one["extra"]
        assert missing.status_code == 404
        assert "999999999" in missing.json()["message"]

    async def test_kill_by_id_and_by_type_spares_the_monitor(
        self, memory_app_factory: AppFactory, server: RunningServer
    ):
        victims = [
            avalkey.Valkey(host=server.host, port=server.port, client_name=f"v{i}")
            for i in range(3)
        ]
        try:
            ids = [await v.client_id() for v in victims]
            async with memory_app_factory(DB_HOST=server.host, DB_PORT=server.port) as app:
                neither = await app.client.delete("/api/metrics/clients")
                by_id = await app.client.delete(f"/api/metrics/clients?id={ids[0]}")
                by_type = await app.client.delete("/api/metrics/clients?type=normal")
                monitor = await get(app, "/api/metrics/clients?includeMonitor=true")
                bad_type = await app.client.delete("/api/metrics/clients?type=bogus")
        finally:
            for v in victims:
                await v.aclose()
        assert neither.status_code == 422
        assert "id" in neither.json()["fields"]
        assert by_id.json() == {"killed": 1}
        assert by_type.json() == {"killed": 2}
        assert monitor
        assert all(c["name"] == "svc-monitor" for c in monitor)
        assert bad_type.status_code == 422
        assert "type" in bad_type.json()["fields"]


class TestClientById:
    @pytest.mark.parametrize("engine", ["valkey_server", "redis7_server"])
    @pytest.mark.parametrize("client_id", [0, 999_999_999, 2**63 - 1])
    async def test_an_id_no_client_has_is_the_same_404_on_every_engine(
        self,
        memory_app_factory: AppFactory,
        request: pytest.FixtureRequest,
        engine: str,
        client_id: int,
    ):
        """Valkey refuses CLIENT LIST ID 0 with an error where Redis lists nothing: the
        route answers 404 naming the id on both, never a 503 blaming the instance."""
        server: RunningServer = request.getfixturevalue(engine)
        async with memory_app_factory(DB_HOST=server.host, DB_PORT=server.port) as app:
            answer = await app.client.get(f"/api/metrics/clients/{client_id}")
            health = (await app.client.get("/api/health")).json()
        assert answer.status_code == 404, answer.text
        body = answer.json()
        assert body["message"] == f"Client {client_id} is not connected"
        assert body["fields"] == ["id"]
        assert health["database"]["status"] == "connected"

    @pytest.mark.parametrize("engine", ["valkey_server", "redis7_server"])
    @pytest.mark.parametrize("client_id", ["-1", str(2**63), "abc"])
    async def test_an_id_no_engine_could_give_is_the_same_422_on_every_engine(
        self,
        memory_app_factory: AppFactory,
        request: pytest.FixtureRequest,
        engine: str,
        client_id: str,
    ):
        server: RunningServer = request.getfixturevalue(engine)
        async with memory_app_factory(DB_HOST=server.host, DB_PORT=server.port) as app:
            answer = await app.client.get(f"/api/metrics/clients/{client_id}")
        assert answer.status_code == 422, answer.text
        assert answer.json()["fields"] == ["id"]


class TestBadInput:
    @pytest.mark.parametrize(
        ("path", "field"),
        [
            ("/api/client-analytics/snapshots?limit=0", "limit"),
            ("/api/client-analytics/history", "name"),
            ("/api/client-analytics/timeseries?bucketMs=10", "bucketMs"),
            ("/api/client-analytics/timeseries?from=0&to=999999999999&bucketMs=1000", "bucketMs"),
            ("/api/client-analytics/command-distribution?groupBy=ip", "groupBy"),
            ("/api/client-analytics/spike-detection?sensitivity=0", "sensitivity"),
            ("/api/client-analytics/stats?from=-1", "from"),
            ("/api/metrics/clients?type=bogus", "type"),
            ("/api/metrics/clients/abc", "id"),
        ],
    )
    async def test_422_names_the_field(self, api: RunningApp, path: str, field: str):
        response = await api.client.get(path)
        assert response.status_code == 422, response.text
        assert field in response.json()["fields"]


class TestIsolation:
    async def test_two_connections_never_see_each_others_clients(
        self,
        memory_app_factory: AppFactory,
        server: RunningServer,
        server_factory: ServerFactory,
        app_clients: list[avalkey.Valkey],
    ):
        second = server_factory.start("valkey")
        theirs_client = avalkey.Valkey(host=second.host, port=second.port, client_name="theirs")
        try:
            await theirs_client.ping()
            async with memory_app_factory(**at(server)) as app:
                other = await app.client.post(
                    "/api/connections",
                    json={"name": "second", "host": second.host, "port": second.port},
                )
                other_id = other.json()["id"]
                await polled_twice(app)
                await polled_twice(app, **{"X-Connection-Id": other_id})
                views = {}
                for name, headers in (("mine", {}), ("theirs", {"X-Connection-Id": other_id})):
                    views[name] = {
                        route: await get(app, f"/api/client-analytics/{route}", **headers)
                        for route in (
                            "snapshots",
                            "timeseries",
                            "stats",
                            "history?user=default",
                            "command-distribution",
                            "idle-connections?idleThresholdSeconds=0&minOccurrences=1",
                            "buffer-anomalies?qbufThreshold=0",
                            "activity-timeline",
                            "spike-detection",
                        )
                    }
                    views[name]["live"] = await get(app, "/api/metrics/clients", **headers)
                pruned = await app.client.delete(
                    "/api/client-analytics/cleanup?olderThan=99999999999999",
                    headers={"X-Connection-Id": other_id},
                )
                still_mine = await get(app, "/api/client-analytics/snapshots")
        finally:
            await theirs_client.aclose()
            server_factory.stop(second)
        mine, theirs = views["mine"], views["theirs"]

        def names(view: dict[str, Any]) -> set[str]:
            found = {r["name"] for r in view["snapshots"] + view["history?user=default"]}
            found |= {r["name"] for r in view["live"]}
            found |= {g["key"] for g in view["stats"]["byName"]}
            found |= {d["identifier"] for d in view["command-distribution"]["distribution"]}
            found |= {
                c["name"]
                for c in view["idle-connections?idleThresholdSeconds=0&minOccurrences=1"][
                    "connections"
                ]
            }
            found |= {
                a["snapshot"]["name"] for a in view["buffer-anomalies?qbufThreshold=0"]["anomalies"]
            }
            for point in view["timeseries"]["points"]:
                found |= set(point["byName"])
            return found

        assert names(mine) == {"app-a", "app-b", ""}
        assert names(theirs) == {"theirs"}
        assert theirs["stats"]["currentConnections"] == 1
        assert mine["activity-timeline"]["buckets"][-1]["uniqueClients"] == 3
        assert theirs["activity-timeline"]["buckets"][-1]["uniqueClients"] == 1
        assert pruned.json()["pruned"] >= 2
        assert still_mine
