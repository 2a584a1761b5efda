"""GET /api/metric-forecasting/{kind}/forecast over history recorded through the real
history path, and the settings routes (validation; persistence on sqlite and postgres)."""

import statistics
import time
from typing import Any

import pytest

from tests.fixtures.app import AppFactory, RunningApp, make_settings, running_app
from tests.fixtures.servers import RunningServer
from tests.forecast.history import (
    MB,
    MINUTE_MS,
    Fields,
    get,
    push_connection,
    record,
    steady_memory,
)

FORECAST = "/api/metric-forecasting/{}/forecast"
SETTINGS = "/api/metric-forecasting/{}/settings"
MAXMEMORY = 512 * MB


async def put(app: RunningApp, kind: str, connection_id: str, body: Any) -> Any:
    headers = {"X-Connection-Id": connection_id} if connection_id else {}
    return await app.client.put(SETTINGS.format(kind), json=body, headers=headers)


class TestForecast:
    async def test_a_steady_rise_projects_the_time_to_maxmemory(self, api: RunningApp):
        connection = await push_connection(api)
        # 100 MB rising 1 MB a minute for two hours, maxmemory 512 MB
        times = await record(
            api, connection, samples=121, fields=steady_memory(100 * MB, MB, maxmemory=MAXMEMORY)
        )
        before = int(time.time() * 1000)
        body = await get(api, FORECAST.format("usedMemory"), connection)
        after = int(time.time() * 1000)
        # independently: the line is 100 MB at times[0] and gains 1 MB per minute
        crossing = times[0] + (MAXMEMORY - 100 * MB) / MB * MINUTE_MS
        assert body["mode"] == "forecast"
        assert body["ceiling"] == MAXMEMORY
        assert body["currentValue"] == 220 * MB
        assert body["growthRate"] == pytest.approx(60 * MB)  # per hour
        assert body["trendDirection"] == "rising"
        assert body["dataPointCount"] == 121
        assert crossing - after - 1 <= body["timeToLimitMs"] <= crossing - before + 1
        # a perfectly steady rise: the band closes on the estimate
        assert abs(body["timeToLimitLowMs"] - body["timeToLimitMs"]) < 1_000
        assert abs(body["timeToLimitHighMs"] - body["timeToLimitMs"]) < 1_000
        assert body["timeToLimitHuman"] == "~4.9h at current growth rate"
        assert body["insufficientData"] is False
        assert len(body["points"]) == 121
        start, end = body["projection"]
        assert start["value"] == pytest.approx(100 * MB)
        assert end["value"] == pytest.approx(MAXMEMORY, rel=1e-6)

    async def test_every_storage_backend_gives_the_same_answer(self, app_factory: AppFactory):
        async with app_factory() as app:
            connection = await push_connection(app)
            times = await record(
                app,
                connection,
                samples=61,
                fields=lambda i: {
                    **steady_memory(100 * MB, MB, maxmemory=MAXMEMORY)(i),
                    "mem_fragmentation_ratio": 1.0 + 0.004 * i,
                },
            )
            before = int(time.time() * 1000)
            memory = await get(app, FORECAST.format("usedMemory"), connection)
            fragmentation = await get(app, FORECAST.format("memFragmentation"), connection)
            after = int(time.time() * 1000)
        crossing = times[0] + (MAXMEMORY - 100 * MB) / MB * MINUTE_MS
        assert crossing - after - 1 <= memory["timeToLimitMs"] <= crossing - before + 1
        # 1.0 + 0.004 a minute reaches 1.5 after 125 minutes
        crossing = times[0] + 125 * MINUTE_MS
        assert crossing - after - 1 <= fragmentation["timeToLimitMs"] <= crossing - before + 1

    async def test_gaps_and_missing_samples_do_not_bend_the_line(self, api: RunningApp):
        connection = await push_connection(api)
        steady = steady_memory(100 * MB, MB, maxmemory=MAXMEMORY)

        def holey(i: int) -> Fields:
            fields = steady(i)
            if i % 3 == 0:  # a sample without used_memory (a field a Collector did not push)
                fields["used_memory"] = None
            return fields

        times = await record(api, connection, samples=121, fields=holey)
        # and another with 30 minutes of no used_memory at all (an instance down, say)
        gappy = await push_connection(api, port=6391)
        gappy_times = await record(
            api,
            gappy,
            samples=121,
            fields=lambda i: holey(i) if not 40 <= i < 70 else {"used_memory": None},
        )
        for connection_id, first, count in (
            (connection, times[0], 80),
            (gappy, gappy_times[0], 60),
        ):
            crossing = first + (MAXMEMORY - 100 * MB) / MB * MINUTE_MS
            before = int(time.time() * 1000)
            body = await get(api, FORECAST.format("usedMemory"), connection_id)
            after = int(time.time() * 1000)
            assert body["dataPointCount"] == count
            # Counted from the moment the answer was made, somewhere in [before, after].
            assert crossing - after - 1 <= body["timeToLimitMs"] <= crossing - before + 1

    async def test_noise_gives_a_band_around_the_least_squares_answer(self, api: RunningApp):
        connection = await push_connection(api)
        noise = [0.01, -0.008, 0.004, -0.012, 0.006, 0.0, 0.009, -0.005]

        def fragmentation(i: int) -> Fields:
            return {"mem_fragmentation_ratio": round(1.0 + 0.002 * i + noise[i % 8], 4)}

        times = await record(api, connection, samples=121, fields=fragmentation)
        before = int(time.time() * 1000)
        body = await get(api, FORECAST.format("memFragmentation"), connection)
        after = int(time.time() * 1000)
        values = [fragmentation(i)["mem_fragmentation_ratio"] for i in range(121)]
        fit = statistics.linear_regression(times, values)  # type: ignore[arg-type]
        crossing = (1.5 - fit.intercept) / fit.slope
        assert body["ceiling"] == 1.5  # the kind's default
        assert body["growthRate"] == pytest.approx(fit.slope * 3_600_000, rel=1e-6)
        # Counted from the moment the answer was made (a loaded CI run once took 6 s for it).
        assert crossing - after - 5 <= body["timeToLimitMs"] <= crossing - before + 5
        assert body["timeToLimitLowMs"] < body["timeToLimitMs"] < body["timeToLimitHighMs"]

    async def test_ops_without_a_ceiling_is_a_trend(self, api: RunningApp):
        connection = await push_connection(api)
        await record(
            api, connection, samples=121, fields=lambda i: {"instantaneous_ops_per_sec": 100 + i}
        )
        body = await get(api, FORECAST.format("opsPerSec"), connection)
        assert body["mode"] == "trend"
        assert body["ceiling"] is None
        assert body["timeToLimitMs"] is None
        assert body["growthPercent"] == pytest.approx(120.0)
        assert body["timeToLimitHuman"] == "+120.0% over 2.0h, rising"

    async def test_under_thirty_minutes_is_insufficient(self, api: RunningApp):
        connection = await push_connection(api)
        empty = await get(api, FORECAST.format("usedMemory"), connection)
        await record(api, connection, samples=20, fields=steady_memory(MB, MB, maxmemory=MAXMEMORY))
        short = await get(api, FORECAST.format("usedMemory"), connection)
        for body, count in ((empty, 0), (short, 20)):
            assert body["insufficientData"] is True
            assert body["dataPointCount"] == count
            assert body["timeToLimitMs"] is None
            assert body["insufficientDataMessage"] == (
                "Data will be available shortly. At least 30 minutes of monitoring history "
                "required."
            )

    async def test_a_ceiling_already_reached_is_zero(self, api: RunningApp):
        connection = await push_connection(api)
        await record(
            api, connection, samples=61, fields=steady_memory(500 * MB, MB, maxmemory=MAXMEMORY)
        )
        body = await get(api, FORECAST.format("usedMemory"), connection)
        assert (body["timeToLimitMs"], body["timeToLimitHuman"]) == (0, "Ceiling already exceeded")

    async def test_an_unknown_kind_names_the_valid_ones(self, api: RunningApp):
        for path in (FORECAST, SETTINGS):
            answer = await api.client.get(path.format("usedCpu"))
            assert answer.status_code == 400
            assert answer.json()["message"] == (
                "Invalid metric kind 'usedCpu'. Valid kinds: usedMemory, opsPerSec, cpuTotal, "
                "memFragmentation"
            )

    async def test_an_unknown_connection_404s(self, api: RunningApp):
        answer = await api.client.get(
            FORECAST.format("usedMemory"), headers={"X-Connection-Id": "nope"}
        )
        assert answer.status_code == 404


