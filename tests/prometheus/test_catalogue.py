"""The families of `/api/prometheus/metrics` against a fleet of real servers: a standalone
Valkey 9.1, a Valkey cluster node and a Redis 7, checked by promtool and scraped by a real
Prometheus 2.42."""

import asyncio
import contextlib
import re
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from valkey.cluster import ValkeyCluster

from svc_monitor.app import create_app
from svc_monitor.prometheus.catalogue import FAMILIES, exposed_names
from svc_monitor.services import Services
from tests.fixtures.app import make_settings, serve_app, target_of
from tests.fixtures.servers import RunningServer, ServerFactory
from tests.prometheus.test_scrape_access import PROMTOOL, prometheus, query, targets_settled

METRICS = "/api/prometheus/metrics"
FAST_POLLS = {
    "SLOWLOG_POLL_INTERVAL_MS": 300,
    "COMMANDSTATS_POLL_INTERVAL_MS": 300,
    "AUDIT_POLL_INTERVAL_MS": 300,
    "CLIENT_ANALYTICS_POLL_INTERVAL_MS": 300,
}
# `name{labels} value` of the text format; label values here never hold a brace.
SAMPLE = re.compile(
    r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>[^}]*)\})? (?P<value>\S+)$"
)
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class Sample:
    name: str
    labels: dict[str, str]
    value: float


def samples(text: str) -> list[Sample]:
    found = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = SAMPLE.match(line)
        assert match, f"not a sample line: {line!r}"
        labels = dict(LABEL.findall(match["labels"] or ""))
        found.append(Sample(match["name"], labels, float(match["value"])))
    return found


def of(found: list[Sample], name: str, **labels: str) -> list[Sample]:
    return [
        s for s in found if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    ]


def address(server: RunningServer) -> str:
    return f"{server.host}:{server.port}"


@dataclass
class Fleet:
    valkey: RunningServer
    cluster: list[RunningServer]
    redis: RunningServer


@pytest.fixture(scope="module")
def fleet(server_factory: ServerFactory, valkey_cluster: list[RunningServer]) -> Iterator[Fleet]:
    # Servers of this module's own: the settings below would slow the shared ones down.
    cluster = valkey_cluster
    valkey = server_factory.start("valkey")
    redis = server_factory.start("redis7")
    # Keys in two databases of the standalone and in many slots of the cluster; every
    # command slow enough for the slow log.
    with valkey.client() as conn:
        conn.config_set("slowlog-log-slower-than", 0)
        for db in (0, 3):
            conn.execute_command("SELECT", db)
            for i in range(20):
                conn.set(f"prom:{db}:{i}", "v", ex=600 if i % 2 else None)
        conn.execute_command("SELECT", 0)
    for node in cluster:
        with node.client() as conn:
            conn.config_set("slowlog-log-slower-than", 0)
    seed = cluster[0]
    with ValkeyCluster(host=seed.host, port=seed.port) as client:
        for i in range(3000):
            client.set(f"slot-key-{i}", "v")
    with redis.client() as conn:
        conn.config_set("slowlog-log-slower-than", 0)
        conn.set("r", "1")
    yield Fleet(valkey, cluster, redis)
    for node in (valkey, redis):
        server_factory.stop(node)


@pytest.fixture
async def served(fleet: Fleet) -> AsyncIterator[tuple[str, Services]]:
    async with served_app(fleet) as found:
        yield found


@contextlib.asynccontextmanager
async def served_app(fleet: Fleet, **overrides: Any) -> AsyncIterator[tuple[str, Services]]:
    """The service over real HTTP with the fleet connected (the Valkey is the default)."""
    settings = make_settings(**target_of(fleet.valkey), **FAST_POLLS, **overrides)
    app = create_app(settings)
    async with serve_app(app) as url, httpx.AsyncClient(base_url=url) as client:
        for name, server in (("cluster", fleet.cluster[0]), ("redis", fleet.redis)):
            response = await client.post(
                "/api/connections", json={"name": name, "host": server.host, "port": server.port}
            )
            assert response.status_code == 201, response.text
        yield url, app.state.services


