"""A restart on a SQLite file carries on from the alerts sent before it: an instance
reported down that came back while svc-monitor was stopped gets its instance.up, one
still down gets no second instance.down, and a memory.critical still firing is not sent
again. With memory storage the restart starts empty, as documented. Two apps one after
the other on one file, real servers, a real receiver."""

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.alerting import of_type, over_ninety_percent
from tests.fixtures.app import make_settings, running_app, target_of
from tests.fixtures.receiver import Receiver
from tests.fixtures.replica_processes import eventually
from tests.fixtures.servers import ServerFactory

pytestmark = pytest.mark.timeout(120)

EVENTS = ["memory.critical", "instance.down", "instance.up"]


async def test_a_restart_on_sqlite_says_up_for_what_it_reported_down_and_pages_nothing_twice(
    server_factory: ServerFactory, receiver: Receiver, tmp_path: Path
) -> None:
    memory = server_factory.start("valkey", config={"hz": "1"})
    back = server_factory.start("valkey", config={"hz": "1"})
    still_down = server_factory.start("valkey", config={"hz": "1"})
    over_ninety_percent(memory)
    storage = {"STORAGE_TYPE": "sqlite", "STORAGE_SQLITE_FILEPATH": tmp_path / "audit.db"}

    def settings() -> Any:
        return make_settings(**target_of(memory), **storage, NODE_ENV="development")

    try:
        async with running_app(settings()) as first:
            hook = await first.client.post(
                "/api/webhooks", json={"name": "ops", "url": receiver.url("/"), "events": EVENTS}
            )
            assert hook.status_code == 201, hook.text
            for name, server in (("back", back), ("still-down", still_down)):
                added = await first.client.post(
                    "/api/connections",
                    json={"name": name, "host": server.host, "port": server.port},
                )
                assert added.status_code == 201, added.text
            await eventually(_count(receiver, "memory.critical", 1), timeout_s=20)
            server_factory.stop(back)
            server_factory.stop(still_down)
            await eventually(_count(receiver, "instance.down", 2), timeout_s=20)
        downs = {d["instance"]["port"]: d for d in of_type(receiver, "instance.down")}
        server_factory.start_again(back)  # while svc-monitor is stopped
        async with running_app(settings()):
            await eventually(_count(receiver, "instance.up", 1), timeout_s=20)
            await asyncio.sleep(3)  # three INFO polls of each by the restarted process
        (up,) = of_type(receiver, "instance.up")
        assert up["instance"]["port"] == back.port
        assert up["data"]["downSince"] <= downs[back.port]["data"]["detectedAt"]
        assert len(of_type(receiver, "instance.down")) == 2, receiver.requests
        assert len(of_type(receiver, "memory.critical")) == 1, receiver.requests
    finally:
        for server in (memory, back, still_down):
            server_factory.stop(server)


async def test_a_restart_on_memory_storage_starts_empty(
    server_factory: ServerFactory, receiver: Receiver
) -> None:
    memory = server_factory.start("valkey", config={"hz": "1"})
    over_ninety_percent(memory)
    try:
        for _ in range(2):
            settings = make_settings(**target_of(memory), NODE_ENV="development")
            async with running_app(settings) as app:
                hook = await app.client.post(
                    "/api/webhooks",
                    json={"name": "ops", "url": receiver.url("/"), "events": EVENTS},
                )
                assert hook.status_code == 201, hook.text
                fired = len(of_type(receiver, "memory.critical")) + 1
                await eventually(_count(receiver, "memory.critical", fired), timeout_s=20)
        assert len(of_type(receiver, "memory.critical")) == 2
    finally:
        server_factory.stop(memory)


def _count(receiver: Receiver, event_type: str, expected: int) -> Any:
    async def check() -> None:
        assert len(of_type(receiver, event_type)) == expected, receiver.requests

    return check
