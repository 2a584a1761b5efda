"""A cluster's search indexes, read from every shard: three Valkey 9.1 primaries with
RediSearch loaded, each holding its own index (docs/features/vector-search.md#which-servers)."""

import random
import re
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.app import AppFactory
from tests.fixtures.servers import RunningServer, ServerFactory
from tests.fixtures.waiting import eventually
from tests.vector_search.test_indexes import DIM

CLUSTER_SLOTS = 16384


@pytest.fixture(scope="module")
def search_cluster(
    server_factory: ServerFactory, search_module: Path
) -> Iterator[list[RunningServer]]:
    # Every call slow-logged, with room: the slow-log figures can be checked per shard.
    config = {
        "loadmodule": str(search_module),
        "slowlog-log-slower-than": "0",
        "slowlog-max-len": "10000",
    }
    nodes = server_factory.cluster(config=config)
    yield nodes
    for node in reversed(nodes):
        server_factory.stop(node)


def name_on(node: RunningServer, position: int, masters: int = 3) -> str:
    """An index name whose slot the `position`-th primary serves (its name is its key)."""
    first = position * CLUSTER_SLOTS // masters
    last = (position + 1) * CLUSTER_SLOTS // masters - 1
    with node.client() as conn:
        for n in range(10_000):
            name = f"shard{position}_idx{n}"
            if first <= conn.execute_command("CLUSTER", "KEYSLOT", name) <= last:
                return name
    raise AssertionError("no name found for the shard")


def make_index(node: RunningServer, name: str, docs: int) -> None:
    """An HNSW index on one shard, with `docs` hashes whose keys that shard serves."""
    rng = random.Random(5)
    with node.client(decode_responses=False) as conn:
        conn.execute_command(
            "FT.CREATE", name, "ON", "HASH", "PREFIX", "1", f"{{{name}}}:", "SCHEMA",
            "title", "TEXT",
            "v", "VECTOR", "HNSW", "6", "TYPE", "FLOAT32", "DIM", str(DIM),
            "DISTANCE_METRIC", "COSINE",
        )  # fmt: skip
        for i in range(docs):
            blob = struct.pack(f"{DIM}f", *(rng.uniform(-1, 1) for _ in range(DIM)))
            # The hash tag puts every document on the index's own shard.
            conn.hset(f"{{{name}}}:{i}", mapping={"title": f"doc {i}", "v": blob})


async def test_every_shards_indexes_are_read_from_its_node(
    memory_app_factory: AppFactory, search_cluster: list[RunningServer]
):
    seed = search_cluster[0]
    wanted: dict[str, tuple[str, int]] = {}
    for position, node in enumerate(search_cluster):
        name = name_on(node, position)
        make_index(node, name, docs=50 * (position + 1))
        wanted[name] = (f"{node.host}:{node.port}", 50 * (position + 1))

    async with memory_app_factory(
        DB_HOST=seed.host,
        DB_PORT=seed.port,
        VECTOR_INDEX_POLL_INTERVAL_MS=200,
        SLOWLOG_POLL_INTERVAL_MS=200,
    ) as app:

        async def all_read() -> bool:
            response = await app.client.get("/api/vector-search/indexes")
            if response.status_code != 200:
                return False
            found = {i["name"]: i for i in response.json()["indexes"]}
            return all(
                name in found and found[name]["docs"] == docs for name, (_, docs) in wanted.items()
            )

        await eventually(all_read, within=30)
        body: dict[str, Any] = (await app.client.get("/api/vector-search/indexes")).json()
        text = (await app.client.get("/api/prometheus/metrics")).text
        html = (await app.client.get("/vector-search")).text
        # A search on another shard's index goes to that shard (the seed would say MOVED).
        elsewhere = next(n for n, (a, _) in wanted.items() if a != f"{seed.host}:{seed.port}")
        searched = await app.client.post(
            f"/api/vector-search/indexes/{elsewhere}/search",
            json={"vector": [0.5] * DIM, "k": 3},
        )
        queried = await app.client.post(
            f"/api/vector-search/indexes/{elsewhere}/query", json={"query": "@title:doc"}
        )
        # The searches went to the other shard: its slow log is stored too, so the index
        # has its slow-log bucket: the KNN search, the query and 16 more.
        holder = next(n for n in search_cluster if f"{n.host}:{n.port}" == wanted[elsewhere][0])
        with holder.client() as conn:
            for _ in range(16):
                conn.execute_command("FT.SEARCH", elsewhere, "@title:doc", "NOCONTENT")

        async def counted() -> bool:
            body = (await app.client.get("/api/vector-search/latency")).json()
            slow = [b for b in body["buckets"] if b["bucket"] == f"FT.SEARCH:{elsewhere}"]
            return bool(slow) and slow[0]["count"] == 18

        await eventually(counted, within=20)
    assert searched.status_code == 200, searched.text
    assert len(searched.json()["hits"]) == 3
    assert queried.status_code == 200, queried.text
    assert queried.json()["total"] == wanted[elsewhere][1]

    found = {i["name"]: i for i in body["indexes"]}
    for name, (address, docs) in wanted.items():
        assert found[name]["node"] == address  # each read on the shard that holds it
        assert found[name]["percentIndexed"] == 100
        assert f'svc_vector_index_docs{{connection="{address}",index="{name}"}} {docs}.0' in text
        row = re.search(rf'<tr data-index="{name}" data-node="{address}">.*?</tr>', html, re.S)
        assert row is not None
        assert f'data-field="node">{address}<' in row.group(0)
