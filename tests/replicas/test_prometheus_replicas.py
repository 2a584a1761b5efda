"""Prometheus scraping every replica, as docs/guides/replicas.md says to: each
connection's series come from the one replica that polls it, so what Prometheus stores has
every connection once, and no series twice. A real Prometheus, real replica processes, real
Valkey servers."""

import asyncio
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fixtures.replica_processes import eventually, replica_env, replica_process
from tests.fixtures.servers import ServerFactory
from tests.prometheus.test_scrape_access import METRICS, prometheus, query, targets_settled

FAST = {"REPLICA_HEARTBEAT_MS": 250, "REPLICA_TIMEOUT_MS": 1000}

pytestmark = pytest.mark.timeout(180)


async def test_every_connection_is_in_prometheus_once_from_the_replica_that_polls_it(
    server_factory: ServerFactory, shared_postgres: dict[str, Any], tmp_path: Path
) -> None:
    servers = [server_factory.start("valkey", config={"hz": "1"}) for _ in range(4)]
    addresses = {f"{s.host}:{s.port}" for s in servers}
    try:
        with ExitStack() as stack:
            replicas = []
            for name in ("a", "b"):
                (tmp_path / name).mkdir()
                env = replica_env(shared_postgres, servers[0], tmp_path / name, **FAST)
                replicas.append(stack.enter_context(replica_process(env, tmp_path / f"{name}.log")))
            async with httpx.AsyncClient(base_url=replicas[0].url, timeout=10) as api:
                for n, server in enumerate(servers[1:], start=1):
                    added = await api.post(
                        "/api/connections",
                        json={"name": f"s{n}", "host": server.host, "port": server.port},
                    )
                    assert added.status_code == 201, added.text

                async def shared_out() -> None:
                    got = (await api.get("/api/replicas")).json()["replicas"]
                    assert sorted(len(r["ownedConnections"]) for r in got) == [2, 2], got

                await eventually(shared_out, timeout_s=20)
            targets = ", ".join(f'"{r.url.removeprefix("http://")}"' for r in replicas)
            config = f"""
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: svc-monitor
    metrics_path: {METRICS}
    static_configs: [{{targets: [{targets}]}}]
"""
            (tmp_path / "prometheus").mkdir()
            with prometheus(config, tmp_path / "prometheus") as prom_url:
                await targets_settled(prom_url, {"svc-monitor"})
                async with httpx.AsyncClient(base_url=prom_url) as client:

                    async def every_connection_once() -> list[dict[str, Any]]:
                        found = await query(client, "svc_memory_used_bytes")
                        by_connection = sorted(r["metric"]["connection"] for r in found)
                        assert by_connection == sorted(addresses), found
                        return found

                    found = await eventually(every_connection_once, timeout_s=30)
                    # From both replicas: two each.
                    instances = sorted(r["metric"]["instance"] for r in found)
                    assert len(set(instances)) == 2
                    await asyncio.sleep(3)  # a few more scrapes of both
                    listed = await client.get(
                        "/api/v1/series", params={"match[]": '{connection=~".+"}'}
                    )
                    series = listed.json()["data"]
                    assert len(series) > 50
                    seen: dict[frozenset[tuple[str, str]], str] = {}
                    for labels in series:
                        instance = labels.pop("instance")
                        key = frozenset(labels.items())
                        assert key not in seen, (labels, instance, seen.get(key))
                        seen[key] = instance
    finally:
        for server in servers:
            server_factory.stop(server)
