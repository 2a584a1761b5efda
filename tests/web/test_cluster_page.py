"""The Cluster page against real servers: a standalone Valkey, a Valkey cluster of three
primaries with a replica each, and a one-node Redis 7 cluster (no SLOT-STATS)."""

import re
from collections.abc import AsyncIterator, Iterator

import pytest

from tests.fixtures.app import AppFactory, RunningApp
from tests.fixtures.servers import RunningServer, ServerFactory
from tests.fixtures.waiting import eventually

FAST = {"ANOMALY_POLL_INTERVAL_MS": 200, "HISTORY_SAMPLE_INTERVAL_MS": 60_000}
STANDALONE = "Standalone mode: this server is not a cluster node (cluster-enabled no)"
HOT_KEYS = 57


@pytest.fixture(scope="module")
def cluster(server_factory: ServerFactory) -> Iterator[list[RunningServer]]:
    nodes = server_factory.cluster("valkey", masters=3, replicas_per_master=1)
    yield nodes
    for node in reversed(nodes):
        server_factory.stop(node)


@pytest.fixture(scope="module")
def hot_slot(cluster: list[RunningServer]) -> Iterator[int]:
    """HOT_KEYS keys in one slot (a hash tag), so one heatmap cell stands out, and one key
    in another cell. Each key is written on the primary that owns its slot."""
    masters = cluster[:3]

    def slot_of(key: str) -> int:
        with masters[0].client() as direct:
            return int(direct.execute_command("CLUSTER", "KEYSLOT", key))

    def owner(slot: int) -> RunningServer:
        # The factory gives primary i the slots from i * 16384 // n on.
        return masters[slot * len(masters) // 16384]

    for node in masters:
        with node.client() as direct:
            direct.flushall()
    slot = slot_of("{hot}")
    with owner(slot).client() as direct:
        direct.mset({f"{{hot}}:{i}": i for i in range(HOT_KEYS)})
    # Cells are 64 slots wide: find a key whose slot lies in another cell.
    other = next(f"cold:{i}" for i in range(1000) if slot_of(f"cold:{i}") // 64 != slot // 64)
    with owner(slot_of(other)).client() as direct:
        direct.set(other, 1)
    yield slot
    for node in masters:
        with node.client() as direct:
            direct.flushall()


@pytest.fixture
async def app(
    memory_app_factory: AppFactory, cluster: list[RunningServer]
) -> AsyncIterator[RunningApp]:
    seed = cluster[0]
    async with memory_app_factory(**FAST, DB_HOST=seed.host, DB_PORT=seed.port) as running:

        async def all_polled() -> bool:
            response = await running.client.get("/api/metrics/cluster/node-stats")
            nodes = response.json() if response.status_code == 200 else []
            return len(nodes) == len(cluster) and all(n["status"] == "up" for n in nodes)

        await eventually(all_polled)
        yield running


async def detected(app: RunningApp) -> None:
    """Wait for the engine's first answer, which tells whether it is a cluster node."""

    async def answered() -> bool:
        connection = await app.services.connections.get("env-default")
        seen = app.services.connections.last_seen(connection)
        return bool(seen and seen.identity)

    await eventually(answered)


async def page(app: RunningApp, path: str = "/cluster") -> str:
    response = await app.client.get(path)
    assert response.status_code == 200, response.text
    return response.text


def section(body: str, name: str) -> str:
    return body.split(f'data-section="{name}"')[1].split("</section>")[0]


def card_value(body: str, metric: str) -> str:
    found = re.search(rf'data-metric="{metric}">.*?<div class="card-value">(.*?)</div>', body, re.S)
    assert found, metric
    return re.sub(r"<[^>]+>", "", found.group(1)).strip()


class TestWithoutACluster:
    async def test_an_instance_that_never_answered_is_not_asked_again_by_the_page(
        self, memory_app_factory: AppFactory, server_factory: ServerFactory
    ):
        gone = server_factory.start("valkey")
        server_factory.stop(gone)
        async with memory_app_factory(DB_HOST=gone.host, DB_PORT=gone.port) as app:
            body = await page(app)
            slots = await page(app, "/ui/cluster/slots")
        assert 'data-state="checking"' in body
        assert 'data-section="nodes"' not in body
        assert "once the instance has answered" in slots

    async def test_a_standalone_server_says_so_without_an_error(self, api: RunningApp):
        await detected(api)
        for path in ("/cluster", "/ui/cluster/live"):
            body = await page(api, path)
            assert STANDALONE in body
            assert 'data-state="standalone"' in body
            assert "data-problem" not in body
            assert 'data-section="slots"' not in body


class TestValkeyCluster:
    async def test_health_nodes_and_topology_match_the_cluster(
        self, app: RunningApp, cluster: list[RunningServer]
    ):
        with cluster[0].client() as direct:
            raw = str(direct.execute_command("CLUSTER", "INFO"))
        info = dict(line.split(":", 1) for line in raw.split() if ":" in line)
        body = await page(app)
        health = section(body, "health")
        assert card_value(health, "cluster_state") == "ok"
        assert card_value(health, "cluster_known_nodes") == str(info["cluster_known_nodes"])
        assert card_value(health, "cluster_slots_assigned") == f"{16384:,}"
        assert card_value(health, "cluster_size") == str(info["cluster_size"])

        nodes = section(body, "nodes")
        masters, replicas = cluster[:3], cluster[3:]
        for node in masters:
            assert f'data-address="{node.host}:{node.port}" data-role="primary"' in nodes
        for node in replicas:
            assert f'data-address="{node.host}:{node.port}" data-role="replica"' in nodes
        assert nodes.count('<td data-field="role">') == len(cluster)
        assert "0-5460" in nodes  # the first primary's slots, as the factory assigned them
        assert nodes.count('data-field="link">connected</span>') == len(cluster)

        # The factory makes cluster[3 + i] a replica of cluster[i].
        topology = section(body, "topology")
        for primary, replica in zip(masters, replicas, strict=True):
            shard = topology.split(f'data-primary="{primary.host}:{primary.port}"')[1]
            shard = shard.split("</li>\n    </ul>")[0].split('class="shard"')[0]
            assert f'data-replica="{replica.host}:{replica.port}"' in shard

    async def test_node_stats_compare_every_polled_node(
        self, app: RunningApp, cluster: list[RunningServer]
    ):
        stats = (await app.client.get("/api/metrics/cluster/node-stats")).json()
        body = section(await page(app), "node-stats")
        for node in stats:
            row = body.split(f'data-node-stats="{node["address"]}"')[1].split("</tr>")[0]
            assert 'data-status="up"' in body
            assert node["version"] in row
            assert '<svg class="bar"' in row
        assert body.count("data-node-stats=") == len(cluster)

    async def test_the_heatmap_shows_where_the_keys_are(self, app: RunningApp, hot_slot: int):
        body = await page(app)
        # The page asks for the slot stats once shown (they take a while on big clusters).
        assert 'hx-get="/ui/cluster/slots?metric=keys" hx-trigger="load"' in section(body, "slots")
        slots = await page(app, "/ui/cluster/slots")
        cells = re.findall(
            r'<span class="heat-(\d)"[^>]*data-slots="(\d+)-(\d+)" data-value="(\d+)"', slots
        )
        assert len(cells) == 256
        hot = next(c for c in cells if int(c[1]) <= hot_slot <= int(c[2]))
        assert hot[0] == "9"
        assert int(hot[3]) == HOT_KEYS
        assert sum(int(c[3]) for c in cells) == HOT_KEYS + 1
        assert sum(1 for c in cells if c[0] != "0") == 2
        assert (
            f'<tr data-slot="{hot_slot}"><td>{hot_slot}</td><td class="num">{HOT_KEYS}</td>'
            in slots
        )
        # No style attributes anywhere: the CSP would refuse them.
        assert "style=" not in body + slots

    async def test_the_cpu_tab_says_when_the_server_does_not_track_it(
        self, app: RunningApp, hot_slot: int
    ):
        fragment = await page(app, "/ui/cluster/slots?metric=cpu")
        assert 'data-metric-tab="cpu" aria-current="page"' in fragment
        assert 'data-state="untracked"' in fragment
        assert "cluster-slot-stats-enabled yes" in fragment
        keys = await page(app, "/ui/cluster/slots?metric=nonsense")
        assert 'data-metric-tab="keys" aria-current="page"' in keys


class TestRedisCluster:
    async def test_redis_shows_its_nodes_and_the_slot_stats_requirement(
        self, memory_app_factory: AppFactory, server_factory: ServerFactory
    ):
        [node] = server_factory.cluster("redis7", masters=1)
        try:
            async with memory_app_factory(**FAST, DB_HOST=node.host, DB_PORT=node.port) as app:
                await detected(app)
                body = await page(app)
        finally:
            server_factory.stop(node)
        assert f'data-address="{node.host}:{node.port}" data-role="primary"' in body
        slots = section(body, "slots")
        assert 'data-problem="unsupported"' in slots
        assert "CLUSTER SLOT-STATS needs Valkey 8.0 or newer" in slots
        assert STANDALONE not in body
