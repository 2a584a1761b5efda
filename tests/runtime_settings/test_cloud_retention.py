"""History retention in cloud mode: the licence tier's window (Community 7 days, Pro 90,
Enterprise 365) in place of LOCAL_RETENTION_DAYS and the `retentionDays` setting, moved
by a licence applied at run time."""

import logging
import time
from typing import Any

import pytest

from tests.fixtures.app import AppFactory, RunningApp, running_app
from tests.fixtures.cloud import cloud_settings
from tests.fixtures.licensing import SigningKey
from tests.fixtures.servers import RunningServer
from tests.runtime_settings.test_retention_setting import (
    ages_left,
    fill_history,
    retention_days,
    start,
)
from tests.web.test_settings_page import FROM_PAGE, form_of

TIERS = [
    pytest.param("community", 7, id="community"),
    pytest.param("pro", 90, id="pro"),
    pytest.param("enterprise", 365, id="enterprise"),
]


def licensed(signing_key: SigningKey, tier: str) -> dict[str, Any]:
    """The environment of an install on `tier` (Community needs no licence)."""
    return {} if tier == "community" else {"SVC_OFFLINE_LICENSE": signing_key.mint(tier=tier)}


async def sweeps_to(app: RunningApp, days: int) -> list[int]:
    """The ages (days) of history left by a sweep, from rows just past, at and inside
    `days`."""
    now = int(time.time() * 1000)
    await fill_history(app, ages_days=[days + 1, days, days - 1, 0], now=now)
    await app.features.retention.sweep(now_ms=now)
    return await ages_left(app, now=now)


def ignored_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and "LOCAL_RETENTION_DAYS" in r.getMessage()
    ]


class TestTierWindow:
    @pytest.mark.parametrize(("tier", "days"), TIERS)
    async def test_the_tier_sets_the_window_the_sweep_applies(
        self, cloud_app_factory: AppFactory, signing_key: SigningKey, tier: str, days: int
    ):
        async with cloud_app_factory(**licensed(signing_key, tier)) as app:
            assert app.services.license.tier.value == tier
            assert await retention_days(app) == days
            assert await app.features.retention.window_days() == days
            assert await sweeps_to(app, days) == [days, days - 1, 0]

    @pytest.mark.parametrize(("tier", "days"), TIERS)
    async def test_local_retention_days_is_ignored_with_one_warning(
        self,
        cloud_app_factory: AppFactory,
        signing_key: SigningKey,
        caplog: pytest.LogCaptureFixture,
        tier: str,
        days: int,
    ):
        with caplog.at_level(logging.WARNING):
            async with cloud_app_factory(LOCAL_RETENTION_DAYS=30, **licensed(signing_key, tier)):
                pass
        warned = ignored_warnings(caplog)
        assert len(warned) == 1, warned
        assert "LOCAL_RETENTION_DAYS=30 is ignored in cloud mode" in warned[0]
        assert f"{days} days now" in warned[0]

    async def test_without_local_retention_days_nothing_is_said(
        self, cloud_app_factory: AppFactory, caplog: pytest.LogCaptureFixture
    ):
        with caplog.at_level(logging.WARNING):
            async with cloud_app_factory() as app:
                assert await retention_days(app) == 7
        assert ignored_warnings(caplog) == []

    async def test_self_hosted_keeps_local_retention_days_and_says_nothing(
        self, memory_app_factory: AppFactory, caplog: pytest.LogCaptureFixture
    ):
        with caplog.at_level(logging.WARNING):
            async with memory_app_factory(LOCAL_RETENTION_DAYS=30) as app:
                assert await retention_days(app) == 30
                assert await sweeps_to(app, 30) == [30, 29, 0]
        assert ignored_warnings(caplog) == []


class TestTierChange:
    async def test_a_licence_applied_at_run_time_moves_the_next_sweeps_window(
        self, cloud_app_factory: AppFactory, signing_key: SigningKey
    ):
        async with cloud_app_factory() as app:
            assert await app.features.retention.window_days() == 7
            applied = await app.client.put(
                "/api/license/offline", json={"token": signing_key.mint(tier="pro")}
            )
            assert applied.status_code == 200, applied.text
            assert await retention_days(app) == 90
            assert await sweeps_to(app, 90) == [90, 89, 0]
            removed = await app.client.delete("/api/license/offline")
            assert removed.status_code == 200, removed.text
            assert await app.features.retention.window_days() == 7


class TestTheSetting:
    @pytest.mark.parametrize("value", [30, None], ids=["days", "forever"])
    async def test_another_window_is_409_naming_the_field_and_the_tier(
        self, cloud_app_factory: AppFactory, value: int | None
    ):
        async with cloud_app_factory() as app:
            refused = await app.client.put(
                "/api/settings", json={"retentionDays": value, "auditPollIntervalMs": 5000}
            )
            assert refused.status_code == 409, refused.text
            body = refused.json()
            assert body["message"].startswith("retentionDays: in cloud mode")
            assert "Community, so 7 days" in body["message"]
            assert "retentionDays" in body.get("fields", [body.get("field")])
            settings = (await app.client.get("/api/settings")).json()["settings"]
            assert (settings["retentionDays"], settings["auditPollIntervalMs"]) == (
                7,
                app.settings.AUDIT_POLL_INTERVAL_MS,
            )

    async def test_the_window_in_force_sent_back_is_no_change(self, cloud_app_factory: AppFactory):
        async with cloud_app_factory() as app:
            saved = await app.client.put(
                "/api/settings", json={"retentionDays": 7, "auditPollIntervalMs": 5000}
            )
            assert saved.status_code == 200, saved.text
            assert saved.json()["settings"]["retentionDays"] == 7
            assert saved.json()["settings"]["auditPollIntervalMs"] == 5000
            reset = await app.client.post("/api/settings/reset")
            assert reset.json()["settings"]["retentionDays"] == 7

    async def test_a_stored_window_waits_for_self_hosted(
        self,
        valkey_server: RunningServer,
        cloud_valkey: RunningServer,
        persistent_storage: dict[str, Any],
    ):
        async with start(valkey_server, persistent_storage) as app:
            saved = await app.client.put("/api/settings", json={"retentionDays": 30})
            assert saved.status_code == 200, saved.text
        async with running_app(cloud_settings(cloud_valkey, **persistent_storage)) as app:
            assert await retention_days(app) == 7
            assert await app.features.retention.window_days() == 7
        async with start(valkey_server, persistent_storage) as app:
            assert await retention_days(app) == 30


class TestTheSettingsPage:
    async def test_another_window_typed_is_refused_on_the_form(self, cloud_app_factory: AppFactory):
        async with cloud_app_factory() as app:
            before = (await app.client.get("/api/settings")).json()["settings"]
            typed = form_of(before, retentionDays=30, auditPollIntervalMs=5000)
            refused = await app.client.post("/ui/settings", data=typed, headers=FROM_PAGE)
            assert refused.status_code == 200, refused.text
            assert 'data-state="invalid"' in refused.text
            row = refused.text.split('data-setting="retentionDays"')[1].split("</tr>")[0]
            assert 'data-field-error="retentionDays"' in row
            assert "Community, so 7 days" in row
            assert (await app.client.get("/api/settings")).json()["settings"] == before
