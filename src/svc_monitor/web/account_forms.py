"""Small pieces the sign-in, claim and invitation pages share.

`safe_next` keeps the after-sign-in redirect on this site (no open redirect through
`/login?next=https://elsewhere`). The third-party sign-in buttons come from
auth/broker.py, which decides whether they show at all.
"""

from starlette.requests import HTTPConnection

from svc_monitor.auth.broker.service import BrokerService, BrokerView


def safe_next(target: str) -> str:
    """`target` if it is a path on this site, else the dashboard."""
    if (
        not target.startswith("/")
        or target.startswith("//")
        or "\\" in target
        or any(ord(c) < 32 for c in target)
    ):
        return "/"
    return target


def broker_context(
    connection: HTTPConnection, *, intent: str, invite_token: str | None = None
) -> BrokerView:
    """The third-party sign-in buttons for this page (a hidden view renders nothing)."""
    broker: BrokerService = connection.app.state.services.broker
    return broker.view(intent=intent, invite=invite_token)
