"""Anomaly baselines follow a connection to the replica that takes it over: its detection
carries on at once (no second warm-up, in which a spike would go unseen) and a detection
still cooling down does not fire again. Saved in a real PostgreSQL; the INFO is a real
server's, rewritten as a steady load with a simulated clock (tests/anomaly/info.py)."""

import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from svc_monitor.anomaly import baselines
from svc_monitor.anomaly.baseline_store import BaselineStore
from svc_monitor.anomaly.service import AnomalyService
from svc_monitor.anomaly.store import AnomalyStore
from svc_monitor.detection.anomaly.detectors import READY_AT, ConnectionDetectors
from svc_monitor.engine.info import ParsedInfo, parse_info
from svc_monitor.events import EventBus
from svc_monitor.pipe.observation import Observation
from svc_monitor.runtime_settings.service import RuntimeSettingsService
from svc_monitor.runtime_settings.store import RuntimeSettingsStore
from svc_monitor.storage.database import Database
from tests.anomaly.info import START_MS, info_text, rewrite, steady_load
from tests.fixtures.app import RunningApp, make_settings, running_app, target_of
from tests.fixtures.licensing import SigningKey
from tests.fixtures.replica_processes import eventually
from tests.fixtures.servers import RunningServer

CONNECTION = "c0ffee00-0000-4000-8000-000000000001"
SECOND = 1000
STEADY = 120
FAST = {"REPLICA_HEARTBEAT_MS": 250, "REPLICA_TIMEOUT_MS": 1000, "NODE_ENV": "development"}


@pytest.fixture
async def db(shared_postgres: dict[str, Any]) -> AsyncIterator[Database]:
    database = Database.from_settings(make_settings(**shared_postgres))
    await database.migrate()
    yield database
    await database.close()


@pytest.fixture(scope="module")
def real_info(valkey_server: RunningServer) -> str:
    return info_text(valkey_server)


def replica(db: Database) -> AnomalyService:
    """One replica's anomaly detection on the shared storage."""
    settings, bus = make_settings(), EventBus()
    return AnomalyService(
        AnomalyStore(db),
        bus,
        settings,
        RuntimeSettingsService(RuntimeSettingsStore(db), settings, bus),
        allowed=lambda: True,
        baseline_store=BaselineStore(db),
    )


def feed(anomaly: AnomalyService, infos: list[ParsedInfo], *, from_s: int) -> None:
    for i, info in enumerate(infos):
        at = START_MS + (from_s + i) * SECOND
        anomaly.observe(Observation(CONNECTION, at, info, pushed=False))


def memory_spikes(anomaly: AnomalyService) -> int:
    """memory_used detections this replica has published."""
    events = anomaly.refresh_summary().events_total
    return sum(n for (_, metric, _), n in events.items() if metric == "memory_used")


async def test_the_replica_taking_over_catches_a_spike_at_once_instead_of_warming_up(
    db: Database, real_info: str
) -> None:
    holder = replica(db)
    feed(holder, steady_load(real_info, STEADY, seed=1), from_s=0)
    await holder.save_baselines(everything=True)  # its periodic save; then it dies

    jump = parse_info(rewrite(real_info, {"used_memory": 80_000_000}))
    taker, fresh = replica(db), replica(db)
    await taker.carry_on([CONNECTION])
    for anomaly in (taker, fresh):
        feed(anomaly, [jump] * 3, from_s=STEADY + 10)  # the takeover's gap, then a spike
        await anomaly.flush(everything=True)
    assert memory_spikes(taker) == 1
    assert memory_spikes(fresh) == 0  # without the baseline: still warming up
    [memory] = [b for b in taker.buffers(CONNECTION) if b.metric == "memory_used"]
    assert memory.ready
    assert memory.samples == STEADY + 3
    expected = (STEADY * 50_000_000 + 3 * 80_000_000) / (STEADY + 3)
    assert memory.mean == pytest.approx(expected, rel=0.02)


async def test_a_detection_cooling_down_is_not_fired_again_by_the_replica_taking_over(
    db: Database, real_info: str
) -> None:
    holder = replica(db)
    feed(holder, steady_load(real_info, STEADY, seed=2), from_s=0)
    jump = parse_info(rewrite(real_info, {"used_memory": 80_000_000}))
    feed(holder, [jump] * 3, from_s=STEADY)
    await holder.flush(everything=True)
    assert memory_spikes(holder) == 1
    await holder.save_baselines()  # soon after a detection, not on the 30 s round

    taker = replica(db)
    await taker.carry_on([CONNECTION])
    # Memory stays up, judged against the spike-free part of the window: without the
    # carried cooldown (60 s) this would fire once more.
    feed(taker, [jump] * 20, from_s=STEADY + 15)
    await taker.flush(everything=True)
    assert memory_spikes(taker) == 0


