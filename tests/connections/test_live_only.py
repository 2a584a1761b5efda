"""Every route that sends the server commands gives a push connection the one
live-connection answer, and says so in the OpenAPI document (`x-live-only`).

The walk is driven by the served document, so a new route is covered the day it is added:
a marked route must answer 409 "This view needs a live connection" while the Collector's
fields are fresh and once they are all stale; an unmarked route scoped to a connection
must never reach the engine for a push connection (ConnectionService.client refuses it
with that same answer, so an unmarked route that talks to the engine fails here).
"""

import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from svc_monitor.app import create_app
from tests.fixtures.app import make_settings, serve_app
from tests.fixtures.licensing import SigningKey
from tests.fixtures.waiting import eventually
from tests.otlp.push_payloads import PROTOBUF, at, body, gauge, point, resource

PUSHED = ("10.4.4.4", 6379)
STALE_AFTER_S = 60
LIVE_ONLY = "x-live-only"
_METHODS = ("get", "put", "post", "patch", "delete")
# Live-only routes of docs/features/otlp-push-and-traces.md#push-connections, each of which
# answered something else for a push connection before (cluster mode disabled, not
# supported, no fresh metrics).
NAMED = {
    ("get", "/api/metrics/cluster/info"),
    ("get", "/api/metrics/cluster/nodes"),
    ("get", "/api/metrics/cluster/slot-stats"),
    ("get", "/api/metrics/commandlog"),
    ("get", "/api/metrics/commandlog/length"),
    ("get", "/api/metrics/commandlog/patterns"),
    ("delete", "/api/metrics/commandlog"),
    ("get", "/api/metrics/memory/doctor"),
    ("get", "/api/metrics/slowlog"),
    ("get", "/api/metrics/clients"),
    ("get", "/api/metrics/latency/latest"),
}


@dataclass
class MovableClock:
    offset_s: float = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset_s


@dataclass
class Served:
    client: httpx.AsyncClient
    clock: MovableClock
    connection_id: str
    document: dict[str, Any]


@pytest.fixture
async def served(signing_key: SigningKey) -> AsyncIterator[Served]:
    clock = MovableClock()
    settings = make_settings(
        DB_HOST="127.0.0.1",
        DB_PORT=9,  # nothing listens: only the push connection is asked about
        OTEL_METRICS_STALE_AFTER_MS=STALE_AFTER_S * 1000,
        SVC_OFFLINE_LICENSE=signing_key.mint(),  # every gated route reaches its own check
    )
    async with (
        serve_app(create_app(settings, clock=clock)) as base,
        httpx.AsyncClient(base_url=base, timeout=30) as client,
    ):
        made = await client.post(
            "/api/connections",
            json={"source": "push", "name": "edge", "host": PUSHED[0], "port": PUSHED[1]},
        )
        assert made.status_code == 201, made.text
        # A Valkey 9.0 in cluster mode as the Collector reports it: the capabilities it
        # implies (COMMANDLOG, SLOT-STATS, MEMORY DOCTOR) must not change the answer.
        attrs = at(*PUSHED, **{"db.system.name": "valkey", "valkey.version": "9.0.0"})
        pushed = body(
            resource(
                attrs,
                gauge("redis.memory.used", point(1_048_576)),
                gauge("redis.clients.connected", point(3)),
            )
        )
        sent = await client.post("/v1/external/metrics", content=pushed, headers=PROTOBUF)
        assert sent.status_code == 200, sent.text
        document = (await client.get("/api/openapi.json")).json()
        yield Served(client, clock, str(made.json()["id"]), document)


def operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    found = []
    for path, item in document["paths"].items():
        for method in _METHODS:
            if method in item:
                found.append((method, path, item[method]))
    return found


def scoped_to_a_connection(path: str, operation: dict[str, Any]) -> bool:
    headers = {
        p["name"].lower() for p in operation.get("parameters", []) if p.get("in") == "header"
    }
    return "x-connection-id" in headers or path.startswith("/api/connections/{")


