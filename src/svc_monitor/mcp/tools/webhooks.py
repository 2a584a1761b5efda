"""Webhook deliveries and failures, and the retry queue."""

import asyncio
from typing import Any

from pydantic import Field

from svc_monitor.mcp.api_caller import ApiCaller
from svc_monitor.mcp.output import iso, listing
from svc_monitor.mcp.tools.spec import Limited, ToolSpec

_FAILED = frozenset({"retrying", "dead_letter", "failed"})


class DeliveryParams(Limited):
    failures_only: bool = Field(default=False, description="Only deliveries that failed")


async def webhook_deliveries(api: ApiCaller, params: DeliveryParams) -> str:
    hooks = await api.get("/api/webhooks")
    queue = await api.get("/api/webhooks/stats/retry-queue")
    pages = await asyncio.gather(
        *(
            api.get(f"/api/webhooks/{h['id']}/deliveries", params={"limit": str(params.limit)})
            for h in hooks
        )
    )
    names = {h["id"]: h.get("name") or h.get("url") for h in hooks}
    deliveries = sorted(
        (d for page in pages for d in page), key=lambda d: -(d.get("createdAt") or 0)
    )
    if params.failures_only:
        deliveries = [d for d in deliveries if d.get("status") in _FAILED]

    def line(d: dict[str, Any]) -> str:
        why = d.get("error") or (f"HTTP {d['statusCode']}" if d.get("statusCode") else "")
        return (
            f"{iso(d.get('createdAt'))} {d.get('eventType')} to {names.get(d.get('webhookId'))}:"
            f" {d.get('status')} after {d.get('attempts')} attempt(s)"
            + (f" ({why})" if why else "")
            + (f", next retry {iso(d['nextRetryAt'])}" if d.get("nextRetryAt") else "")
        )

    head = f"{len(hooks)} webhooks; {queue.get('pendingRetries')} deliveries waiting to retry" + (
        f", next at {iso(queue['nextRetryTime'])}" if queue.get("nextRetryTime") else ""
    )
    title = "Failed deliveries" if params.failures_only else "Deliveries, newest first"
    return head + "\n" + listing(title, deliveries, line, limit=params.limit)


TOOLS = [
    ToolSpec(
        "webhook_deliveries",
        "Webhook deliveries across every webhook: event, target, status, attempts and why "
        "the failed ones failed; the retry queue.",
        webhook_deliveries,
        DeliveryParams,
    ),
]
