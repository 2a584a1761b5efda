"""The OpenAPI document shaped for client generators: short operation ids, described
tags, the security each operation needs (auth/dependencies/openapi.py), and which
operations need a live connection (`x-live-only`, connections/dependencies.py).

Generators name a client's functions after `operationId`; FastAPI's own
(`create_connection_api_connections_post`) repeat the path and method. Ours are the tag
and the handler's name without the tag's words (`connections_create`), so they are
derived by one rule for every route a domain adds, and stay unique because each domain's
handlers are named apart (a test checks).
"""

import re
from typing import Any

from fastapi import FastAPI
from fastapi.routing import APIRoute

from svc_monitor.auth.dependencies.openapi import describe_security
from svc_monitor.connections.dependencies import mark_live_only

# Swagger UI lists the tags in this order; each is one domain of the API.
TAG_DESCRIPTIONS: dict[str, str] = {
    "system": "Health (the probe contract), liveness and the running version. "
    "`/health`, `/health/live` and `/version` answer at the root too, for probes.",
    "workspace": "Users, sign-in, invitations, roles, the activity log and personal API tokens.",
    "connections": "The Valkey and Redis instances watched: add, edit, test and remove "
    "them, pick the default, and register instances that push over OTLP.",
    "settings": "Settings changed without a restart: how often the audit trail, client "
    "analytics and anomaly detection poll, and anomaly caching.",
    "license": "The licence in force, its tier and features, and offline activation.",
    "webhooks": "",  # the long text is built from the event table in app.py
    "metrics": "The latest parsed INFO of a connection, its stored history, memory "
    "snapshots, and the load svc-monitor's own polling puts on it.",
    "live metrics": "Reads straight from the instance: latency, memory, role, "
    "configuration, keyspace size and cluster state.",
    "slowlog": "SLOWLOG and COMMANDLOG entries, live and stored, and their patterns.",
    "commandstats": "Per-command call counts and latency, summarised and over time.",
    "latency history": "Stored LATENCY LATEST snapshots and command histograms.",
    "client-analytics": "CLIENT LIST live and over time: idle connections, buffers, "
    "spikes, and killing clients.",
    "cluster": "Cluster nodes' stats, slow logs and clients, gathered from every node.",
    "audit": "The ACL LOG and its stored trail: failed sign-ins and denied commands.",
    "monitor": "MONITOR captures: start, tail, stop and export.",
    "key analytics": "Key patterns and sizes sampled from the keyspace (Pro).",
    "vector search": "Search indexes where a search engine is loaded: documents, memory, "
    "indexing failures and backfill progress, live and stored.",
    "migration": "Moving keys between two connections: the analysis (free), the copy and "
    "its validation (Pro), as jobs.",
    "agents": "Agent tokens, and the links of agents that watch instances svc-monitor cannot dial.",
    "anomaly detection": "Anomalies found in the metrics and their correlated groups (Pro).",
    "metric forecasting": "Projections of a metric to its ceiling, and their alert settings.",
    "security": "Known CVEs and advisories for each connection's engine version.",
    "traces": "Spans received over OTLP, as traces.",
    "prometheus": "The Prometheus exposition of every watched instance.",
    "otlp": "OTLP/HTTP receivers for metrics and traces, and a ready Collector configuration.",
    "replicas": "The svc-monitor processes sharing this database.",
}

OPERATION_ID = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$")
_WORD = re.compile(r"[a-z0-9]+")


def openapi_tags(*, webhooks: str) -> list[dict[str, Any]]:
    """`openapi_tags` for the app: every domain's tag with its description."""
    return [
        {"name": name, "description": webhooks if name == "webhooks" else text}
        for name, text in TAG_DESCRIPTIONS.items()
    ]


def operation_id(route: APIRoute) -> str:
    """`<tag>_<handler name less the tag's words>`: `connections_create`, `webhooks_list`.

    Paths outside /api are fixed by others (OTLP/HTTP's /v1/..., probes' /health) and
    some share a handler with an /api path, so their id is the tag and the path's words
    (`otlp_v1_metrics`, `system_health`)."""
    tag = str(route.tags[0]) if route.tags else "api"
    prefix = "_".join(_WORD.findall(tag.lower()))
    path = route.path_format
    if path.startswith("/api/") or path == "/api":
        dropped = _forms(_WORD.findall(tag.lower()))
        words = [w for w in route.name.lower().split("_") if w and w not in dropped]
    else:
        words = _WORD.findall(re.sub(r"\{[^}]*\}", "", path).lower())
    if not words:
        words = [min(route.methods or {"get"}).lower()]
    return "_".join([prefix, *words])


def _forms(words: list[str]) -> set[str]:
    """A tag's words as handlers spell them: singular and plural."""
    forms = set(words)
    for word in words:
        forms.add(word[:-1] if word.endswith("s") else f"{word}s")
    return forms


def install_openapi(app: FastAPI) -> None:
    """Build the app's document as before, then add what auth requires of each
    operation. Rebuilt whenever `app.openapi_schema` is cleared (features installed)."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = build()
            describe_security(document, app.state.services.auth)
            mark_live_only(document, app.routes)
            restore_example_nulls(document)
            app.openapi_schema = document
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def restore_example_nulls(document: dict[str, Any]) -> None:
    """Put back the nulls FastAPI drops from examples (it encodes the whole document with
    `exclude_none`), where the schema requires the key: without them an example of
    `{"lastUsedAt": null}` would not fit its own schema."""
    components: dict[str, Any] = document.get("components", {}).get("schemas", {})
    for schema in components.values():
        for example in schema.get("examples", []):
            _fill(example, schema, components)
    for item in document.get("paths", {}).values():
        for operation in item.values():
            for media in operation.get("requestBody", {}).get("content", {}).values():
                if "example" in media:
                    _fill(media["example"], media.get("schema", {}), components)


def _fill(value: Any, schema: dict[str, Any], components: dict[str, Any]) -> None:
    for branch in _branches(schema, components):
        if isinstance(value, dict) and "properties" in branch:
            properties: dict[str, Any] = branch["properties"]
            for name in branch.get("required", []):
                if name not in value and _nullable(properties.get(name, {}), components):
                    value[name] = None
            for name, inner in value.items():
                if name in properties:
                    _fill(inner, properties[name], components)
        elif isinstance(value, list) and "items" in branch:
            for inner in value:
                _fill(inner, branch["items"], components)


def _branches(schema: dict[str, Any], components: dict[str, Any]) -> list[dict[str, Any]]:
    """The object schemas `schema` may be: itself, or its `anyOf` members, refs resolved."""
    resolved = _resolve(schema, components)
    members = resolved.get("anyOf")
    return [_resolve(m, components) for m in members] if members else [resolved]


def _resolve(schema: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
    for _ in range(32):  # bounded: a $ref chain never runs this deep
        ref = schema.get("$ref")
        if not isinstance(ref, str):
            break
        schema = components.get(ref.rsplit("/", 1)[-1], {})
    return schema


def _nullable(schema: dict[str, Any], components: dict[str, Any]) -> bool:
    return any(b.get("type") == "null" for b in _branches(schema, components))
