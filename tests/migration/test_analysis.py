"""Migration analysis against real servers: what it reports for each set-up, the
picker's refusals, cancelling, and that the source sees only reads."""

from pathlib import Path
from typing import Any

import pytest
from valkey.cluster import ValkeyCluster

from svc_monitor.migration.models import Job
from svc_monitor.migration.service import MigrationService
from tests.fixtures.app import AppFactory, RunningApp
from tests.fixtures.receiver import Receiver
from tests.fixtures.servers import RunningServer, ServerFactory
from tests.fixtures.waiting import eventually
from tests.migration.keyspace import load

ANALYSIS = "/api/migration/analysis"


async def add(app: RunningApp, server: RunningServer, name: str) -> str:
    reply = await app.client.post(
        "/api/connections", json={"name": name, "host": server.host, "port": server.port}
    )
    assert reply.status_code in (200, 201), reply.text
    return str(reply.json()["id"])


async def analyse(app: RunningApp, source: str, target: str, **extra: Any) -> dict[str, Any]:
    started = await app.client.post(
        ANALYSIS, json={"sourceConnectionId": source, "targetConnectionId": target, **extra}
    )
    assert started.status_code == 202, started.text
    job_id = started.json()["id"]
    job: dict[str, Any] = {}

    async def ended() -> bool:
        job.update((await app.client.get(f"{ANALYSIS}/{job_id}")).json())
        return job["status"] not in ("pending", "running")

    await eventually(ended, within=60)
    assert job["status"] == "completed", job
    return job


def severities(report: dict[str, Any], severity: str) -> set[str]:
    return {f["code"] for f in report["findings"] if f["severity"] == severity}


@pytest.fixture(scope="module")
def redis7_source(server_factory: ServerFactory) -> RunningServer:
    server = server_factory.start("redis7", acl_users=["app on >secret-pw ~* +@all"])
    load(server, 300)
    return server


class TestRedisToValkey:
    async def test_report_of_a_redis_7_source_into_an_empty_valkey(
        self, memory_app_factory: AppFactory, redis7_source: RunningServer, fresh: Any
    ):
        target = fresh("valkey")
        async with memory_app_factory() as app:
            source_id = await add(app, redis7_source, "redis-7")
            target_id = await add(app, target, "valkey-9")
            job = await analyse(app, source_id, target_id, sampleSize=1_000)
        report = job["report"]
        assert report["verdict"] == "ready_with_warnings"
        assert severities(report, "blocking") == set()
        assert severities(report, "warning") == {"acl_users_missing"}
        assert "functions_copied" in severities(report, "info")
        acl = next(f for f in report["findings"] if f["code"] == "acl_users_missing")
        assert acl["evidence"] == "users app"
        assert "ACL SETUSER" in acl["fix"]
        source = report["source"]
        assert (source["engine"], source["version"]) == ("redis", "7.0.15")
        assert source["databases"] == {"0": 1_800, "1": 1_800}
        assert source["functionLibraries"] == ["inventory"]
        assert report["target"]["engine"] == "valkey"
        sample = report["sample"]
        assert (sample["requested"], sample["sampledKeys"], sample["totalKeys"]) == (
            1_000,
            1_000,
            3_600,
        )
        # A sample of 1,000 of 3,600: 1.96 x 0.5 / sqrt(1000) x sqrt(2600/3599) = 2.63 points.
        assert sample["typeShareErrorPoints"] == pytest.approx(2.63, abs=0.01)
        assert {t["type"] for t in report["types"]} == {
            "string",
            "hash",
            "list",
            "set",
            "zset",
            "stream",
        }
        assert sum(t["estimatedKeys"] for t in report["types"]) == pytest.approx(3_600, abs=6)
        ttl = {b["bucket"]: b["share"] for b in report["ttl"]}
        assert ttl["<1h"] == pytest.approx(1 / 3, abs=0.05)
        assert ttl["none"] == pytest.approx(2 / 3, abs=0.05)
        estimate = report["estimate"]
        assert (estimate["method"], estimate["payloadVersion"]) == ("dump_restore", 10)
        assert estimate["keysPerSecond"] > 100
        assert estimate["durationSeconds"] > 0
        commands = {c["command"]: c for c in report["commands"]}
        assert commands["set"]["onTarget"]
        assert commands["set"]["calls"] >= 600
        assert "info" not in commands  # svc-monitor's own calls are left out

    async def test_the_source_sees_only_reads(self, memory_app_factory: AppFactory, fresh: Any):
        source, target = fresh("redis7"), fresh("valkey")
        load(source, 100)
        client = source.client()
        before = _calls(client)
        async with memory_app_factory() as app:
            await analyse(app, await add(app, source, "src"), await add(app, target, "dst"))
        grown = {c for c, n in _calls(client).items() if n > before.get(c, 0)}
        writes = {c for c in grown if "write" in _flags(client, c)}
        assert "scan" in grown
        assert "dump" in grown
        assert writes == set()