def sample(schema: dict[str, Any], document: dict[str, Any]) -> Any:
    """A value the parameter's schema accepts, so a route gets past its own validation."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        schema = document["components"]["schemas"][name]
    for alternative in schema.get("anyOf", []):
        if alternative.get("type") != "null":
            return sample(alternative, document)
    if "default" in schema:
        return schema["default"]
    if "enum" in schema:
        return schema["enum"][0]
    if schema.get("type") == "integer":
        return max(1, schema.get("minimum", 1))
    if schema.get("type") == "boolean":
        return False
    return "x"


async def call(served: Served, method: str, path: str, operation: dict[str, Any]) -> httpx.Response:
    query: dict[str, Any] = {}
    url = path
    for param in operation.get("parameters", []):
        value = sample(param.get("schema", {}), served.document)
        if param["in"] == "path":
            # A connection named in the path is the push connection itself.
            value = served.connection_id if path.startswith("/api/connections/{") else value
            url = url.replace("{" + param["name"] + "}", str(value))
        elif param["in"] == "query" and param.get("required"):
            query[param["name"]] = value
    headers = {"X-Connection-Id": served.connection_id}
    return await served.client.request(method.upper(), url, params=query, headers=headers)


def is_live_connection_answer(response: httpx.Response) -> bool:
    if response.status_code != 409:
        return False
    return "needs a live connection" in response.json()["message"]


async def walk_live_only(served: Served) -> dict[tuple[str, str], httpx.Response]:
    answers = {}
    for method, path, operation in operations(served.document):
        if operation.get(LIVE_ONLY):
            answers[method, path] = await call(served, method, path, operation)
    return answers


def assert_one_answer(answers: dict[tuple[str, str], httpx.Response]) -> None:
    wrong = {
        f"{m.upper()} {p}": f"{r.status_code} {r.text[:160]}"
        for (m, p), r in answers.items()
        if not is_live_connection_answer(r)
    }
    assert wrong == {}
    bodies = {r.text for r in answers.values()}
    assert len(bodies) == 1, bodies  # one answer, word for word, whichever route
    message = next(iter(answers.values())).json()["message"]
    assert re.match(r"^This view needs a live connection: 'edge' is an OTLP push", message)


class TestLiveOnlyRoutes:
    async def test_the_document_marks_the_routes_that_talk_to_the_engine(
        self, served: Served
    ) -> None:
        marked = {(m, p) for m, p, op in operations(served.document) if op.get(LIVE_ONLY)}
        assert marked >= NAMED
        for method, path, operation in operations(served.document):
            if (method, path) in marked:
                assert "409" in operation["responses"], (method, path)
                assert scoped_to_a_connection(path, operation), (method, path)

    async def test_every_marked_route_answers_409_while_pushed_fields_are_fresh(
        self, served: Served
    ) -> None:
        fresh = await served.client.get(
            "/api/metrics/info", headers={"X-Connection-Id": served.connection_id}
        )
        assert fresh.status_code == 200  # the pushed fields are there to be read
        answers = await walk_live_only(served)
        assert set(answers) >= NAMED
        assert_one_answer(answers)

    async def test_every_marked_route_answers_409_once_every_pushed_field_is_stale(
        self, served: Served
    ) -> None:
        served.clock.offset_s = STALE_AFTER_S + 1
        scoped = {"X-Connection-Id": served.connection_id}

        async def all_stale() -> bool:  # the receiver's sweep runs every second
            got = await served.client.get("/api/metrics/info", headers=scoped)
            return got.status_code == 503

        await eventually(all_stale)
        assert_one_answer(await walk_live_only(served))

    async def test_no_unmarked_route_reaches_the_engine_of_a_push_connection(
        self, served: Served
    ) -> None:
        unmarked = [
            (method, path, operation)
            for method, path, operation in operations(served.document)
            if not operation.get(LIVE_ONLY) and scoped_to_a_connection(path, operation)
        ]
        assert len(unmarked) > 20  # the history, analytics and registry routes
        # Deletions last, so the connection is still there for every other route.
        unmarked.sort(key=lambda found: found[0] == "delete")
        wrong = {}
        for method, path, operation in unmarked:
            got = await call(served, method, path, operation)
            if is_live_connection_answer(got) or got.status_code == 500:
                wrong[f"{method.upper()} {path}"] = f"{got.status_code} {got.text[:160]}"
        assert wrong == {}
