"""What the OpenAPI document says about signing in, derived from what `authorize` enforces.

The schemes are the ways a caller is identified (access.py): a personal API token or a
session cookie for users, PROMETHEUS_BEARER_TOKEN for a scraper, OTEL_INGEST_TOKEN for a
collector. Each operation's `security` comes from its line in roles.RULES and from the
settings, so the document cannot promise less (or more) than the server checks: Swagger
UI's Authorize button and generated clients send what the route really needs.
"""

from typing import Any

from svc_monitor.auth.roles import Access, rule_for
from svc_monitor.auth.service import TOKEN_PREFIX, AuthService

PERSONAL_TOKEN = "personalToken"
SESSION_COOKIE = "sessionCookie"
SCRAPE_TOKEN = "scrapeToken"
INGEST_TOKEN = "ingestToken"
ROLE_EXTENSION = "x-required-role"
ERROR_SCHEMA = "ErrorBody"  # api/error_responses.py puts it in the components
_OTLP_PREFIX = "/v1/"
_METHODS = frozenset({"get", "put", "post", "delete", "patch", "head", "options", "trace"})


def describe_security(document: dict[str, Any], auth: AuthService) -> None:
    """Add the schemes this install accepts and each operation's `security` to `document`."""
    settings = auth.settings
    scrape_token = settings.PROMETHEUS_BEARER_TOKEN is not None
    ingest_token = settings.OTEL_INGEST_TOKEN is not None
    schemes = _schemes(
        auth, users=auth.enabled, scrape_token=scrape_token, ingest_token=ingest_token
    )
    if schemes:
        document.setdefault("components", {})["securitySchemes"] = schemes
    for path, operations in document.get("paths", {}).items():
        for method, operation in operations.items():
            if method not in _METHODS:
                continue  # a path item's shared `parameters` or `summary`
            access = rule_for(method.upper(), path)
            if path.startswith(_OTLP_PREFIX):
                operation["security"] = [{INGEST_TOKEN: []}] if ingest_token else []
            elif access is None or access is Access.PUBLIC:
                operation["security"] = []
            elif access is Access.SCRAPE:
                operation["security"] = _scrape_security(
                    users=auth.enabled, scrape_token=scrape_token
                )
            else:
                _require_user(operation, access, users=auth.enabled)


def _require_user(operation: dict[str, Any], access: Access, *, users: bool) -> None:
    role = access.role
    if not users or role is None:  # WORKSPACE_DISABLED: nobody signs in, all is open
        operation["security"] = []
        return
    operation["security"] = [{PERSONAL_TOKEN: []}, {SESSION_COOKIE: []}]
    operation[ROLE_EXTENSION] = role.value
    responses = operation.setdefault("responses", {})
    responses.setdefault("401", _error("Not signed in: no token or session, or a revoked one"))
    responses.setdefault(
        "403", _error(f"Signed in below the {role.value} role, or a change from another site")
    )
    note = f"Needs the {role.value} role (or higher)."
    description = operation.get("description", "")
    operation["description"] = f"{description}\n\n{note}" if description else note


def _error(description: str) -> dict[str, Any]:
    schema = {"$ref": f"#/components/schemas/{ERROR_SCHEMA}"}
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _scrape_security(*, users: bool, scrape_token: bool) -> list[dict[str, list[str]]]:
    if not scrape_token:
        return []  # open, as exporters are
    either: list[dict[str, list[str]]] = [{SCRAPE_TOKEN: []}]
    if users:
        either += [{PERSONAL_TOKEN: []}, {SESSION_COOKIE: []}]
    return either


def _schemes(
    auth: AuthService, *, users: bool, scrape_token: bool, ingest_token: bool
) -> dict[str, dict[str, str]]:
    schemes: dict[str, dict[str, str]] = {}
    if users:
        schemes[PERSONAL_TOKEN] = {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": f"{TOKEN_PREFIX}...",
            "description": (
                "A personal API token (Settings > API and MCP tokens, or POST /api/tokens), "
                "sent as "
                f"`Authorization: Bearer {TOKEN_PREFIX}...`. It acts with its owner's role."
            ),
        }
        schemes[SESSION_COOKIE] = {
            "type": "apiKey",
            "in": "cookie",
            "name": auth.cookies.name,
            "description": (
                "The browser session set by POST /api/auth/login. Changes sent with it must "
                "come from this site's own pages (Origin checked)."
            ),
        }
    if scrape_token:
        schemes[SCRAPE_TOKEN] = {
            "type": "http",
            "scheme": "bearer",
            "description": "PROMETHEUS_BEARER_TOKEN, for a Prometheus scraper.",
        }
    if ingest_token:
        schemes[INGEST_TOKEN] = {
            "type": "http",
            "scheme": "bearer",
            "description": "OTEL_INGEST_TOKEN, for an OpenTelemetry Collector's exports.",
        }
    return schemes
