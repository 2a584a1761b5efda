"""Enforcement: every route's rule from roles.RULES, and the activity log of mutations.

Two pieces, both installed once by the app for every route it will ever have:
- `authorize`, an app-wide dependency: it runs after routing (so it knows the route's
  template), identifies the caller, checks the origin of mutations and the role the
  route needs, and leaves what it found in the request scope.
- `AccessMiddleware`, plain ASGI around the app: it sets a re-issued session cookie on
  the way out and, once the response is sent, records a signed-in user's POST, PUT,
  PATCH or DELETE in the activity log (not 401/403 refusals).
"""

import hmac
import json
import logging
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from fastapi import FastAPI, Request, WebSocketException, status
from fastapi.responses import RedirectResponse, Response
from pydantic import SecretStr
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from svc_monitor.auth.dependencies.origin import client_ip, same_origin
from svc_monitor.auth.models import Principal, Via
from svc_monitor.auth.roles import MUTATIONS, Access, rule_for
from svc_monitor.auth.service import AuthService
from svc_monitor.config import Settings
from svc_monitor.errors import Forbidden, Unauthorized

logger = logging.getLogger(__name__)

SCOPE_KEY = "svc.access"
CONNECTION_HEADER = "x-connection-id"
# An MCP tool call's request (mcp/api_caller.py): recorded as "mcp:<tool>", reads too, so
# every call an assistant makes as a user is in the log under that user's name.
MCP_TOOL_HEADER = b"x-mcp-tool"
_MCP_TOOL_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
_CREATED_BODY_LIMIT = 64 * 1024
# Their own events (auth.login, auth.logout) say more than the request would.
_NOT_RECORDED_PREFIXES = ("/api/auth/", "/ui/account/")
# Changes only which connection this browser looks at (a cookie), nothing on the server.
_NOT_RECORDED = frozenset({"POST /ui/connection"})


@dataclass(slots=True)
class AccessFacts:
    """What `authorize` found, for the route (`principal_of`) and the middleware."""

    template: str
    principal: Principal | None
    source_ip: str
    refreshed_cookie: str | None = None
    clear_cookie: bool = False
    # What the change was made to when neither the path nor a created body says it (an
    # ownership transfer names its member in the request body): set by the route.
    object_id: str | None = None


class SignInFirst(Exception):
    """A page asked for without a session: the browser goes to sign in (or to the claim)."""

    def __init__(self, location: str) -> None:
        super().__init__(location)
        self.location = location


