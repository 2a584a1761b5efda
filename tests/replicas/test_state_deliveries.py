"""A replica killed as its receiver gets an instance.down never leaves the receiver with a
stale state: the replica taking over says instance.up, and the cut-off instance.down is
superseded, never sent after it; every delivery's `attempts` is what the receiver saw.

Five times over, on one PostgreSQL: two replicas (real processes) watch a real Valkey,
the Valkey is stopped, the receiver (real, on 127.0.0.1) holds the answer to the
instance.down, and the replica that sent it is SIGKILLed; the Valkey comes back, the
survivor says so, and the test waits past the cut-off delivery's lease, when the
survivor's retry queue would send it again. A new replica joins for the next round.
"""

import asyncio
import contextlib
import signal
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from svc_monitor.webhooks.schemas import DeliveryConfig
from svc_monitor.webhooks.worker import QUEUE_POLL_MS
from tests.fixtures.receiver import Answer, Receiver
from tests.fixtures.replica_processes import (
    START_TIMEOUT_S,
    ReplicaProcess,
    eventually,
    replica_env,
    start_service,
    stop_process,
)
from tests.fixtures.servers import RunningServer, ServerFactory

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

ROUNDS = 5
FAST = {"REPLICA_HEARTBEAT_MS": 250, "REPLICA_TIMEOUT_MS": 1000, "NODE_ENV": "development"}
# The webhook's timeout: a cut-off attempt's lease ends this plus LEASE_MARGIN_MS after it
# began, and the survivor's queue would send it again then. Short, so each round waits
# little for that; not the shortest allowed (1 s), so that a loaded machine pausing this
# test for a second between the request's arrival and the kill cannot let the sender
# see its own timeout first.
TIMEOUT_MS = 2000
LEASE_S = DeliveryConfig(timeoutMs=TIMEOUT_MS).lease_ms / 1000
# The receiver holds its answer to the instance.down longer than the sender waits: the
# sender is killed first (within milliseconds of the request's arrival).
HOLD_S = TIMEOUT_MS / 1000 + 1
RETRIES = {"maxRetries": 3, "initialDelayMs": 200, "maxDelayMs": 1000}


async def healthy(process: Any, url: str, log_path: Path) -> ReplicaProcess:
    """The replica once /api/health answers 200 (without blocking the receiver's loop)."""
    replica = ReplicaProcess(process, url, log_path)
    deadline = time.monotonic() + START_TIMEOUT_S
    async with httpx.AsyncClient(base_url=url, timeout=2) as client:
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"replica exited with {process.returncode}:\n{replica.log()}")
            with contextlib.suppress(httpx.HTTPError):
                if (await client.get("/api/health")).status_code == 200:
                    return replica
            if time.monotonic() > deadline:
                raise RuntimeError(f"replica did not answer in {START_TIMEOUT_S} s")
            await asyncio.sleep(0.1)


@contextlib.asynccontextmanager
async def replicas(
    shared_postgres: dict[str, Any], default: RunningServer, tmp_path: Path
) -> AsyncIterator[Callable[[], Any]]:
    """Starts replicas (`await start()`), each its own process; all ended after."""
    started: list[ReplicaProcess] = []

    async def start() -> ReplicaProcess:
        env = replica_env(shared_postgres, default, tmp_path, **FAST)
        log_path = tmp_path / f"replica-{len(started)}.log"
        replica = await healthy(
            start_service(env, log_path), f"http://127.0.0.1:{env['PORT']}", log_path
        )
        started.append(replica)
        return replica

    try:
        yield start
    finally:
        for replica in started:
            stop_process(replica.process)


async def owned(replica: ReplicaProcess) -> list[str]:
    async with httpx.AsyncClient(base_url=replica.url, timeout=5) as client:
        got = (await client.get("/api/replicas")).json()["replicas"]
    mine = [r["ownedConnections"] for r in got if r["self"]]
    assert mine, got  # not registered yet
    return list(mine[0])


async def holder_of(pair: list[ReplicaProcess], connection_id: str) -> ReplicaProcess:
    """The one of the two that polls the connection, once each holds one of the two."""

    async def settled() -> ReplicaProcess:
        shares = [await owned(replica) for replica in pair]
        assert [len(share) for share in shares] == [1, 1], shares
        (holder,) = [r for r, share in zip(pair, shares, strict=True) if connection_id in share]
        return holder

    return await eventually(settled, timeout_s=30)


