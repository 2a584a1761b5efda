"""The polls on a server that lacks commands (renamed away, disabled by a provider, denied):
each is probed once per connection, then neither asked for again nor reported; a reconnect
probes afresh and polling resumes."""

import logging
from collections.abc import Callable
from typing import Any

import pytest

from svc_monitor.engine.ledger import CommandCost
from tests.fixtures.app import AppFactory, RunningApp, target_of
from tests.fixtures.servers import RunningServer, ServerFactory
from tests.fixtures.waiting import eventually

FAST = {
    "ANOMALY_POLL_INTERVAL_MS": 100,
    "HISTORY_SAMPLE_INTERVAL_MS": 100,
    "SLOWLOG_POLL_INTERVAL_MS": 100,
    "CONFIG_WATCH_INTERVAL_MS": 100,
    "LATENCY_POLL_INTERVAL_MS": 100,
    "COMMANDSTATS_POLL_INTERVAL_MS": 100,
    "AUDIT_POLL_INTERVAL_MS": 100,
    "CLIENT_ANALYTICS_POLL_INTERVAL_MS": 100,
    "ENGINE_CONNECT_TIMEOUT_MS": 300,
    "ENGINE_COMMAND_TIMEOUT_MS": 500,
}
LOGS_EVERYTHING = {"slowlog-log-slower-than": "0", "slowlog-max-len": "1024"}
RENAMED = {"rename-command": ['CONFIG ""', 'SLOWLOG ""'], **LOGS_EVERYTHING}
# Every poll kind that could ask for CONFIG, SLOWLOG, ACL or COMMANDLOG.
KINDS = ("info", "slowlog", "commandlog", "config_watch", "audit", "latency")
CYCLES = 5


async def cycles_pass(app: RunningApp, count: int = CYCLES) -> None:
    """Wait until every poll kind has run `count` more passes."""

    def loops() -> dict[str, Any]:
        return dict(app.features.supervisor.loops_of("env-default"))

    async def started() -> bool:
        return all(k in loops() for k in KINDS)

    await eventually(started)
    start = {k: loops()[k].ticks for k in KINDS}

    async def passed() -> bool:
        return all(loops()[k].ticks >= start[k] + count for k in KINDS)

    await eventually(passed)


async def capabilities(app: RunningApp) -> dict[str, bool]:
    database = (await app.client.get("/health")).json()["database"]
    assert database["status"] == "connected", database
    caps: dict[str, bool] = database["capabilities"]
    return caps


async def sent(app: RunningApp) -> dict[str, CommandCost]:
    connection = await app.services.connections.get("env-default")
    return app.services.connections.ledger(connection).costs()


def after_detection(records: list[logging.LogRecord]) -> list[logging.LogRecord]:
    """The records after the probe that found the commands missing (logged once, at info)."""
    probe = next(
        i
        for i, r in enumerate(records)
        if r.name == "svc_monitor.engine.capabilities" and "not available" in r.getMessage()
    )
    assert records[probe].levelno == logging.INFO
    return records[probe + 1 :]


def loud(records: list[logging.LogRecord]) -> list[str]:
    return [
        f"{r.levelname} {r.name}: {r.getMessage()}"
        for r in records
        if r.name.startswith("svc_monitor") and r.levelno >= logging.WARNING
    ]