class PageRefused(Exception):
    """A page the signed-in user's role may not open: an HTML answer, not JSON (app.py
    renders it with the UI's plain page)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def route_template(scope: Scope) -> str | None:
    """The matched route's path as OpenAPI writes it ("/api/connections/{connection_id}").

    FastAPI 0.16x includes routers lazily: `scope["route"]` is the router's own route,
    without the include prefix, and the full path is on the effective route context.
    Older FastAPI copied routes with their prefix, so `scope["route"]` had it.
    """
    fastapi_scope = scope.get("fastapi")
    effective = (
        fastapi_scope.get("effective_route_context") if isinstance(fastapi_scope, dict) else None
    )
    template = getattr(effective, "path_format", None) or getattr(
        scope.get("route"), "path_format", None
    )
    return str(template) if template else None


async def authorize(connection: HTTPConnection) -> None:
    """The app-wide dependency: refuse what the caller may not do; note who they are."""
    scope = connection.scope
    is_socket = scope["type"] == "websocket"
    method = "WS" if is_socket else ("GET" if scope["method"] == "HEAD" else scope["method"])
    template = route_template(scope) or ""
    access = rule_for(method, template)
    auth: AuthService = connection.app.state.services.auth
    settings = auth.settings
    facts = AccessFacts(template, None, client_ip(connection, settings))
    scope[SCOPE_KEY] = facts
    if access is None:  # deny by default; tests/auth/test_route_rules.py keeps this unused
        logger.error("no access rule for %s %s", method, template)
        _refuse(is_socket, Forbidden("No access rule covers this route"))
    if access is Access.SCRAPE and _scraper(connection, settings.PROMETHEUS_BEARER_TOKEN):
        return
    if access is Access.AGENT:  # its token is checked by the route, before the handshake
        return
    if not auth.enabled:
        if access is Access.SCRAPE:  # a token is set, and this is not it
            raise _scrape_refusal()
        # Nobody signs in, but another site's page must still not drive this one (a
        # socket to the CLI, a form posted at an install on the operator's network).
        _check_origin(connection, settings, method=method, is_socket=is_socket)
        return
    identified = await auth.identify(
        connection.cookies.get(auth.cookies.name), connection.headers.get("authorization")
    )
    facts.principal = identified.principal
    facts.refreshed_cookie = identified.refreshed_cookie
    facts.clear_cookie = identified.clear_cookie
    principal = identified.principal
    if principal is None or principal.via is not Via.TOKEN:  # a script's token: no browser
        _check_origin(
            connection,
            settings,
            method=method,
            is_socket=is_socket,
            carries_cookie=auth.cookies.name in connection.cookies,
        )
    needed = access.role if access is not None else None
    if needed is None:
        return
    # A browser opening a page is sent to sign in, or shown why not; scripts, fetches
    # and htmx requests get the 401/403 (the page's script shows the latter's message).
    browsing = (
        method == "GET"
        and not is_socket
        and not template.startswith("/api/")
        and "text/html" in connection.headers.get("accept", "")
        and connection.headers.get("hx-request") != "true"
    )
    if principal is None:
        htmx = connection.headers.get("hx-request") == "true"
        if not is_socket and not template.startswith("/api/") and (browsing or htmx):
            empty = await auth.workspace_empty()
            raise SignInFirst("/register" if empty else _login_location(connection))
        if access is Access.SCRAPE:
            raise _scrape_refusal()
        _refuse(is_socket, Unauthorized("Sign in to use svc-monitor"))
    assert principal is not None
    if not principal.role.at_least(needed):
        message = (
            f"Not allowed: this needs the {needed.value} role, and you are "
            f"{_article(principal.role.value)} {principal.role.value}"
        )
        if browsing:
            raise PageRefused(message)
        _refuse(is_socket, Forbidden(message))


def _check_origin(
    connection: HTTPConnection,
    settings: Settings,
    *,
    method: str,
    is_socket: bool,
    carries_cookie: bool = False,
) -> None:
    """Refuse a change or a socket a browser says came from another site.

    Sockets and cookie-carrying changes must prove our origin (browsers send Origin on
    both); other changes are checked when they name one (a script sends neither)."""
    if method not in MUTATIONS and not is_socket:
        return
    provenance = "origin" in connection.headers or "referer" in connection.headers
    if (carries_cookie or is_socket or provenance) and not same_origin(connection, settings):
        _refuse(is_socket, Forbidden("Cross-origin request refused"))


def _scraper(connection: HTTPConnection, token: SecretStr | None) -> bool:
    """Whether a scrape may go on without a user: no token set, or this request sends it."""
    if token is None:
        return True
    scheme, _, credentials = connection.headers.get("authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(
        credentials.strip().encode(), token.get_secret_value().encode()
    )


def _scrape_refusal() -> Unauthorized:
    error = Unauthorized("Send Authorization: Bearer <PROMETHEUS_BEARER_TOKEN> to scrape")
    error.headers = {"WWW-Authenticate": 'Bearer realm="svc-monitor"'}
    return error


def principal_of(connection: HTTPConnection) -> Principal | None:
    """The signed-in user `authorize` found; None when user control is off."""
    facts: AccessFacts | None = connection.scope.get(SCOPE_KEY)
    return facts.principal if facts is not None else None


def note_object(connection: HTTPConnection, object_id: str) -> None:
    """Name what this request changed, for its activity log entry."""
    facts: AccessFacts | None = connection.scope.get(SCOPE_KEY)
    if facts is not None:
        facts.object_id = object_id


def source_ip_of(connection: HTTPConnection) -> str:
    facts: AccessFacts | None = connection.scope.get(SCOPE_KEY)
    return facts.source_ip if facts is not None else "unknown"


def _refuse(is_socket: bool, error: Unauthorized | Forbidden) -> None:
    if is_socket:
        # Closed before accept: the server answers the handshake with HTTP 403.
        raise WebSocketException(code=status.WS_1008_POLICY_VIOLATION, reason=error.message)
    raise error


def _login_location(connection: HTTPConnection) -> str:
    target = connection.url.path
    if connection.url.query:
        target += f"?{connection.url.query}"
    return "/login" if target == "/" else f"/login?next={_quote(target)}"


def _quote(text: str) -> str:
    return quote(text, safe="/")


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


class AccessMiddleware:
    """Set re-issued cookies; record signed-in mutations once they are answered."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method = scope["method"]
        seen: dict[str, Any] = {"status": None, "body": b""}

        async def send_with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start":
                seen["status"] = message["status"]
                seen["created"] = message["status"] == 201
                _add_cookie(scope, message)
            elif message["type"] == "http.response.body" and seen.get("created"):
                body: bytes = seen["body"]
                if len(body) < _CREATED_BODY_LIMIT:
                    seen["body"] = body + message.get("body", b"")
            await send(message)

        await self.app(scope, receive, send_with_cookie)
        facts: AccessFacts | None = scope.get(SCOPE_KEY)
        status = seen["status"]
        tool = _mcp_tool(scope)
        if (
            (method in MUTATIONS or tool is not None)
            and facts is not None
            and facts.principal is not None
            and status not in (None, 401, 403)
            and not facts.template.startswith(_NOT_RECORDED_PREFIXES)
            and f"{method} {facts.template}" not in _NOT_RECORDED
        ):
            await _record(scope, facts, method, int(status), seen["body"], tool=tool)


