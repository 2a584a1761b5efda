"""`diagnose` against a served app and real servers: each induced problem comes first."""

import time
from collections.abc import Callable

import pytest
import valkey

from svc_monitor.app import create_app
from svc_monitor.engine.info import parse_info
from svc_monitor.mcp.caller_protocol import ToolRefused
from svc_monitor.mcp.diagnose import diagnose
from svc_monitor.pipe.observation import Observation
from tests.anomaly.info import info_text, rewrite, steady_load
from tests.fixtures.licensing import SigningKey
from tests.fixtures.receiver import Receiver
from tests.fixtures.servers import RunningServer, ServerFactory
from tests.fixtures.waiting import eventually
from tests.mcp.rest_caller import HttpApiCaller, served_as_owner, served_settings

Fresh = Callable[..., RunningServer]
# About 50 ms of Lua on this machine: well over the 10 ms a command must take to be slow.
BUSY_SCRIPT = "local i = 0 while i < 5000000 do i = i + 1 end return i"
VALUE = "v" * 8192


def fill_to(server: RunningServer, share: float) -> None:
    """Write 8 KB values until used_memory reaches `share` of maxmemory."""
    with server.client() as conn:
        limit = int(conn.config_get("maxmemory")["maxmemory"])
        for batch in range(2000):  # bounded: 2000 x 50 x 8 KB is far over any test limit
            if int(conn.info("memory")["used_memory"]) >= share * limit:
                return
            pipe = conn.pipeline(transaction=False)
            for n in range(50):
                pipe.set(f"fill:{batch}:{n}", VALUE)
            pipe.execute()
    raise AssertionError("the server did not fill up")


async def cve_scanned(api: HttpApiCaller) -> None:
    async def scanned() -> bool:
        report = await api.get("/api/cve/findings")
        return bool(report.get("status") == "scanned")

    await eventually(scanned, within=20)


class TestDiagnoseNamesTheInducedProblemFirst:
    async def test_a_server_filled_near_its_maxmemory(self, fresh: Fresh):
        server = fresh("valkey", config={"maxmemory": "20mb", "maxmemory-policy": "noeviction"})
        fill_to(server, 0.95)
        with server.client() as conn, pytest.raises(valkey.exceptions.OutOfMemoryError):
            conn.set("one-more", VALUE * 200)
        async with served_as_owner(served_settings(server)) as api:
            result = await diagnose(api)

        first = result.problems[0]
        assert (first.severity, first.source) == ("critical", "info")
        assert first.title.startswith("Memory at 9"), first.title
        assert "of maxmemory 20 MB" in first.evidence[0]
        assert "writes will be refused with OOM" in first.evidence[1]
        rejected = [p.severity for p in result.problems if "writes rejected" in p.title]
        assert rejected == ["critical"]
        assert result.to_text().split("\n1. ")[1].startswith("**CRITICAL** Memory at 9")

    async def test_a_slow_command_burst(self, fresh: Fresh):
        server = fresh("valkey")
        with server.client() as conn:
            for _ in range(4):
                conn.eval(BUSY_SCRIPT, 0)
        async with served_as_owner(served_settings(server)) as api:
            result = await diagnose(api)

        first = result.problems[0]
        assert first.source == "slowlog"
        assert first.title.startswith("Slow «EVAL» burst: 4 calls, slowest"), first.title
        assert "4 «EVAL» calls over 10 ms" in first.evidence[0]
        # The script is the server's text, shown as data with its markup escaped.
        assert "while i &lt; 5000000" in first.evidence[1]

    async def test_a_replica_whose_master_link_is_down(
        self, fresh: Fresh, server_factory: ServerFactory
    ):
        master = fresh("valkey")
        replica = fresh("valkey", replica_of=master)
        server_factory.stop(master)
        with replica.client() as conn:

            async def link_down() -> bool:
                return bool(conn.info("replication")["master_link_status"] == "down")

            await eventually(link_down, within=10)
        async with served_as_owner(served_settings(replica)) as api:
            result = await diagnose(api)

        first = result.problems[0]
        assert first.severity == "critical"
        assert first.title == f"Replication link to master «127.0.0.1:{master.port}» is down"
        assert first.evidence[0].startswith(
            f"master_link_status «down» to «127.0.0.1:{master.port}»"
        )

    async def test_an_old_redis_with_known_cves(self, fresh: Fresh):
        server = fresh("redis6")
        async with served_as_owner(served_settings(server)) as api:
            await cve_scanned(api)
            result = await diagnose(api)

        first = result.problems[0]
        assert (first.severity, first.source) == ("critical", "cve")
        assert "known CVEs in redis «6.2" in first.title, first.title
        assert any(line.startswith("CVE-") for line in first.evidence)
        assert first.next_step.startswith("Upgrade to ")
        # Redis 6.2 refuses INFO with several sections; the whole INFO is read instead.
        assert result.unchecked == ()


class TestDiagnoseUsesTheUsersThresholds:
    async def test_a_webhooks_memory_threshold_makes_the_problem_critical(
        self, fresh: Fresh, receiver: Receiver
    ):
        server = fresh("valkey", config={"maxmemory": "20mb"})
        fill_to(server, 0.70)
        # Development mode lets a webhook point at a loopback receiver.
        settings = served_settings(server, NODE_ENV="development")
        async with served_as_owner(settings) as api:
            quiet = await diagnose(api)
            await api.send(
                "POST",
                "/api/webhooks",
                body={
                    "name": "pager",
                    "url": receiver.url(),
                    "events": ["instance.down"],
                    "thresholds": {"memoryCriticalPercent": 60},
                },
            )
            result = await diagnose(api)

        # 70 % is under the product's own warning level, but over the user's 60 %.
        assert [p for p in quiet.problems if p.title.startswith("Memory at")] == []
        first = result.problems[0]
        assert (first.severity, first.title[:11]) == ("critical", "Memory at 7")
        assert "over the 60 % memoryCriticalPercent of webhook 'pager'" in first.evidence[0]


