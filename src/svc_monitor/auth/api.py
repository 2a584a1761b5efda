"""Accounts, members, invitations, personal API tokens and the activity log over HTTP.

Routes: /api/auth/* (register, login, logout, me, accept-invite),
/api/workspace/* (members, transfer, invitations, activity) and /api/tokens.
Who may call each is in roles.RULES; these handlers only parse and call the service.
"""

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response, status
from fastapi.responses import JSONResponse

from svc_monitor.api.error_responses import error_responses
from svc_monitor.api.params import MAX_EPOCH_MS
from svc_monitor.auth.activity import MAX_PAGE
from svc_monitor.auth.dependencies.access import note_object, principal_of, source_ip_of
from svc_monitor.auth.dependencies.origin import public_base
from svc_monitor.auth.dependencies.principal import AuthDep, PrincipalDep, WorkspaceDep
from svc_monitor.auth.schemas import (
    AcceptInviteWrite,
    ActivityPage,
    ActivityRead,
    InvitationPreview,
    InvitationRead,
    InvitationWrite,
    LoginWrite,
    MemberRead,
    MeRead,
    RegisterWrite,
    RoleWrite,
    TokenRead,
    TokenWrite,
    TransferWrite,
)
from svc_monitor.auth.service import AuthService, SignedIn
from svc_monitor.errors import Unprocessable

router = APIRouter(tags=["workspace"])


def _signed_in_answer(auth: AuthService, signed: SignedIn, status_code: int) -> JSONResponse:
    body = MeRead(
        workspaceEnabled=True,
        signedIn=True,
        id=signed.user.id,
        email=signed.user.email,
        name=signed.user.name,
        role=signed.user.role,
    )
    response = JSONResponse(body.model_dump(), status_code)
    response.headers.append("set-cookie", auth.cookies.set_cookie_header(signed.cookie))
    return response


@router.post(
    "/auth/register",
    response_model=MeRead,
    status_code=201,
    responses=error_responses(403, 404, 422),
    summary="Claim an empty workspace: the first account becomes owner and is signed in",
)
async def register(body: RegisterWrite, request: Request, auth: WorkspaceDep) -> JSONResponse:
    """Open only while nobody has an account: the account becomes the workspace owner and this
    answer sets the session cookie. After that, 403: people join by invitation."""
    signed = await auth.register(body.email, body.name, body.password, ip=source_ip_of(request))
    return _signed_in_answer(auth, signed, 201)


@router.post(
    "/auth/login",
    response_model=MeRead,
    responses=error_responses(401, 404, 429),
    summary="Sign in with email and password; sets the session cookie",
)
async def login(body: LoginWrite, request: Request, auth: WorkspaceDep) -> JSONResponse:
    """Answers 401 with the same message for an unknown email and a wrong password. Failed
    attempts are limited per account and per client address (429 with Retry-After)."""
    signed = await auth.login(body.email, body.password, ip=source_ip_of(request))
    return _signed_in_answer(auth, signed, 200)


@router.post(
    "/auth/logout",
    status_code=204,
    responses=error_responses(404),
    summary="Sign out: ends the session at once and clears the cookie",
)
async def logout(request: Request, auth: WorkspaceDep) -> Response:
    """Ends the session server-side, so a copy of the cookie stops working too."""
    await auth.logout(request.cookies.get(auth.cookies.name), ip=source_ip_of(request))
    response = Response(status_code=204)
    response.headers.append("set-cookie", auth.cookies.clear_cookie_header())
    return response


@router.get(
    "/auth/me",
    response_model=MeRead,
    summary="Who is signed in (open: answers signedIn false for nobody)",
)
async def me(request: Request, auth: AuthDep) -> MeRead:
    """Open: `signedIn` false for an anonymous caller, with `workspaceEmpty` true while the
    workspace can still be claimed; `workspaceEnabled` false when user control is off."""
    if not auth.enabled:
        return MeRead(workspaceEnabled=False, signedIn=False)
    principal = principal_of(request)
    if principal is None:
        return MeRead(
            workspaceEnabled=True, signedIn=False, workspaceEmpty=await auth.workspace_empty()
        )
    user = await auth.me(principal)
    return MeRead(
        workspaceEnabled=True,
        signedIn=True,
        id=user.id,
        email=user.email,
        name=user.name,
        role=user.role,
    )


