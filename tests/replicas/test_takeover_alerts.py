"""A takeover sends nothing twice: the replica that takes a connection over knows the
memory.critical alert still firing and the instance already reported down, and says
instance.up (with the original down time) when it comes back; the same for the events it
exports as OTLP logs. The first replica is a real process, killed; webhooks and logs go
to real receivers."""

import asyncio
import signal
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fixtures.alerting import of_type, over_ninety_percent
from tests.fixtures.app import make_settings, running_app, target_of
from tests.fixtures.otlp_receiver import OtlpReceiver
from tests.fixtures.receiver import Receiver
from tests.fixtures.replica_processes import eventually, replica_env, replica_process
from tests.fixtures.servers import ServerFactory

FAST = {"REPLICA_HEARTBEAT_MS": 250, "REPLICA_TIMEOUT_MS": 1000, "NODE_ENV": "development"}

pytestmark = pytest.mark.timeout(180)


def logged(collector: OtlpReceiver, event_type: str) -> int:
    """Distinct OTLP log records of this event the collector has received (a batch posted
    again after a late answer, which this test's blocking waits cause, counts once)."""
    return len(
        {
            record.time_unix_nano
            for request in collector.log_requests()
            for resource in request.resource_logs
            for scope in resource.scope_logs
            for record in scope.log_records
            if record.event_name == event_type
        }
    )


async def test_a_killed_owner_s_alerts_are_not_sent_again_by_the_replica_taking_over(
    server_factory: ServerFactory,
    shared_postgres: dict[str, Any],
    receiver: Receiver,
    otlp_receiver: OtlpReceiver,
    tmp_path: Path,
) -> None:
    memory = server_factory.start("valkey", config={"hz": "1"})
    dying = server_factory.start("valkey", config={"hz": "1"})
    over_ninety_percent(memory)
    export = {"OTEL_EXPORTER_OTLP_ENDPOINT": otlp_receiver.base_url, "OTEL_EVENTS_ENABLED": True}
    env = replica_env(shared_postgres, memory, tmp_path, **FAST, **export)
    try:
        with replica_process(env, tmp_path / "first.log") as first:
            async with httpx.AsyncClient(base_url=first.url, timeout=10) as api:
                hook = await api.post(
                    "/api/webhooks",
                    json={
                        "name": "ops",
                        "url": receiver.url("/hook"),
                        "events": ["memory.critical", "instance.down", "instance.up"],
                    },
                )
                assert hook.status_code == 201, hook.text
                added = await api.post(
                    "/api/connections",
                    json={"name": "dying", "host": dying.host, "port": dying.port},
                )
                assert added.status_code == 201, added.text
            await receiver.wait_for(1, within=20)
            server_factory.stop(dying)

            async def both_sent() -> None:
                assert len(of_type(receiver, "memory.critical")) == 1
                assert len(of_type(receiver, "instance.down")) == 1
                assert logged(otlp_receiver, "memory.critical") == 1
                assert logged(otlp_receiver, "instance.down") == 1

            await eventually(both_sent, timeout_s=20)
            (down,) = of_type(receiver, "instance.down")
            settings = make_settings(**target_of(memory), **shared_postgres, **FAST, **export)
            async with running_app(settings) as second:
                # It joins and is handed one of the two; then the first dies.
                async def holds(count: int) -> None:
                    got = (await second.client.get("/api/replicas")).json()["replicas"]
                    mine = [r["ownedConnections"] for r in got if r["self"]]
                    assert mine, got  # not registered yet
                    assert len(mine[0]) == count, got

                await eventually(lambda: holds(1), timeout_s=15)
                first.signal(signal.SIGKILL)
                first.process.wait(timeout=10)
                await eventually(lambda: holds(2), timeout_s=15)
                await asyncio.sleep(4)  # four INFO polls of each by the second
                assert len(of_type(receiver, "memory.critical")) == 1, receiver.requests
                assert len(of_type(receiver, "instance.down")) == 1, receiver.requests
                assert logged(otlp_receiver, "memory.critical") == 1
                assert logged(otlp_receiver, "instance.down") == 1
                # It comes back: the second says so, since the first's down time.
                server_factory.start_again(dying)

                async def up_sent() -> None:
                    assert len(of_type(receiver, "instance.up")) == 1

                await eventually(up_sent, timeout_s=20)
                (up,) = of_type(receiver, "instance.up")
                assert up["data"]["downSince"] <= down["data"]["detectedAt"]
    finally:
        server_factory.stop(memory)
        server_factory.stop(dying)
