"""Migration analyses: the newest ones' verdicts, or one analysis's findings."""

from typing import Any

from pydantic import Field

from svc_monitor.mcp.api_caller import ApiCaller
from svc_monitor.mcp.output import iso, listing, number
from svc_monitor.mcp.tools.spec import Limited, ToolSpec
from svc_monitor.mcp.untrusted import data


class AnalysisParams(Limited):
    analysis_id: str | None = Field(
        default=None,
        max_length=64,
        pattern=r"^[A-Za-z0-9_-]+$",
        description="An analysis id, as this tool lists them; the newest analyses when omitted",
    )


async def migration_analysis(api: ApiCaller, params: AnalysisParams) -> str:
    if params.analysis_id is None:
        jobs = await api.get("/api/migration/analysis", params={"limit": str(params.limit)})

        def line(job: dict[str, Any]) -> str:
            report = job.get("report") or {}
            return (
                f"{data(job.get('id'))} ({iso(job.get('createdAt'))}): {data(job.get('status'))}"
                f", verdict {data(report.get('verdict'), missing='none yet')}"
            )

        return listing("Migration analyses, newest first", jobs, line, empty="no analyses yet")
    job = await api.get(f"/api/migration/analysis/{params.analysis_id}")
    report = job.get("report")
    if not report:
        return (
            f"Analysis {data(job.get('id'))}: {data(job.get('status'))}, "
            f"{number(job.get('progress'))} % done; {data(job.get('error'), missing='no error')}"
        )
    source, target = report.get("source", {}), report.get("target", {})
    estimate = report.get("estimate", {})
    lines = [
        f"Migration analysis {data(job.get('id'))}: verdict {data(report.get('verdict'))}",
        f"from {data(source.get('engine'))} {data(source.get('version'))} "
        f"({number(source.get('keys'))} keys) to {data(target.get('engine'))} "
        f"{data(target.get('version'))}",
        f"copy by {data(estimate.get('method'))}, about "
        f"{number(estimate.get('durationSeconds'))} s",
    ]
    for finding in report.get("findings", []):
        lines.append(
            f"- [{data(finding.get('severity'))}] {data(finding.get('title'))}: "
            f"{data(finding.get('evidence'))}. Fix: {data(finding.get('fix'))}"
        )
    return "\n".join(lines)


TOOLS = [
    ToolSpec(
        "migration_analysis",
        "Migration analyses between two connections: the newest ones' verdicts, or one "
        "analysis's findings (blocking, warning, info) with their evidence and fixes.",
        migration_analysis,
        AnalysisParams,
    ),
]