class TestDiagnoseWithAnomalyDetection:
    async def test_an_unresolved_anomaly_is_named_with_its_numbers(
        self, valkey_server: RunningServer, signing_key: SigningKey
    ):
        settings = served_settings(
            valkey_server, NODE_ENV="development", SVC_OFFLINE_LICENSE=signing_key.mint(tier="pro")
        )
        app = create_app(settings)
        async with served_as_owner(settings, app=app) as api:
            made = await api.send(
                "POST",
                "/api/connections",
                body={"source": "push", "name": "pushed", "host": "10.9.9.7", "port": 6392},
            )
            # Two minutes of steady samples, then memory jumps: what the detector sees from
            # a pushed instance, stamped in the last few minutes.
            anomaly = app.state.features.anomaly
            text = info_text(valkey_server)
            start = int(time.time() * 1000) - 200_000
            for i, info in enumerate(steady_load(text, 120, seed=3)):
                anomaly.observe(Observation(made["id"], start + i * 1000, info))
            odd = parse_info(rewrite(text, {"used_memory": 90_000_000}))
            for i in range(120, 123):
                anomaly.observe(Observation(made["id"], start + i * 1000, odd))
            await anomaly.flush(everything=True)
            result = await diagnose(api, "pushed")

        first = result.problems[0]
        assert first.source == "anomalies"
        assert first.title.startswith("Anomaly on memory_used: spike, 85.8 MB against a usual ")
        assert first.evidence[0].startswith("memory_used 85.8 MB against a baseline of ")
        # Pro includes anomalies; a pushed connection has no slow log to read.
        assert [s.split(":")[0] for s in result.skipped] == ["slow log"]


class TestDiagnoseOnAHealthyFleet:
    async def test_a_healthy_server_has_no_critical_problem(self, valkey_server: RunningServer):
        async with served_as_owner(served_settings(valkey_server)) as api:
            result = await diagnose(api)

        assert [p for p in result.problems if p.severity == "critical"] == []
        assert result.unchecked == ()
        # Anomaly detection is a Pro feature: skipped with the tier named, never an error.
        assert any(s.startswith("anomalies:") and "Pro" in s for s in result.skipped)
        assert result.to_dict()["connections"] == ["Default"]

    async def test_the_fleet_ranks_the_sick_instance_first(
        self, valkey_server: RunningServer, fresh: Fresh
    ):
        sick = fresh("valkey", config={"maxmemory": "20mb"})
        fill_to(sick, 0.92)
        async with served_as_owner(served_settings(valkey_server)) as api:
            await api.send(
                "POST",
                "/api/connections",
                body={"name": "cache-7", "host": sick.host, "port": sick.port},
            )
            result = await diagnose(api, "all")

        assert set(result.connections) == {"Default", "cache-7"}
        assert (result.problems[0].connection, result.problems[0].severity) == (
            "cache-7",
            "critical",
        )
        assert "[cache-7] Memory at 9" in result.to_text()

    async def test_output_is_bounded_with_a_count_of_the_rest(self, fresh: Fresh):
        server = fresh("valkey", config={"maxmemory": "20mb", "maxmemory-policy": "noeviction"})
        fill_to(server, 0.95)
        with server.client() as conn, pytest.raises(valkey.exceptions.OutOfMemoryError):
            conn.set("one-more", VALUE * 200)
        async with served_as_owner(served_settings(server)) as api:
            result = await diagnose(api, limit=1)

        assert len(result.problems) == 1
        assert result.more >= 1
        assert f"and {result.more} more problem(s)" in result.to_text()


class TestDiagnoseWhenSourcesFail:
    async def test_a_source_that_fails_is_reported_not_raised(self, fresh: Fresh):
        server = fresh("valkey", config={"rename-command": 'SLOWLOG ""'})
        async with served_as_owner(served_settings(server)) as api:
            result = await diagnose(api)

        assert [u for u in result.unchecked if u.startswith("slow log on Default: ")]
        assert "Could not check slow log on Default" in result.to_text()

    async def test_a_stopped_instance_is_named_down(
        self, fresh: Fresh, server_factory: ServerFactory
    ):
        server = fresh("valkey")
        async with served_as_owner(served_settings(server)) as api:
            server_factory.stop(server)

            async def marked_down() -> bool:
                listed = await api.get("/api/connections")
                return bool(listed[0]["engine"]["status"] == "disconnected")

            await eventually(marked_down, within=20)
            result = await diagnose(api)

        first = result.problems[0]
        assert (first.severity, first.title) == ("critical", "Instance Default is disconnected")
        assert f"127.0.0.1:{server.port}" in first.evidence[1]

    async def test_an_unknown_connection_or_limit_is_refused_naming_it(
        self, valkey_server: RunningServer
    ):
        async with served_as_owner(served_settings(valkey_server)) as api:
            with pytest.raises(ToolRefused, match="connection: there is no 'nope'"):
                await diagnose(api, "nope")
            with pytest.raises(ValueError, match="limit: must be between 1 and 100"):
                await diagnose(api, limit=0)
