"""A push connection in the scrape and everywhere its engine version shows: a series and a
label exist only for what was pushed, and a version never pushed is unknown (null), not
0.0.0. Metrics arrive as protobuf ExportMetricsServiceRequests, as a Collector sends them.
"""

import subprocess
from collections.abc import AsyncIterator
from typing import Any

import pytest

from svc_monitor.web.shell import CONNECTION_COOKIE
from tests.fixtures.app import RunningApp, make_settings, running_app
from tests.otlp.push_payloads import PROTOBUF, at, body, gauge, point, resource
from tests.prometheus.test_catalogue import Sample, of, samples
from tests.prometheus.test_scrape_access import PROMTOOL

METRICS = "/api/prometheus/metrics"
# What a Collector reports; svc-monitor never dials a push connection.
PUSHED = ("127.0.0.1", 6390)
ADDRESS = f"{PUSHED[0]}:{PUSHED[1]}"


@pytest.fixture
async def app() -> AsyncIterator[RunningApp]:
    settings = make_settings(DB_HOST="127.0.0.1", DB_PORT=9, METRICS_EXPORT_PROFILE="full")
    async with running_app(settings) as running:
        yield running


async def register(app: RunningApp) -> str:
    made = await app.client.post(
        "/api/connections",
        json={"source": "push", "name": "pushed", "host": PUSHED[0], "port": PUSHED[1]},
    )
    assert made.status_code == 201, made.text
    return str(made.json()["id"])


async def push(app: RunningApp, resource_attributes: dict[str, Any], *metrics: Any) -> None:
    sent = await app.client.post(
        "/v1/external/metrics",
        content=body(resource(at(*PUSHED, **resource_attributes), *metrics)),
        headers=PROTOBUF,
    )
    assert sent.status_code == 200, sent.text


async def scrape(app: RunningApp) -> tuple[str, list[Sample]]:
    response = await app.client.get(METRICS)
    assert response.status_code == 200, response.text
    return response.text, samples(response.text)


def promtool_accepts(text: str) -> None:
    checked = subprocess.run(
        [PROMTOOL, "check", "metrics"],
        input=text,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


class TestSeriesOnlyForWhatWasPushed:
    async def test_keys_without_expires_give_no_expiring_series(self, app: RunningApp) -> None:
        await register(app)
        await push(app, {}, gauge("redis.db.keys", point(12, db="0"), point(3, db="2")))

        text, found = await scrape(app)
        promtool_accepts(text)
        assert of(found, "svc_keyspace_keys", connection=ADDRESS)[0].value == 15
        assert of(found, "svc_db_keys", connection=ADDRESS, db="db2")[0].value == 3
        for never_pushed in ("svc_keyspace_keys_expiring", "svc_db_keys_expiring"):
            assert not of(found, never_pushed, connection=ADDRESS), never_pushed
        assert not of(found, "svc_db_avg_ttl_seconds", connection=ADDRESS)

    async def test_expires_once_pushed_gives_the_expiring_series(self, app: RunningApp) -> None:
        await register(app)
        await push(
            app,
            {},
            gauge("redis.db.keys", point(12, db="0")),
            gauge("redis.db.expires", point(4, db="0")),
        )

        _, found = await scrape(app)
        assert of(found, "svc_keyspace_keys_expiring", connection=ADDRESS)[0].value == 4
        assert of(found, "svc_db_keys_expiring", connection=ADDRESS, db="db0")[0].value == 4

    async def test_info_series_without_role_or_version_leaves_those_labels_out(
        self, app: RunningApp
    ) -> None:
        await register(app)
        await push(app, {}, gauge("redis.memory.used", point(1024)))

        text, found = await scrape(app)
        promtool_accepts(text)
        [info] = of(found, "svc_instance_info", connection=ADDRESS)
        assert info.labels == {"connection": ADDRESS, "type": "redis"}
        assert 'role=""' not in text
        assert 'version=""' not in text

    async def test_info_series_gains_role_and_version_once_pushed(self, app: RunningApp) -> None:
        await register(app)
        await push(
            app,
            {"redis.version": "7.2.4", "db.system.name": "valkey", "valkey.version": "9.1.0"},
            gauge("redis.role", point(1, role="replica")),
        )

        _, found = await scrape(app)
        [info] = of(found, "svc_instance_info", connection=ADDRESS)
        assert info.labels == {
            "connection": ADDRESS,
            "type": "valkey",
            "version": "9.1.0",
            "role": "slave",
        }

    async def test_valkey_without_its_own_version_is_not_shown_as_redis_7_2_4(
        self, app: RunningApp
    ) -> None:
        await register(app)
        # The compatibility version alone: Valkey's real version is unknown.
        await push(
            app,
            {"redis.version": "7.2.4", "db.system.name": "valkey"},
            gauge("redis.memory.used", point(1024)),
        )

        _, found = await scrape(app)
        [info] = of(found, "svc_instance_info", connection=ADDRESS)
        assert info.labels == {"connection": ADDRESS, "type": "valkey"}


class TestVersionNeverPushed:
    async def test_the_api_says_null_not_0_0_0(self, app: RunningApp) -> None:
        connection_id = await register(app)
        await push(app, {}, gauge("redis.memory.used", point(1024)))

        read = (await app.client.get(f"/api/connections/{connection_id}")).json()
        assert read["engine"]["status"] == "connected"
        assert read["engine"]["version"] is None
        assert read["pushedVersion"]["version"] is None
        listed = (await app.client.get("/api/connections")).json()
        [mine] = [c for c in listed if c["id"] == connection_id]
        assert mine["engine"]["version"] is None
        assert "0.0.0" not in (await app.client.get(f"/api/connections/{connection_id}")).text

    async def test_the_cve_scan_finds_nothing_and_says_the_version_is_unknown(
        self, app: RunningApp
    ) -> None:
        connection_id = await register(app)
        await push(app, {}, gauge("redis.memory.used", point(1024)))

        got = await app.client.get("/api/cve/findings", headers={"X-Connection-Id": connection_id})
        assert got.status_code == 200, got.text
        findings = got.json()
        assert findings["status"] == "waiting_for_version"
        assert findings["version"] is None
        assert findings["findings"] == []
        assert "version unknown" in findings["message"].lower()
        assert findings["missingAttribute"]

    async def test_the_ui_says_version_unknown(self, app: RunningApp) -> None:
        connection_id = await register(app)
        await push(app, {}, gauge("redis.memory.used", point(1024)))

        dialog = (await app.client.get("/ui/connections")).text
        assert "redis (version unknown)" in dialog
        assert "None" not in dialog
        assert "0.0.0" not in dialog
        app.client.cookies.set(CONNECTION_COOKIE, connection_id)
        security = await app.client.get("/security")
        assert security.status_code == 200
        assert "Engine version unknown" in security.text
        assert "0.0.0" not in security.text
