"""Audit trail routes (ACL LOG history) and the live ACL LOG (under /api)."""

from typing import Annotated

from fastapi import APIRouter, Query

from svc_monitor.api.error_responses import error_responses
from svc_monitor.api.params import From, Limit, Offset, To
from svc_monitor.audit.dependencies import AuditDep
from svc_monitor.audit.schemas import (
    AclLogEntryRead,
    AclLogReset,
    AclReason,
    AuditEntry,
    AuditStats,
)
from svc_monitor.connections.dependencies import (
    ConnectionServiceDep,
    LiveConnection,
    SelectedConnection,
)

router = APIRouter(tags=["audit"])

Username = Annotated[str, Query(min_length=1, max_length=256, description="ACL username")]


@router.get("/audit/entries", response_model=list[AuditEntry], responses=error_responses(404, 422))
async def list_audit_entries(
    connection: SelectedConnection,
    audit: AuditDep,
    username: Annotated[str | None, Query(max_length=256)] = None,
    reason: Annotated[AclReason | None, Query(description="why the server denied")] = None,
    since: From = None,
    until: To = None,
    limit: Limit = 100,
    offset: Offset = 0,
) -> list[AuditEntry]:
    """Stored ACL LOG entries of the selected connection, most recently changed first.
    The time window applies to when the monitor last saw an entry change (`capturedAt`)."""
    return await audit.entries(
        connection.id,
        username=username,
        reason=reason,
        since=since,
        until=until,
        limit=limit,
        offset=offset,
    )


@router.get("/audit/stats", response_model=AuditStats, responses=error_responses(404, 422))
async def get_audit_stats(
    connection: SelectedConnection, audit: AuditDep, since: From = None, until: To = None
) -> AuditStats:
    """Totals of the audit trail: entries and denials by reason and by user, and the time
    range they span."""
    return await audit.stats(connection.id, since=since, until=until)


@router.get(
    "/audit/failed-auth", response_model=list[AuditEntry], responses=error_responses(404, 422)
)
async def list_failed_auth(
    connection: SelectedConnection,
    audit: AuditDep,
    since: From = None,
    until: To = None,
    limit: Limit = 100,
    offset: Offset = 0,
) -> list[AuditEntry]:
    """Failed authentications (ACL LOG reason `auth`), most recently changed first."""
    return await audit.entries(
        connection.id, reason="auth", since=since, until=until, limit=limit, offset=offset
    )


@router.get("/audit/by-user", response_model=list[AuditEntry], responses=error_responses(404, 422))
async def list_audit_entries_of_user(
    connection: SelectedConnection,
    audit: AuditDep,
    username: Username,
    since: From = None,
    until: To = None,
    limit: Limit = 100,
    offset: Offset = 0,
) -> list[AuditEntry]:
    """Stored ACL LOG entries of one username (required), most recently changed first."""
    return await audit.entries(
        connection.id, username=username, since=since, until=until, limit=limit, offset=offset
    )


@router.get(
    "/metrics/acl/log",
    response_model=list[AclLogEntryRead],
    responses=error_responses(404, 409, 422, 501, 503),
)
async def get_acl_log(
    connection: LiveConnection,
    connections: ConnectionServiceDep,
    audit: AuditDep,
    count: Annotated[int, Query(ge=1, le=10_000, description="at most this many entries")] = 10,
) -> list[AclLogEntryRead]:
    """The ACL LOG as the server holds it now, newest first (read live)."""
    seen = connections.last_seen(connection)
    return await audit.live_log(
        connections.client(connection), seen.identity if seen else None, count=count
    )


@router.delete(
    "/metrics/acl/log",
    response_model=AclLogReset,
    responses=error_responses(404, 409, 501, 503),
)
async def reset_acl_log(
    connection: LiveConnection, connections: ConnectionServiceDep, audit: AuditDep
) -> AclLogReset:
    """Clear the server's ACL LOG (ACL LOG RESET). The stored audit trail is kept."""
    seen = connections.last_seen(connection)
    await audit.reset_live_log(connections.client(connection), seen.identity if seen else None)
    return AclLogReset(success=True)
