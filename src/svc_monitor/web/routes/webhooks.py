"""Webhooks page: the webhooks, the editor with its event picker, the test call, and each
webhook's delivery history with manual retry.

Every read and change is a WebhookService call, the same ones /api/webhooks makes, and
the form is validated by the API's own models (web/webhook_forms.py). Members see it all
read-only; admins and the owner get the forms and buttons (auth/roles.py refuses a
member's POST whatever the page shows). A refused save answers only the problems, next
to their fields, so nothing typed is lost. Names, URLs and receivers' answers come from
users and strangers: they reach the page only through autoescaping templates.
"""

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from svc_monitor.errors import AppError, NotFound
from svc_monitor.web.dependencies import UI_HEADERS, FromThisPage, Ui, UiDep
from svc_monitor.web.pages import Page
from svc_monitor.web.webhook_forms import (
    ERROR_SLOTS,
    FIELD_GROUPS,
    WebhookForm,
    blank_form,
    event_picker,
    form_of,
    parse_webhook_form,
    to_create,
    to_update,
)
from svc_monitor.webhooks.schemas import DeliveryRead, WebhookRead

PAGE = Page("webhooks", "/webhooks", "Webhooks", needs_connection=False)
router = APIRouter(include_in_schema=False)

PAGE_SIZE = 50
HistoryPage = Annotated[int, Query(alias="page", ge=0, le=1_000_000)]


@dataclass(frozen=True, slots=True)
class History:
    """One page of a webhook's deliveries, newest first."""

    webhook_id: str
    rows: list[DeliveryRead]
    page: int
    has_older: bool
    message: str | None = None
    error: str | None = None


async def _history(ui: Ui, webhook_id: str, page: int, **outcome: str | None) -> History:
    rows = await ui.services.webhooks.deliveries(
        webhook_id, limit=PAGE_SIZE + 1, offset=page * PAGE_SIZE
    )
    return History(webhook_id, rows[:PAGE_SIZE], page, len(rows) > PAGE_SIZE, **outcome)


async def _scopes(ui: Ui) -> dict[str, str]:
    """Connection id -> name, for the scope column and the scope picker."""
    return {c.id: c.name for c in await ui.services.connections.list()}


async def _editor(
    ui: Ui, form: WebhookForm, *, editing: WebhookRead | None, message: str | None = None
) -> dict[str, Any]:
    return {
        "form": form,
        "editing": editing,
        "event_groups": event_picker(
            ui.services.license.tier,
            checked=form.events,
            subscribed=editing.events if editing else (),
        ),
        "field_groups": FIELD_GROUPS,
        "scopes": await _scopes(ui),
        "tier": ui.services.license.tier,
        "message": message,
    }


@router.get("/webhooks")
async def webhooks_page(ui: UiDep) -> HTMLResponse:
    service = ui.services.webhooks
    return ui.page(
        PAGE,
        "webhooks/page.html",
        hooks=await service.list_webhooks(None),
        scopes=await _scopes(ui),
        queue=await service.retry_queue(),
        tier=ui.services.license.tier,
    )


@router.get("/webhooks/new")
async def new_webhook_page(ui: UiDep) -> HTMLResponse:
    return ui.page(PAGE, "webhooks/new.html", **await _editor(ui, blank_form(), editing=None))


@router.get("/webhooks/{webhook_id}")
async def webhook_page(
    webhook_id: str, ui: UiDep, page: HistoryPage = 0, created: bool = False
) -> HTMLResponse:
    try:
        hook = await ui.services.webhooks.get(webhook_id)
    except NotFound as exc:
        return ui.fragment("webhooks/missing.html", page=PAGE, status_code=404, why=exc.message)
    return ui.page(
        PAGE,
        "webhooks/detail.html",
        hook=hook,
        created=created,
        history=await _history(ui, webhook_id, page),
        **await _editor(ui, form_of(hook), editing=hook),
    )


@router.get("/ui/webhooks/{webhook_id}/deliveries")
async def webhook_deliveries(webhook_id: str, ui: UiDep, page: HistoryPage = 0) -> HTMLResponse:
    """The history again: the Refresh and paging buttons."""
    return _history_fragment(ui, await _history(ui, webhook_id, page))


@router.post("/ui/webhooks", dependencies=[FromThisPage])
async def create_webhook(request: Request, ui: UiDep) -> Response:
    form = parse_webhook_form(await request.body())
    body = to_create(form)
    if isinstance(body, dict):
        return _problems(ui, body)
    try:
        hook = await ui.services.webhooks.create(body, connection_id=form.value("scope") or None)
    except AppError as exc:
        return _problems(ui, {_slot(exc): exc.message})
    return Response(headers={**UI_HEADERS, "HX-Redirect": f"/webhooks/{hook.id}?created=true"})


@router.post("/ui/webhooks/{webhook_id}", dependencies=[FromThisPage])
async def update_webhook(webhook_id: str, request: Request, ui: UiDep) -> Response:
    form = parse_webhook_form(await request.body())
    body = to_update(form)
    if isinstance(body, dict):
        return _problems(ui, body)
    try:
        hook = await ui.services.webhooks.update(webhook_id, body)
    except AppError as exc:
        return _problems(ui, {_slot(exc): exc.message})
    # Saved: the whole editor again, from what is stored now (the secret masked anew).
    context = await _editor(ui, form_of(hook), editing=hook, message="Saved.")
    response = ui.fragment("webhooks/editor.html", **context)
    response.headers.update({"HX-Retarget": "#webhook-editor", "HX-Reswap": "outerHTML"})
    return response


@router.post("/ui/webhooks/{webhook_id}/delete", dependencies=[FromThisPage])
async def delete_webhook(webhook_id: str, ui: UiDep) -> Response:
    await ui.services.webhooks.delete(webhook_id)
    return Response(headers={**UI_HEADERS, "HX-Redirect": "/webhooks"})


@router.post("/ui/webhooks/{webhook_id}/test", dependencies=[FromThisPage])
async def test_webhook(webhook_id: str, ui: UiDep) -> HTMLResponse:
    result = await ui.services.webhooks.test(webhook_id)
    return ui.fragment("webhooks/test_result.html", result=result)


@router.post(
    "/ui/webhooks/{webhook_id}/deliveries/{delivery_id}/retry", dependencies=[FromThisPage]
)
async def retry_delivery(webhook_id: str, delivery_id: str, ui: UiDep) -> HTMLResponse:
    try:
        await ui.services.webhooks.retry(delivery_id)
    except AppError as exc:
        return _history_fragment(ui, await _history(ui, webhook_id, 0, error=exc.message))
    return _history_fragment(ui, await _history(ui, webhook_id, 0, message="Retry queued"))


def _history_fragment(ui: Ui, history: History) -> HTMLResponse:
    return ui.fragment("webhooks/deliveries.html", history=history)


def _slot(exc: AppError) -> str:
    """Where the page shows a service's refusal: beside the field it names."""
    if exc.field == "X-Connection-Id":  # the API's name for the form's scope
        return "scope"
    return exc.field if exc.field in ERROR_SLOTS else "form"


def _problems(ui: Ui, problems: dict[str, str]) -> HTMLResponse:
    """Nothing saved: the summary for the form's result box, and each field's message
    swapped in beside it (every slot, so a fixed problem's old message goes)."""
    return ui.fragment("webhooks/problems.html", problems=problems, slots=ERROR_SLOTS)