class TestSettings:
    async def test_defaults_until_saved(self, api: RunningApp):
        connection = await push_connection(api)
        body = await get(api, SETTINGS.format("cpuTotal"), connection)
        assert body == {
            "connectionId": connection,
            "metricKind": "cpuTotal",
            "enabled": True,
            "ceiling": None,
            "defaultCeiling": 100.0,
            "rollingWindowMs": 21_600_000,
            "alertThresholdMs": 7_200_000,
            "updatedAt": None,
        }

    @pytest.mark.parametrize(
        ("body", "field"),
        [
            ({"rollingWindowMs": 59_999}, "rollingWindowMs"),
            ({"rollingWindowMs": 86_400_001}, "rollingWindowMs"),
            ({"alertThresholdMs": 1000}, "alertThresholdMs"),
            ({"ceiling": 0}, "ceiling"),
            ({"ceiling": "lots"}, "ceiling"),
            ({"enabled": "maybe"}, "enabled"),
            ({"windowMs": 60_000}, "windowMs"),
        ],
    )
    async def test_bad_values_are_refused_naming_the_field(
        self, api: RunningApp, body: dict[str, Any], field: str
    ):
        answer = await put(api, "usedMemory", "", body)
        assert answer.status_code == 422, answer.text
        assert field in answer.json()["message"]

    async def test_a_ceiling_and_window_change_the_forecast(self, api: RunningApp):
        connection = await push_connection(api)
        await record(
            api, connection, samples=121, fields=steady_memory(100 * MB, MB, maxmemory=MAXMEMORY)
        )
        saved = await put(api, "usedMemory", connection, {"ceiling": 400 * MB})
        assert saved.status_code == 200, saved.text
        assert saved.json()["ceiling"] == 400 * MB
        assert saved.json()["updatedAt"] is not None
        body = await get(api, FORECAST.format("usedMemory"), connection)
        assert body["ceiling"] == 400 * MB
        assert body["timeToLimitHuman"] == "~3.0h at current growth rate"  # 180 MB at 1 MB/min
        # a 20-minute window holds too little; null goes back to maxmemory
        await put(api, "usedMemory", connection, {"ceiling": None, "rollingWindowMs": 1_200_000})
        body = await get(api, FORECAST.format("usedMemory"), connection)
        assert (body["ceiling"], body["insufficientData"]) == (MAXMEMORY, True)
        # enabled: false
        await put(api, "usedMemory", connection, {"enabled": False})
        body = await get(api, FORECAST.format("usedMemory"), connection)
        assert body["enabled"] is False
        assert body["timeToLimitMs"] is None
        settings = await get(api, SETTINGS.format("usedMemory"), connection)
        assert settings["rollingWindowMs"] == 1_200_000
        assert settings["ceiling"] is None

    async def test_the_master_switch_turns_every_metric_off(self, memory_app_factory: AppFactory):
        async with memory_app_factory(METRIC_FORECASTING_ENABLED=False) as app:
            connection = await push_connection(app)
            await record(
                app, connection, samples=61, fields=steady_memory(MB, MB, maxmemory=MAXMEMORY)
            )
            body = await get(app, FORECAST.format("usedMemory"), connection)
            settings = await get(app, SETTINGS.format("usedMemory"), connection)
        assert body["enabled"] is False
        assert settings["enabled"] is False

    async def test_environment_defaults(self, memory_app_factory: AppFactory):
        async with memory_app_factory(
            METRIC_FORECASTING_DEFAULT_ROLLING_WINDOW_MS=3_600_000,
            METRIC_FORECASTING_DEFAULT_ALERT_THRESHOLD_MS=600_000,
        ) as app:
            body = await get(app, SETTINGS.format("opsPerSec"), "")
        assert (body["rollingWindowMs"], body["alertThresholdMs"]) == (3_600_000, 600_000)

    async def test_saved_settings_survive_a_restart(
        self, persistent_storage: dict[str, Any], valkey_server: RunningServer
    ):
        settings = make_settings(
            DB_HOST=valkey_server.host, DB_PORT=valkey_server.port, **persistent_storage
        )
        async with running_app(settings) as app:
            connection = await push_connection(app)
            saved = await put(
                app, "memFragmentation", connection, {"ceiling": 2.5, "alertThresholdMs": 600_000}
            )
            assert saved.status_code == 200, saved.text
        async with running_app(settings) as app:
            body = await get(app, SETTINGS.format("memFragmentation"), connection)
            other = await get(app, SETTINGS.format("cpuTotal"), connection)
        assert (body["ceiling"], body["alertThresholdMs"], body["enabled"]) == (2.5, 600_000, True)
        assert other["updatedAt"] is None
