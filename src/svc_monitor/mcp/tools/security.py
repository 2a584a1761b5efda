"""The ACL audit trail and the CVE and end-of-life findings."""

from typing import Any

from svc_monitor.mcp.api_caller import ApiCaller
from svc_monitor.mcp.output import iso, listing
from svc_monitor.mcp.tools.spec import Limited, Scoped, ToolSpec


async def acl_audit(api: ApiCaller, params: Limited) -> str:
    stats = await api.get("/api/audit/stats", connection=params.connection)
    entries = await api.get(
        "/api/audit/entries", connection=params.connection, params={"limit": str(params.limit)}
    )
    by_reason = ", ".join(f"{k} {v}" for k, v in (stats.get("byReason") or {}).items())
    head = (
        f"ACL denials: {stats.get('totalEvents')} events in {stats.get('totalEntries')} entries"
        f" from {stats.get('uniqueUsers')} users"
        + (f"; by reason: {by_reason}" if by_reason else "")
    )

    def line(e: dict[str, Any]) -> str:
        when = e.get("timestampCreated") or e.get("capturedAt") or e.get("timestamp")
        return (
            f"{iso(when)} user {e.get('username')} {e.get('reason')} on {e.get('object')}"
            f" ({e.get('context')}) x{e.get('count')}"
            f" from {e.get('clientInfo') or e.get('addr') or '?'}"
        )

    return head + "\n" + listing("Newest entries", entries, line, limit=params.limit)


async def cve_findings(api: ApiCaller, params: Scoped) -> str:
    found = await api.get("/api/cve/findings", connection=params.connection)
    eol = found.get("endOfLife") or {}
    lines = [
        f"{found.get('engine')} {found.get('version')}: scan {found.get('status')}"
        f" at {iso(found.get('scannedAt'))}",
        f"end of life: cycle {eol.get('cycle')} is {eol.get('status')}"
        + (f" (since {eol['eolDate']})" if eol.get("eolDate") else ""),
    ]
    if found.get("message"):
        lines.append(str(found["message"]))

    def line(f: dict[str, Any]) -> str:
        fixed = ", ".join(str(v) for v in f.get("fixedIn") or [] if v) or "no fixed release"
        kev = ", known exploited" if f.get("kev") else ""
        return (
            f"{f.get('id')} {f.get('severity')} (CVSS {f.get('cvss')}{kev}): {f.get('summary')}"
            f" Fixed in {fixed}."
        )

    lines.append(listing("Findings that apply", found.get("findings") or [], line))
    unverifiable = found.get("unverifiable") or []
    if unverifiable:
        lines.append(
            listing("May apply (cannot tell from the version)", unverifiable, line, limit=10)
        )
    return "\n".join(lines)


TOOLS = [
    ToolSpec(
        "acl_audit",
        "ACL denials (ACL LOG, stored): totals by reason, and the newest entries with user, "
        "command or key, and client.",
        acl_audit,
        Limited,
    ),
    ToolSpec(
        "cve_findings",
        "Known CVEs that apply to the server's version and whether its release line is past "
        "end of life, with the release that fixes each.",
        cve_findings,
    ),
]
