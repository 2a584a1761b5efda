"""Reads answer the same from any replica: a route built from the latest poll answers on a
replica that does not poll the connection by reading the server live."""

from typing import Any

from tests.fixtures.app import RunningApp, make_settings, running_app, target_of
from tests.fixtures.replica_processes import eventually
from tests.fixtures.servers import RunningServer

FAST = {"REPLICA_HEARTBEAT_MS": 250, "REPLICA_TIMEOUT_MS": 1000}
SUMMARY = "/api/metrics/commandstats/summary"


async def test_the_commandstats_summary_answers_from_the_replica_that_does_not_poll(
    valkey_server: RunningServer, shared_postgres: dict[str, Any]
) -> None:
    settings = make_settings(**target_of(valkey_server), **shared_postgres, **FAST)
    async with running_app(settings) as first, running_app(settings) as second:

        async def holder_and_other() -> tuple[RunningApp, RunningApp]:
            got = (await first.client.get("/api/replicas")).json()["replicas"]
            owned = {r["self"]: r["ownedConnections"] for r in got}
            assert sorted(len(v) for v in owned.values()) == [0, 1], got
            holder, other = (first, second) if owned[True] else (second, first)
            assert (await holder.client.get(SUMMARY)).json() != []  # it has polled
            return holder, other

        holder, other = await eventually(holder_and_other, timeout_s=20)
        polled = (await holder.client.get(SUMMARY)).json()
        live = await other.client.get(SUMMARY)
        assert live.status_code == 200, live.text
        commands = {row["command"] for row in live.json()}
        assert {row["command"] for row in polled} <= commands
        assert "info" in commands
        assert all(row["calls"] > 0 and "capturedAt" in row for row in live.json())


async def test_the_dashboard_cards_show_on_the_replica_that_does_not_poll(
    valkey_server: RunningServer, shared_postgres: dict[str, Any]
) -> None:
    settings = make_settings(**target_of(valkey_server), **shared_postgres, **FAST)
    async with running_app(settings) as first, running_app(settings) as second:

        async def other_replica() -> RunningApp:
            got = (await first.client.get("/api/replicas")).json()["replicas"]
            owned = {r["self"]: r["ownedConnections"] for r in got}
            assert sorted(len(v) for v in owned.values()) == [0, 1], got
            return second if owned[True] else first

        other = await eventually(other_replica, timeout_s=20)

        async def cards_shown() -> str:
            # The holder's first INFO reaches storage one write after it took the lease.
            cards = await other.client.get("/ui/dashboard/live")
            assert cards.status_code == 200, cards.text
            assert 'class="cards"' in cards.text, cards.text[:300]
            return cards.text

        text = await eventually(cards_shown, timeout_s=10)
        assert "No INFO read yet" not in text
        assert 'id="used_memory"' in text or "Memory used" in text