async def scrape_until(url: str, ready: Any, what: str) -> str:
    """Scrape until `ready(samples)` holds (bounded: 20 s of polling). The client waits up
    to 30 s for an answer: on a loaded CI machine one first scrape took over httpx's
    default 5 s (once in 3 full runs); scrape time is bench/prometheus.py's to measure."""
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        text = ""
        for _ in range(100):
            response = await client.get(METRICS)
            assert response.status_code == 200
            text = response.text
            if ready(samples(text)):
                return text
            await asyncio.sleep(0.2)
    raise AssertionError(f"{what} not in the scrape within 20 s:\n{text[:3000]}")


def promtool_check(text: str) -> None:
    checked = subprocess.run(
        [PROMTOOL, "check", "metrics"],
        input=text,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def everything_seen(fleet: Fleet) -> Any:
    def ready(found: list[Sample]) -> bool:
        return all(
            of(found, name, connection=address(server))
            for name, server in (
                ("svc_memory_used_bytes", fleet.valkey),
                ("svc_memory_used_bytes", fleet.redis),
                ("svc_cluster_known_nodes", fleet.cluster[0]),
                ("svc_slowlog_length", fleet.valkey),
                ("svc_commandstats_calls_total", fleet.redis),
                ("svc_client_connections_current", fleet.valkey),
            )
        ) and all(of(found, "svc_memory_used_bytes", connection=address(n)) for n in fleet.cluster)

    return ready


class TestStandardProfile:
    async def test_every_connection_has_typed_families_that_promtool_accepts(
        self, served: tuple[str, Services], fleet: Fleet
    ):
        url, _ = served
        text = await scrape_until(url, everything_seen(fleet), "every connection's families")
        promtool_check(text)
        found = samples(text)
        valkey, redis, seed = address(fleet.valkey), address(fleet.redis), address(fleet.cluster[0])

        # every connection series carries `connection`; each name is in the catalogue
        for sample in found:
            assert sample.name in exposed_names(), sample.name
            own = (
                "svc_process_",
                "svc_python_gc_",
                "svc_otlp_export",
                "svc_cve_dataset",
                "svc_replica_",
            )
            if not sample.name.startswith(own):
                assert "connection" in sample.labels, sample
        # typed, with help text
        assert "# TYPE svc_commands_processed_total counter" in text
        assert "# TYPE svc_memory_used_bytes gauge" in text
        assert "# HELP svc_memory_used_bytes Memory used" in text

        # instance info: version and role; engines told apart
        [info] = of(found, "svc_instance_info", connection=valkey)
        assert (info.labels["type"], info.labels["role"]) == ("valkey", "master")
        assert re.match(r"9\.\d+\.\d+", info.labels["version"])
        [info] = of(found, "svc_instance_info", connection=redis)
        assert info.labels["type"] == "redis"
        assert info.labels["version"].startswith("7.")

        # keyspace per database, TTL in seconds
        assert of(found, "svc_db_keys", connection=valkey, db="db3")[0].value == 20
        assert of(found, "svc_db_keys_expiring", connection=valkey, db="db3")[0].value == 10
        [ttl] = of(found, "svc_db_avg_ttl_seconds", connection=valkey, db="db3")
        assert 0 < ttl.value <= 600
        assert of(found, "svc_keyspace_keys", connection=valkey)[0].value >= 40

        # the cluster: every node under its own address, cluster facts on the seed
        assert of(found, "svc_cluster_known_nodes", connection=seed)[0].value == 3
        assert of(found, "svc_cluster_slots_ok", connection=seed)[0].value == 16384
        for node in fleet.cluster:
            assert of(found, "svc_cluster_enabled", connection=address(node))[0].value == 1
        assert of(found, "svc_cluster_enabled", connection=valkey)[0].value == 0

        # engine-specific series simply absent: no command log on Redis 7
        assert of(found, "svc_commandlog_large_request", connection=valkey)
        assert not of(found, "svc_commandlog_large_request", connection=redis)
        # the high-cardinality families wait for the full profile
        for name in ("svc_cluster_slot_keys", "svc_slowlog_pattern_entries"):
            assert not of(found, name), name

        # commandstats per command, the service's own process and poll health
        assert of(found, "svc_commandstats_calls_total", connection=redis, command="info")
        assert of(found, "svc_poll_stale", connection=valkey)[0].value == 0
        assert of(found, "svc_process_resident_memory_bytes")[0].value > 0
        assert of(found, "svc_python_gc_collections_total", generation="2")

    async def test_a_stopped_connection_drops_out_after_the_staleness_bound(
        self, fleet: Fleet, server_factory: ServerFactory
    ):
        extra = server_factory.start("valkey")
        async with served_app(fleet, PROMETHEUS_STALENESS_MS=2000) as (url, _):
            async with httpx.AsyncClient(base_url=url) as client:
                response = await client.post(
                    "/api/connections",
                    json={"name": "extra", "host": extra.host, "port": extra.port},
                )
                assert response.status_code == 201
            label = address(extra)
            await scrape_until(
                url,
                lambda found: bool(of(found, "svc_memory_used_bytes", connection=label)),
                "the extra connection",
            )
            server_factory.stop(extra)
            text = await scrape_until(
                url,
                lambda found: not of(found, "svc_memory_used_bytes", connection=label),
                "the stopped connection's series gone",
            )
            # still said to be stale (after 30 s it reads 1; until then 0): the series stays
            assert of(samples(text), "svc_poll_stale", connection=label)
            assert of(samples(text), "svc_memory_used_bytes", connection=address(fleet.valkey))


class TestFullProfile:
    async def test_per_slot_pattern_and_client_families_join(self, fleet: Fleet):
        async with served_app(fleet, METRICS_EXPORT_PROFILE="full") as (url, _):
            seed = address(fleet.cluster[0])

            def ready(found: list[Sample]) -> bool:
                return bool(
                    of(found, "svc_cluster_slot_keys", connection=seed)
                    and of(found, "svc_slowlog_pattern_entries", connection=address(fleet.valkey))
                    and of(found, "svc_client_connections_by_name")
                    and of(found, "svc_poll_duration_seconds_count")
                )

            text = await scrape_until(url, ready, "the full profile's families")
            promtool_check(text)
            found = samples(text)
            slots = of(found, "svc_cluster_slot_keys", connection=seed)
            assert len(slots) == 100  # the top 100 by key count, of the 3000 keys' slots
            counts = sorted((s.value for s in slots), reverse=True)
            assert counts[0] >= counts[-1] > 0
            # Valkey 9.1's SLOT-STATS counts no reads or writes per slot: absent, not 0
            assert not of(found, "svc_cluster_slot_reads_total")
            assert of(found, "svc_polls_total", connection=address(fleet.valkey), kind="info")


@pytest.mark.slow
async def test_a_real_prometheus_scrapes_every_connection(
    served: tuple[str, Services], fleet: Fleet, tmp_path: Path
):
    url, _ = served
    await scrape_until(url, everything_seen(fleet), "every connection's families")
    config = f"""
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: svc
    metrics_path: {METRICS}
    static_configs: [{{targets: ["{url.removeprefix("http://")}"]}}]
"""
    wanted = {address(fleet.valkey), address(fleet.cluster[0]), address(fleet.redis)}
    with prometheus(config, tmp_path) as prom_url:
        targets = await targets_settled(prom_url, {"svc"})
        assert targets["svc"]["health"] == "up", targets["svc"]
        seen: set[str] = set()
        deadline = time.monotonic() + 30
        async with httpx.AsyncClient(base_url=prom_url) as client:
            while time.monotonic() < deadline and not wanted <= seen:
                result = await query(client, "svc_memory_used_bytes")
                seen = {r["metric"]["connection"] for r in result}
                await asyncio.sleep(0.5)
        assert wanted <= seen, seen


def test_the_catalogue_names_are_unique_and_prefixed():
    names = [f.name for f in FAMILIES]
    assert len(names) == len(set(names))
    assert all(n.startswith("svc_") for n in names)
