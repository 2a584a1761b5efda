"""cluster.bus.corruption as a webhook: a pro event with its payload.

No stock engine reports a corruption counter (detection/cluster_bus.py), so the event
is published on the bus as the detector publishes it (its tests read real replies)."""

from typing import Any

from svc_monitor.event_types.cluster import ClusterBusCorruption
from tests.fixtures.app import AppFactory
from tests.fixtures.licensing import SigningKey
from tests.fixtures.receiver import Receiver
from tests.fixtures.waiting import eventually

EVENT = "cluster.bus.corruption"
CRC = "cluster_stats_messages_crc_mismatch"


def webhook(receiver: Receiver) -> dict[str, Any]:
    return {"name": "bus", "url": receiver.url(), "events": [EVENT]}


class TestClusterBusCorruptionWebhook:
    async def test_community_sees_it_locked_and_may_not_subscribe(
        self, memory_app_factory: AppFactory, receiver: Receiver
    ):
        async with memory_app_factory(NODE_ENV="development") as app:
            allowed = (await app.client.get("/api/webhooks/allowed-events")).json()
            answer = await app.client.post("/api/webhooks", json=webhook(receiver))
        assert EVENT in allowed["lockedEvents"]
        assert answer.status_code == 403
        assert f"{EVENT} (requires pro)" in answer.json()["message"]

    async def test_pro_delivers_the_counters_and_a_message(
        self, memory_app_factory: AppFactory, signing_key: SigningKey, receiver: Receiver
    ):
        licence = signing_key.mint(tier="pro")
        async with memory_app_factory(NODE_ENV="development", SVC_OFFLINE_LICENSE=licence) as app:
            assert (await app.client.post("/api/webhooks", json=webhook(receiver))).is_success
            connection = (await app.client.get("/api/connections")).json()[0]
            app.services.bus.publish(
                ClusterBusCorruption(
                    connection_id=connection["id"],
                    at_ms=1_700_000_000_000,
                    increases={CRC: 3},
                    totals={CRC: 10},
                    state="ok",
                    known_nodes=6,
                )
            )

            async def delivered() -> bool:
                return any(r.event == EVENT for r in receiver.requests)

            await eventually(delivered)
        envelope = next(r for r in receiver.requests if r.event == EVENT).json
        assert envelope["instance"]["port"] == connection["port"]
        assert envelope["timestamp"] == 1_700_000_000_000
        assert envelope["data"] == {
            "corruptMessages": 3,
            "increases": {CRC: 3},
            "totals": {CRC: 10},
            "clusterState": "ok",
            "knownNodes": 6,
            "message": (f"Cluster bus discarded 3 corrupt messages since the last read ({CRC} +3)"),
            "timestamp": 1_700_000_000_000,
        }
