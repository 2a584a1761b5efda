"""GET /api/cve/findings for polled and pushed connections, against real servers and the
real push receiver; a stored scan outlives a restart."""

from typing import Any

from tests.cve.expected import affected_ids, module_ids
from tests.fixtures.app import AppFactory, RunningApp, make_settings, running_app, target_of
from tests.fixtures.servers import RunningServer
from tests.fixtures.waiting import eventually
from tests.otlp.push_payloads import PROTOBUF, at, body, gauge, point, resource

PUSHED = ("10.0.0.7", 6379)


def server_info(server: RunningServer) -> dict[str, Any]:
    with server.client() as conn:
        info: dict[str, Any] = conn.info("server")
    return info


async def findings(app: RunningApp, connection_id: str | None = None) -> dict[str, Any]:
    headers = {"X-Connection-Id": connection_id} if connection_id else {}
    got = await app.client.get("/api/cve/findings", headers=headers)
    assert got.status_code == 200, got.text
    answer: dict[str, Any] = got.json()
    return answer


async def scanned(app: RunningApp, connection_id: str | None = None) -> dict[str, Any]:
    async def done() -> bool:
        return bool((await findings(app, connection_id))["status"] == "scanned")

    await eventually(done)
    return await findings(app, connection_id)


def cve_ids(answer: dict[str, Any]) -> set[str]:
    return {f["id"] for f in answer["findings"] if f["kind"] != "end_of_life"}


async def register_push(app: RunningApp) -> str:
    host, port = PUSHED
    made = await app.client.post(
        "/api/connections",
        json={"source": "push", "name": "pushed", "host": host, "port": port},
    )
    assert made.status_code == 201, made.text
    return str(made.json()["id"])


async def push(app: RunningApp, **attributes: str) -> None:
    payload = body(resource(at(*PUSHED, **attributes), gauge("redis.memory.used", point(1024))))
    sent = await app.client.post("/v1/external/metrics", content=payload, headers=PROTOBUF)
    assert sent.status_code == 200, sent.text


class TestPolled:
    async def test_a_redis_6_2_gets_the_findings_of_its_real_version(
        self, memory_app_factory: AppFactory, redis6_server: RunningServer
    ):
        version = server_info(redis6_server)["redis_version"]
        assert version.startswith("6.2.")
        async with memory_app_factory(**target_of(redis6_server)) as app:
            answer = await scanned(app)
        assert (answer["engine"], answer["version"]) == ("redis", version)
        assert cve_ids(answer) == affected_ids("redis", version)
        assert {u["id"] for u in answer["unverifiable"]} == module_ids("redis")
        assert answer["endOfLife"]["cycle"] == "6.2"
        assert answer["scannedAt"] > 0
        for finding in answer["findings"]:
            assert finding["firstSeenAt"] == answer["scannedAt"]  # first scan: all new

    async def test_a_valkey_is_scanned_on_valkey_version_not_its_redis_version(
        self, memory_app_factory: AppFactory, valkey_server: RunningServer
    ):
        info = server_info(valkey_server)
        assert info["redis_version"] == "7.2.4"  # Valkey's compatibility version
        async with memory_app_factory() as app:
            answer = await scanned(app)
        assert (answer["engine"], answer["version"]) == ("valkey", info["valkey_version"])
        assert cve_ids(answer) == affected_ids("valkey", info["valkey_version"])
        assert not cve_ids(answer) & (
            affected_ids("redis", "7.2.4") - affected_ids("valkey", info["valkey_version"])
        )

    async def test_before_the_first_info_it_says_it_is_waiting(
        self, memory_app_factory: AppFactory
    ):
        async with memory_app_factory(DB_HOST="127.0.0.1", DB_PORT=9) as app:  # nothing there
            answer = await findings(app)
        assert answer["status"] == "waiting_for_version"
        assert answer["findings"] == []
        assert answer["engine"] is None
        assert answer["missingAttribute"] is None

    async def test_an_unknown_connection_404s(self, api: RunningApp):
        got = await api.client.get("/api/cve/findings", headers={"X-Connection-Id": "nope"})
        assert got.status_code == 404


class TestPushed:
    async def test_valkey_version_with_db_system_name_is_scanned_as_valkey_8_0_1(
        self, memory_app_factory: AppFactory
    ):
        async with memory_app_factory(DB_HOST="127.0.0.1", DB_PORT=9) as app:
            connection_id = await register_push(app)
            waiting = await findings(app, connection_id)
            await push(
                app,
                **{"valkey.version": "8.0.1", "db.system.name": "valkey", "redis.version": "7.2.4"},
            )
            answer = await scanned(app, connection_id)
        assert waiting["status"] == "waiting_for_version"
        assert waiting["missingAttribute"].startswith("redis.version")
        assert "valkey.version" in waiting["missingAttribute"]
        assert (answer["engine"], answer["version"]) == ("valkey", "8.0.1")
        assert cve_ids(answer) == affected_ids("valkey", "8.0.1")
        assert answer["endOfLife"]["status"] == "supported"

    async def test_a_detected_valkey_without_its_version_names_valkey_version(
        self, memory_app_factory: AppFactory
    ):
        async with memory_app_factory(DB_HOST="127.0.0.1", DB_PORT=9) as app:
            connection_id = await register_push(app)
            await push(app, **{"db.system.name": "valkey", "redis.version": "7.2.4"})
            answer = await findings(app, connection_id)
        assert answer["status"] == "waiting_for_version"
        assert answer["missingAttribute"] == "valkey.version"

    async def test_kev_findings_come_first_then_severity(self, memory_app_factory: AppFactory):
        async with memory_app_factory(DB_HOST="127.0.0.1", DB_PORT=9) as app:
            connection_id = await register_push(app)
            await push(app, **{"redis.version": "5.0.7"})
            answer = await scanned(app, connection_id)
        order = {"critical": 0, "high": 1, "medium": 2, "low": 3}
        keys = [(not f["kev"], order[f["severity"]]) for f in answer["findings"]]
        assert answer["findings"][0]["id"] == "CVE-2022-0543"  # the one KEV entry
        assert keys == sorted(keys)
        assert cve_ids(answer) == affected_ids("redis", "5.0.7")
        eol = [f for f in answer["findings"] if f["kind"] == "end_of_life"]
        assert [f["id"] for f in eol] == ["EOL-redis-5.0"]


class TestRestart:
    async def test_the_last_stored_scan_stays_until_the_next_push(
        self, persistent_storage: dict[str, Any]
    ):
        settings = make_settings(DB_HOST="127.0.0.1", DB_PORT=9, **persistent_storage)
        async with running_app(settings) as app:
            connection_id = await register_push(app)
            await push(app, **{"valkey.version": "8.0.1", "db.system.name": "valkey"})
            before = await scanned(app, connection_id)
        async with running_app(settings) as app:
            after = await findings(app, connection_id)

            async def exposed() -> bool:  # read back from storage as the scanner starts
                metrics = (await app.client.get("/api/prometheus/metrics")).text
                return 'svc_cve_kev{connection="10.0.0.7:6379"} 0.0' in metrics

            await eventually(exposed)  # before any push
        assert after["status"] == "scanned"
        assert after["scannedAt"] == before["scannedAt"]
        assert after["findings"] == before["findings"]
