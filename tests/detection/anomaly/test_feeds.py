"""Anomaly detectors fed by other polls (detection/anomaly/feeds.py): the slow log, the latency
monitor, commandstats per command, and CLUSTER INFO.

The rules are exercised on recorded reads with a simulated clock; then real servers
polled by the app: slow commands (DEBUG SLEEP) on a real Valkey become a slow_queries group with
the slow log and latency monitor in it, and a real cluster losing slot coverage becomes
a cluster_failure group.
"""

import asyncio
import random
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from svc_monitor.anomaly.correlation import match
from svc_monitor.detection.anomaly.feeds import MAX_COMMANDS, FeedDetectors
from svc_monitor.detection.anomaly.models import Detection
from svc_monitor.engine.info import parse_info
from svc_monitor.engine.latency import LatencyEvent
from svc_monitor.pipe.facts import (
    ClusterFacts,
    CommandstatsFacts,
    LatencyFacts,
    SlowlogFacts,
)
from tests.anomaly.info import START_MS
from tests.fixtures.app import AppFactory, RunningApp
from tests.fixtures.licensing import SigningKey
from tests.fixtures.servers import CLUSTER_SLOTS, RunningServer
from tests.fixtures.waiting import eventually

STEP_MS = 15_000  # commandstats' default poll interval
STEADY_READS = 40  # ten simulated minutes


def commandstats(at_ms: int, **commands: tuple[int, int]) -> CommandstatsFacts:
    """INFO commandstats as the server writes it: command -> (calls, usec)."""
    lines = ["# Commandstats"] + [
        f"cmdstat_{name}:calls={calls},usec={usec},usec_per_call={usec / max(calls, 1):.2f},"
        "rejected_calls=0,failed_calls=0"
        for name, (calls, usec) in commands.items()
    ]
    return CommandstatsFacts(at_ms, parse_info("\r\n".join(lines) + "\r\n"))


class SteadyCommands:
    """GET at about 1,000 calls/s and 2 us a call, SET at 200/s and 4 us, with noise."""

    def __init__(self) -> None:
        self.rng = random.Random(7)
        self.counters = {"get": [0, 0], "set": [0, 0]}
        self.read = 0

    def next(self, *, get_usec_per_call: float = 2.0) -> CommandstatsFacts:
        seconds = STEP_MS / 1000
        for name, rate, usec in (("get", 1000, get_usec_per_call), ("set", 200, 4.0)):
            calls = int(rate * seconds * self.rng.uniform(0.9, 1.1))
            self.counters[name][0] += calls
            self.counters[name][1] += int(calls * usec * self.rng.uniform(0.9, 1.1))
        self.read += 1
        return commandstats(
            START_MS + self.read * STEP_MS,
            **{k: (v[0], v[1]) for k, v in self.counters.items()},
        )


class TestCommandstats:
    def test_steady_reads_raise_nothing_then_slower_calls_do(self):
        feeds, steady = FeedDetectors("c"), SteadyCommands()
        found = [d for _ in range(STEADY_READS) for d in feeds.observe(steady.next())]
        assert found == []
        slow = [d for _ in range(2) for d in feeds.observe(steady.next(get_usec_per_call=300))]
        assert [(d.metric, d.kind, d.severity) for d in slow] == [
            ("cmd_usec:get", "spike", "critical")
        ]
        assert 250 < slow[0].value < 350
        # The first slow read is in the baseline of the second, which fires.
        assert slow[0].baseline < 20
        assert match(slow).name == "slow_queries"

    def test_a_reset_or_restart_is_skipped_not_judged(self):
        feeds, steady = FeedDetectors("c"), SteadyCommands()
        for _ in range(STEADY_READS):
            feeds.observe(steady.next())
        # CONFIG RESETSTAT: every counter starts again from a few calls.
        reset = commandstats(START_MS + 10**9, get=(5, 10), set=(1, 4))
        assert feeds.observe(reset) == []
        states = {s.metric: s.samples for s in feeds.buffer_states()}
        assert states["cmd_calls:get"] == STEADY_READS - 1

    def test_a_burst_of_one_command_is_a_traffic_anomaly(self):
        feeds, steady = FeedDetectors("c"), SteadyCommands()
        for _ in range(STEADY_READS):
            feeds.observe(steady.next())
        found: list[Detection] = []
        for _ in range(2):
            steady.counters["set"][0] += 20_000 * STEP_MS // 1000
            found += feeds.observe(steady.next())
        assert [d.metric for d in found] == ["cmd_calls:set"]
        assert match(found).name == "traffic_burst"

    def test_commands_followed_are_bounded(self):
        feeds = FeedDetectors("c")
        many = {f"cmd{i}": (10 * i + 1, 20 * i + 2) for i in range(MAX_COMMANDS + 30)}
        feeds.observe(commandstats(START_MS, **many))
        feeds.observe(
            commandstats(START_MS + STEP_MS, **{k: (c + 50, u + 100) for k, (c, u) in many.items()})
        )
        followed = {s.metric.split(":", 1)[1] for s in feeds.buffer_states()}
        assert len(followed) == MAX_COMMANDS