def _calls(client: Any) -> dict[str, int]:
    stats = client.info("commandstats").items()
    return {k.removeprefix("cmdstat_").split("|")[0]: v["calls"] for k, v in stats}


def _flags(client: Any, command: str) -> list[str]:
    client.set_response_callback("COMMAND", lambda reply, **_: reply)  # the raw reply
    entry = client.execute_command("COMMAND", "INFO", command)[0]
    assert entry is not None, f"{command} is no command of the source"
    return list(entry[2])


class TestValkeyToRedis:
    async def test_field_ttls_and_a_module_block_a_valkey_9_source_into_redis_7(
        self,
        memory_app_factory: AppFactory,
        server_factory: ServerFactory,
        search_module: Path,
        fresh: Any,
    ):
        source = server_factory.start("valkey", config={"loadmodule": str(search_module)})
        load(source, 100, databases=(0,), field_ttls=True, module_key=True)
        client: Any = source.client()
        client.execute_command(
            "FT.CREATE", "idx", "ON", "HASH", "PREFIX", "1", "h:", "SCHEMA", "b", "TEXT"
        )
        target = fresh("redis7")
        async with memory_app_factory() as app:
            job = await analyse(app, await add(app, source, "vk"), await add(app, target, "r7"))
        report = job["report"]
        assert report["verdict"] == "blocked"
        assert severities(report, "blocking") == {
            "hash_field_expiry_unsupported",
            "module_missing",
            "module_keys_need_restore",
        }
        assert severities(report, "warning") == {"search_indexes", "commands_missing"}
        assert {"payload_type_aware", "functions_copied"} <= severities(report, "info")
        by_code = {f["code"]: f for f in report["findings"]}
        assert "1 hashes with field TTLs" in by_code["hash_field_expiry_unsupported"]["evidence"]
        assert "trietype0" in by_code["module_missing"]["evidence"]
        assert "hexpire" in by_code["commands_missing"]["evidence"]
        assert report["estimate"]["method"] == "type_aware"
        assert report["estimate"]["payloadVersion"] == 80
        assert report["source"]["searchIndexes"] == ["idx"]


class TestTopology:
    async def test_several_databases_into_a_cluster(
        self,
        memory_app_factory: AppFactory,
        redis7_source: RunningServer,
        valkey_cluster: list[RunningServer],
    ):
        async with memory_app_factory() as app:
            source_id = await add(app, redis7_source, "standalone")
            target_id = await add(app, valkey_cluster[0], "cluster")
            report = (await analyse(app, source_id, target_id, sampleSize=1_000))["report"]
        assert severities(report, "blocking") == {"databases_into_cluster"}
        assert {"standalone_to_cluster", "acl_users_missing"} <= severities(report, "warning")
        assert report["target"]["cluster"]
        assert report["target"]["primaries"] == 3

    async def test_a_cluster_into_a_standalone_server_is_blocked(
        self, memory_app_factory: AppFactory, valkey_cluster: list[RunningServer], fresh: Any
    ):
        # keys on every shard: the sample reads every primary
        cluster: Any = ValkeyCluster(host=valkey_cluster[0].host, port=valkey_cluster[0].port)
        for i in range(300):
            cluster.set(f"k{i}", "v")
        cluster.close()
        target = fresh("valkey")
        async with memory_app_factory() as app:
            source_id = await add(app, valkey_cluster[0], "cluster")
            report = (await analyse(app, source_id, await add(app, target, "one")))["report"]
        assert severities(report, "blocking") == {"cluster_to_standalone"}
        assert report["source"]["primaries"] == 3
        assert len(report["sample"]["readFrom"]) == 3
        assert report["sample"]["sampledKeys"] == report["source"]["keys"] >= 300


