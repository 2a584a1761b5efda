"""Team page: the members with their roles, and (for admins) invitations.

Everyone signed in sees names and roles; admins and the owner also see emails, change
roles, remove members, invite (the one-time link is shown once, in the answer to the
invite) and revoke; only the owner transfers ownership. Every action calls the same
AuthService methods as /api/workspace/*, and answers the panel again with what happened.
"""

from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from svc_monitor.auth.dependencies.access import note_object
from svc_monitor.auth.dependencies.origin import public_base
from svc_monitor.auth.models import Invitation, InvitationStatus, Principal, Role, User
from svc_monitor.errors import AppError, NotFound
from svc_monitor.web.dependencies import FromThisPage, Ui, UiDep
from svc_monitor.web.forms import parse_form
from svc_monitor.web.pages import Page

PAGE = Page("team", "/team", "Team", needs_connection=False, audience="members")
router = APIRouter(include_in_schema=False)

INVITABLE_ROLES = (Role.MEMBER, Role.ADMIN)


@dataclass(frozen=True, slots=True)
class TeamView:
    members: list[User]
    invitations: list[Invitation]  # empty for members: they do not see them
    new_link: str | None = None  # the invitation link just made: shown this once
    new_link_email: str | None = None
    message: str | None = None
    error: str | None = None

    @property
    def pending(self) -> list[Invitation]:
        return [i for i in self.invitations if i.status is InvitationStatus.PENDING]

    @property
    def past(self) -> list[Invitation]:
        """Revoked, accepted and expired ones: each can be invited again."""
        return [i for i in self.invitations if i.status is not InvitationStatus.PENDING]


async def _view(ui: Ui, **outcome: Any) -> TeamView:
    auth = ui.services.auth
    invitations = await auth.invitations() if ui.viewer.is_admin else []
    return TeamView(await auth.members(), invitations, **outcome)


def _panel(ui: Ui, view: TeamView) -> HTMLResponse:
    return ui.fragment("team/panel.html", team=view, roles=INVITABLE_ROLES)


def _actor(ui: Ui) -> Principal:
    principal = ui.viewer.principal
    if principal is None:  # only with user control off, where this page does not exist
        raise NotFound("User control is off on this install (WORKSPACE_DISABLED=true)")
    return principal


@router.get("/team")
async def team_page(ui: UiDep) -> Response:
    if not ui.viewer.workspace:
        return RedirectResponse("/", status_code=303)
    return ui.page(PAGE, "team/page.html", team=await _view(ui), roles=INVITABLE_ROLES)


@router.post("/ui/team/invitations", dependencies=[FromThisPage])
async def invite(request: Request, ui: UiDep) -> HTMLResponse:
    form = parse_form(await request.body())
    try:
        role = Role(form.get("role", Role.MEMBER.value))
        invitation, token = await ui.services.auth.invite(_actor(ui), form.get("email", ""), role)
    except ValueError:
        return _panel(ui, await _view(ui, error="Role must be member or admin."))
    except AppError as exc:
        return _panel(ui, await _view(ui, error=exc.message))
    link = f"{public_base(request, ui.services.settings)}/invite/{token}"
    view = await _view(ui, new_link=link, new_link_email=invitation.email)
    return _panel(ui, view)


@router.post("/ui/team/invitations/{invitation_id}/revoke", dependencies=[FromThisPage])
async def revoke(invitation_id: str, ui: UiDep) -> HTMLResponse:
    try:
        invitation = await ui.services.auth.revoke_invitation(invitation_id)
    except AppError as exc:
        return _panel(ui, await _view(ui, error=exc.message))
    return _panel(ui, await _view(ui, message=f"Invitation for {invitation.email} revoked."))


@router.post("/ui/team/members/{member_id}/role", dependencies=[FromThisPage])
async def change_role(member_id: str, request: Request, ui: UiDep) -> HTMLResponse:
    form = parse_form(await request.body())
    try:
        role = Role(form.get("role", ""))
        member = await ui.services.auth.change_role(_actor(ui), member_id, role)
    except ValueError:
        return _panel(ui, await _view(ui, error="Role must be member or admin."))
    except AppError as exc:
        return _panel(ui, await _view(ui, error=exc.message))
    message = f"{member.name} is now {member.role.value}; it applies within 30 seconds."
    return _panel(ui, await _view(ui, message=message))


@router.post("/ui/team/members/{member_id}/remove", dependencies=[FromThisPage])
async def remove(member_id: str, ui: UiDep) -> HTMLResponse:
    try:
        member = await ui.services.auth.remove_member(_actor(ui), member_id)
    except AppError as exc:
        return _panel(ui, await _view(ui, error=exc.message))
    return _panel(ui, await _view(ui, message=f"{member.name} was removed and signed out."))


@router.post("/ui/team/transfer", dependencies=[FromThisPage])
async def transfer(request: Request, ui: UiDep) -> Response:
    form = parse_form(await request.body())
    try:
        member = await ui.services.auth.transfer_ownership(_actor(ui), form.get("memberId", ""))
    except AppError as exc:
        return _panel(ui, await _view(ui, error=exc.message))
    note_object(request, member.id)
    # The page changes shape (this user is an admin now): load it again.
    return Response(status_code=204, headers={"HX-Refresh": "true"})
