"""The Settings page: the runtime settings form, saved through the same service as the API."""

from typing import Any

from tests.fixtures.app import AppFactory, RunningApp

# What htmx sends with every request from the page (the UI's CSRF guard wants it).
FROM_PAGE = {"HX-Request": "true", "Content-Type": "application/x-www-form-urlencoded"}


async def api_settings(api: RunningApp) -> dict[str, Any]:
    response = await api.client.get("/api/settings")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def shown(value: Any) -> str:
    """A value as the form holds it: empty for null (the retention window's keep-all), and
    the per-index SLAs as `name=value, name=value`."""
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in sorted(value.items()))
    return "" if value is None else str(value)


def form_of(values: dict[str, Any], **changes: Any) -> dict[str, str]:
    return {k: shown(v) for k, v in {**values, **changes}.items()}


class TestSettingsPage:
    async def test_shows_every_setting_with_its_value_and_source(self, api: RunningApp):
        current = (await api_settings(api))["settings"]
        page = await api.client.get("/settings")
        assert page.status_code == 200
        html = page.text
        for name, value in current.items():
            assert f'name="{name}"' in html
            assert f'value="{shown(value)}"' in html
        assert 'data-source="environment"' in html
        assert "AUDIT_POLL_INTERVAL_MS" in html
        # Memory storage: the page says changes do not survive a restart.
        assert 'data-state="not-persisted"' in html

    async def test_the_page_needs_no_connection(self, memory_app_factory: AppFactory):
        async with memory_app_factory() as app:
            for c in (await app.client.get("/api/connections")).json():
                deleted = await app.client.delete(f"/api/connections/{c['id']}")
                assert deleted.status_code in (200, 204), deleted.text
            assert 'data-state="no-connection"' in (await app.client.get("/")).text
            page = await app.client.get("/settings")
        assert page.status_code == 200
        assert 'data-state="no-connection"' not in page.text
        assert 'name="auditPollIntervalMs"' in page.text

    async def test_saving_changes_what_the_api_returns(self, api: RunningApp):
        before = (await api_settings(api))["settings"]
        wanted = before["auditPollIntervalMs"] + 1234
        response = await api.client.post(
            "/ui/settings", data=form_of(before, auditPollIntervalMs=wanted), headers=FROM_PAGE
        )
        assert response.status_code == 200
        assert 'data-state="saved"' in response.text
        after = await api_settings(api)
        assert after["settings"]["auditPollIntervalMs"] == wanted
        assert after["source"] == "database"
        # Untouched fields keep their values; the changed one says it was saved.
        assert {k: v for k, v in after["settings"].items() if k != "auditPollIntervalMs"} == {
            k: v for k, v in before.items() if k != "auditPollIntervalMs"
        }
        page = (await api.client.get("/settings")).text
        row = page.split('data-setting="auditPollIntervalMs"')[1].split("</tr>")[0]
        assert f'value="{wanted}"' in row
        assert 'data-source="database"' in row

    async def test_reset_goes_back_to_the_environment_defaults(self, api: RunningApp):
        before = (await api_settings(api))["settings"]
        await api.client.post(
            "/ui/settings",
            data=form_of(before, clientAnalyticsPollIntervalMs=4321),
            headers=FROM_PAGE,
        )
        assert (await api_settings(api))["settings"]["clientAnalyticsPollIntervalMs"] == 4321
        response = await api.client.post("/ui/settings/reset", headers=FROM_PAGE)
        assert response.status_code == 200
        assert 'value="4321"' not in response.text
        after = await api_settings(api)
        assert after["settings"] == before
        assert after["source"] == "environment"

    async def test_the_retention_window_is_set_and_cleared_from_the_page(
        self, memory_app_factory: AppFactory
    ):
        async with memory_app_factory(LOCAL_RETENTION_DAYS=30) as app:
            before = (await api_settings(app))["settings"]
            page = (await app.client.get("/settings")).text
            row = page.split('data-setting="retentionDays"')[1].split("</tr>")[0]
            assert 'value="30"' in row
            assert "LOCAL_RETENTION_DAYS" in row
            assert 'data-unit="days"' in row
            saved = await app.client.post(
                "/ui/settings", data=form_of(before, retentionDays=90), headers=FROM_PAGE
            )
            assert 'data-state="saved"' in saved.text
            assert (await api_settings(app))["settings"]["retentionDays"] == 90
            row = saved.text.split('data-setting="retentionDays"')[1].split("</tr>")[0]
            assert 'data-source="database"' in row
            assert "environment default 30 days" in row
            await app.client.post(
                "/ui/settings", data=form_of(before, retentionDays=""), headers=FROM_PAGE
            )
            assert (await api_settings(app))["settings"]["retentionDays"] is None
            refused = await app.client.post(
                "/ui/settings", data=form_of(before, retentionDays=0), headers=FROM_PAGE
            )
            assert 'data-field-error="retentionDays"' in refused.text
            assert "History retention" in refused.text
            assert (await api_settings(app))["settings"]["retentionDays"] is None

    async def test_every_whole_number_typed_is_saved_though_the_api_takes_only_integers(
        self, api: RunningApp
    ):
        """A form sends text; the API refuses "7" for an integer, so the page converts
        what was typed before it validates, and what it stores are integers."""
        before = (await api_settings(api))["settings"]
        numbers = [name for name in before if name != "searchSlaByIndex"]
        typed = {name: f" {index + 11} " for index, name in enumerate(numbers)}
        # The per-index SLAs are typed as name=microseconds pairs.
        typed["searchSlaByIndex"] = " docs_idx = 20000 , cache_idx=0, "
        response = await api.client.post("/ui/settings", data=typed, headers=FROM_PAGE)
        assert response.status_code == 200
        assert 'data-state="saved"' in response.text
        after = (await api_settings(api))["settings"]
        assert after == {
            **{name: index + 11 for index, name in enumerate(numbers)},
            "searchSlaByIndex": {"docs_idx": 20000, "cache_idx": 0},
        }
        page = (await api.client.get("/settings")).text
        assert 'value="cache_idx=0, docs_idx=20000"' in page
        for bad in ("docs_idx", "docs_idx=fast", "=5"):
            refused = await api.client.post(
                "/ui/settings", data=form_of(after, searchSlaByIndex=bad), headers=FROM_PAGE
            )
            assert 'data-field-error="searchSlaByIndex"' in refused.text, bad
            assert "Search SLA per index: write name=microseconds" in refused.text
        refused = await api.client.post(
            "/ui/settings", data=form_of(after, retentionDays="7.0"), headers=FROM_PAGE
        )
        assert 'data-field-error="retentionDays"' in refused.text
        assert "History retention: input should be a valid integer" in refused.text
        assert (await api_settings(api))["settings"] == after

    async def test_a_bad_value_names_the_field_and_stores_nothing(self, api: RunningApp):
        before = await api_settings(api)
        for bad in ("-5", "soon", ""):
            response = await api.client.post(
                "/ui/settings",
                data=form_of(before["settings"], anomalyCacheTtlMs=bad, auditPollIntervalMs=999),
                headers=FROM_PAGE,
            )
            assert response.status_code == 200
            html = response.text
            assert 'data-state="invalid"' in html
            assert 'data-field-error="anomalyCacheTtlMs"' in html
            assert "Anomaly cache lifetime" in html
            # What was typed is shown again, so it can be corrected.
            row = html.split('data-setting="anomalyCacheTtlMs"')[1].split("</tr>")[0]
            assert f'value="{bad}"' in row
            assert 'value="999"' in html
            assert await api_settings(api) == before

    async def test_changes_come_only_from_the_page_itself(self, api: RunningApp):
        before = await api_settings(api)
        response = await api.client.post(
            "/ui/settings",
            data=form_of(before["settings"], auditPollIntervalMs=777),
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
        assert response.status_code == 403
        assert await api_settings(api) == before
