"""svc_repl_output_buffer_ratio against a real primary with a replica: what the primary's
replica output buffers hold (INFO mem_clients_slaves) over the replica class's hard
client-output-buffer-limit (CONFIG GET, read by the config watch)."""

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass

import pytest

from tests.fixtures.app import RunningApp, make_settings, running_app, target_of
from tests.fixtures.servers import RunningServer, ServerFactory
from tests.prometheus.test_catalogue import Sample, of, samples
from tests.prometheus.test_pushed_series import promtool_accepts

METRICS = "/api/prometheus/metrics"
RATIO = "svc_repl_output_buffer_ratio"
HARD_LIMIT = 64 * 1024 * 1024
# The class is `slave` in Redis 7.0's CONFIG, `replica` in Valkey's; both accept `slave`.
LIMIT = f"slave {HARD_LIMIT} 0 0"


@dataclass
class Pair:
    primary: RunningServer
    replica: RunningServer


@pytest.fixture(scope="module", params=["valkey", "redis7"])
def pair(request: pytest.FixtureRequest, server_factory: ServerFactory) -> Iterator[Pair]:
    primary = server_factory.start(request.param)
    with primary.client() as conn:
        conn.config_set("client-output-buffer-limit", LIMIT)
    replica = server_factory.start(request.param, replica_of=primary)
    yield Pair(primary, replica)
    server_factory.stop(replica)
    server_factory.stop(primary)


@pytest.fixture
async def app(pair: Pair) -> AsyncIterator[RunningApp]:
    settings = make_settings(**target_of(pair.primary), CONFIG_WATCH_INTERVAL_MS=200)
    async with running_app(settings) as running:
        made = await running.client.post(
            "/api/connections",
            json={"name": "replica", "host": pair.replica.host, "port": pair.replica.port},
        )
        assert made.status_code == 201, made.text
        yield running


def address(server: RunningServer) -> str:
    return f"{server.host}:{server.port}"


async def scrape_until(
    app: RunningApp, ready: Callable[[list[Sample]], bool], what: str
) -> tuple[str, list[Sample]]:
    text = ""
    for _ in range(100):  # 20 s at most
        response = await app.client.get(METRICS)
        assert response.status_code == 200
        text = response.text
        if ready(found := samples(text)):
            return text, found
        await asyncio.sleep(0.2)
    raise AssertionError(f"{what} not in the scrape within 20 s:\n{text[:3000]}")


def mem_clients_slaves(server: RunningServer) -> int:
    with server.client() as conn:
        return int(conn.info("memory")["mem_clients_slaves"])


class TestReplicaOutputBufferRatio:
    async def test_a_primary_with_a_replica_has_the_ratio_and_promtool_accepts_it(
        self, app: RunningApp, pair: Pair
    ) -> None:
        primary, replica = address(pair.primary), address(pair.replica)

        def ready(found: list[Sample]) -> bool:
            return bool(of(found, RATIO, connection=primary)) and bool(
                of(found, "svc_master_link_up", connection=replica)
            )

        text, found = await scrape_until(app, ready, "the primary's ratio")
        promtool_accepts(text)
        assert f"# TYPE {RATIO} gauge" in text
        [ratio] = of(found, RATIO, connection=primary)
        assert 0 <= ratio.value < 1  # an idle, synced replica is far from being dropped
        assert not of(found, RATIO, connection=replica)  # a replica has no replicas

    async def test_a_stalled_replica_fills_the_ratio(
        self, app: RunningApp, pair: Pair, server_factory: ServerFactory
    ) -> None:
        primary = address(pair.primary)
        await scrape_until(app, lambda f: bool(of(f, RATIO, connection=primary)), "the ratio")
        server_factory.pause(pair.replica)
        try:
            # 32 MiB the stopped replica cannot read: beyond what the kernel's socket
            # buffers take, so the primary holds the rest for it (half the hard limit).
            with pair.primary.client() as conn:
                for i in range(32):
                    conn.set(f"ratio:{i}", b"x" * (1024 * 1024))
            held = mem_clients_slaves(pair.primary)
            assert held > 8 * 1024 * 1024, held

            def filled(found: list[Sample]) -> bool:
                return any(s.value >= 0.1 for s in of(found, RATIO, connection=primary))

            _, found = await scrape_until(app, filled, "a filled ratio")
            [ratio] = of(found, RATIO, connection=primary)
            assert ratio.value < 1
            assert ratio.value == pytest.approx(held / HARD_LIMIT, rel=0.25)
        finally:
            server_factory.resume(pair.replica)
            with pair.primary.client() as conn:
                conn.delete(*(f"ratio:{i}" for i in range(32)))

    async def test_no_hard_limit_means_no_ratio(self, app: RunningApp, pair: Pair) -> None:
        primary = address(pair.primary)
        await scrape_until(app, lambda f: bool(of(f, RATIO, connection=primary)), "the ratio")
        with pair.primary.client() as conn:
            conn.config_set("client-output-buffer-limit", "slave 0 0 0")
        try:
            # The config watch sees the CONFIG SET and reads the limit again: unlimited.
            _, found = await scrape_until(
                app, lambda f: not of(f, RATIO, connection=primary), "the ratio gone"
            )
            assert of(found, "svc_replication_offset", connection=primary)
        finally:
            with pair.primary.client() as conn:
                conn.config_set("client-output-buffer-limit", LIMIT)