@router.get(
    "/auth/invitations/{token}",
    response_model=InvitationPreview,
    responses=error_responses(404),
    summary="What an invitation link offers, while it is still pending",
)
async def preview_invitation(token: str, auth: WorkspaceDep) -> InvitationPreview:
    """The invite page's preview: the email and role on offer. 404 for a used, revoked,
    expired or unknown link (one answer that does not say which)."""
    invitation = await auth.pending_invitation(token)
    return InvitationPreview(
        email=invitation.email, role=invitation.role, expiresAt=invitation.expires_at
    )


@router.post(
    "/auth/accept-invite",
    response_model=MeRead,
    status_code=201,
    responses=error_responses(404, 422),
    summary="Accept an invitation: set name and password, join with its role, sign in",
)
async def accept_invite(
    body: AcceptInviteWrite, request: Request, auth: WorkspaceDep
) -> JSONResponse:
    """Creates the account with the invitation's email and role, marks the invitation
    accepted (a link works once) and signs the new member in."""
    signed = await auth.accept_invitation(
        body.token, body.name, body.password, ip=source_ip_of(request)
    )
    return _signed_in_answer(auth, signed, 201)


@router.get(
    "/workspace/members",
    response_model=list[MemberRead],
    responses=error_responses(401, 404),
    summary="The team: names and roles; emails for admins and the owner only",
)
async def members(principal: PrincipalDep, auth: WorkspaceDep) -> list[MemberRead]:
    """Everyone signed in sees names and roles; `email` is filled only for admins and the owner."""
    return [MemberRead.of(u, with_email=principal.is_admin) for u in await auth.members()]


@router.put(
    "/workspace/members/{member_id}",
    response_model=MemberRead,
    responses=error_responses(401, 403, 404, 422),
    summary="Change a member's role (admin or member); applies within 30 s",
)
async def change_role(
    member_id: str, body: RoleWrite, principal: PrincipalDep, auth: WorkspaceDep
) -> MemberRead:
    """`role` is `admin` or `member`; the owner's role changes only by a transfer. Other
    sessions of that member see the change within 30 seconds."""
    user = await auth.change_role(principal, member_id, body.role)
    return MemberRead.of(user, with_email=True)


@router.delete(
    "/workspace/members/{member_id}",
    status_code=204,
    responses=error_responses(401, 403, 404),
    summary="Remove a member; their sessions and API tokens end at once",
)
async def remove_member(member_id: str, principal: PrincipalDep, auth: WorkspaceDep) -> Response:
    """Their sessions and personal API tokens end at once. The owner cannot be removed."""
    await auth.remove_member(principal, member_id)
    return Response(status_code=204)


@router.post(
    "/workspace/transfer",
    response_model=MemberRead,
    responses=error_responses(401, 403, 404, 422),
    summary="Make another member the owner; the previous owner becomes admin",
)
async def transfer(
    request: Request, body: TransferWrite, principal: PrincipalDep, auth: WorkspaceDep
) -> MemberRead:
    """Owner only: `memberId` becomes the owner and the current owner becomes an admin."""
    user = await auth.transfer_ownership(principal, body.memberId)
    note_object(request, user.id)
    return MemberRead.of(user, with_email=True)


@router.get(
    "/workspace/invitations",
    response_model=list[InvitationRead],
    responses=error_responses(401, 403, 404),
    summary="Invitations, newest first, with their state (pending, revoked, accepted, expired)",
)
async def invitations(_: PrincipalDep, auth: WorkspaceDep) -> list[InvitationRead]:
    """Every invitation with its state: pending, revoked, accepted or expired (7 days)."""
    return [InvitationRead.of(i) for i in await auth.invitations()]


@router.post(
    "/workspace/invitations",
    response_model=InvitationRead,
    status_code=201,
    responses=error_responses(401, 403, 404, 409, 422),
    summary="Invite an email as member or admin; the one-time link is in this answer only",
)
async def invite(
    body: InvitationWrite, request: Request, principal: PrincipalDep, auth: WorkspaceDep
) -> InvitationRead:
    """`role` is `member` or `admin`. The answer's `link` (`<AUTH_PUBLIC_URL or this origin>/
    invite/<token>`) is the only time the token is shown; only its SHA-256 is stored. Inviting
    an email again retires its older pending link."""
    invitation, token = await auth.invite(principal, body.email, body.role)
    link = f"{public_base(request, auth.settings)}/invite/{token}"
    return InvitationRead.of(invitation, link)