async def deliveries(replica: ReplicaProcess, webhook_id: str) -> dict[str, dict[str, Any]]:
    async with httpx.AsyncClient(base_url=replica.url, timeout=5) as client:
        answer = await client.get(f"/api/webhooks/{webhook_id}/deliveries?limit=1000")
    assert answer.status_code == 200, answer.text
    return {d["id"]: d for d in answer.json()}


def posts_of(receiver: Receiver, delivery_id: str) -> int:
    return sum(1 for r in receiver.requests if r.json["id"] == delivery_id)


async def test_a_replica_killed_mid_instance_down_never_leaves_a_stale_state(
    server_factory: ServerFactory,
    shared_postgres: dict[str, Any],
    receiver: Receiver,
    tmp_path: Path,
) -> None:
    default = server_factory.start("valkey")
    watched = server_factory.start("valkey")
    try:
        async with replicas(shared_postgres, default, tmp_path) as start:
            pair = [await start(), await start()]
            async with httpx.AsyncClient(base_url=pair[0].url, timeout=10) as api:
                added = await api.post(
                    "/api/connections",
                    json={"name": "watched", "host": watched.host, "port": watched.port},
                )
                assert added.status_code == 201, added.text
                connection_id = added.json()["id"]
                hook = await api.post(
                    "/api/webhooks",
                    headers={"X-Connection-Id": connection_id},
                    json={
                        "name": "ops",
                        "url": receiver.url("/hook"),
                        "events": ["instance.down", "instance.up"],
                        "retryPolicy": RETRIES,
                        "deliveryConfig": {"timeoutMs": TIMEOUT_MS},
                    },
                )
                assert hook.status_code == 201, hook.text
                webhook_id = hook.json()["id"]
            for round_ in range(ROUNDS):
                holder = await holder_of(pair, connection_id)
                (survivor,) = [r for r in pair if r is not holder]
                first = len(receiver.requests)
                receiver.script.append(Answer(delay_s=HOLD_S))
                server_factory.stop(watched)
                await receiver.wait_for(first + 1, within=30)
                holder.signal(signal.SIGKILL)  # as the receiver gets the POST
                down = receiver.requests[first]
                assert down.json["event"] == "instance.down", (round_, down.json)
                holder.process.wait(timeout=10)
                watched = server_factory.start_again(watched)

                async def up_sent(first: int = first) -> Any:
                    ups = [r for r in receiver.requests[first:] if r.json["event"] == "instance.up"]
                    assert ups, [r.json["event"] for r in receiver.requests[first:]]
                    return ups[0]

                up = await eventually(up_sent, timeout_s=30)
                # The next round's replica starts while the cut-off delivery's lease runs
                # out and the survivor's queue looks at it (once a QUEUE_POLL_MS).
                joining = asyncio.create_task(start())
                await asyncio.sleep(
                    max(0.0, down.at + LEASE_S + QUEUE_POLL_MS / 1000 + 1.5 - time.monotonic())
                )
                pair = [survivor, await joining]
                rows = await deliveries(survivor, webhook_id)
                cut_off, sent_up = rows[down.json["id"]], rows[up.json["id"]]
                after_up = [r.json["event"] for r in receiver.requests if r.at >= up.at]
                assert "instance.down" not in after_up, (round_, after_up, cut_off)
                assert cut_off["status"] == "superseded", (round_, cut_off)
                assert cut_off["supersededBy"] == up.json["id"], (round_, cut_off)
                assert cut_off["attempts"] == posts_of(receiver, cut_off["id"]) == 1, cut_off
                assert sent_up["status"] == "success", (round_, sent_up)
                assert sent_up["attempts"] == posts_of(receiver, sent_up["id"]), sent_up
            # The whole run as the receiver saw it: events in the order they happened, and
            # every delivery's attempts what arrived of it.
            stamps = [r.json["timestamp"] for r in receiver.requests]
            assert stamps == sorted(stamps), [r.json["event"] for r in receiver.requests]
            assert receiver.requests[-1].json["event"] == "instance.up"
            for row in (await deliveries(pair[0], webhook_id)).values():
                assert row["attempts"] == posts_of(receiver, row["id"]), row
    finally:
        server_factory.stop(watched)
        server_factory.stop(default)