def _mcp_tool(scope: Scope) -> str | None:
    for key, value in scope.get("headers", []):
        if key == MCP_TOOL_HEADER:
            name = value.decode("latin-1")
            return name if _MCP_TOOL_NAME.match(name) else None
    return None


def _add_cookie(scope: Scope, message: Message) -> None:
    facts: AccessFacts | None = scope.get(SCOPE_KEY)
    if facts is None or not (facts.refreshed_cookie or facts.clear_cookie):
        return
    auth: AuthService = scope["app"].state.services.auth
    headers: list[tuple[bytes, bytes]] = list(message.get("headers", []))
    name = auth.cookies.name.encode()
    if any(k == b"set-cookie" and v.startswith(name + b"=") for k, v in headers):
        return  # the route set its own (sign-in, sign-out)
    value = (
        auth.cookies.set_cookie_header(facts.refreshed_cookie)
        if facts.refreshed_cookie
        else auth.cookies.clear_cookie_header()
    )
    headers.append((b"set-cookie", value.encode()))
    message["headers"] = headers


async def _record(
    scope: Scope,
    facts: AccessFacts,
    method: str,
    status: int,
    body: bytes,
    *,
    tool: str | None = None,
) -> None:
    principal = facts.principal
    assert principal is not None
    auth: AuthService = scope["app"].state.services.auth
    headers = dict(scope.get("headers", []))
    connection_id = headers.get(CONNECTION_HEADER.encode())
    details: dict[str, object] = {"via": principal.via.value}
    if tool is not None:
        details["request"] = f"{method} {facts.template}"
    try:
        await auth.activity.record(
            f"mcp:{tool}" if tool is not None else f"{method} {facts.template}",
            actor_id=principal.user_id,
            actor_name=principal.name,
            source_ip=facts.source_ip,
            connection_id=connection_id.decode("latin-1") if connection_id else None,
            route=facts.template,
            status=status,
            object_id=facts.object_id or _object_id(scope, body),
            details=details,
        )
    except Exception:  # the change happened; a failed log write must not hide that
        logger.exception("could not record %s %s in the activity log", method, facts.template)


def _object_id(scope: Scope, created_body: bytes) -> str | None:
    params: dict[str, Any] = scope.get("path_params") or {}
    for value in params.values():
        return str(value)
    if created_body:
        try:
            body = json.loads(created_body)
        except ValueError:
            return None
        if isinstance(body, dict) and isinstance(body.get("id"), str | int):
            return str(body["id"])
    return None


async def _sign_in_first(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, SignInFirst)
    if request.headers.get("hx-request") == "true":
        return Response(status_code=204, headers={"HX-Redirect": exc.location})
    return RedirectResponse(exc.location, status_code=303)


def install_access(app: FastAPI) -> None:
    """The middleware and the handler that turns SignInFirst into a redirect."""
    app.add_middleware(AccessMiddleware)
    app.add_exception_handler(SignInFirst, _sign_in_first)