async def test_an_edited_connection_s_saved_baseline_goes_with_it(
    db: Database, real_info: str
) -> None:
    holder = replica(db)
    feed(holder, steady_load(real_info, STEADY, seed=3), from_s=0)
    await holder.save_baselines(everything=True)
    # Edited (a new server may be behind it), as the change reaches the loop:
    holder.forget(CONNECTION, changed_at_ms=int(time.time() * 1000) + 1)
    await holder.save_baselines()
    taker = replica(db)
    await taker.carry_on([CONNECTION])
    [memory] = [b for b in taker.buffers(CONNECTION) if b.metric == "memory_used"]
    assert memory.samples == 0


def test_a_baseline_too_old_or_unreadable_is_not_carried_over(real_info: str) -> None:
    detectors = ConnectionDetectors(CONNECTION)
    for i, info in enumerate(steady_load(real_info, READY_AT + 5, seed=4)):
        detectors.observe(info, START_MS + i * SECOND)
    saved_at = int(time.time() * 1000)
    state = baselines.carried(detectors, saved_at)
    assert baselines.carry_on(CONNECTION, state, now_ms=saved_at + 1000) is not None
    too_old = saved_at + baselines.MAX_AGE_MS + 1
    assert baselines.carry_on(CONNECTION, state, now_ms=too_old) is None
    for broken in ({**state, "version": 2}, {**state, "metrics": {"memory_used": {"count": -1}}}):
        assert baselines.carry_on(CONNECTION, broken, now_ms=saved_at) is None


async def test_a_clean_handover_between_replicas_keeps_the_baseline(
    valkey_server: RunningServer, shared_postgres: dict[str, Any], signing_key: SigningKey
) -> None:
    config = {
        **target_of(valkey_server),
        **shared_postgres,
        **FAST,
        "ANOMALY_POLL_INTERVAL_MS": 100,
        "SVC_OFFLINE_LICENSE": signing_key.mint(tier="pro"),
    }

    async def memory_buffer(app: RunningApp) -> dict[str, Any]:
        connection = (await app.client.get("/api/connections")).json()[0]["id"]
        reply = await app.client.get(
            "/api/anomaly/buffers", headers={"X-Connection-Id": connection}
        )
        assert reply.status_code == 200, reply.text
        [memory] = [b for b in reply.json()["buffers"] if b["metric"] == "memory_used"]
        return dict(memory)

    async def owned_by(app: RunningApp) -> list[str]:
        got = (await app.client.get("/api/replicas")).json()["replicas"]
        mine = next(r["ownedConnections"] for r in got if r["self"])
        assert mine, got
        return list(mine)

    async with contextlib.AsyncExitStack() as stack:
        first = await stack.enter_async_context(running_app(make_settings(**config)))

        async def warmed() -> dict[str, Any]:
            memory = await memory_buffer(first)
            assert memory["samples"] >= 60, memory
            return memory

        await eventually(warmed, timeout_s=30)
        async with running_app(make_settings(**config)) as second:
            # While the first holds it, the second answers with what the first saved: its
            # round of saves (every 30 s), run now.
            anomaly = first.app.state.features.anomaly
            await anomaly.save_baselines(everything=True)
            saved = {b.metric: b for b in anomaly.buffers((await owned_by(first))[0])}

            async def shown_elsewhere() -> dict[str, Any]:
                # Once the second has seen the first hold it (its next lease round).
                shown = await memory_buffer(second)
                assert shown["samples"], shown
                return shown

            shown = await eventually(shown_elsewhere, timeout_s=5)
            # Read after the save: the first may have judged a poll or two more since.
            assert saved["memory_used"].samples - 2 <= shown["samples"] >= 60, shown
            assert shown["samples"] <= saved["memory_used"].samples, shown
            assert shown["mean"] == pytest.approx(saved["memory_used"].mean, rel=0.01), shown
            await stack.aclose()  # the first stops cleanly and hands its connection over

            async def owns() -> float:
                await owned_by(second)
                return time.monotonic()

            owned_at = await eventually(owns, timeout_s=15)

            async def carried_on() -> dict[str, Any]:
                # The lease shows a moment before the supervisor has read the baseline.
                memory = await memory_buffer(second)
                assert memory["ready"], memory
                return memory

            memory = await eventually(carried_on, timeout_s=1.5)
            # Its own polls (10 a second) could not have gathered that many yet.
            assert time.monotonic() - owned_at < 2
            assert memory["samples"] >= 60, memory
