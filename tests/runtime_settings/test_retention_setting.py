"""The history retention window as a runtime setting: LOCAL_RETENTION_DAYS seeds it when
the settings row is created, the API changes it, and the retention sweeps use what is in
force, on SQLite and PostgreSQL."""

import time
from typing import Any

import pytest
from sqlalchemy import select

from svc_monitor.info_history.store import memory_snapshots
from svc_monitor.runtime_settings.store import RuntimeSettingsStore
from svc_monitor.storage.retention import DAY_MS
from tests.fixtures.app import RunningApp, make_settings, running_app, target_of


def start(server: Any, storage: dict[str, Any], **env: Any) -> Any:
    return running_app(make_settings(**target_of(server), **storage, **env))


async def retention_days(app: RunningApp) -> Any:
    response = await app.client.get("/api/settings")
    assert response.status_code == 200, response.text
    return response.json()["settings"]["retentionDays"]


async def fill_history(app: RunningApp, *, ages_days: list[int], now: int) -> None:
    rows = [
        {"connection_id": "retention-test", "captured_at": now - age * DAY_MS} for age in ages_days
    ]
    await app.services.db.run(lambda conn: conn.execute(memory_snapshots.insert(), rows))


async def ages_left(app: RunningApp, *, now: int) -> list[int]:
    rows = await app.services.db.fetch_all(
        select(memory_snapshots.c.captured_at)
        .where(memory_snapshots.c.connection_id == "retention-test")
        .order_by(memory_snapshots.c.captured_at)
    )
    return [round((now - r.captured_at) / DAY_MS) for r in rows]


class TestSeeding:
    async def test_the_environment_seeds_the_row_and_then_no_longer_counts(
        self, valkey_server, persistent_storage: dict[str, Any]
    ):
        async with start(valkey_server, persistent_storage, LOCAL_RETENTION_DAYS=30) as app:
            assert await retention_days(app) == 30
            saved = await app.client.put("/api/settings", json={"auditPollIntervalMs": 5000})
            assert saved.status_code == 200, saved.text
            assert saved.json()["settings"]["retentionDays"] == 30
        async with start(valkey_server, persistent_storage, LOCAL_RETENTION_DAYS=7) as app:
            assert await retention_days(app) == 30
        async with start(valkey_server, persistent_storage) as app:
            assert await retention_days(app) == 30

    async def test_before_the_row_exists_the_environment_is_in_force(
        self, valkey_server, persistent_storage: dict[str, Any]
    ):
        async with start(valkey_server, persistent_storage) as app:
            body = (await app.client.get("/api/settings")).json()
            assert (body["settings"]["retentionDays"], body["source"]) == (None, "environment")
        async with start(valkey_server, persistent_storage, LOCAL_RETENTION_DAYS=12) as app:
            assert await retention_days(app) == 12

    async def test_a_row_saved_before_the_setting_existed_takes_the_environment_once(
        self, valkey_server, persistent_storage: dict[str, Any]
    ):
        async with start(valkey_server, persistent_storage) as app:
            # What an earlier version wrote: the intervals only.
            await RuntimeSettingsStore(app.services.db).save(
                {"auditPollIntervalMs": 5000}, updated_at=1
            )
        async with start(valkey_server, persistent_storage, LOCAL_RETENTION_DAYS=14) as app:
            assert await retention_days(app) == 14
        async with start(valkey_server, persistent_storage, LOCAL_RETENTION_DAYS=3) as app:
            body = (await app.client.get("/api/settings")).json()
        assert body["settings"]["retentionDays"] == 14
        assert body["settings"]["auditPollIntervalMs"] == 5000

    async def test_reset_goes_back_to_the_environment(
        self, valkey_server, persistent_storage: dict[str, Any]
    ):
        async with start(valkey_server, persistent_storage, LOCAL_RETENTION_DAYS=9) as app:
            await app.client.put("/api/settings", json={"retentionDays": 60})
            reset = await app.client.post("/api/settings/reset")
            assert reset.json()["settings"]["retentionDays"] == 9


class TestChanging:
    async def test_put_changes_what_the_sweep_deletes_without_a_restart(
        self, valkey_server, persistent_storage: dict[str, Any]
    ):
        now = int(time.time() * 1000)
        async with start(valkey_server, persistent_storage) as app:
            await fill_history(app, ages_days=[400, 40, 10, 0], now=now)
            assert await app.features.retention.sweep(now_ms=now) == 0
            assert await ages_left(app, now=now) == [400, 40, 10, 0]

            changed = await app.client.put("/api/settings", json={"retentionDays": 30})
            assert changed.status_code == 200, changed.text
            assert changed.json()["settings"]["retentionDays"] == 30
            await app.features.retention.sweep(now_ms=now)
            assert await ages_left(app, now=now) == [10, 0]

            await app.client.put("/api/settings", json={"retentionDays": 5})
            await app.features.retention.sweep(now_ms=now)
            assert await ages_left(app, now=now) == [0]

    async def test_null_keeps_everything_and_other_changes_leave_it_alone(
        self, valkey_server, persistent_storage: dict[str, Any]
    ):
        now = int(time.time() * 1000)
        async with start(valkey_server, persistent_storage, LOCAL_RETENTION_DAYS=2) as app:
            forever = await app.client.put("/api/settings", json={"retentionDays": None})
            assert forever.json()["settings"]["retentionDays"] is None
            # After the change: the startup sweep, still under the 2-day window, may not
            # have run yet.
            await fill_history(app, ages_days=[400, 0], now=now)
            await app.client.put("/api/settings", json={"anomalyCacheTtlMs": 1000})
            assert await retention_days(app) is None
            assert await app.features.retention.sweep(now_ms=now) == 0
            assert await ages_left(app, now=now) == [400, 0]

    @pytest.mark.parametrize(
        "value",
        [
            pytest.param(0, id="zero"),
            pytest.param(-1, id="negative"),
            pytest.param(36_501, id="past-a-century"),
            pytest.param(1.5, id="fraction"),
            pytest.param("month", id="text"),
        ],
    )
    async def test_out_of_bounds_422s_naming_the_field_and_keeps_the_window(
        self, valkey_server, persistent_storage: dict[str, Any], value: object
    ):
        async with start(valkey_server, persistent_storage, LOCAL_RETENTION_DAYS=30) as app:
            await app.client.put("/api/settings", json={"retentionDays": 20})
            refused = await app.client.put("/api/settings", json={"retentionDays": value})
            assert refused.status_code == 422
            assert "retentionDays" in refused.json()["fields"]
            assert "retentionDays" in refused.json()["message"]
            assert await retention_days(app) == 20
