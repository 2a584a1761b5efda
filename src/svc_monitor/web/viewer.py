"""Who is looking at a page: what the shell shows them (their name, sign-out, the
pages their role may open) and what a page offers them (admin-only actions).

Hiding an action is a courtesy, not the guard: auth/roles.py RULES refuses it anyway.
"""

from dataclasses import dataclass

from starlette.requests import HTTPConnection

from svc_monitor.auth.dependencies.access import principal_of
from svc_monitor.auth.models import Principal, Role
from svc_monitor.web.pages import Page


@dataclass(frozen=True, slots=True)
class Viewer:
    """The signed-in user, or everyone when user control is off (WORKSPACE_DISABLED)."""

    workspace: bool  # user control on
    principal: Principal | None

    @classmethod
    def of(cls, connection: HTTPConnection) -> "Viewer":
        enabled: bool = connection.app.state.services.auth.enabled
        return cls(enabled, principal_of(connection) if enabled else None)

    @property
    def name(self) -> str:
        return self.principal.name if self.principal else ""

    @property
    def role(self) -> str:
        return self.principal.role.value if self.principal else ""

    @property
    def is_admin(self) -> bool:
        """May change things: an admin or the owner, or anyone when user control is off."""
        return not self.workspace or (self.principal is not None and self.principal.is_admin)

    @property
    def is_owner(self) -> bool:
        return self.principal is not None and self.principal.role is Role.OWNER

    def sees(self, page: Page) -> bool:
        if page.audience == "everyone":
            return True
        if not self.workspace:
            return False  # team and activity pages exist only with user control on
        return page.audience == "members" or self.is_admin
