"""Whole clusters from one seed, on a real Valkey 9.1 cluster of three primaries with one
replica each."""

import asyncio
import contextlib
import time
from collections.abc import Iterator

import pytest

from tests.fixtures.app import AppFactory
from tests.fixtures.servers import RunningServer, ServerFactory
from tests.fixtures.waiting import eventually

FAST = {"ANOMALY_POLL_INTERVAL_MS": 200, "HISTORY_SAMPLE_INTERVAL_MS": 60_000}


@pytest.fixture(scope="module")
def cluster(server_factory: ServerFactory) -> Iterator[list[RunningServer]]:
    nodes = server_factory.cluster("valkey", masters=3, replicas_per_master=1)
    yield nodes
    for node in reversed(nodes):
        server_factory.stop(node)


class TestClusterFromOneSeed:
    async def test_seed_shows_all_six_nodes_and_a_failover_swaps_roles(
        self, memory_app_factory: AppFactory, cluster: list[RunningServer]
    ):
        seed = cluster[0]
        replica = cluster[3]  # replicates cluster[0]
        async with memory_app_factory(**FAST, DB_HOST=seed.host, DB_PORT=seed.port) as app:

            async def all_polled() -> bool:
                response = await app.client.get("/api/metrics/cluster/node-stats")
                if response.status_code != 200:
                    return False
                nodes = response.json()
                return len(nodes) == 6 and all(n["status"] == "up" for n in nodes)

            await eventually(all_polled)
            nodes = (await app.client.get("/api/metrics/cluster/node-stats")).json()
            roles = {n["address"]: n["role"] for n in nodes}
            addresses = {f"{n.host}:{n.port}" for n in cluster}
            assert set(roles) == addresses
            assert sorted(roles.values()) == ["primary"] * 3 + ["replica"] * 3
            assert sum(n["slots"] for n in nodes) == 16384
            assert roles[f"{replica.host}:{replica.port}"] == "replica"

            with replica.client() as direct:
                direct.execute_command("CLUSTER", "FAILOVER")
                # The failover itself takes the servers a moment; time ours from its end.
                deadline = time.monotonic() + 15
                while direct.info("replication")["role"] != "master":
                    assert time.monotonic() < deadline, "the failover did not happen"
                    await asyncio.sleep(0.02)
            promoted_at = time.monotonic()

            async def swapped() -> bool:
                nodes = (await app.client.get("/api/metrics/cluster/node-stats")).json()
                roles = {n["address"]: n["role"] for n in nodes}
                return bool(
                    roles[f"{replica.host}:{replica.port}"] == "primary"
                    and roles[f"{seed.host}:{seed.port}"] == "replica"
                )

            await eventually(swapped, within=5)
            shown_after = time.monotonic() - promoted_at
        # Two polls at 200 ms, plus the old primary's own switch to replica and some slack.
        assert shown_after < 2 * 0.2 + 1.0

    async def test_merged_slow_log_holds_entries_from_every_node(
        self, memory_app_factory: AppFactory, cluster: list[RunningServer]
    ):
        for node in cluster:
            with node.client() as direct:
                direct.config_set("slowlog-log-slower-than", 0)
                direct.slowlog_reset()
                direct.echo(f"hello from {node.port}")
        seed = cluster[1]
        try:
            async with memory_app_factory(**FAST, DB_HOST=seed.host, DB_PORT=seed.port) as app:

                async def discovered() -> bool:
                    response = await app.client.get("/api/metrics/cluster/node-stats")
                    return response.status_code == 200 and len(response.json()) == 6

                await eventually(discovered)
                entries = (await app.client.get("/api/metrics/cluster/slowlog?count=500")).json()
        finally:
            for node in cluster:
                with node.client() as direct:
                    direct.config_set("slowlog-log-slower-than", 10000)
        assert {e["node"] for e in entries} == {f"{n.host}:{n.port}" for n in cluster}
        echoed = {e["node"] for e in entries if e["command"][:1] == ["ECHO"]}
        assert echoed == {f"{n.host}:{n.port}" for n in cluster}
        times = [e["timestamp"] for e in entries]
        assert times == sorted(times, reverse=True)

    async def test_merged_command_log_and_clients_name_every_node(
        self, memory_app_factory: AppFactory, cluster: list[RunningServer]
    ):
        stack = contextlib.ExitStack()
        directs = [stack.enter_context(node.client()) for node in cluster]
        try:
            for node, direct in zip(cluster, directs, strict=True):
                direct.config_set("commandlog-reply-larger-than", 1)
                direct.echo(f"a reply from {node.port}")  # a reply over 1 byte: logged
                direct.client_setname(f"app-{node.port}")
            seed = cluster[2]
            async with memory_app_factory(**FAST, DB_HOST=seed.host, DB_PORT=seed.port) as app:

                async def discovered() -> bool:
                    response = await app.client.get("/api/metrics/cluster/node-stats")
                    return response.status_code == 200 and len(response.json()) == 6

                await eventually(discovered)
                log = await app.client.get(
                    "/api/metrics/cluster/commandlog?type=large-reply&count=1000"
                )
                clients = (await app.client.get("/api/metrics/cluster/clients")).json()
        finally:
            for direct in directs:
                direct.config_set("commandlog-reply-larger-than", 1024 * 1024)
            stack.close()
        addresses = {f"{n.host}:{n.port}" for n in cluster}
        assert log.status_code == 200
        assert {e["node"] for e in log.json() if e["command"][:1] == ["ECHO"]} == addresses
        ours = {c["node"] for c in clients if (c["name"] or "").startswith("app-")}
        assert ours == addresses
        assert not any(c["name"] == "svc-monitor" for c in clients)

    async def test_slot_stats_cover_every_primary(
        self, memory_app_factory: AppFactory, cluster: list[RunningServer]
    ):
        # One key in one slot of each primary (a failover test may have moved the roles).
        owned: set[int] = set()
        for node in cluster:
            with node.client() as direct:
                if direct.info("replication")["role"] != "master":
                    continue
                direct.flushall()
                for key in (f"k{i}" for i in range(10_000)):
                    try:
                        direct.set(key, "v")
                    except Exception:  # MOVED: another primary owns this slot
                        continue
                    owned.add(direct.execute_command("CLUSTER", "KEYSLOT", key))
                    break
        seed = cluster[0]
        async with memory_app_factory(**FAST, DB_HOST=seed.host, DB_PORT=seed.port) as app:

            async def discovered() -> bool:
                response = await app.client.get("/api/metrics/cluster/node-stats")
                return response.status_code == 200 and len(response.json()) == 6

            await eventually(discovered)
            stats = (await app.client.get("/api/metrics/cluster/slot-stats?limit=3")).json()
        assert len(owned) == 3
        assert {int(slot) for slot in stats} == owned
        assert all(record["key_count"] == 1 for record in stats.values())

    async def test_standalone_connection_is_not_a_cluster(self, api):
        response = await api.client.get("/api/metrics/cluster/node-stats")
        assert response.status_code == 409
        assert "not a cluster" in response.json()["message"]
