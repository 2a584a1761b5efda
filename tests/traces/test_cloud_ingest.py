"""POST /v1/traces past session auth: in cloud mode the ingest token (mandatory there) is
what lets a sender in, with user control on; self-hosted stays as it was."""

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.fixtures.cloud import INGEST_TOKEN, cloud_settings
from tests.fixtures.servers import RunningServer
from tests.fixtures.workspace import ORIGIN, Workspace, open_workspace, workspace_settings
from tests.traces.builders import export_request
from tests.traces.test_api import PROTOBUF, request_trace

BEARER = {"authorization": f"Bearer {INGEST_TOKEN}"}


def sender(space: Workspace) -> httpx.AsyncClient:
    """An SDK or Collector: no session cookie, no Origin."""
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=space.app), base_url=ORIGIN)


async def push(client: httpx.AsyncClient, **headers: str) -> tuple[httpx.Response, str]:
    """One trace exported; the answer, and the trace's id."""
    spans = request_trace()
    body = export_request(*spans).SerializeToString()
    response = await client.post("/v1/traces", content=body, headers={**PROTOBUF, **headers})
    return response, spans[0].trace_id.hex()


async def stored(space: Workspace) -> set[str]:
    response = await space.owner.client.get("/api/traces")
    assert response.status_code == 200, response.text
    return {t["traceId"] for t in response.json()["traces"]}


@pytest.fixture
async def cloud(cloud_valkey: RunningServer) -> AsyncIterator[Workspace]:
    """Cloud mode with user control on and an owner signed in."""
    async with open_workspace(cloud_settings(cloud_valkey, WORKSPACE_DISABLED=False)) as space:
        yield space


class TestCloudMode:
    async def test_the_ingest_token_lets_a_sender_in_without_a_session(self, cloud: Workspace):
        async with sender(cloud) as client:
            response, trace_id = await push(client, **BEARER)
        assert response.status_code == 200, response.text
        assert trace_id in await stored(cloud)

    @pytest.mark.parametrize(
        "headers",
        [
            pytest.param({}, id="no-token"),
            pytest.param({"authorization": f"Bearer {INGEST_TOKEN}x"}, id="wrong-token"),
            pytest.param({"authorization": f"Basic {INGEST_TOKEN}"}, id="not-bearer"),
        ],
    )
    async def test_without_the_token_it_is_401_and_nothing_is_stored(
        self, cloud: Workspace, headers: dict[str, str]
    ):
        async with sender(cloud) as client:
            response, trace_id = await push(client, **headers)
        assert response.status_code == 401, response.text
        assert trace_id not in await stored(cloud)

    async def test_a_session_is_not_the_token(self, cloud: Workspace):
        response, trace_id = await push(cloud.owner.client)
        assert response.status_code == 401, response.text
        assert trace_id not in await stored(cloud)

    async def test_the_token_opens_the_receiver_only(self, cloud: Workspace):
        async with sender(cloud) as client:
            response = await client.get("/api/traces", headers=BEARER)
        assert response.status_code == 401, response.text


class TestSelfHosted:
    @pytest.mark.parametrize(
        ("env", "headers"),
        [
            pytest.param({}, {}, id="no-token-set"),
            pytest.param({"OTEL_INGEST_TOKEN": INGEST_TOKEN}, BEARER, id="token-set"),
        ],
    )
    async def test_a_sender_needs_no_session(
        self, valkey_server: RunningServer, env: dict[str, Any], headers: dict[str, str]
    ):
        settings = workspace_settings(valkey_server, **env)
        async with open_workspace(settings) as space, sender(space) as client:
            response, trace_id = await push(client, **headers)
            assert response.status_code == 200, response.text
            assert trace_id in await stored(space)

    async def test_with_a_token_set_a_push_without_it_is_401(self, valkey_server: RunningServer):
        settings = workspace_settings(valkey_server, OTEL_INGEST_TOKEN=INGEST_TOKEN)
        async with open_workspace(settings) as space, sender(space) as client:
            response, _ = await push(client)
        assert response.status_code == 401, response.text
