"""Every route has an access rule, and every route answers each role as the rule says.

The matrix walks the OpenAPI document, so a new API route is covered without editing
this file; one without a line in auth/roles.py RULES fails here first.
"""

import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from fastapi.routing import APIRoute, APIWebSocketRoute

from svc_monitor.app import _install_ui
from svc_monitor.auth.roles import MUTATIONS, RULES, Access
from tests.fixtures.servers import RunningServer, ServerFactory
from tests.fixtures.workspace import Workspace, open_workspace, workspace_settings

ROLES = ("anonymous", "member", "admin", "owner")
RANK = {"anonymous": 0, "member": 1, "admin": 2, "owner": 3}
# Ends the caller's session: asked last.
LAST = "POST /api/auth/logout"


@pytest.fixture(scope="module")
def matrix_server(server_factory: ServerFactory) -> Iterator[RunningServer]:
    """Its own Valkey: admins' calls reset its slow log, latency data and ACL log."""
    server = server_factory.start("valkey")
    yield server
    server_factory.stop(server)


@pytest.fixture
async def team(matrix_server: RunningServer) -> AsyncIterator[tuple[Workspace, dict[str, Any]]]:
    async with open_workspace(workspace_settings(matrix_server)) as space:
        _install_ui(space.app)
        clients: dict[str, httpx.AsyncClient] = {
            "anonymous": space.browser(),
            "member": (await space.join("Mia")).client,
            "admin": (await space.join("Ada", role="admin")).client,
            "owner": space.owner.client,
        }
        yield space, clients


def app_routes(app: Any) -> set[str]:
    """Every "METHOD /path" the app serves, as OpenAPI and RULES write them."""
    schema = app.openapi()
    found = {
        f"{method.upper()} {path}" for path, item in schema["paths"].items() for method in item
    }
    for methods, path in _walk(app.router.routes, ""):
        found.update(f"{m} {path}" for m in methods if m != "HEAD")
    return found


def _walk(routes: list[Any], prefix: str) -> Iterator[tuple[set[str], str]]:
    """Hidden routes and sockets (OpenAPI lists neither), with their include prefixes."""
    for route in routes:
        inner = getattr(route, "original_router", None)
        if inner is not None:  # FastAPI >= 0.16x keeps included routers as they are
            yield from _walk(inner.routes, prefix + route.include_context.prefix)
        elif isinstance(route, APIWebSocketRoute):
            yield {"WS"}, prefix + route.path_format
        elif isinstance(route, APIRoute) and not route.include_in_schema:
            yield route.methods or set(), prefix + route.path_format


async def test_every_route_has_exactly_the_rules_it_needs(team: tuple[Workspace, Any]):
    space, _ = team
    served = app_routes(space.app)
    missing = sorted(served - RULES.keys())
    assert missing == [], f"routes without a line in auth/roles.py RULES: {missing}"
    stale = sorted(RULES.keys() - served)
    assert stale == [], f"RULES lines for routes that do not exist: {stale}"


# docs/features/users-and-access.md#roles: every POST, PUT, PATCH and DELETE answers 403 for
# a member, except
# signing in and out (open to all: PUBLIC) and the read-only POSTs. Beyond those, a member
# makes and revokes their own personal tokens (no one else's: the service looks a token up
# under its caller only), so that MCP and scripts work for them with their member role.
MEMBER_CHANGES = {
    "POST /ui/connection": "picks the connection this browser looks at: a read",
    "POST /api/monitor/sessions/preflight": "a read-only POST",
    "POST /api/vector-search/indexes/{name}/search": "a read-only POST: a KNN search",
    "POST /api/vector-search/indexes/{name}/query": "a read-only POST: a search query",
    "POST /api/vector-search/indexes/{name}/profile": "a read-only POST: FT.PROFILE",
    "POST /ui/vector-search/search": "the page's search form: a read-only search",
    "POST /ui/vector-search/profile": "the page's profile form: FT.PROFILE, read-only",
    "POST /api/tokens": "a personal token of one's own",
    "DELETE /api/tokens/{token_id}": "revoking one's own personal token",
    "POST /ui/tokens": "a personal token of one's own, from Settings",
    "POST /ui/tokens/{token_id}/revoke": "revoking one's own personal token, from Settings",
}


def test_members_change_nothing_but_the_listed_exceptions():
    member_changes = {
        rule
        for rule, access in RULES.items()
        if rule.split(" ", 1)[0] in MUTATIONS and access is Access.MEMBER
    }
    assert member_changes == set(MEMBER_CHANGES)


def _concrete(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "no-such-thing", path)


async def test_each_role_gets_the_answer_its_rule_gives(team: tuple[Workspace, Any]):
    space, clients = team
    schema = space.app.openapi()
    operations = sorted(
        (f"{m.upper()} {p}" for p, item in schema["paths"].items() for m in item),
        key=lambda op: op == LAST,
    )
    wrong: list[str] = []
    for operation in operations:
        method, path = operation.split(" ", 1)
        access = RULES[operation]
        for role in ROLES:
            if operation == LAST and role != "owner":
                continue
            client = clients[role]
            kwargs: dict[str, Any] = {"json": {}} if method in ("POST", "PUT", "PATCH") else {}
            response = await client.request(method, _concrete(path), **kwargs)
            got = response.status_code
            message = _message(response)
            if access in (Access.PUBLIC, Access.SCRAPE):  # no PROMETHEUS_BEARER_TOKEN here
                ok = got != 401
            elif role == "anonymous":
                ok = got == 401
            elif RANK[role] < access.value:
                ok = got == 403 and message.startswith("Not allowed")
            else:
                ok = got != 401 and not (got == 403 and message.startswith("Not allowed"))
            if not ok:
                wrong.append(f"{operation} as {role}: {got} {message}")
    assert wrong == []


def _message(response: httpx.Response) -> str:
    if not response.headers.get("content-type", "").startswith("application/json"):
        return ""
    body = response.json()
    return str(body.get("message", "")) if isinstance(body, dict) else ""


async def test_refusals_leave_no_trace(team: tuple[Workspace, Any]):
    space, clients = team
    before = await space.activity()
    await clients["anonymous"].put("/api/settings", json={"auditPollIntervalMs": 5000})
    await clients["member"].put("/api/settings", json={"auditPollIntervalMs": 5000})
    await clients["admin"].post("/api/workspace/transfer", json={"memberId": "x"})
    assert await space.activity() == before