class TestPollsWithoutACommand:
    async def test_renamed_config_and_slowlog_are_probed_once_then_never_sent_or_reported(
        self,
        memory_app_factory: AppFactory,
        fresh: Callable[..., RunningServer],
        caplog: pytest.LogCaptureFixture,
    ):
        server = fresh("valkey", config=RENAMED)
        caplog.set_level(logging.DEBUG, logger="svc_monitor")
        async with memory_app_factory(**FAST, **target_of(server)) as app:
            await cycles_pass(app)
            caps = await capabilities(app)
            costs = await sent(app)
            loops = app.features.supervisor.loops_of("env-default")
            failures = {k: loops[k].failures for k in KINDS}
        assert caps == {
            "hasCommandLog": True,
            "hasSlotStats": True,
            "hasClusterSlotStats": True,
            "hasLatencyMonitor": True,
            "hasAclLog": True,
            "hasMemoryDoctor": True,
            "hasConfig": False,
            "hasSlowLog": False,
            "hasMonitor": True,
        }
        # The probe's one SLOWLOG GET and one CONFIG GET; no poll asked for either after it.
        assert costs["SLOWLOG GET"].calls == 1
        assert costs["CONFIG GET"].calls == 1
        assert "SLOWLOG LEN" not in costs
        assert failures == dict.fromkeys(KINDS, 0)
        assert loud(after_detection(caplog.records)) == []
        polls = ("svc_monitor.polling", "svc_monitor.detection")
        refusals = [
            r.getMessage()
            for r in caplog.records
            if r.name.startswith(polls) and "refused" in r.getMessage()
        ]
        assert refusals == []  # not even at debug: nothing was sent to be refused

    async def test_a_user_denied_slowlog_leaves_one_acl_log_entry_for_the_probe_only(
        self,
        memory_app_factory: AppFactory,
        fresh: Callable[..., RunningServer],
        caplog: pytest.LogCaptureFixture,
    ):
        server = fresh(
            "valkey", config=LOGS_EVERYTHING, acl_users=["watcher on >pw ~* &* +@all -slowlog"]
        )
        caplog.set_level(logging.DEBUG, logger="svc_monitor")
        settings: dict[str, Any] = {**FAST, **target_of(server)}
        async with memory_app_factory(**settings, DB_USERNAME="watcher", DB_PASSWORD="pw") as app:
            await cycles_pass(app)
            caps = await capabilities(app)
            costs = await sent(app)
        assert caps["hasSlowLog"] is False
        assert [k for k, v in caps.items() if not v] == ["hasSlowLog"]
        assert costs["SLOWLOG GET"].calls == 1
        with server.client() as admin:
            denied = [e for e in admin.acl_log() if str(e["object"]).startswith("slowlog")]
        # The audit trail we keep is not filled with our own refusals, poll after poll.
        assert sum(int(e["count"]) for e in denied) == 1
        assert loud(after_detection(caplog.records)) == []

    async def test_a_normal_valkey_has_every_command_and_its_slow_log_is_polled(
        self, memory_app_factory: AppFactory, fresh: Callable[..., RunningServer]
    ):
        server = fresh("valkey", config=LOGS_EVERYTHING)
        async with memory_app_factory(**FAST, **target_of(server)) as app:
            caps = await capabilities(app)  # detected: every pass from now on reads the log
            await cycles_pass(app)
            costs = await sent(app)
        assert all(caps.values()), caps
        assert costs["SLOWLOG GET"].calls >= 1 + CYCLES  # the probe, then one per pass

    async def test_a_reconnect_finds_slowlog_back_and_polling_resumes(
        self, memory_app_factory: AppFactory, server_factory: ServerFactory
    ):
        server = server_factory.start("valkey", config=RENAMED)
        try:
            async with memory_app_factory(**FAST, **target_of(server)) as app:
                await cycles_pass(app)
                assert (await capabilities(app))["hasSlowLog"] is False
                # The provider's plan changes: the same server comes back with SLOWLOG.
                server_factory.stop(server)
                conf = server.workdir / "server.conf"
                lines = conf.read_text().splitlines()
                conf.write_text("\n".join(x for x in lines if "SLOWLOG" not in x) + "\n")

                async def down() -> bool:
                    health = (await app.client.get("/health")).json()["database"]
                    return bool(health["status"] == "disconnected")

                await eventually(down)
                server = server_factory.start_again(server)

                async def slowlog_back() -> bool:
                    health = (await app.client.get("/health")).json()["database"]
                    caps = health.get("capabilities") or {}
                    return health["status"] == "connected" and caps.get("hasSlowLog") is True

                await eventually(slowlog_back, within=20)
                with server.client() as conn:
                    conn.echo("after-the-plan-change")

                async def stored() -> bool:
                    rows = (await app.client.get("/api/slowlog-analytics/entries")).json()
                    return isinstance(rows, list) and any(
                        "after-the-plan-change" in r["args"] for r in rows
                    )

                await eventually(stored)
                assert (await capabilities(app))["hasConfig"] is False  # still renamed
        finally:
            server_factory.stop(server)