def slowlog(at_ms: int, last_id: int | None, length: int) -> SlowlogFacts:
    return SlowlogFacts(at_ms=at_ms, length=length, last_id=last_id)


class TestSlowlogAndLatency:
    def test_new_slow_entries_against_a_quiet_log(self):
        feeds = FeedDetectors("c")
        for i in range(STEADY_READS):  # a quiet log: an entry now and then
            assert feeds.observe(slowlog(START_MS + i * 10_000, i // 10, 128)) == []
        at = START_MS + STEADY_READS * 10_000
        found = feeds.observe(slowlog(at, 3 + 60, 128))  # 60 new entries in 10 s
        assert [(d.metric, d.severity) for d in found] == [("slowlog_growth", "critical")]
        assert found[0].value == pytest.approx(6.0)

    def test_a_restarted_server_and_an_emptied_log(self):
        feeds = FeedDetectors("c")
        for i in range(STEADY_READS):
            feeds.observe(slowlog(START_MS + i * 10_000, 500 + i // 10, 128))
        at = START_MS + STEADY_READS * 10_000
        assert feeds.observe(slowlog(at, 2, 3)) == []  # ids started again: skipped
        assert feeds.observe(slowlog(at + 10_000, None, 0)) == []  # SLOWLOG RESET
        # The log was empty: its length is what is new.
        found = feeds.observe(slowlog(at + 20_000, 80, 40))
        assert [d.metric for d in found] == ["slowlog_growth"]
        assert found[0].value == pytest.approx(4.0)

    def test_latency_events_count_only_when_their_spike_time_moves(self):
        feeds = FeedDetectors("c")
        old = LatencyEvent("command", 1000, 250, 250)
        for i in range(STEADY_READS):  # the same old spike read again and again
            facts = LatencyFacts(START_MS + i * 30_000, (old,))
            assert feeds.observe(facts) == []
        [state] = [s for s in feeds.buffer_states() if s.metric == "latency_spike"]
        assert (state.samples, state.mean) == (STEADY_READS - 1, 0.0)
        new = LatencyEvent("fast-command", 2000, 80, 80)
        found = feeds.observe(LatencyFacts(START_MS + 10**7, (old, new)))
        assert [(d.metric, d.severity, d.value) for d in found] == [
            ("latency_spike", "critical", 80.0)
        ]


def cluster(at_ms: int, state: str, *, pfail: int = 0, fail: int = 0) -> ClusterFacts:
    return ClusterFacts(
        at_ms,
        {"cluster_state": state, "cluster_slots_pfail": pfail, "cluster_slots_fail": fail},
    )


class TestClusterState:
    def test_transitions_and_suspected_nodes(self):
        feeds = FeedDetectors("c")
        assert feeds.observe(cluster(START_MS, "fail", fail=100)) == []  # starting point
        up = feeds.observe(cluster(START_MS + 1000, "ok"))
        assert [(d.severity, d.kind) for d in up] == [("warning", "spike")]
        suspect = feeds.observe(cluster(START_MS + 2000, "ok", pfail=5461))
        assert [d.severity for d in suspect] == ["warning"]
        assert "5461 slots" in suspect[0].message
        assert feeds.observe(cluster(START_MS + 3000, "ok", pfail=5461)) == []
        down = feeds.observe(cluster(START_MS + 4000, "fail", fail=5461))
        assert [(d.metric, d.severity, d.kind) for d in down] == [
            ("cluster_state", "critical", "drop")
        ]
        assert match(down).name == "cluster_failure"
        assert feeds.observe(ClusterFacts(START_MS + 5000, {})) == []  # refused: nothing


# --- real servers, polled by the app ---

FAST_POLLS = {
    "ANOMALY_POLL_INTERVAL_MS": 100,
    "SLOWLOG_POLL_INTERVAL_MS": 100,
    "LATENCY_POLL_INTERVAL_MS": 100,
    "COMMANDSTATS_POLL_INTERVAL_MS": 100,
    "HISTORY_SAMPLE_INTERVAL_MS": 60_000,
}
SLOW_MS = 60  # DEBUG SLEEP: slow by the server's own clock, however fast the machine
FEED_METRICS = ("slowlog_growth", "latency_spike")


def buffers(app: RunningApp, connection_id: str) -> dict[str, dict[str, Any]]:
    states = app.app.state.features.anomaly.buffers(connection_id)
    return {s.metric: {"samples": s.samples, "ready": s.ready} for s in states}


@pytest.fixture
def watched(fresh: Callable[..., RunningServer]) -> RunningServer:
    return fresh(
        "valkey",
        config={
            "slowlog-log-slower-than": "20000",
            "latency-monitor-threshold": "20",
            "enable-debug-command": "yes",
        },
    )


@pytest.fixture
def light_load(watched: RunningServer) -> Iterator[None]:
    """Cheap scripts and reads in the background, as an application would send."""
    stop = threading.Event()

    def load() -> None:
        with watched.client() as client:
            while not stop.wait(0.05):
                pipe = client.pipeline(transaction=False)
                for k in range(25):
                    pipe.eval("return 1", 0)
                    pipe.get(f"k{k}")
                pipe.execute()

    thread = threading.Thread(target=load, daemon=True)
    thread.start()
    yield
    stop.set()
    thread.join(timeout=5)


class TestSlowQueriesOnARealServer:
    async def test_slow_commands_become_one_slow_queries_group(
        self,
        memory_app_factory: AppFactory,
        signing_key: SigningKey,
        watched: RunningServer,
        light_load: None,
    ):
        licence = signing_key.mint(tier="pro")
        async with memory_app_factory(
            **FAST_POLLS,
            DB_HOST=watched.host,
            DB_PORT=watched.port,
            NODE_ENV="development",
            SVC_OFFLINE_LICENSE=licence,
        ) as app:
            connection = "env-default"

            async def warmed() -> bool:
                states = buffers(app, connection)
                return all(states.get(m, {}).get("ready") for m in FEED_METRICS) and any(
                    m.startswith("cmd_usec:") and s["ready"] for m, s in states.items()
                )

            await eventually(warmed, within=30)
            await asyncio.sleep(1.0)  # some steady reads past the warm-up
            quiet = await app.client.get(
                "/api/anomaly/events", headers={"X-Connection-Id": connection}
            )
            assert not [e for e in quiet.json() if e["metricType"] in FEED_METRICS], (
                "the steady phase raised slow log or latency anomalies"
            )

            with watched.client() as client:
                started = time.monotonic()
                for _ in range(5):
                    client.execute_command("DEBUG", "SLEEP", SLOW_MS / 1000)
                assert time.monotonic() - started >= 5 * SLOW_MS / 1000

            async def grouped() -> list[dict[str, Any]]:
                # The service's own loop closes the window 5 s after its last detection.
                response = await app.client.get(
                    "/api/anomaly/groups", headers={"X-Connection-Id": connection}
                )
                return [g for g in response.json() if set(FEED_METRICS) & set(g["metrics"])]

            async def has_group() -> bool:
                return bool(await grouped())

            await eventually(has_group, within=30)
            [group] = await grouped()
        assert group["pattern"] == "slow_queries", group
        assert set(FEED_METRICS) <= set(group["metrics"])
        assert "slower" in group["diagnosis"]


@pytest.fixture(scope="module")
def cluster_nodes(valkey_cluster: list[RunningServer]) -> list[RunningServer]:
    return valkey_cluster


class TestClusterStateOnARealCluster:
    async def test_losing_slot_coverage_is_a_cluster_failure_group(
        self,
        memory_app_factory: AppFactory,
        signing_key: SigningKey,
        cluster_nodes: list[RunningServer],
    ):
        seed = cluster_nodes[0]
        first, last = 0, CLUSTER_SLOTS // 3 - 1  # the seed's slots
        licence = signing_key.mint(tier="pro")
        async with memory_app_factory(
            **FAST_POLLS,
            DB_HOST=seed.host,
            DB_PORT=seed.port,
            NODE_ENV="development",
            SVC_OFFLINE_LICENSE=licence,
        ) as app:
            anomaly = app.app.state.features.anomaly
            live = app.services.live_state

            async def cluster_read() -> bool:
                return live.facts("env-default", ClusterFacts) is not None

            await eventually(cluster_read)
            await asyncio.sleep(0.5)
            with seed.client() as conn:
                conn.execute_command("CLUSTER", "DELSLOTSRANGE", first, last)
                try:

                    async def failed() -> bool:
                        facts = live.facts("env-default", ClusterFacts)
                        return facts is not None and facts.info.get("cluster_state") == "fail"

                    await eventually(failed, within=10)
                finally:
                    conn.execute_command("CLUSTER", "ADDSLOTSRANGE", first, last)
            await anomaly.flush(everything=True)
            response = await app.client.get(
                "/api/anomaly/events",
                params={"metric": "cluster_state"},
                headers={"X-Connection-Id": "env-default"},
            )
            events = response.json()
            groups = (
                await app.client.get(
                    "/api/anomaly/groups", headers={"X-Connection-Id": "env-default"}
                )
            ).json()
        [down] = [e for e in events if e["severity"] == "critical"]
        assert down["anomalyType"] == "drop"
        assert "cluster state is fail" in down["message"]
        [group] = [g for g in groups if g["id"] == down["groupId"]]
        assert group["pattern"] == "cluster_failure"
