"""The one table that says which role (auth/models.py) each route needs.

Every route of the app has a line in RULES, keyed by method and path template as
OpenAPI writes them. A route without a line is refused for everyone (deny by default)
and fails tests/auth/test_route_rules.py, so a new route cannot ship unguarded.

The role table (docs/features/users-and-access.md#roles), in short: members read
everything except the activity log and server configuration; every POST/PUT/PATCH/DELETE
needs an admin, except signing in and out and the read-only POSTs; only the owner
transfers ownership. One exception: a member makes and revokes their own personal tokens
(each user reaches only their own: auth/service.py), so MCP and scripts work for members,
with the member role.
"""

from enum import IntEnum

from svc_monitor.auth.models import Role


class Access(IntEnum):
    """Who may call a route, weakest first."""

    PUBLIC = 0  # anyone, signed in or not
    MEMBER = 1  # any signed-in user
    ADMIN = 2
    OWNER = 3
    # The Prometheus endpoint: open, as exporters are, unless PROMETHEUS_BEARER_TOKEN is
    # set; then that token (a scraper's) or any signed-in user (a person or their token).
    SCRAPE = 10
    # An agent's link: no session and no browser (so no origin to check); the route itself
    # refuses any but a live agent token (agent_links/api.py).
    AGENT = 11

    @property
    def role(self) -> Role | None:
        roles = {
            Access.MEMBER: Role.MEMBER,
            Access.ADMIN: Role.ADMIN,
            Access.OWNER: Role.OWNER,
            Access.SCRAPE: Role.MEMBER,  # when a token is set and the caller is not a scraper
        }
        return roles.get(self)


PUBLIC, MEMBER, ADMIN, OWNER = Access.PUBLIC, Access.MEMBER, Access.ADMIN, Access.OWNER
SCRAPE = Access.SCRAPE
AGENT = Access.AGENT

# Methods that change something: admin by default in the table below, recorded in the
# activity log, and checked against the pinned origin.
MUTATIONS = frozenset({"POST", "PUT", "PATCH", "DELETE"})

