"""Membership of the replicas sharing one storage: each registers, heartbeats, leaves
cleanly at once, is seen as gone when it dies, is pruned later, and rejoins if it was
pruned while merely silent. Real PostgreSQL; a killed replica is a real process."""

import os
import signal
import time
from pathlib import Path
from typing import Any, TypeVar

import pytest
from pydantic import ValidationError

from svc_monitor.replicas.service import PRUNE_AFTER_TIMEOUTS
from svc_monitor.replicas.store import ReplicaStore
from tests.fixtures.app import RunningApp, make_settings, running_app, target_of
from tests.fixtures.replica_processes import eventually, replica_env, start_service, stop_process
from tests.fixtures.servers import RunningServer

FAST = {"REPLICA_HEARTBEAT_MS": 100, "REPLICA_TIMEOUT_MS": 600}
T = TypeVar("T")


async def replicas(app: RunningApp) -> list[dict[str, Any]]:
    got = await app.client.get("/api/replicas")
    assert got.status_code == 200, got.text
    body: dict[str, Any] = got.json()
    assert (body["heartbeatMs"], body["timeoutMs"]) == (100, 600)
    listed: list[dict[str, Any]] = body["replicas"]
    return listed


class TestTwoReplicas:
    async def test_each_lists_both_and_itself_once_and_a_clean_stop_is_seen_at_once(
        self, valkey_server: RunningServer, shared_postgres: dict[str, Any]
    ) -> None:
        settings = {**target_of(valkey_server), **shared_postgres, **FAST}
        async with running_app(make_settings(**settings)) as first:
            async with running_app(make_settings(**settings)) as second:

                async def both_live() -> list[dict[str, Any]]:
                    seen = await replicas(first)
                    assert [r["live"] for r in seen] == [True, True]
                    # One connection, polled by exactly one of them.
                    assert sorted(r["polledConnections"] for r in seen) == [0, 1]
                    assert sorted(len(r["ownedConnections"]) for r in seen) == [0, 1]
                    return seen

                seen = await eventually(both_live, timeout_s=10)
                assert [r["self"] for r in seen] == [True, False]  # oldest first
                from_second = await replicas(second)
                assert [r["id"] for r in from_second] == [r["id"] for r in seen]
                assert [r["self"] for r in from_second] == [False, True]
                assert all(str(os.getpid()) in r["id"] for r in seen)
                second_id = seen[1]["id"]
            # Stopped cleanly: gone from the list at once, not after the timeout.
            left = await replicas(first)
            assert [r["id"] for r in left] == [seen[0]["id"]]
            assert second_id not in [r["id"] for r in left]

    async def test_a_replica_pruned_while_silent_rejoins_on_its_next_heartbeat(
        self, valkey_server: RunningServer, shared_postgres: dict[str, Any]
    ) -> None:
        settings = {**target_of(valkey_server), **shared_postgres, **FAST}
        async with running_app(make_settings(**settings)) as app:
            registry = app.services.replicas
            await eventually(lambda: replicas(app), timeout_s=5)
            await ReplicaStore(app.services.db).remove(registry.id)

            async def back() -> None:
                assert [r["id"] for r in await replicas(app)] == [registry.id]

            await eventually(back, timeout_s=5)


class TestAKilledReplica:
    async def test_is_seen_as_gone_after_the_timeout_then_pruned(
        self,
        valkey_server: RunningServer,
        shared_postgres: dict[str, Any],
        tmp_path: Path,
    ) -> None:
        settings = {**target_of(valkey_server), **shared_postgres, **FAST}
        env = replica_env(
            shared_postgres,
            valkey_server,
            tmp_path,
            REPLICA_HEARTBEAT_MS=100,
            REPLICA_TIMEOUT_MS=600,
        )
        async with running_app(make_settings(**settings)) as app:
            other = start_service(env, tmp_path / "other.log")
            try:

                async def two_live() -> str:
                    seen = await replicas(app)
                    assert [r["live"] for r in seen] == [True, True]
                    (others,) = [str(r["id"]) for r in seen if not r["self"]]
                    assert f"-{other.pid}-" in others
                    return others

                other_id = await eventually(two_live, timeout_s=30)
                other.send_signal(signal.SIGKILL)  # no clean leave: its row stays
                killed_at = time.monotonic()
                other.wait(timeout=10)

                async def gone() -> None:
                    seen = {r["id"]: r for r in await replicas(app)}
                    assert seen[other_id]["live"] is False
                    assert seen[other_id]["heartbeatAgeMs"] > 600

                await eventually(gone, timeout_s=5)
                # Seen as gone within the timeout and a heartbeat of our own.
                assert time.monotonic() - killed_at < 0.6 + 0.1 + 1.0

                async def pruned() -> None:
                    assert other_id not in [r["id"] for r in await replicas(app)]

                await eventually(pruned, timeout_s=PRUNE_AFTER_TIMEOUTS * 0.6 + 5)
            finally:
                stop_process(other)


async def test_one_process_on_memory_storage_lists_itself(
    valkey_server: RunningServer,
) -> None:
    async with running_app(make_settings(**target_of(valkey_server), **FAST)) as app:

        async def listed() -> None:
            listed = await replicas(app)
            assert len(listed) == 1, listed  # (empty until its first heartbeat)
            only = listed[0]
            assert only["self"] is True
            assert only["live"] is True
            assert only["address"].endswith(f":{app.settings.PORT}")

        await eventually(listed, timeout_s=5)


def test_a_timeout_shorter_than_three_heartbeats_is_refused() -> None:
    with pytest.raises(ValidationError, match="REPLICA_TIMEOUT_MS"):
        make_settings(REPLICA_HEARTBEAT_MS=1000, REPLICA_TIMEOUT_MS=2000)


async def test_the_scrape_says_what_this_replica_polls_and_how_fresh_its_heartbeat_is(
    valkey_server: RunningServer, redis7_server: RunningServer
) -> None:
    async with running_app(make_settings(**target_of(valkey_server), **FAST)) as app:
        added = await app.client.post(
            "/api/connections",
            json={"name": "second", "host": redis7_server.host, "port": redis7_server.port},
        )
        assert added.status_code == 201, added.text
        replica = app.services.replicas.id

        async def scraped() -> dict[str, float]:
            text = (await app.client.get("/api/prometheus/metrics")).text
            found = {
                line.split("{")[0]: float(line.rsplit(" ", 1)[1])
                for line in text.splitlines()
                if line.startswith("svc_replica_") and f'replica="{replica}"' in line
            }
            assert found.get("svc_replica_polled_connections") == 2
            return found

        found = await eventually(scraped, timeout_s=15)
        assert 0 <= found["svc_replica_heartbeat_age_seconds"] < 0.6
