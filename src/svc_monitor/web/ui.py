"""The UI's pages in navigation order, and what installs them.

Adding a page is one module in routes/ (see pages.py) and one line in PAGE_MODULES.
"""

from fastapi import APIRouter

from svc_monitor import __version__
from svc_monitor.web.assets import static_url
from svc_monitor.web.rendering import Templates
from svc_monitor.web.routes import (
    account,
    activity,
    agents,
    anomalies,
    audit,
    cli,
    clients,
    cluster,
    connections,
    dashboard,
    forecast,
    key_analytics,
    latency,
    license,
    memory,
    migration,
    monitor,
    security,
    settings,
    slowlog,
    team,
    tokens,
    traces,
    vector_search,
    webhooks,
)

PAGE_MODULES = (
    dashboard,
    slowlog,
    clients,
    latency,
    memory,
    key_analytics,
    vector_search,
    migration,
    agents,
    forecast,
    anomalies,
    cluster,
    audit,
    cli,
    monitor,
    traces,
    security,
    webhooks,
    team,
    activity,
    settings,
)
NAV = tuple(module.PAGE for module in PAGE_MODULES)
ROUTERS: tuple[APIRouter, ...] = (
    account.router,
    connections.router,
    license.router,
    tokens.router,
    *(m.router for m in PAGE_MODULES),
)


def build_templates() -> Templates:
    return Templates(globals_={"nav": NAV, "static": static_url, "version": __version__})
