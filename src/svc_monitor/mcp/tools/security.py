"""The ACL audit trail and the CVE and end-of-life findings."""

from typing import Any

from svc_monitor.mcp.api_caller import ApiCaller
from svc_monitor.mcp.output import iso, listing, number
from svc_monitor.mcp.tools.spec import Limited, Scoped, ToolSpec
from svc_monitor.mcp.untrusted import data


async def acl_audit(api: ApiCaller, params: Limited) -> str:
    stats = await api.get("/api/audit/stats", connection=params.connection)
    entries = await api.get(
        "/api/audit/entries", connection=params.connection, params={"limit": str(params.limit)}
    )
    by_reason = ", ".join(
        f"{data(k)} {number(v)}" for k, v in (stats.get("byReason") or {}).items()
    )
    head = (
        f"ACL denials: {stats.get('totalEvents')} events in {stats.get('totalEntries')} entries"
        f" from {stats.get('uniqueUsers')} users"
        + (f"; by reason: {by_reason}" if by_reason else "")
    )

    def line(e: dict[str, Any]) -> str:
        when = e.get("timestampCreated") or e.get("capturedAt") or e.get("timestamp")
        return (
            f"{iso(when)} user {data(e.get('username'))} {data(e.get('reason'))}"
            f" on {data(e.get('object'))} ({data(e.get('context'))}) x{number(e.get('count'))}"
            f" from {data(e.get('clientInfo') or e.get('addr'), missing='?')}"
        )

    return head + "\n" + listing("Newest entries", entries, line, limit=params.limit)


def _end_of_life(eol: dict[str, Any]) -> str:
    """The release line's support, in the dataset's terms: `eolDate` is the day the line
    stops (or stopped) being supported, in the past once `status` is end_of_life."""
    cycle, status, date = data(eol.get("cycle")), eol.get("status"), eol.get("eolDate")
    if status == "end_of_life":
        return f"end of life: release line {cycle} is past end of life" + (
            f" since {date}" if date else ""
        )
    if status == "supported":
        until = f"until {date}" if date else "with no end of life announced yet"
        return f"end of life: release line {cycle} is supported {until}"
    return f"end of life: unknown for release line {cycle} (no sourced date in the dataset)"


def _fixed_in(finding: dict[str, Any]) -> str:
    """One release (a finding: the first fix on the scanned line) or one per module line
    (a module advisory)."""
    fixed = finding.get("fixedIn")
    releases = [fixed] if isinstance(fixed, str) else [v for v in fixed or [] if v]
    return ", ".join(str(v) for v in releases) or "no fixed release yet"


async def cve_findings(api: ApiCaller, params: Scoped) -> str:
    found = await api.get("/api/cve/findings", connection=params.connection)
    lines = [
        f"{found.get('engine')} {data(found.get('version'))}: scan {found.get('status')}"
        f" at {iso(found.get('scannedAt'))}",
    ]
    if found.get("endOfLife"):
        lines.append(_end_of_life(found["endOfLife"]))
    else:
        lines.append("end of life: not known until the version is scanned")
    if found.get("message"):
        lines.append(str(found["message"]))

    def line(f: dict[str, Any]) -> str:
        fixed = _fixed_in(f)
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
