"""Migration execution and validation against real servers: both copy methods, every
type, several databases, a cluster target, a module-typed key, keys expiring during the
copy, and the source seeing only reads."""

from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.app import AppFactory, RunningApp
from tests.fixtures.licensing import SigningKey
from tests.fixtures.servers import RunningServer, ServerFactory
from tests.fixtures.waiting import eventually
from tests.migration.keyspace import load
from tests.migration.test_analysis import add

EXECUTION = "/api/migration/execution"
VALIDATION = "/api/migration/validation"


async def job(
    app: RunningApp, url: str, body: dict[str, Any], *, within: float = 120
) -> dict[str, Any]:
    started = await app.client.post(url, json=body)
    assert started.status_code == 202, started.text
    found: dict[str, Any] = {}

    async def ended() -> bool:
        found.update((await app.client.get(f"{url}/{started.json()['id']}")).json())
        return found["status"] not in ("pending", "running")

    await eventually(ended, within=within)
    assert found["status"] == "completed", found
    return found


async def migrate(
    app: RunningApp, source: str, target: str, **extra: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    ends = {"sourceConnectionId": source, "targetConnectionId": target}
    copied = await job(app, EXECUTION, {**ends, **extra})
    checked = await job(app, VALIDATION, {**ends, "executionId": copied["id"]})
    return copied, checked


@pytest.fixture
def pro(signing_key: SigningKey) -> dict[str, str]:
    return {"SVC_OFFLINE_LICENSE": signing_key.mint(tier="pro")}


pytestmark = pytest.mark.timeout(400)


class TestCopies:
    @pytest.mark.parametrize(
        ("source_kind", "method"),
        [("redis7", "dump_restore"), ("redis6", "dump_restore"), ("valkey", "type_aware")],
    )
    async def test_fifty_thousand_keys_arrive_with_nothing_different(
        self,
        memory_app_factory: AppFactory,
        fresh: Any,
        pro: dict[str, str],
        source_kind: str,
        method: str,
    ):
        source = fresh(source_kind)
        target = fresh("redis7" if source_kind == "valkey" else "valkey")
        loaded = load(
            source, 4_200, functions=source_kind != "redis6"
        )  # 50,400 keys in 2 databases
        async with memory_app_factory(**pro) as app:
            copied, checked = await migrate(
                app, await add(app, source, "src"), await add(app, target, "dst")
            )
        report = copied["report"]
        assert report["method"] == method
        assert report["copiedKeys"] == sum(loaded.keys.values()) == 50_400
        assert report["expiredKeys"] == report["skippedKeys"] == 0
        assert report["functionsLoaded"] == ([] if source_kind == "redis6" else ["inventory"])
        validation = checked["report"]
        assert validation["differenceCount"] == 0, validation["differences"][:5]
        assert validation["sample"]["checked"] == 1_000
        counts = {(c["db"], c["type"]): c["target"] for c in validation["counts"]}
        assert counts[(1, "stream")] == 4_200
        group = target.client().xinfo_groups("x:0")[0]
        assert (group["name"], group["pending"]) == ("workers", 1)

    async def test_a_module_typed_key_and_a_cluster_target(
        self,
        memory_app_factory: AppFactory,
        server_factory: ServerFactory,
        search_module: Path,
        pro: dict[str, str],
    ):
        module = {"loadmodule": str(search_module)}
        source = server_factory.start("valkey", config=module)
        load(source, 200, databases=(0,), module_key=True)
        target = server_factory.start("valkey", config=module)
        cluster = server_factory.cluster("valkey", config=module)
        async with memory_app_factory(**pro) as app:
            src = await add(app, source, "src")
            copied, checked = await migrate(app, src, await add(app, target, "one"))
            into_cluster, cluster_check = await migrate(
                app, src, await add(app, cluster[0], "cluster")
            )
        assert copied["report"]["method"] == "dump_restore"
        assert copied["report"]["copiedKeys"] == 1_201
        copy: Any = target.client()
        assert copy.execute_command("FT.SUGGET", "suggest", "hell") == ["hello world"]
        assert checked["report"]["differenceCount"] == 0
        assert into_cluster["report"]["copiedKeys"] == 1_201
        assert cluster_check["report"]["differenceCount"] == 0
        on_nodes: list[int] = [int(node.client().dbsize()) for node in cluster]  # type: ignore[arg-type]
        assert sum(on_nodes) == 1_201
        assert all(n > 0 for n in on_nodes)  # spread by slot over every primary


class TestWhileItRuns:
    async def test_keys_expiring_during_the_copy_are_no_difference(
        self, memory_app_factory: AppFactory, fresh: Any, pro: dict[str, str]
    ):
        source, target = fresh("redis7"), fresh("valkey")
        load(source, 1_500, databases=(0,), functions=False)
        client: Any = source.client()
        pipe = client.pipeline(transaction=False)
        for i in range(3_000):  # expiring from 0.5 s to 6.5 s: during the copy and the check
            pipe.set(f"soon:{i}", "v", px=500 + 2 * i)
        pipe.execute()
        async with memory_app_factory(**pro) as app:
            copied, checked = await migrate(
                app, await add(app, source, "src"), await add(app, target, "dst")
            )
        assert copied["report"]["expiredKeys"] > 0
        report = checked["report"]
        assert report["differenceCount"] == 0, report["differences"][:5]
        assert report["expiredDuringCopy"] == copied["report"]["expiredKeys"]

    async def test_the_source_sees_only_reads(
        self, memory_app_factory: AppFactory, fresh: Any, pro: dict[str, str]
    ):
        source, target = fresh("valkey"), fresh("redis7")
        load(source, 300)
        client: Any = source.client()
        client.set_response_callback("COMMAND", lambda reply, **_: reply)
        before = _calls(client)
        async with memory_app_factory(**pro) as app:
            await migrate(app, await add(app, source, "src"), await add(app, target, "dst"))
        grown = {c for c, n in _calls(client).items() if n > before.get(c, 0)}
        writes = {c for c in grown if "write" in client.execute_command("COMMAND", "INFO", c)[0][2]}
        assert {"scan", "hgetall", "xrange", "xinfo"} <= grown
        assert writes == set()


class TestRefusals:
    async def test_execution_and_validation_need_pro(
        self, memory_app_factory: AppFactory, fresh: Any
    ):
        async with memory_app_factory() as app:
            ends = {"sourceConnectionId": "a", "targetConnectionId": "b"}
            for url in (EXECUTION, VALIDATION):
                reply = await app.client.post(url, json=ends)
                assert reply.status_code == 403
                assert reply.json()["feature"] == "migrationExecution"

    async def test_a_target_holding_keys_or_a_cluster_into_one_server(
        self,
        memory_app_factory: AppFactory,
        fresh: Any,
        valkey_cluster: list[RunningServer],
        pro: dict[str, str],
    ):
        source, target = fresh("valkey"), fresh("valkey")
        source.client().set("a", "1")
        target.client().set("b", "2")
        async with memory_app_factory(**pro) as app:
            src, dst = await add(app, source, "src"), await add(app, target, "dst")
            held = await app.client.post(
                EXECUTION, json={"sourceConnectionId": src, "targetConnectionId": dst}
            )
            cluster = await add(app, valkey_cluster[0], "cluster")
            merged = await app.client.post(
                EXECUTION,
                json={"sourceConnectionId": cluster, "targetConnectionId": dst, "overwrite": True},
            )
            listed = (await app.client.get(EXECUTION)).json()
        assert held.status_code == 409
        assert "The target holds 1 keys" in held.json()["message"]
        assert merged.status_code == 409
        assert "A cluster cannot be migrated into a standalone server" in merged.json()["message"]
        assert listed == []
        assert target.client().get("b") == "2"


def _calls(client: Any) -> dict[str, int]:
    stats = client.info("commandstats").items()
    return {k.removeprefix("cmdstat_").split("|")[0]: v["calls"] for k, v in stats}


class TestEstimate:
    async def test_an_analysis_after_a_copy_estimates_from_its_measured_rate(
        self, memory_app_factory: AppFactory, fresh: Any, pro: dict[str, str]
    ):
        source, target, other = fresh("redis7"), fresh("valkey"), fresh("valkey")
        load(source, 100, databases=(0,), functions=False)
        async with memory_app_factory(**pro) as app:
            src = await add(app, source, "src")
            copied, _ = await migrate(app, src, await add(app, target, "dst"))
            ends = {"sourceConnectionId": src, "targetConnectionId": await add(app, other, "next")}
            analysed = await job(app, "/api/migration/analysis", {**ends, "sampleSize": 1_000})
        estimate = analysed["report"]["estimate"]
        assert copied["id"] in estimate["basis"]
        assert estimate["keysPerSecond"] == copied["report"]["keysPerSecond"]
        assert estimate["durationSeconds"] == 600 / copied["report"]["keysPerSecond"]


class TestCatchUp:
    async def test_writes_during_the_copy_are_caught_up_and_it_can_be_cancelled(
        self, memory_app_factory: AppFactory, fresh: Any, pro: dict[str, str]
    ):
        source, target = fresh("redis7"), fresh("valkey")
        load(source, 3_400, databases=(0,), functions=False)  # 20,400 keys
        client: Any = source.client()
        async with memory_app_factory(**pro) as app:
            ends = {
                "sourceConnectionId": await add(app, source, "src"),
                "targetConnectionId": await add(app, target, "dst"),
            }
            started = (await app.client.post(EXECUTION, json=ends)).json()
            url = f"{EXECUTION}/{started['id']}"

            async def halfway() -> bool:
                detail = (await app.client.get(url)).json()["progressDetail"] or {}
                return int(detail.get("copiedKeys", 0)) >= 10_000

            await eventually(halfway, within=120)
            # Writes while it copies: changed keys (some copied already), new keys, and
            # deleted ones; the catch-up and the prune must bring the target level.
            for i in range(0, 3_400, 10):
                client.set(f"s:{i}", "changed")
                client.set(f"new:{i}", "late")
                client.delete(f"l:{i}")

            async def ended() -> bool:
                return bool((await app.client.get(url)).json()["status"] == "completed")

            await eventually(ended, within=300)
            report = (await app.client.get(url)).json()["report"]
            checked = await job(app, VALIDATION, {**ends, "executionId": started["id"]})

            another = (await app.client.post(EXECUTION, json={**ends, "overwrite": True})).json()
            cancelled = await app.client.delete(f"{EXECUTION}/{another['id']}")
        assert report["recopiedKeys"] + report["removedKeys"] > 0
        assert checked["report"]["differenceCount"] == 0, checked["report"]["differences"][:5]
        assert target.client().get("s:0") == "changed"
        assert target.client().get("new:0") == "late"
        assert target.client().exists("l:0") == 0
        assert cancelled.status_code == 200
        assert cancelled.json()["status"] == "cancelled"