class TestPicker:
    async def test_refusals_name_the_field(
        self, memory_app_factory: AppFactory, redis7_source: RunningServer
    ):
        async with memory_app_factory() as app:
            real = await add(app, redis7_source, "real")
            pushed = await app.client.post(
                "/api/connections",
                json={"source": "push", "name": "edge", "host": "10.9.9.9", "port": 6392},
            )
            push_id = pushed.json()["id"]

            async def refused(body: dict[str, Any]) -> dict[str, Any]:
                reply = await app.client.post(ANALYSIS, json=body)
                assert reply.status_code == 422, reply.text
                return dict(reply.json())

            as_source = await refused({"sourceConnectionId": push_id, "targetConnectionId": real})
            as_target = await refused({"sourceConnectionId": real, "targetConnectionId": push_id})
            same = await refused({"sourceConnectionId": real, "targetConnectionId": real})
            unknown = await refused({"sourceConnectionId": "nope", "targetConnectionId": real})
            small = await refused(
                {"sourceConnectionId": real, "targetConnectionId": push_id, "sampleSize": 10}
            )
            listed = (await app.client.get(ANALYSIS)).json()
        assert "'edge' is a push connection" in as_source["message"]
        assert "cannot be a migration source or target" in as_source["message"]
        assert as_source["fields"] == ["sourceConnectionId"]
        assert as_target["fields"] == ["targetConnectionId"]
        assert same["message"] == "Source and target must be different connections"
        assert unknown["fields"] == ["sourceConnectionId"]
        assert small["fields"] == ["sampleSize"]
        assert listed == []  # nothing refused was started

    async def test_unknown_job_and_cancel(
        self, memory_app_factory: AppFactory, redis7_source: RunningServer, fresh: Any
    ):
        async with memory_app_factory() as app:
            assert (await app.client.get(f"{ANALYSIS}/nope")).status_code == 404
            assert (await app.client.delete(f"{ANALYSIS}/nope")).status_code == 404
            source_id = await add(app, redis7_source, "src")
            target_id = await add(app, fresh("valkey"), "dst")
            started = await app.client.post(
                ANALYSIS,
                json={
                    "sourceConnectionId": source_id,
                    "targetConnectionId": target_id,
                    "sampleSize": 50_000,
                },
            )
            job_id = started.json()["id"]
            cancelled = await app.client.delete(f"{ANALYSIS}/{job_id}")
            again = await app.client.delete(f"{ANALYSIS}/{job_id}")
            read = (await app.client.get(f"{ANALYSIS}/{job_id}")).json()
        assert cancelled.status_code == 200
        assert cancelled.json()["status"] == "cancelled"
        assert again.status_code == 409
        assert read["status"] == "cancelled"
        assert read["report"] is None

    async def test_a_job_left_running_by_a_killed_process_is_marked_failed(
        self, memory_app_factory: AppFactory, persistent_storage: dict[str, Any]
    ):
        # What a SIGKILL leaves: a row still `running`, and no process running it.
        left = Job(
            id="left-running",
            kind="analysis",
            source_id="a",
            target_id="b",
            status="running",
            created_at=1,
            updated_at=1,
            completed_at=None,
            progress=40.0,
            error=None,
            params={"sampleSize": 10_000},
            state={},
            report=None,
        )
        async with memory_app_factory(**persistent_storage) as app:
            await app.app.state.registry.get(MigrationService).store.insert(left)
        async with memory_app_factory(**persistent_storage) as app:
            read: dict[str, Any] = {}

            async def settled() -> bool:
                read.update((await app.client.get(f"{ANALYSIS}/left-running")).json())
                return bool(read["status"] != "running")

            await eventually(settled, within=10)
        assert read["status"] == "failed"
        assert read["error"] == "svc-monitor stopped while the job ran; start it again"
        assert read["progress"] == 40.0


class TestEvents:
    async def test_completion_and_failure_are_delivered_and_logged(
        self,
        memory_app_factory: AppFactory,
        server_factory: ServerFactory,
        redis7_source: RunningServer,
        fresh: Any,
        receiver: Receiver,
    ):
        target = fresh("valkey")
        async with memory_app_factory(NODE_ENV="development") as app:
            hook = {
                "name": "migration",
                "url": receiver.url(),
                "events": ["migration.completed", "migration.failed"],
                "secret": "whsec-migration-0123456789abcdef",
            }
            made = await app.client.post("/api/webhooks", json=hook)
            assert made.status_code == 201, made.text
            source_id = await add(app, redis7_source, "src")
            target_id = await add(app, target, "dst")
            done = await analyse(app, source_id, target_id, sampleSize=1_000)
            await receiver.wait_for(1)
            gone = fresh("valkey")
            doomed = await add(app, gone, "doomed")
            server_factory.stop(gone)  # the analysis cannot reach the target: it fails
            started = await app.client.post(
                ANALYSIS, json={"sourceConnectionId": source_id, "targetConnectionId": doomed}
            )
            failed: dict[str, Any] = {}

            async def ended() -> bool:
                failed.update((await app.client.get(f"{ANALYSIS}/{started.json()['id']}")).json())
                return failed["status"] not in ("pending", "running")

            await eventually(ended, within=30)
            await receiver.wait_for(2)
            # The log's own reader: its route is closed while user control is off.
            entries, _ = await app.services.auth.activity.page(limit=50)
        events = {r.event: r.json["data"] for r in receiver.requests}
        completed = events["migration.completed"]
        assert completed["jobId"] == done["id"]
        assert completed["kind"] == "analysis"
        assert completed["summary"].startswith("verdict ready_with_warnings")
        assert failed["status"] == "failed"
        assert events["migration.failed"]["error"] == failed["error"]
        logged = {e.action: e for e in entries}
        assert {"migration.analysis.completed", "migration.analysis.failed"} <= set(logged)
        assert logged["migration.analysis.completed"].object_id == done["id"]
