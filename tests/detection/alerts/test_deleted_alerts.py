"""Deleting a webhook takes its alert states with it, from memory and from storage, on the
replica it is deleted on and on the one polling the instance: a webhook created after it
starts fresh and gets the alert still firing, and nothing of the deleted one stays in
alert_states. A real Valkey over 90 % of its maxmemory, a real receiver, SQLite and
PostgreSQL."""

from typing import Any

import pytest
from sqlalchemy import select

from svc_monitor.detection.alerts.store import alert_states
from tests.fixtures.alerting import over_ninety_percent
from tests.fixtures.app import RunningApp, make_settings, running_app, target_of
from tests.fixtures.receiver import Receiver
from tests.fixtures.replica_processes import eventually
from tests.fixtures.servers import RunningServer, ServerFactory

pytestmark = pytest.mark.timeout(120)

MEMORY_CRITICAL = "memory.critical"


async def test_a_deleted_webhook_s_alerts_go_and_a_new_webhook_starts_fresh(
    server_factory: ServerFactory,
    receiver: Receiver,
    persistent_storage: dict[str, Any],
    deleted_through: str,
) -> None:
    memory = _over_ninety_percent(server_factory)
    settings = make_settings(**target_of(memory), **persistent_storage, NODE_ENV="development")
    try:
        async with running_app(settings) as app:
            old = await _alerting_webhook(app, receiver, "/old")
            await _delete(app, old, through=deleted_through)
            assert not app.services.webhook_dispatcher.alerts.is_active(await _key(app, old))
            assert await _stored(app, old) == []
            new = await _alerting_webhook(app, receiver, "/new")
            assert await _stored(app, new) == [f"webhook:{new}:{MEMORY_CRITICAL}"]
            assert await _stored(app, old) == []
            assert len(receiver.on("/old")) == 1  # nothing more for the deleted one
    finally:
        server_factory.stop(memory)


async def test_another_replica_s_deletion_drops_the_states_of_the_replica_polling(
    server_factory: ServerFactory, receiver: Receiver, shared_postgres: dict[str, Any]
) -> None:
    memory = _over_ninety_percent(server_factory)

    def settings() -> Any:
        return make_settings(**target_of(memory), **shared_postgres, NODE_ENV="development")

    try:
        # The first replica holds the only connection: its dispatcher holds the alert.
        async with running_app(settings()) as polling:
            old = await _alerting_webhook(polling, receiver, "/old")
            key = await _key(polling, old)
            async with running_app(settings()) as other:
                await _delete(other, old, through="api")
                assert await _stored(other, old) == []

                async def forgotten() -> None:
                    assert not polling.services.webhook_dispatcher.alerts.is_active(key)

                await eventually(forgotten, timeout_s=10)
                assert await _stored(polling, old) == []
                new = await _alerting_webhook(other, receiver, "/new", by=polling)
                assert await _stored(other, new) == [f"webhook:{new}:{MEMORY_CRITICAL}"]
                assert await _stored(other, old) == []
    finally:
        server_factory.stop(memory)


@pytest.fixture(params=["api", "ui"])
def deleted_through(request: pytest.FixtureRequest) -> str:
    """Where the webhook is deleted: the API, or the webhooks page."""
    path: str = request.param
    return path


def _over_ninety_percent(server_factory: ServerFactory) -> RunningServer:
    server = server_factory.start("valkey", config={"hz": "1"})
    over_ninety_percent(server)
    return server


async def _alerting_webhook(
    app: RunningApp, receiver: Receiver, path: str, *, by: RunningApp | None = None
) -> str:
    """A webhook created on `app` for memory.critical, once it has got one and the alert
    state is stored (by `by`, the replica polling, when that is another)."""
    answer = await app.client.post(
        "/api/webhooks",
        json={"name": path.strip("/"), "url": receiver.url(path), "events": [MEMORY_CRITICAL]},
    )
    assert answer.status_code == 201, answer.text
    webhook_id: str = answer.json()["id"]

    async def alerted() -> None:
        assert [r.event for r in receiver.on(path)] == [MEMORY_CRITICAL], receiver.requests

    await eventually(alerted, timeout_s=20)
    polling = by or app
    assert polling.services.webhook_dispatcher.alerts.is_active(await _key(polling, webhook_id))
    assert await _stored(polling, webhook_id) == [f"webhook:{webhook_id}:{MEMORY_CRITICAL}"]
    return webhook_id


async def _delete(app: RunningApp, webhook_id: str, *, through: str) -> None:
    if through == "api":
        answer = await app.client.delete(f"/api/webhooks/{webhook_id}")
        assert answer.status_code == 204, answer.text
    else:
        answer = await app.client.post(
            f"/ui/webhooks/{webhook_id}/delete", headers={"HX-Request": "true"}
        )
        assert answer.status_code == 200, answer.text
        assert answer.headers["HX-Redirect"] == "/webhooks"
    assert (await app.client.get(f"/api/webhooks/{webhook_id}")).status_code == 404


async def _key(app: RunningApp, webhook_id: str) -> tuple[str, str, str]:
    (connection,) = (await app.client.get("/api/connections")).json()
    return (webhook_id, connection["id"], MEMORY_CRITICAL)


async def _stored(app: RunningApp, webhook_id: str) -> list[str]:
    """The webhook's rows in alert_states, once every change made so far is written."""
    await app.services.shared_alerts.flush()
    rows = await app.services.db.fetch_all(select(alert_states.c.alert))
    return [row.alert for row in rows if row.alert.startswith(f"webhook:{webhook_id}:")]