RULES: dict[str, Access] = {
    # --- open: container health checks, scrapers, and the ways in ---
    "GET /health": PUBLIC,
    "GET /api/health": PUBLIC,
    "GET /health/live": PUBLIC,
    "GET /api/health/live": PUBLIC,
    "GET /api/prometheus/metrics": SCRAPE,
    # OTLP receivers: collectors carry no session; OTEL_INGEST_TOKEN guards them instead.
    "POST /v1/traces": PUBLIC,
    "POST /v1/external/metrics": PUBLIC,
    "POST /v1/metrics": PUBLIC,
    "GET /v1/metrics": PUBLIC,
    "PUT /v1/metrics": PUBLIC,
    "PATCH /v1/metrics": PUBLIC,
    "DELETE /v1/metrics": PUBLIC,
    # their other methods: a 405 naming POST
    "GET /v1/traces": PUBLIC,
    "PUT /v1/traces": PUBLIC,
    "PATCH /v1/traces": PUBLIC,
    "DELETE /v1/traces": PUBLIC,
    "GET /v1/external/metrics": PUBLIC,
    "PUT /v1/external/metrics": PUBLIC,
    "PATCH /v1/external/metrics": PUBLIC,
    "DELETE /v1/external/metrics": PUBLIC,
    # Any other path under /v1/: a 404 in the OTLP error shape.
    "GET /v1/{path}": PUBLIC,
    "POST /v1/{path}": PUBLIC,
    "PUT /v1/{path}": PUBLIC,
    "PATCH /v1/{path}": PUBLIC,
    "DELETE /v1/{path}": PUBLIC,
    "GET /api": PUBLIC,  # the API's documentation page
    "GET /api/": PUBLIC,
    "POST /api/auth/register": PUBLIC,
    "POST /api/auth/login": PUBLIC,
    "POST /api/auth/logout": PUBLIC,  # signing out never needs a live session
    "POST /api/auth/accept-invite": PUBLIC,
    "GET /api/auth/me": PUBLIC,  # answers who is signed in, or that nobody is
    "GET /api/auth/invitations/{token}": PUBLIC,  # the invite page's preview
    # --- third-party sign-in through the broker (auth/broker.py): ways in, so open ---
    "GET /api/auth/broker/providers": PUBLIC,
    "GET /api/auth/broker/{provider}/start": PUBLIC,
    "GET /api/auth/broker/callback": PUBLIC,
    # --- system ---
    "GET /version": MEMBER,
    "GET /api/version": MEMBER,
    "GET /api/replicas": MEMBER,
    # --- workspace ---
    "GET /api/workspace/members": MEMBER,
    "PUT /api/workspace/members/{member_id}": ADMIN,
    "DELETE /api/workspace/members/{member_id}": ADMIN,
    "POST /api/workspace/transfer": OWNER,
    "GET /api/workspace/invitations": ADMIN,
    "POST /api/workspace/invitations": ADMIN,
    "DELETE /api/workspace/invitations/{invitation_id}": ADMIN,
    "GET /api/workspace/activity": ADMIN,
    # --- personal API tokens: each user lists, makes and revokes their own, members too
    # (an exception to "members change nothing": without a token a member has no MCP);
    # a member's token acts as a member, and no one reaches another user's tokens ---
    "GET /api/tokens": MEMBER,
    "POST /api/tokens": MEMBER,
    "DELETE /api/tokens/{token_id}": MEMBER,
    # --- connections ---
    "GET /api/connections": MEMBER,
    # Unregistered pushers: admins only, since registering one is theirs to do.
    "GET /api/connections/discovered": ADMIN,
    "POST /api/connections/discovered/{address}/dismiss": ADMIN,
    "POST /api/connections": ADMIN,
    "POST /api/connections/test": ADMIN,  # makes the server dial any address: not a read
    "GET /api/connections/{connection_id}": MEMBER,
    "PUT /api/connections/{connection_id}": ADMIN,
    "DELETE /api/connections/{connection_id}": ADMIN,
    "POST /api/connections/{connection_id}/default": ADMIN,
    "POST /api/connections/{connection_id}/ssh/repin": ADMIN,
    "POST /api/connections/{connection_id}/test": ADMIN,  # dials, with the stored secrets
    "GET /api/otlp/collector-config": MEMBER,
    # --- runtime settings and licence ---
    "GET /api/settings": MEMBER,
    "PUT /api/settings": ADMIN,
    "POST /api/settings/reset": ADMIN,
    "GET /api/license/status": MEMBER,
    "GET /api/license/features": MEMBER,
    "POST /api/license/refresh": ADMIN,
    "PUT /api/license/offline": ADMIN,
    "DELETE /api/license/offline": ADMIN,
    # --- webhooks ---
    "GET /api/webhooks/allowed-events": MEMBER,
    "GET /api/webhooks/stats/retry-queue": MEMBER,
    "POST /api/webhooks/deliveries/{deliveryId}/retry": ADMIN,
    "GET /api/webhooks": MEMBER,
    "POST /api/webhooks": ADMIN,
    "GET /api/webhooks/{id}": MEMBER,
    "PUT /api/webhooks/{id}": ADMIN,
    "DELETE /api/webhooks/{id}": ADMIN,
    "POST /api/webhooks/{id}/test": ADMIN,  # makes the server send a request: not a read
    "GET /api/webhooks/{id}/deliveries": MEMBER,
    # --- metrics and history (reads) ---
    "GET /api/metrics/info": MEMBER,
    "GET /api/metrics/history": MEMBER,
    "GET /api/metrics/monitor-load": MEMBER,
    "GET /api/memory-analytics/snapshots": MEMBER,
    "GET /api/metrics/slowlog": MEMBER,
    "GET /api/metrics/slowlog/length": MEMBER,
    "GET /api/metrics/slowlog/patterns": MEMBER,
    "GET /api/metrics/commandlog": MEMBER,
    "GET /api/metrics/commandlog/length": MEMBER,
    "GET /api/metrics/commandlog/patterns": MEMBER,
    "GET /api/slowlog-analytics/entries": MEMBER,
    "GET /api/commandlog-analytics/entries": MEMBER,
    "GET /api/audit/entries": MEMBER,
    "GET /api/audit/stats": MEMBER,
    "GET /api/audit/failed-auth": MEMBER,
    "GET /api/audit/by-user": MEMBER,
    "GET /api/metrics/acl/log": MEMBER,
    "GET /api/client-analytics/snapshots": MEMBER,
    "GET /api/client-analytics/timeseries": MEMBER,
    "GET /api/client-analytics/stats": MEMBER,
    "GET /api/client-analytics/history": MEMBER,
    "GET /api/client-analytics/command-distribution": MEMBER,
    "GET /api/client-analytics/idle-connections": MEMBER,
    "GET /api/client-analytics/buffer-anomalies": MEMBER,
    "GET /api/client-analytics/activity-timeline": MEMBER,
    "GET /api/client-analytics/spike-detection": MEMBER,
    "GET /api/metrics/clients": MEMBER,
    "GET /api/metrics/clients/{id}": MEMBER,
    "GET /api/metrics/latency/latest": MEMBER,
    "GET /api/metrics/latency/history/{eventName}": MEMBER,
    "GET /api/metrics/latency/histogram": MEMBER,
    "GET /api/metrics/latency/doctor": MEMBER,
    "GET /api/metrics/memory/stats": MEMBER,
    "GET /api/metrics/memory/doctor": MEMBER,
    "GET /api/metrics/role": MEMBER,
    "GET /api/metrics/cluster/info": MEMBER,
    "GET /api/metrics/cluster/nodes": MEMBER,
    "GET /api/metrics/cluster/slot-stats": MEMBER,
    "GET /api/metrics/cluster/node-stats": MEMBER,
    "GET /api/metrics/cluster/slowlog": MEMBER,
    "GET /api/metrics/cluster/commandlog": MEMBER,
    "GET /api/metrics/cluster/clients": MEMBER,
    "GET /api/metrics/dbsize": MEMBER,
    "GET /api/metrics/lastsave": MEMBER,
    "GET /api/metrics/commandstats/summary": MEMBER,
    "GET /api/metrics/commandstats/history": MEMBER,
    "GET /api/latency-analytics/snapshots": MEMBER,
    "GET /api/latency-analytics/histograms": MEMBER,
    "GET /api/traces": MEMBER,
    "GET /api/traces/{traceId}": MEMBER,
    "GET /api/cve/findings": MEMBER,
    "GET /api/metric-forecasting/{metricKind}/forecast": MEMBER,
    "GET /api/metric-forecasting/{metricKind}/settings": MEMBER,
    "PUT /api/metric-forecasting/{metricKind}/settings": ADMIN,
    "GET /api/key-analytics/patterns": MEMBER,
    "GET /api/key-analytics/summary": MEMBER,
    "GET /api/vector-search/indexes": MEMBER,
    "GET /api/vector-search/snapshots": MEMBER,
    "GET /api/vector-search/latency": MEMBER,
    "GET /api/vector-search/latency/trend": MEMBER,
    "POST /api/vector-search/indexes/{name}/search": MEMBER,
    "POST /api/vector-search/indexes/{name}/query": MEMBER,
    "POST /api/vector-search/indexes/{name}/profile": MEMBER,
    # --- migration: reading a job is for members; starting or cancelling one loads
    # production servers, so it is an admin's call ---
    # --- agents: their tokens are an admin's, seeing the links a member's ---
    "POST /api/agent-tokens": ADMIN,
    "GET /api/agent-tokens": ADMIN,
    "DELETE /api/agent-tokens/{token_id}": ADMIN,
    "GET /api/agents": MEMBER,
    "WS /agent/ws": AGENT,
    "WS /api/agent/ws": AGENT,
    "GET /api/migration/analysis": MEMBER,
    "GET /api/migration/analysis/{analysis_id}": MEMBER,
    "POST /api/migration/analysis": ADMIN,
    "DELETE /api/migration/analysis/{analysis_id}": ADMIN,
    "GET /api/migration/execution": MEMBER,
    "GET /api/migration/execution/{execution_id}": MEMBER,
    "POST /api/migration/execution": ADMIN,
    "DELETE /api/migration/execution/{execution_id}": ADMIN,
    "GET /api/migration/validation": MEMBER,
    "GET /api/migration/validation/{validation_id}": MEMBER,
    "POST /api/migration/validation": ADMIN,
    "DELETE /api/migration/validation/{validation_id}": ADMIN,
    "GET /api/anomaly/events": MEMBER,
    "GET /api/anomaly/groups": MEMBER,
    "GET /api/anomaly/buffers": MEMBER,
    "POST /api/anomaly/events/{event_id}/resolve": ADMIN,
    "POST /api/anomaly/groups/{group_id}/resolve": ADMIN,
    # configuration can hold credentials (requirepass, masterauth)
    "GET /api/metrics/config": ADMIN,
    "GET /api/metrics/config/{parameter}": ADMIN,
    # --- resets and clean-ups on the instance or the history ---
    "DELETE /api/metrics/slowlog": ADMIN,
    "DELETE /api/metrics/commandlog": ADMIN,
    "DELETE /api/metrics/acl/log": ADMIN,
    "DELETE /api/metrics/clients": ADMIN,
    "DELETE /api/metrics/latency": ADMIN,
    "DELETE /api/client-analytics/cleanup": ADMIN,
    # --- web UI: pages and fragments are reads; its changes follow the API's rules ---
    "GET /": MEMBER,
    "GET /slowlog": MEMBER,
    "GET /clients": MEMBER,
    "GET /latency": MEMBER,
    "GET /memory": MEMBER,
    "GET /cluster": MEMBER,
    "GET /audit": MEMBER,
    "GET /settings": MEMBER,
    "GET /ui/dashboard/live": MEMBER,
    "GET /ui/slowlog/log": MEMBER,
    "GET /ui/clients/live": MEMBER,
    "GET /ui/clients/timeseries": MEMBER,
    "GET /ui/cluster/live": MEMBER,
    "GET /ui/cluster/slots": MEMBER,
    "GET /ui/audit/trail": MEMBER,
    "GET /ui/connections/status": MEMBER,
    "GET /ui/connections": MEMBER,
    "GET /ui/connections/new": MEMBER,
    "GET /ui/connections/{connection_id}/edit": MEMBER,
    "GET /ui/connections/collector-config": MEMBER,
    "POST /ui/connection": MEMBER,  # picks the connection this browser looks at: a read
    "POST /ui/connections/test": ADMIN,
    "POST /ui/connections": ADMIN,
    "POST /ui/connections/{connection_id}": ADMIN,
    "POST /ui/connections/{connection_id}/default": ADMIN,
    "POST /ui/connections/{connection_id}/delete": ADMIN,
    "POST /ui/connections/{connection_id}/ssh/repin": ADMIN,
    "POST /ui/connections/{connection_id}/test": ADMIN,
    "POST /ui/connections/discovered/{address}/dismiss": ADMIN,
    "POST /ui/license/offline": ADMIN,
    "POST /ui/license/offline/remove": ADMIN,
    "POST /ui/license/refresh": ADMIN,
    "POST /ui/settings": ADMIN,
    "POST /ui/settings/reset": ADMIN,
    # --- web UI: the ways in (open, as /api/auth/*), the team, activity and tokens ---
    "GET /login": PUBLIC,
    "GET /register": PUBLIC,
    "GET /invite/{token}": PUBLIC,
    "POST /ui/account/login": PUBLIC,
    "POST /ui/account/register": PUBLIC,
    "POST /ui/account/accept": PUBLIC,
    "POST /ui/account/logout": PUBLIC,
    "GET /team": MEMBER,
    "POST /ui/team/invitations": ADMIN,
    "POST /ui/team/invitations/{invitation_id}/revoke": ADMIN,
    "POST /ui/team/members/{member_id}/role": ADMIN,
    "POST /ui/team/members/{member_id}/remove": ADMIN,
    "POST /ui/team/transfer": OWNER,
    "GET /activity": ADMIN,
    "POST /ui/tokens": MEMBER,  # one's own tokens, as /api/tokens
    "POST /ui/tokens/{token_id}/revoke": MEMBER,
    # --- web UI: webhooks (members read them and their deliveries; changes are an admin's,
    # the test call too: it makes the server send a request) ---
    "GET /webhooks": MEMBER,
    "GET /webhooks/new": MEMBER,
    "GET /webhooks/{webhook_id}": MEMBER,
    "GET /ui/webhooks/{webhook_id}/deliveries": MEMBER,
    "POST /ui/webhooks": ADMIN,
    "POST /ui/webhooks/{webhook_id}": ADMIN,
    "POST /ui/webhooks/{webhook_id}/delete": ADMIN,
    "POST /ui/webhooks/{webhook_id}/test": ADMIN,
    "POST /ui/webhooks/{webhook_id}/deliveries/{delivery_id}/retry": ADMIN,
    # --- browser CLI (console/cli/): any member; the command policy decides what runs ---
    "WS /api/cli/ws": MEMBER,
    "GET /cli": MEMBER,
    # --- MONITOR captures (console/monitor/): members read, tail and export; changes are
    # an admin's, except the preflight, a read-only POST
    # (docs/features/users-and-access.md#roles) ---
    "POST /api/monitor/sessions/preflight": MEMBER,
    "POST /api/monitor/sessions": ADMIN,
    "GET /api/monitor/sessions": MEMBER,
    "GET /api/monitor/sessions/{session_id}": MEMBER,
    "GET /api/monitor/sessions/{session_id}/lines": MEMBER,
    "GET /api/monitor/sessions/{session_id}/export": MEMBER,
    "POST /api/monitor/sessions/{session_id}/stop": ADMIN,
    "DELETE /api/monitor/sessions/{session_id}": ADMIN,
    "WS /api/monitor/ws": MEMBER,
    "GET /monitor": MEMBER,
    "GET /monitor/{session_id}": MEMBER,
    "GET /ui/monitor/preflight": MEMBER,
    "GET /ui/monitor/sessions": MEMBER,
    "GET /ui/monitor/sessions/{session_id}": MEMBER,
    "POST /ui/monitor/sessions": ADMIN,
    "POST /ui/monitor/sessions/{session_id}/stop": ADMIN,
    "POST /ui/monitor/sessions/{session_id}/delete": ADMIN,
    # --- AI Traces (traces/): stored spans are reads for any member ---
    "GET /ai-traces": MEMBER,
    "GET /ui/ai-traces/list": MEMBER,
    "GET /ui/ai-traces/view": MEMBER,
    # --- Security (cve/): scan findings are reads for any member ---
    "GET /security": MEMBER,
    # --- Forecast (forecast/): members read; saving a metric's settings is an admin's ---
    "GET /forecasting": MEMBER,
    "POST /ui/forecasting/{metric_kind}/settings": ADMIN,
    # --- Key Analytics (analytics/, Pro): reads for any member ---
    "GET /key-analytics": MEMBER,
    "GET /agents": MEMBER,
    "POST /ui/agents": ADMIN,
    "POST /ui/agents/{token_id}/revoke": ADMIN,
    "GET /migration": MEMBER,
    "GET /ui/migration/jobs/{kind}/{job_id}": MEMBER,
    "POST /ui/migration/{kind}": ADMIN,
    "GET /vector-search": MEMBER,
    "POST /ui/vector-search/search": MEMBER,  # a read-only search, as its API route
    "POST /ui/vector-search/profile": MEMBER,  # FT.PROFILE, read-only, as its API route
    # --- Anomalies (anomaly/, Pro): reads for any member; resolving is an admin's ---
    "GET /anomalies": MEMBER,
    "POST /ui/anomalies/groups/{group_id}/resolve": ADMIN,
    "POST /ui/anomalies/events/{event_id}/resolve": ADMIN,
    # --- the catch-alls: a JSON or HTML 404 (or 503 while starting) for any unknown path ---
    "DELETE /api/{path}": PUBLIC,
    "GET /api/{path}": PUBLIC,
    "PATCH /api/{path}": PUBLIC,
    "POST /api/{path}": PUBLIC,
    "PUT /api/{path}": PUBLIC,
    "GET /{path}": PUBLIC,
    "DELETE /{path}": PUBLIC,
    "PATCH /{path}": PUBLIC,
    "POST /{path}": PUBLIC,
    "PUT /{path}": PUBLIC,
}


def rule_for(method: str, template: str) -> Access | None:
    """The access a route needs; None when the table has no line for it."""
    return RULES.get(f"{method} {template}")
