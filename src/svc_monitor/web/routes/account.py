"""The ways in: sign-in, the workspace claim (register), accepting an invitation, sign-out.

Each page posts its form with htmx to a /ui/account/* route that calls the same
AuthService methods as /api/auth/*; success sets the session cookie and sends the
browser on (`HX-Redirect`), a refusal shows the form again with the service's message.
These pages are open (auth/roles.py); with user control off they lead to the dashboard.
"""

from collections.abc import Awaitable
from typing import Annotated, Any
from urllib.parse import unquote

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from svc_monitor.auth.broker.service import broker_error_message
from svc_monitor.auth.dependencies.access import principal_of, source_ip_of
from svc_monitor.auth.service import AuthService, SignedIn
from svc_monitor.errors import AppError
from svc_monitor.web.account_forms import broker_context, safe_next
from svc_monitor.web.dependencies import UI_HEADERS, FromThisPage, get_templates
from svc_monitor.web.forms import parse_form
from svc_monitor.web.rendering import Templates

router = APIRouter(include_in_schema=False)

# The invitation page's URL holds its token: never hand it to another site as a Referer.
INVITE_HEADERS = {**UI_HEADERS, "Referrer-Policy": "no-referrer"}


def get_auth(request: Request) -> AuthService:
    auth: AuthService = request.app.state.services.auth
    return auth


AuthDep = Annotated[AuthService, Depends(get_auth)]
TemplatesDep = Annotated[Templates, Depends(get_templates)]


def _render(
    templates: Templates,
    name: str,
    *,
    status_code: int = 200,
    headers: dict[str, str] | None = None,
    **context: Any,
) -> HTMLResponse:
    body = templates.render(name, context)
    return HTMLResponse(body, status_code=status_code, headers=headers or UI_HEADERS)


def _refused(templates: Templates, exc: AppError) -> HTMLResponse:
    """The form's result area: what the service refused, naming the field at fault."""
    return _render(
        templates, "account/form_error.html", message=exc.message, field=exc.field or "form"
    )


def _go(location: str, *, cookie_header: str | None = None) -> Response:
    """Send an htmx form's browser on: the page is replaced, not a fragment."""
    response = Response(status_code=204, headers={"HX-Redirect": location})
    if cookie_header is not None:
        response.headers.append("set-cookie", cookie_header)
    return response


async def _signed_in(
    auth: AuthService, templates: Templates, attempt: Awaitable[SignedIn], location: str
) -> Response:
    """A form's way in: on to `location` with the session cookie, or the form's refusal."""
    try:
        signed = await attempt
    except AppError as exc:
        return _refused(templates, exc)
    return _go(location, cookie_header=auth.cookies.set_cookie_header(signed.cookie))


@router.get("/login")
async def login_page(
    request: Request,
    auth: AuthDep,
    templates: TemplatesDep,
    next_: Annotated[str, Query(alias="next", max_length=2000)] = "/",
    error: Annotated[str, Query(max_length=64)] = "",
    email: Annotated[str, Query(max_length=320)] = "",
) -> Response:
    if not auth.enabled or principal_of(request) is not None:
        return RedirectResponse(safe_next(next_), status_code=303)
    if await auth.workspace_empty():
        return RedirectResponse("/register", status_code=303)
    return _render(
        templates,
        "account/login.html",
        next=safe_next(next_),
        error=broker_error_message(error or None, email or None),
        values={},
        broker=broker_context(request, intent="login"),
    )


@router.post("/ui/account/login", dependencies=[FromThisPage])
async def sign_in(request: Request, auth: AuthDep, templates: TemplatesDep) -> Response:
    form = parse_form(await request.body())
    attempt = auth.login(form.get("email", ""), form.get("password", ""), ip=source_ip_of(request))
    return await _signed_in(auth, templates, attempt, safe_next(form.get("next", "/")))


@router.get("/register")
async def register_page(request: Request, auth: AuthDep, templates: TemplatesDep) -> Response:
    if not auth.enabled or principal_of(request) is not None:
        return RedirectResponse("/", status_code=303)
    if not await auth.workspace_empty():
        return RedirectResponse("/login", status_code=303)
    return _render(
        templates, "account/register.html", broker=broker_context(request, intent="register")
    )


@router.post("/ui/account/register", dependencies=[FromThisPage])
async def claim(request: Request, auth: AuthDep, templates: TemplatesDep) -> Response:
    form = parse_form(await request.body())
    attempt = auth.register(
        form.get("email", ""),
        form.get("name", ""),
        form.get("password", ""),
        ip=source_ip_of(request),
    )
    return await _signed_in(auth, templates, attempt, "/")


@router.get("/invite/{token}")
async def invitation_page(
    token: str, request: Request, auth: AuthDep, templates: TemplatesDep
) -> Response:
    """Only shows the invitation: accepting it is a POST (a link preview must not use it)."""
    if not auth.enabled:
        return RedirectResponse("/", status_code=303)
    try:
        invitation = await auth.pending_invitation(unquote(token))
    except AppError as exc:
        return _render(
            templates,
            "account/invite_invalid.html",
            status_code=exc.status_code,
            headers=INVITE_HEADERS,
            message=exc.message,
        )
    return _render(
        templates,
        "account/invite.html",
        headers=INVITE_HEADERS,
        invitation=invitation,
        token=token,
        broker=broker_context(request, intent="invite", invite_token=token),
    )


@router.post("/ui/account/accept", dependencies=[FromThisPage])
async def accept(request: Request, auth: AuthDep, templates: TemplatesDep) -> Response:
    form = parse_form(await request.body())
    attempt = auth.accept_invitation(
        form.get("token", ""),
        form.get("name", ""),
        form.get("password", ""),
        ip=source_ip_of(request),
    )
    return await _signed_in(auth, templates, attempt, "/")


@router.post("/ui/account/logout", dependencies=[FromThisPage])
async def sign_out(request: Request, auth: AuthDep) -> Response:
    await auth.logout(request.cookies.get(auth.cookies.name), ip=source_ip_of(request))
    return _go("/login", cookie_header=auth.cookies.clear_cookie_header())
