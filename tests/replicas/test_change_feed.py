"""A change made on one replica reaches the others within a second (PostgreSQL
LISTEN/NOTIFY): connections and runtime settings as events on their own bus, webhooks as
a reload of their list, so the next alert another replica sends uses the new settings."""

import asyncio
import time
from typing import Any

from svc_monitor.event_types.readings import MemoryReading
from svc_monitor.events import ConnectionsChanged, Event, RuntimeSettingsChanged
from tests.fixtures.app import RunningApp, make_settings, running_app, target_of
from tests.fixtures.licensing import SigningKey
from tests.fixtures.receiver import Receiver
from tests.fixtures.replica_processes import eventually
from tests.fixtures.servers import RunningServer

FAST = {"REPLICA_HEARTBEAT_MS": 250, "REPLICA_TIMEOUT_MS": 1000, "NODE_ENV": "development"}
WITHIN_S = 1.0
MAXMEMORY = 1_000_000


def shared(server: RunningServer, shared_postgres: dict[str, Any]) -> dict[str, Any]:
    return {**target_of(server), **shared_postgres, **FAST}


async def next_event(app: RunningApp, kind: type[Event], timeout_s: float) -> Event:
    subscription = app.services.bus.subscribe("test", maxsize=100, kinds=(kind,))
    try:
        return await asyncio.wait_for(subscription.get(), timeout_s)
    finally:
        app.services.bus.unsubscribe(subscription)


async def test_connections_and_settings_changed_on_one_reach_the_other_within_a_second(
    valkey_server: RunningServer,
    redis7_server: RunningServer,
    shared_postgres: dict[str, Any],
) -> None:
    settings = make_settings(**shared(valkey_server, shared_postgres))
    async with running_app(settings) as first, running_app(settings) as second:
        await asyncio.sleep(0.5)  # both listening
        heard = asyncio.ensure_future(next_event(second, ConnectionsChanged, 5))
        await asyncio.sleep(0)
        started = time.monotonic()
        added = await first.client.post(
            "/api/connections",
            json={"name": "other", "host": redis7_server.host, "port": redis7_server.port},
        )
        assert added.status_code == 201, added.text
        event = await heard
        assert time.monotonic() - started < WITHIN_S
        assert isinstance(event, ConnectionsChanged)
        assert event.connection_id == added.json()["id"]
        assert event.from_replica == first.services.replicas.id

        heard = asyncio.ensure_future(next_event(second, RuntimeSettingsChanged, 5))
        await asyncio.sleep(0)
        started = time.monotonic()
        changed = await first.client.put("/api/settings", json={"auditPollIntervalMs": 7000})
        assert changed.status_code == 200, changed.text
        assert isinstance(await heard, RuntimeSettingsChanged)
        assert time.monotonic() - started < WITHIN_S


async def test_a_webhook_changed_on_one_replica_delivers_with_the_new_settings_from_another(
    valkey_server: RunningServer, shared_postgres: dict[str, Any], receiver: Receiver
) -> None:
    settings = make_settings(**shared(valkey_server, shared_postgres))
    async with running_app(settings) as first, running_app(settings) as second:
        await asyncio.sleep(0.5)  # both listening
        created = await first.client.post(
            "/api/webhooks",
            json={"name": "mem", "url": receiver.url("/before"), "events": ["memory.critical"]},
        )
        assert created.status_code == 201, created.text
        hook_id = created.json()["id"]
        (known,) = await second.services.webhooks.active()  # its list, loaded before
        assert known.url == receiver.url("/before")
        started = time.monotonic()
        changed = await first.client.put(
            f"/api/webhooks/{hook_id}",
            json={"url": receiver.url("/after"), "thresholds": {"memoryCriticalPercent": 70}},
        )
        assert changed.status_code == 200, changed.text

        async def seen_on_second() -> None:
            (hook,) = await second.services.webhooks.active()
            assert hook.url == receiver.url("/after")

        await eventually(seen_on_second, timeout_s=5)
        assert time.monotonic() - started < WITHIN_S
        # 75 % is over the new threshold only: the alert comes from the second replica.
        connection = (await second.client.get("/api/connections")).json()[0]["id"]
        second.services.bus.publish(
            MemoryReading(
                connection_id=connection,
                used_memory=int(MAXMEMORY * 0.75),
                maxmemory=MAXMEMORY,
                maxmemory_policy="allkeys-lru",
            )
        )
        await receiver.wait_for(1)
        assert [r.path for r in receiver.requests] == ["/after"]
        assert receiver.requests[0].json["data"]["threshold"] == 70


async def test_an_offline_licence_activated_on_one_replica_licenses_the_other_within_a_second(
    valkey_server: RunningServer, shared_postgres: dict[str, Any], signing_key: SigningKey
) -> None:
    # Each replica has a data directory of its own: nothing reaches the second by file.
    config = shared(valkey_server, shared_postgres)
    async with (
        running_app(make_settings(**config)) as first,
        running_app(make_settings(**config)) as second,
    ):
        await asyncio.sleep(0.5)  # both listening

        async def tier_on(app: RunningApp) -> str:
            status = (await app.client.get("/api/license/status")).json()
            return str(status["tier"])

        assert await tier_on(second) == "community"
        assert (await second.client.get("/api/anomaly/buffers")).status_code == 403
        started = time.monotonic()
        activated = await first.client.put(
            "/api/license/offline", json={"token": signing_key.mint(tier="enterprise")}
        )
        assert activated.status_code == 200, activated.text

        async def enterprise_on_second() -> None:
            assert await tier_on(second) == "enterprise"

        await eventually(enterprise_on_second, timeout_s=5)
        assert time.monotonic() - started < WITHIN_S
        gated = await second.client.get("/api/anomaly/buffers")
        assert gated.status_code == 200, gated.text  # a Pro feature now answers there

        started = time.monotonic()
        removed = await second.client.delete("/api/license/offline")
        assert removed.status_code == 200, removed.text

        async def community_on_first() -> None:
            assert await tier_on(first) == "community"

        await eventually(community_on_first, timeout_s=5)
        assert time.monotonic() - started < WITHIN_S
        again = await first.client.put(
            "/api/license/offline", json={"token": signing_key.mint(tier="pro")}
        )
        assert again.status_code == 200, again.text

    # A replica started later takes up what storage holds, not its own empty directory.
    async with running_app(make_settings(**config)) as third:
        assert await tier_on(third) == "pro"
