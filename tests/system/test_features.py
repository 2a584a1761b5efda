"""Feature domains loaded after the server listens (how the command line starts)."""

import asyncio
import contextlib
from collections.abc import AsyncIterator

import httpx
from google.rpc.status_pb2 import Status

from svc_monitor.app import create_app
from tests.fixtures.app import make_settings, target_of
from tests.fixtures.servers import RunningServer
from tests.otlp.push_payloads import at, body, gauge, point, resource

METRICS = "/v1/external/metrics"


@contextlib.asynccontextmanager
async def background_app(server: RunningServer) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(make_settings(**target_of(server)), features_in_background=True)
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://svc.test") as client,
    ):
        yield client


class TestFeaturesInBackground:
    async def test_health_says_starting_until_every_route_answers(
        self, valkey_server: RunningServer
    ):
        """A script that waits for health and then reads a feature route gets its answer:
        /api/health is 503 `starting` while the features load, and liveness is 200 from
        the first request."""
        async with background_app(valkey_server) as client:
            assert (await client.get("/api/health/live")).status_code == 200
            first = await client.get("/api/metrics/slowlog/length")
            if first.status_code == 503:  # still loading: told when to come back
                assert first.headers["retry-after"] == "1"
                assert "starting" in first.json()["message"]
            healths = []
            for _ in range(200):
                health = await client.get("/api/health")
                healths.append((health.status_code, health.json()["status"]))
                if health.status_code == 200:
                    break
                await asyncio.sleep(0.05)
            assert healths[-1] == (200, "ok"), healths
            assert set(healths[:-1]) <= {(503, "starting")}, healths
            response = await client.get("/api/metrics/slowlog/length")
            assert response.status_code == 200, response.text
            assert isinstance(response.json()["length"], int)
            spec = (await client.get("/api/openapi.json")).json()
            assert "/api/metrics/slowlog/length" in spec["paths"]
            missing = await client.get("/api/no-such-route")
        assert missing.status_code == 404
        assert missing.json()["statusCode"] == 404


class TestPushesWhileStarting:
    async def test_a_push_before_the_receiver_is_built_is_told_to_retry(
        self, valkey_server: RunningServer
    ):
        # The receiver is built with the features: until then a push is a 503 in the OTLP
        # error shape with Retry-After (senders retry it), never a 500 or a lost point.
        payload = body(resource(at("10.0.0.9", 6379), gauge("redis.memory.used", point(1))))
        headers = {"Content-Type": "application/x-protobuf"}
        async with background_app(valkey_server) as client:
            answers = []
            for _ in range(100):
                answers.append(await client.post(METRICS, content=payload, headers=headers))
                if answers[-1].status_code == 200:
                    break
                await asyncio.sleep(0.05)
        assert answers[-1].status_code == 200
        for early in answers[:-1]:
            assert early.status_code == 503
            assert early.headers["retry-after"] == "1"
            assert early.headers["content-type"] == "application/x-protobuf"
            status = Status()
            status.ParseFromString(early.content)
            assert "starting" in status.message
