"""What the log polls ask a quiet Valkey: the slow log once a pass under one of its two
names, and COMMANDLOG's size logs only when the server's byte counters say an entry may
have come. What reaches the views is the same as when every log was asked every pass."""

from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from tests.fixtures.app import AppFactory, RunningApp, target_of
from tests.fixtures.servers import RunningServer
from tests.fixtures.waiting import eventually
from tests.slowlog.test_api import new_tag, tagged, ticks_pass

FAST = {
    "ANOMALY_POLL_INTERVAL_MS": 100,
    "SLOWLOG_POLL_INTERVAL_MS": 100,
    "CONFIG_WATCH_INTERVAL_MS": 200,
}
# Every command is slow; the size logs keep their default 1 MiB thresholds.
LOGS_EVERYTHING = {"slowlog-log-slower-than": "0", "slowlog-max-len": "1024"}
ENTRIES = "/api/commandlog-analytics/entries"


def commandlog_lens(app: RunningApp, connection: Any) -> int:
    return app.services.connections.ledger(connection).costs()["COMMANDLOG LEN"].calls


async def commandlog_length(app: RunningApp, log_type: str) -> float | None:
    """The length the Prometheus endpoint reports for a command log."""
    text = (await app.client.get("/api/prometheus/metrics")).text
    name = "svc_commandlog_" + log_type.replace("-", "_")
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name:
                return sample.value
    return None


async def test_a_quiet_server_is_asked_only_what_can_have_changed(
    memory_app_factory: AppFactory, fresh: Any
) -> None:
    server: RunningServer = fresh("valkey", config=LOGS_EVERYTHING)
    tag = new_tag()
    async with memory_app_factory(**FAST, **target_of(server)) as app:
        with server.client() as conn:
            conn.set(f"{tag}:k", "v")

        async def in_both_views() -> bool:
            slow = await tagged(app, tag, ENTRIES, type="slow")
            return bool(await tagged(app, tag)) and bool(slow)

        await eventually(in_both_views)
        await ticks_pass(app, "config_watch", 1)  # the thresholds are known
        await ticks_pass(app, "commandlog", 2)
        connection = await app.services.connections.get("env-default")
        settled = commandlog_lens(app, connection)
        await ticks_pass(app, "commandlog", 10)
        quiet = commandlog_lens(app, connection) - settled
    # SLOWLOG is COMMANDLOG's slow log: the slowlog pass reads it for both views, and the
    # size logs grew by nothing like their 1 MiB since they were last asked.
    assert quiet == 0


async def test_a_large_request_is_found_as_soon_as_before_and_a_reset_is_seen(
    memory_app_factory: AppFactory, fresh: Any
) -> None:
    server: RunningServer = fresh("valkey")
    tag = new_tag()
    async with memory_app_factory(**FAST, **target_of(server)) as app:
        await ticks_pass(app, "config_watch", 1)
        await ticks_pass(app, "commandlog", 3)
        with server.client() as conn:
            conn.set(f"{tag}:big", "x" * (2 << 20))  # over the 1 MiB default

        async def stored() -> bool:
            return bool(await tagged(app, tag, ENTRIES, type="large-request"))

        await eventually(stored, within=3)  # a pass or two, as when every pass asked

        async def length_is(value: float) -> bool:
            return await commandlog_length(app, "large-request") == value

        await eventually(lambda: length_is(1))
        reset = await app.client.delete("/api/metrics/commandlog", params={"type": "large-request"})
        assert reset.status_code == 200, reset.text
        await eventually(lambda: length_is(0), within=3)
