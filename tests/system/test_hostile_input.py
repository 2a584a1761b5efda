"""Hostile input gets a clear refusal naming the field, and nothing stored changes:
numbers past what storage keeps, control characters in names, hosts and file names, and
methods on paths that have no route."""

from typing import Any

import pytest

from tests.fixtures.app import AppFactory, RunningApp

PAST_64_BITS = str(2**64 + 1)


@pytest.mark.parametrize(
    ("path", "field"),
    [
        (f"/api/slowlog-analytics/entries?from={PAST_64_BITS}", "from"),
        (f"/api/slowlog-analytics/entries?to={PAST_64_BITS}", "to"),
        (f"/api/slowlog-analytics/entries?offset={PAST_64_BITS}", "offset"),
        (f"/api/metrics/history?from={PAST_64_BITS}", "from"),
        (f"/api/client-analytics/idle-connections?minOccurrences={PAST_64_BITS}", "minOccurrences"),
        (f"/api/webhooks/x/deliveries?offset={PAST_64_BITS}", "offset"),
    ],
)
async def test_numbers_past_64_bits_are_refused_naming_the_parameter(
    app_factory: AppFactory, path: str, field: str
) -> None:
    async with app_factory() as app:
        reply = await app.client.get(path)
    assert reply.status_code == 422, reply.text
    assert field in reply.json()["fields"]


def with_nul(body: dict[str, Any], field: str) -> dict[str, Any]:
    return {**body, field: f"{body[field]}\x00evil"}


CONNECTION = {"name": "plain", "host": "127.0.0.1", "port": 6399}
TUNNEL = {"host": "127.0.0.1", "port": 22, "username": "ops", "privateKeyPath": "id_ed25519"}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (with_nul(CONNECTION, "name"), "name"),
        (with_nul(CONNECTION, "host"), "host"),
        ({**CONNECTION, "name": "line\nbreak"}, "name"),
        (
            {**CONNECTION, "sshTunnel": with_nul(TUNNEL, "privateKeyPath")},
            "sshTunnel.privateKeyPath",
        ),
        ({**CONNECTION, "sshTunnel": with_nul(TUNNEL, "username")}, "sshTunnel.username"),
    ],
)
async def test_control_characters_in_a_connection_are_refused_and_nothing_is_stored(
    app_factory: AppFactory, body: dict[str, Any], field: str
) -> None:
    async with app_factory() as app:
        before = [c["id"] for c in (await app.client.get("/api/connections")).json()]
        reply = await app.client.post("/api/connections", json=body)
        assert reply.status_code == 422, reply.text
        assert field in reply.json()["fields"]
        assert "control characters" in reply.json()["message"]
        after = [c["id"] for c in (await app.client.get("/api/connections")).json()]
        assert after == before


async def test_a_webhook_name_with_a_nul_byte_is_refused(api: RunningApp) -> None:
    reply = await api.client.post(
        "/api/webhooks",
        json={"name": "ops\x00", "url": "https://hooks.example.com/x", "events": ["instance.down"]},
    )
    assert reply.status_code == 422, reply.text
    assert reply.json()["fields"] == ["name"]
    assert (await api.client.get("/api/webhooks")).json() == []


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
async def test_a_method_on_a_path_with_no_route_is_a_404(api: RunningApp, method: str) -> None:
    for path in ("/no-such-page", "/api/no-such-route"):
        reply = await api.client.request(method, path)
        assert reply.status_code == 404, (path, reply.status_code)
        assert reply.json()["statusCode"] == 404


@pytest.mark.parametrize("method", ["GET", "POST", "PUT", "DELETE"])
async def test_an_unknown_otlp_path_is_a_404_in_the_otlp_error_shape(
    api: RunningApp, method: str
) -> None:
    from google.rpc.status_pb2 import Status

    for path in ("/v1/logs", "/v1/no/such/signal"):
        as_json = await api.client.request(
            method, path, content=b"{}", headers={"Content-Type": "application/json"}
        )
        assert as_json.status_code == 404, (path, as_json.text)
        assert as_json.json()["code"] == 5  # NOT_FOUND
        assert "/v1/external/metrics" in as_json.json()["message"]
        as_protobuf = await api.client.request(
            method, path, content=b"", headers={"Content-Type": "application/x-protobuf"}
        )
        assert as_protobuf.status_code == 404
        status = Status()
        status.ParseFromString(as_protobuf.content)
        assert status.code == 5
