import pytest

from tests.fixtures.app import AppFactory, RunningApp

DEFAULTS = {
    "auditPollIntervalMs": 60000,
    "clientAnalyticsPollIntervalMs": 60000,
    "anomalyPollIntervalMs": 1000,
    "anomalyCacheTtlMs": 3600000,
    "anomalyPrometheusIntervalMs": 30000,
    "fullInfoIntervalMs": 10000,
    "vectorIndexPollIntervalMs": 60000,
    "searchSlaP99Us": 50000,
    "searchSlaByIndex": {},
    "retentionDays": None,  # LOCAL_RETENTION_DAYS unset: keep everything
}


class TestRuntimeSettings:
    async def test_defaults_come_from_the_environment(self, memory_app_factory: AppFactory):
        async with memory_app_factory(AUDIT_POLL_INTERVAL_MS=5000) as app:
            body = (await app.client.get("/api/settings")).json()
        assert body["settings"] == {**DEFAULTS, "auditPollIntervalMs": 5000}
        assert body["source"] == "environment"
        assert body["persisted"] is False

    async def test_partial_update_changes_only_what_was_sent(self, api: RunningApp):
        response = await api.client.put("/api/settings", json={"anomalyPollIntervalMs": 2500})
        assert response.status_code == 200
        assert response.json()["settings"] == {**DEFAULTS, "anomalyPollIntervalMs": 2500}
        again = (await api.client.get("/api/settings")).json()
        assert again["settings"]["anomalyPollIntervalMs"] == 2500
        assert again["source"] == "database"
        assert isinstance(again["updatedAt"], int)

    @pytest.mark.parametrize(
        ("body", "field"),
        [
            pytest.param({"auditPollIntervalMs": 0}, "auditPollIntervalMs", id="zero"),
            pytest.param({"anomalyCacheTtlMs": -5}, "anomalyCacheTtlMs", id="negative"),
            pytest.param({"anomalyPollIntervalMs": "soon"}, "anomalyPollIntervalMs", id="text"),
            pytest.param({"anomalyPollIntervalMs": 1.5}, "anomalyPollIntervalMs", id="fraction"),
            pytest.param({"fullInfoIntervalMs": -1}, "fullInfoIntervalMs", id="full-negative"),
            pytest.param({"fullInfoIntervalMs": "10s"}, "fullInfoIntervalMs", id="full-text"),
            pytest.param({"pollEverything": 10}, "pollEverything", id="unknown-name"),
        ],
    )
    async def test_bad_value_422s_naming_the_field_and_keeps_stored(
        self, api: RunningApp, body: dict[str, object], field: str
    ):
        await api.client.put("/api/settings", json={"auditPollIntervalMs": 7000})
        response = await api.client.put("/api/settings", json=body)
        assert response.status_code == 422
        assert field in response.json()["fields"]
        assert field in response.json()["message"]
        current = (await api.client.get("/api/settings")).json()["settings"]
        assert current["auditPollIntervalMs"] == 7000

    @pytest.mark.parametrize("field", [f for f in DEFAULTS if f != "searchSlaByIndex"])
    @pytest.mark.parametrize(
        "value",
        [
            pytest.param(True, id="true"),
            pytest.param(False, id="false"),
            pytest.param("7", id="numeric-string"),
            pytest.param(7.0, id="whole-float"),
        ],
    )
    async def test_only_a_json_integer_is_taken_for_an_integer_setting(
        self, api: RunningApp, field: str, value: object
    ):
        """`retentionDays: true` was read as 1 day (the next sweep deleting all history
        older), and "7" or 7.0 as 7, where the docs say only an integer is taken."""
        await api.client.put("/api/settings", json={field: 9000})
        response = await api.client.put("/api/settings", json={field: value})
        assert response.status_code == 422, response.text
        body = response.json()
        assert field in body["fields"]
        assert field in body["message"]
        assert "integer" in body["message"]
        assert (await api.client.get("/api/settings")).json()["settings"][field] == 9000

    @pytest.mark.parametrize(
        "value",
        [
            pytest.param({"docs_idx": "7"}, id="numeric-string"),
            pytest.param({"docs_idx": -1}, id="negative"),
            pytest.param({"": 5}, id="empty-name"),
            pytest.param([["docs_idx", 5]], id="not-an-object"),
        ],
    )
    async def test_per_index_slas_take_names_and_whole_microseconds(
        self, api: RunningApp, value: object
    ):
        await api.client.put("/api/settings", json={"searchSlaByIndex": {"docs_idx": 20000}})
        response = await api.client.put("/api/settings", json={"searchSlaByIndex": value})
        assert response.status_code == 422, response.text
        assert "searchSlaByIndex" in response.json()["message"]
        current = (await api.client.get("/api/settings")).json()["settings"]
        assert current["searchSlaByIndex"] == {"docs_idx": 20000}

    async def test_reset_returns_to_environment_defaults(self, api: RunningApp):
        await api.client.put("/api/settings", json={"anomalyCacheTtlMs": 10})
        response = await api.client.post("/api/settings/reset")
        assert response.status_code == 200
        assert response.json()["settings"] == DEFAULTS
        assert response.json()["source"] == "environment"
        assert (await api.client.get("/api/settings")).json()["settings"] == DEFAULTS

    async def test_changes_survive_a_restart(self, valkey_server, persistent_storage):
        from tests.fixtures.app import make_settings, running_app, target_of

        settings = make_settings(**target_of(valkey_server), **persistent_storage)
        async with running_app(settings) as app:
            await app.client.put("/api/settings", json={"clientAnalyticsPollIntervalMs": 1234})
        async with running_app(settings) as app:
            body = (await app.client.get("/api/settings")).json()
        assert body["settings"]["clientAnalyticsPollIntervalMs"] == 1234
        assert body["persisted"] is True

    async def test_memory_storage_forgets_on_restart(self, memory_app_factory: AppFactory):
        async with memory_app_factory() as app:
            await app.client.put("/api/settings", json={"auditPollIntervalMs": 4321})
        async with memory_app_factory() as app:
            body = (await app.client.get("/api/settings")).json()
        assert body["settings"] == DEFAULTS
