"""The OpenAPI document as a client generator and Swagger UI read it: operation ids,
tags, security that matches what the server enforces, examples, schema names."""

import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

import jsonschema_rs
import pytest

from svc_monitor.web.openapi import OPERATION_ID
from tests.fixtures.app import AppFactory, RunningApp
from tests.fixtures.workspace import Workspace, WorkspaceFactory

METHODS = {"get", "put", "post", "delete", "patch"}
# Answers whose examples Swagger UI shows first: what a new user calls before anything else.
MAIN_RESPONSES = [
    ("get", "/api/health", "200"),
    ("get", "/api/connections", "200"),
    ("post", "/api/connections", "201"),
    ("get", "/api/webhooks/{id}", "200"),
    ("post", "/api/tokens", "201"),
]


def operations(document: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method in METHODS:
                yield method, path, operation


async def document_of(running: RunningApp) -> dict[str, Any]:
    response = await running.client.get("/api/openapi.json")
    assert response.status_code == 200
    document: dict[str, Any] = response.json()
    return document


def resolve(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        schema = document["components"]["schemas"][name]
    return schema


def examples_of(document: dict[str, Any], media: dict[str, Any]) -> list[Any]:
    """The examples a reader sees for one media type: its own, or its schema's (through a
    $ref, or an `anyOf` of a model and null)."""
    if "example" in media:
        return [media["example"]]
    if "examples" in media:
        return [e["value"] for e in media["examples"].values()]
    schema = media["schema"]
    for candidate in [schema, *schema.get("anyOf", [])]:
        found = resolve(document, candidate).get("examples")
        if found:
            return list(found)
    return []


def validator(document: dict[str, Any], schema: dict[str, Any]) -> Any:
    """A JSON Schema validator for `schema` with the document's components in reach (OpenAPI
    3.1 schemas are JSON Schema 2020-12)."""
    return jsonschema_rs.validator_for({**schema, "components": document["components"]})


class TestOperationIds:
    async def test_every_operation_id_is_short_readable_and_unique(self, api: RunningApp):
        ids = [op["operationId"] for _, _, op in operations(await document_of(api))]
        assert len(ids) > 100
        assert [i for i, n in Counter(ids).items() if n > 1] == []
        unreadable = [i for i in ids if not OPERATION_ID.match(i) or len(i) > 50]
        assert unreadable == []

    async def test_the_ids_a_client_calls_by_name(self, api: RunningApp):
        by_route = {
            f"{method} {path}": op["operationId"]
            for method, path, op in operations(await document_of(api))
        }
        assert by_route["get /api/connections"] == "connections_list"
        assert by_route["post /api/connections"] == "connections_create"
        assert by_route["get /api/connections/{connection_id}"] == "connections_get"
        assert by_route["put /api/connections/{connection_id}"] == "connections_update"
        assert by_route["delete /api/webhooks/{id}"] == "webhooks_delete"
        assert by_route["post /api/webhooks"] == "webhooks_create"
        assert by_route["get /api/health"] == "system_get_health"
        assert by_route["post /api/tokens"] == "workspace_create_token"
        # paths fixed by others, two of them sharing one handler
        assert by_route["post /v1/metrics"] == "otlp_v1_metrics"
        assert by_route["post /v1/external/metrics"] == "otlp_v1_external_metrics"
        assert by_route["get /health"] == "system_health"


class TestTags:
    async def test_every_operation_has_one_described_tag(self, api: RunningApp):
        document = await document_of(api)
        described = {t["name"]: t.get("description", "") for t in document["tags"]}
        for method, path, operation in operations(document):
            tags = operation.get("tags", [])
            assert len(tags) == 1, (method, path, tags)
            assert described.get(tags[0]), f"tag {tags[0]!r} has no description"

    async def test_no_tag_is_declared_unused(self, api: RunningApp):
        document = await document_of(api)
        used = {op["tags"][0] for _, _, op in operations(document)}
        assert {t["name"] for t in document["tags"]} == used


class TestSchemaNames:
    async def test_no_component_is_named_after_a_module(self, api: RunningApp):
        names = list((await document_of(api))["components"]["schemas"])
        assert [n for n in names if "__" in n or n.startswith("svc_monitor")] == []

    async def test_no_two_models_share_a_title(self, api: RunningApp):
        schemas = (await document_of(api))["components"]["schemas"]
        titles = Counter(schema.get("title", name) for name, schema in schemas.items())
        assert [t for t, n in titles.items() if n > 1] == []
        # the two collisions a generated client tripped over, now apart
        assert {"AclLogReset", "LatencyReset", "RoleReplicaRead", "ReplicaRead"} <= set(schemas)


class TestExamples:
    async def test_every_json_request_body_has_examples_that_fit_its_schema(self, api: RunningApp):
        document = await document_of(api)
        bodies = 0
        for method, path, operation in operations(document):
            content = operation.get("requestBody", {}).get("content", {})
            media = content.get("application/json")
            if media is None:
                assert not content, f"{method} {path}: a body with no JSON form"
                continue
            bodies += 1
            examples = examples_of(document, media)
            assert examples, f"{method} {path} has no example"
            check = validator(document, media["schema"])
            for example in examples:
                errors = [e.message for e in check.iter_errors(example)]
                assert errors == [], (method, path, example)
        assert bodies >= 20

    @pytest.mark.parametrize(("method", "path", "status"), MAIN_RESPONSES)
    async def test_main_answers_have_examples_that_fit_their_schema(
        self, api: RunningApp, method: str, path: str, status: str
    ):
        document = await document_of(api)
        media = document["paths"][path][method]["responses"][status]["content"]["application/json"]
        schema = media["schema"]
        item = schema.get("items", schema)  # a list answer shows its item's example
        examples = examples_of(document, {"schema": item})
        assert examples, f"{method} {path} {status} has no example"
        check = validator(document, item)
        for example in examples:
            assert [e.message for e in check.iter_errors(example)] == []

    async def test_a_request_example_is_accepted_by_the_server(self, api: RunningApp):
        """Documented is not enough: the example of PUT /api/settings changes the settings."""
        document = await document_of(api)
        media = document["paths"]["/api/settings"]["put"]["requestBody"]["content"]
        example = examples_of(document, media["application/json"])[0]
        response = await api.client.put("/api/settings", json=example)
        assert response.status_code == 200, response.text
        settings = response.json()["settings"]
        assert {k: settings[k] for k in example} == example


class TestSecurity:
    async def test_schemes_are_the_personal_token_and_the_session_cookie(
        self, workspace: Workspace
    ):
        document = await document_of(workspace.running)
        schemes = document["components"]["securitySchemes"]
        assert schemes["personalToken"]["type"] == "http"
        assert schemes["personalToken"]["scheme"] == "bearer"
        cookie = schemes["sessionCookie"]
        assert (cookie["type"], cookie["in"]) == ("apiKey", "cookie")
        # the name the server really reads (set by sign-in)
        assert cookie["name"] == workspace.running.services.auth.cookies.name
        assert cookie["name"] in workspace.owner.client.cookies

    async def test_security_of_an_operation_follows_its_role(self, workspace: Workspace):
        document = await document_of(workspace.running)
        paths = document["paths"]
        either: list[dict[str, list[str]]] = [{"personalToken": []}, {"sessionCookie": []}]
        assert paths["/api/health"]["get"]["security"] == []
        assert paths["/api/auth/login"]["post"]["security"] == []
        assert paths["/api/connections"]["get"]["security"] == either
        assert paths["/api/connections"]["get"]["x-required-role"] == "member"
        create = paths["/api/connections"]["post"]
        assert create["security"] == either
        assert create["x-required-role"] == "admin"
        assert "Needs the admin role" in create["description"]
        assert paths["/api/workspace/transfer"]["post"]["x-required-role"] == "owner"

    async def test_what_the_document_requires_is_what_the_server_refuses(
        self, workspace: Workspace
    ):
        """Every GET without path parameters, called with no credentials: 401 exactly when
        the document asks for a token or a cookie."""
        document = await document_of(workspace.running)
        anonymous = workspace.browser()
        checked = 0
        for method, path, operation in operations(document):
            if method != "get" or "{" in path:
                continue
            response = await anonymous.get(path)
            needs_user = operation["security"] != []
            assert (response.status_code == 401) == needs_user, (path, response.status_code)
            checked += 1
        assert checked > 50

    async def test_a_personal_token_opens_what_the_document_says_it_opens(
        self, workspace: Workspace
    ):
        made = await workspace.owner.client.post("/api/tokens", json={"name": "script"})
        assert made.status_code == 201, made.text
        script = workspace.browser(Authorization=f"Bearer {made.json()['token']}")
        response = await script.get("/api/connections")
        assert response.status_code == 200
        assert response.json()[0]["isDefault"] is True

    async def test_with_user_control_off_nothing_asks_for_credentials(self, api: RunningApp):
        document = await document_of(api)
        assert "securitySchemes" not in document.get("components", {})
        assert {str(op["security"]) for _, _, op in operations(document)} == {"[]"}

    async def test_scrape_and_ingest_tokens_are_declared_when_set(
        self, workspace_factory: WorkspaceFactory
    ):
        async with workspace_factory(
            PROMETHEUS_BEARER_TOKEN="scrape-token-0123456789",
            OTEL_INGEST_TOKEN="ingest-token-0123456789",
        ) as space:
            document = await document_of(space.running)
        schemes = document["components"]["securitySchemes"]
        assert {"scrapeToken", "ingestToken"} <= set(schemes)
        scrape = document["paths"]["/api/prometheus/metrics"]["get"]["security"]
        assert scrape == [{"scrapeToken": []}, {"personalToken": []}, {"sessionCookie": []}]
        assert document["paths"]["/v1/metrics"]["post"]["security"] == [{"ingestToken": []}]

    async def test_the_secure_cookie_name_is_the_one_documented(
        self, memory_app_factory: AppFactory
    ):
        async with memory_app_factory(
            WORKSPACE_DISABLED=False, AUTH_PUBLIC_URL="https://monitor.example.com"
        ) as running:
            document = await document_of(running)
        name = document["components"]["securitySchemes"]["sessionCookie"]["name"]
        assert name == running.services.auth.cookies.name
        assert re.match(r"^__Host-", name), name