@router.delete(
    "/workspace/invitations/{invitation_id}",
    response_model=InvitationRead,
    responses=error_responses(401, 403, 404, 409),
    summary="Revoke a pending invitation",
)
async def revoke_invitation(
    invitation_id: str, _: PrincipalDep, auth: WorkspaceDep
) -> InvitationRead:
    """409 when the invitation is no longer pending."""
    return InvitationRead.of(await auth.revoke_invitation(invitation_id))


@router.get(
    "/workspace/activity",
    response_model=ActivityPage,
    responses=error_responses(401, 403, 404, 422),
    summary="The activity log, newest first (admins and the owner)",
)
async def activity(
    _: PrincipalDep,
    auth: WorkspaceDep,
    actor: Annotated[str | None, Query(max_length=200, description="user id or name")] = None,
    action: Annotated[
        str | None, Query(max_length=200, description="e.g. auth.login, POST /api/connections")
    ] = None,
    from_: Annotated[
        int | None, Query(alias="from", ge=0, le=MAX_EPOCH_MS, description="epoch ms")
    ] = None,
    to: Annotated[int | None, Query(ge=0, le=MAX_EPOCH_MS, description="epoch ms")] = None,
    cursor: Annotated[str | None, Query(max_length=20)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50,
) -> ActivityPage:
    """Every change by a signed-in user, sign-ins and sign-outs, and browser CLI commands.
    Filters: `actor` (user id or name), `action` (exact: `auth.login`, `cli.command`,
    `POST /api/connections`), `from`/`to` (epoch ms); pages of at most 100, continued with
    `cursor` = the previous page's `nextCursor`. Refused requests (401/403) are not recorded."""
    before = _cursor(cursor)
    entries, next_id = await auth.activity.page(
        actor=actor, action=action, since=from_, until=to, cursor=before, limit=limit
    )
    return ActivityPage(
        entries=[ActivityRead.of(e) for e in entries],
        nextCursor=str(next_id) if next_id is not None else None,
    )


def _cursor(cursor: str | None) -> int | None:
    if cursor is None:
        return None
    if not cursor.isdigit():
        raise Unprocessable("cursor must be a nextCursor from an earlier page", field="cursor")
    return int(cursor)


@router.get(
    "/tokens",
    response_model=list[TokenRead],
    responses=error_responses(401, 404),
    summary="Your personal API tokens (secrets are never shown again)",
)
async def tokens(principal: PrincipalDep, auth: WorkspaceDep) -> list[TokenRead]:
    """Name, prefix, creation and last use of each of your tokens; never the secret. Only
    your own: nobody, admins and the owner included, lists another user's tokens."""
    return [TokenRead.of(t) for t in await auth.tokens(principal)]


@router.post(
    "/tokens",
    response_model=TokenRead,
    status_code=status.HTTP_201_CREATED,
    responses=error_responses(401, 404, 422),
    summary="Create a personal API token: send it as `Authorization: Bearer <token>`",
)
async def create_token(body: TokenWrite, principal: PrincipalDep, auth: WorkspaceDep) -> TokenRead:
    """Any signed-in user makes their own, members too: an MCP client (`SVC_TOKEN`, or
    the same Bearer header on `/mcp`) or a script needs one while user control is on.
    The answer's `token` is the only time the secret is shown; only its SHA-256 is
    stored. It acts as you, with your current role, on every API route; one a member
    makes never acts beyond the member role, even after a promotion (make a new one
    then). Recorded in the activity log, never with the secret."""
    token, secret = await auth.create_token(principal, body.name)
    return TokenRead.of(token, secret)


@router.delete(
    "/tokens/{token_id}",
    status_code=204,
    responses=error_responses(401, 404),
    summary="Revoke one of your tokens",
)
async def revoke_token(token_id: str, principal: PrincipalDep, auth: WorkspaceDep) -> Response:
    """Any signed-in user revokes their own tokens, members too. The token stops working
    at once (on other replicas within seconds). Another user's token answers 404, as an
    unknown or already revoked id does. Removing a member ends all of theirs."""
    await auth.revoke_token(principal, token_id)
    return Response(status_code=204)
