"""Key analytics on a cluster connection, against a real Valkey cluster of three primaries
with one replica each: every shard is read (on its replica), the figures merge, the
sample size holds across the cluster, each shard keeps its cursor, and a shard that does
not answer is left out without failing the run."""

import uuid
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import pytest
from valkey.crc import key_slot

from svc_monitor.key_analytics.models import CURSORS_PER_SHARD
from svc_monitor.key_analytics.store import KeyAnalyticsStore
from tests.fixtures.app import AppFactory, make_settings, running_app
from tests.fixtures.licensing import SigningKey
from tests.fixtures.servers import RunningServer, ServerFactory
from tests.key_analytics.test_service import run

SLOTS = 16384
PER_PATTERN = 300
TAGGED = 200
BIG_VALUE = 20_000
MASTERS = 3


def address(server: RunningServer) -> str:
    return f"{server.host}:{server.port}"


def owner_of(slot: int) -> int:
    """The master index the cluster fixture gave the slot to (even ranges, in order)."""
    return next(i for i in range(MASTERS) if slot <= (i + 1) * SLOTS // MASTERS - 1)


def tag_on(master: int) -> str:
    """A hash tag whose slot the given master owns (the first of shop0, shop1, ...)."""
    return next(
        f"shop{n}" for n in range(10_000) if owner_of(key_slot(f"shop{n}".encode())) == master
    )


@pytest.fixture(scope="module")
def cluster(server_factory: ServerFactory) -> Iterator[list[RunningServer]]:
    nodes = server_factory.cluster("valkey", masters=MASTERS, replicas_per_master=1)
    yield nodes
    for node in reversed(nodes):
        server_factory.stop(node)


@pytest.fixture(scope="module")
def keyed(cluster: list[RunningServer]) -> dict[str, Any]:
    """Three patterns spread over every slot, and one hash-tagged pattern whose keys all
    live on the third master (never the seed), with one big key among them."""
    tag = tag_on(2)
    by_master: dict[int, list[tuple[str, bytes]]] = defaultdict(list)
    for i in range(PER_PATTERN):
        for kind, key in (
            ("string", f"user:{i}"),
            ("hash", f"session:{uuid.UUID(int=i)}"),
            ("list", f"queue:{i}:jobs"),
        ):
            name = key.encode()
            by_master[owner_of(key_slot(name))].append((kind, name))
    tagged = [f"{{{tag}}}:order:{i}".encode() for i in range(TAGGED)]
    big = f"{{{tag}}}:order:{TAGGED}".encode()  # one more of the pattern, the largest key
    by_master[2] += [("string", k) for k in tagged] + [("big", big)]
    for index, keys in by_master.items():
        with cluster[index].client() as client:
            pipe = client.pipeline(transaction=False)
            for kind, name in keys:
                if kind == "string":
                    pipe.set(name, "v" * 20)
                elif kind == "hash":
                    pipe.hset(name, mapping={"uid": 1, "ip": "10.0.0.1"})
                elif kind == "list":
                    pipe.rpush(name, "a", "b", "c")
                else:
                    pipe.set(name, "x" * BIG_VALUE)
            pipe.execute()
    with cluster[2].client(decode_responses=False) as client:
        tagged_memory = sum(int(client.memory_usage(k)) for k in [*tagged, big])
    total = sum(len(keys) for keys in by_master.values())
    for replica, master in zip(cluster[MASTERS:], cluster[:MASTERS], strict=True):
        with master.client() as m:
            m.execute_command("WAIT", 1, 5000)  # every replica has what its master has
        with replica.client() as r, master.client() as m:
            assert r.dbsize() == m.dbsize()
    return {
        "tag": tag,
        "pattern": f"{{{tag}}}:order:*",
        "big": big.decode(),
        "tagged_memory": tagged_memory,
        "total": total,
    }


def commandstat(server: RunningServer, command: str) -> int:
    with server.client() as client:
        stats = client.info("commandstats")
    return int(stats.get(f"cmdstat_{command}", {}).get("calls", 0))


class TestWholeCluster:
    async def test_every_shard_is_read_on_its_replica_and_merged(
        self,
        memory_app_factory: AppFactory,
        signing_key: SigningKey,
        cluster: list[RunningServer],
        keyed: dict[str, Any],
    ):
        seed, masters, replicas = cluster[0], cluster[:MASTERS], cluster[MASTERS:]
        for node in cluster:
            with node.client() as client:
                client.config_resetstat()
        pro = signing_key.mint(tier="pro")
        async with memory_app_factory(
            DB_HOST=seed.host, DB_PORT=seed.port, SVC_OFFLINE_LICENSE=pro
        ) as app:
            snapshot = await run(app, budget_s=20)
            summary = (await app.client.get("/api/key-analytics/summary")).json()
            patterns = (await app.client.get("/api/key-analytics/patterns")).json()
            page = await app.client.get("/key-analytics")

        # every primary's keys, read on its replica
        assert "(3 cluster shards, one node each, all replicas)" in page.text
        assert snapshot.nodes_read == 3
        assert snapshot.on_replica
        assert set(snapshot.source.split(", ")) == {address(r) for r in replicas}
        assert snapshot.keyspace_keys == keyed["total"]
        assert snapshot.sampled_keys == keyed["total"]  # under the sample size: read whole
        assert snapshot.complete
        assert (snapshot.started_cursor, snapshot.next_cursor) == ("0", "0")
        found = {p.pattern: p for p in snapshot.patterns}
        assert set(found) == {"user:*", "session:*", "queue:*:jobs", keyed["pattern"]}
        for name in ("user:*", "session:*", "queue:*:jobs"):
            assert found[name].key_count == PER_PATTERN
        # the tagged keys live on the third master only, never on the seed
        tagged = found[keyed["pattern"]]
        assert tagged.key_count == TAGGED + 1
        assert tagged.total_memory_bytes == pytest.approx(keyed["tagged_memory"], rel=0.05)
        largest = snapshot.largest_keys[0]
        assert largest.key == keyed["big"]
        assert largest.cardinality == BIG_VALUE  # STRLEN, asked of that shard's replica

        # the reads went to the replicas; the primaries were not scanned
        for replica in replicas:
            assert commandstat(replica, "scan") > 0
            assert commandstat(replica, "memory|usage") > 0
        for master in masters:
            assert commandstat(master, "scan") == 0

        # what the API says about the run (the poll loop's run or ours: the same figures)
        assert summary["nodesRead"] == 3
        assert summary["onReplica"]
        assert summary["keyspaceKeys"] == keyed["total"]
        assert summary["totalKeys"] == keyed["total"]
        assert keyed["pattern"] in {p["pattern"] for p in patterns}

    async def test_the_sample_size_holds_across_the_cluster_and_each_shard_keeps_its_cursor(
        self,
        persistent_storage: dict[str, Any],
        cluster: list[RunningServer],
        keyed: dict[str, Any],
    ):
        seed, masters, replicas = cluster[0], cluster[:MASTERS], cluster[MASTERS:]
        settings = {
            "DB_HOST": seed.host,
            "DB_PORT": seed.port,
            **persistent_storage,
            "KEY_ANALYTICS_SAMPLE_SIZE": 300,
            "KEY_ANALYTICS_SCAN_BATCH_SIZE": 50,
        }
        async with running_app(make_settings(**settings)) as app:
            first = await run(app, budget_s=20)
            connection = await app.services.connections.resolve(None)
            store = KeyAnalyticsStore(app.services.db)
            cursors = {m.port: await store.cursor(connection.id, shard=address(m)) for m in masters}
        # a restarted service resumes every shard where it stopped
        async with running_app(make_settings(**settings)) as app:
            second = await run(app, budget_s=20)

        assert first.sampled_keys == 300
        assert first.keyspace_keys == keyed["total"]
        assert first.complete
        assert first.started_cursor == "0"
        assert first.next_cursor == CURSORS_PER_SHARD
        # each shard scaled to its own DBSIZE: the patterns add up to the whole cluster
        counted = sum(p.key_count for p in first.patterns)
        assert counted == pytest.approx(keyed["total"], abs=len(first.patterns))
        # one cursor per shard, each on the replica it was read from
        for master, replica in zip(masters, replicas, strict=True):
            stored = cursors[master.port]
            assert stored is not None
            assert stored[0] == address(replica)
            assert stored[1] != 0
        assert second.started_cursor == CURSORS_PER_SHARD
        assert second.sampled_keys == 300

    async def test_a_seed_that_is_a_replica_reads_the_whole_cluster_too(
        self, memory_app_factory: AppFactory, cluster: list[RunningServer], keyed: dict[str, Any]
    ):
        seed = cluster[MASTERS + 1]  # the second master's replica
        async with memory_app_factory(DB_HOST=seed.host, DB_PORT=seed.port) as app:
            snapshot = await run(app, budget_s=20)
        assert snapshot.nodes_read == 3
        assert snapshot.keyspace_keys == keyed["total"]
        assert keyed["pattern"] in {p.pattern for p in snapshot.patterns}

    async def test_a_shard_that_does_not_answer_is_left_out(
        self,
        memory_app_factory: AppFactory,
        server_factory: ServerFactory,
        cluster: list[RunningServer],
        keyed: dict[str, Any],
    ):
        seed, third = cluster[0], cluster[2]
        with third.client() as client:
            third_keys = client.dbsize()
        async with memory_app_factory(
            DB_HOST=seed.host,
            DB_PORT=seed.port,
            ENGINE_CONNECT_TIMEOUT_MS=200,
            ENGINE_COMMAND_TIMEOUT_MS=300,
        ) as app:
            # Paused well under cluster-node-timeout (5 s): no failover, the module's
            # cluster stays as it was.
            server_factory.pause(third)
            try:
                snapshot = await run(app, budget_s=20)
            finally:
                server_factory.resume(third)
        assert snapshot.nodes_read == 2
        assert not snapshot.complete
        assert snapshot.keyspace_keys == keyed["total"] - third_keys
        assert {p.pattern for p in snapshot.patterns} == {"user:*", "session:*", "queue:*:jobs"}
