"""The workspace: who may sign in, with what role, and how they prove it.

Accounts (claim, sign-in, sign-out), sessions, members and roles, invitations and
personal API tokens. Every rule of docs/features/users-and-access.md lives here; api.py
only parses and calls. The activity log is its own small service (activity.py) that this
one feeds.
"""

import asyncio
import hashlib
import logging
import re
import secrets
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace

from svc_monitor.auth.activity import ActivityLog
from svc_monitor.auth.models import (
    ApiToken,
    Invitation,
    InvitationStatus,
    Principal,
    Role,
    User,
    Via,
)
from svc_monitor.auth.passwords import check_new_password, hash_password, password_matches
from svc_monitor.auth.revocations import Revocations
from svc_monitor.auth.sessions import (
    RECHECK_AFTER_S,
    SESSION_LIFETIME_S,
    CookieSession,
    SessionCookies,
    new_id,
    new_secret,
)
from svc_monitor.auth.store import AuthStore
from svc_monitor.auth.throttle import LoginThrottle
from svc_monitor.config import Settings
from svc_monitor.errors import Conflict, Forbidden, NotFound, Unauthorized, Unprocessable

logger = logging.getLogger(__name__)

INVITATION_LIFETIME_MS = 7 * 24 * 3600 * 1000
TOKEN_PREFIX = "svc_pat_"
MAX_NAME_LENGTH = 100
MAX_EMAIL_LENGTH = 320
WRONG_CREDENTIALS = "Invalid email or password"
INVALID_INVITATION = "This invitation link is not valid: it may have expired, been used or revoked"
_TOKEN_CACHE_S = RECHECK_AFTER_S
HOUSEKEEPING_EVERY_S = 24 * 3600
# The common form of an address (RFC 5322's dot-atom local part, a dotted domain, or an
# internationalised one): no quotes, spaces or angle brackets in names shown to others.
_EMAIL = re.compile(r"[a-z0-9.!#$%&*+/=?^_`{|}~-]+@(?:[\w-]+\.)+[\w-]{2,}")


@dataclass(frozen=True, slots=True)
class SignedIn:
    """A new session: its user and the cookie value that carries it."""

    user: User
    cookie: str
    session_id: str


@dataclass(frozen=True, slots=True)
class Identified:
    """Who a request is from, and a fresh cookie when the old one was re-checked."""

    principal: Principal | None
    refreshed_cookie: str | None = None
    clear_cookie: bool = False


class AuthService:
    def __init__(
        self,
        settings: Settings,
        store: AuthStore,
        activity: ActivityLog,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.enabled = not settings.WORKSPACE_DISABLED
        self._store = store
        self.activity = activity
        self._clock = clock
        secret = settings.AUTH_SECRET.get_secret_value() if settings.AUTH_SECRET else None
        if secret is None and self.enabled:
            logger.warning(
                "AUTH_SECRET is not set: sessions end whenever this process restarts, and "
                "replicas cannot share them; set 32 or more random characters"
            )
        public = settings.AUTH_PUBLIC_URL or ""
        self.cookies = SessionCookies(
            secret or new_secret(), secure=public.lower().startswith("https://")
        )
        self.throttle = LoginThrottle(clock)
        self._claimed = False
        # Ended here or on another replica: a cookie for these is refused before its recheck.
        self.revocations = Revocations(store, shared=store.persistent, clock=clock)
        # user id -> when their role last changed: older cookies are re-checked at once.
        self._changed_at: dict[str, float] = {}
        self._token_cache: dict[str, tuple[Principal, float]] = {}

    # --- accounts ---

    async def workspace_empty(self) -> bool:
        if self._claimed:
            return False
        self._claimed = await self._store.count_users() > 0
        return not self._claimed

    async def register(self, email: str, name: str, password: str, *, ip: str) -> SignedIn:
        """The workspace claim: the first account becomes owner; then registration closes."""
        email, name = _clean_email(email), _clean_name(name)
        check_new_password(password)
        if not await self.workspace_empty():
            raise Forbidden("Registration is closed: ask an admin of this workspace to invite you")
        user = User(
            id=uuid.uuid4().hex,
            email=email,
            name=name,
            role=Role.OWNER,
            created_at=self._now_ms(),
            password_hash=await hash_password(password),
        )
        if not await self._store.add_first_user(user):
            raise Forbidden("Registration is closed: ask an admin of this workspace to invite you")
        self._claimed = True
        logger.info("workspace claimed by %s", user.id)
        return await self._sign_in(user, ip=ip, how="register")

    async def login(self, email: str, password: str, *, ip: str) -> SignedIn:
        """One answer for an unknown email and a wrong password, after the same work."""
        account = email.strip().lower()[:MAX_EMAIL_LENGTH]
        self.throttle.check(ip=ip, account=account)
        user = await self._store.user_by_email(account)
        if not await password_matches(user.password_hash if user else None, password):
            self.throttle.failed(ip=ip, account=account)
            logger.info("failed sign-in from %s", ip)
            raise Unauthorized(WRONG_CREDENTIALS)
        assert user is not None  # password_matches is False without a user
        self.throttle.succeeded(account=account)
        return await self._sign_in(user, ip=ip, how="password")

    async def sign_in_verified(self, user: User, *, ip: str, how: str) -> SignedIn:
        """A session for a user whose identity was proven elsewhere (the broker)."""
        return await self._sign_in(user, ip=ip, how=how)

    async def logout(self, cookie_value: str | None, *, ip: str) -> None:
        session = self.cookies.decode(cookie_value, now=self._clock())
        if session is None:
            return
        await self._store.end_session(session.session_id)
        await self.revocations.end_session(session.session_id, session.user_id)
        await self.activity.record(
            "auth.logout", actor_id=session.user_id, actor_name=session.name, source_ip=ip
        )

    async def _sign_in(self, user: User, *, ip: str, how: str) -> SignedIn:
        now = self._clock()
        session_id = new_id()  # always new: a cookie from before sign-in is never promoted
        await self._store.add_session(
            session_id,
            user.id,
            now=int(now * 1000),
            expires_at=int((now + SESSION_LIFETIME_S) * 1000),
            source_ip=ip,
        )
        cookie = self.cookies.encode(
            CookieSession(
                session_id=session_id,
                user_id=user.id,
                name=user.name,
                role=user.role,
                checked_at=int(now),
                started_at=int(now),
            )
        )
        await self.activity.record(
            "auth.login",
            actor_id=user.id,
            actor_name=user.name,
            source_ip=ip,
            details={"method": how},
        )
        return SignedIn(user, cookie, session_id)

    # --- who is calling ---

    async def identify(self, cookie_value: str | None, authorization: str | None) -> Identified:
        """The principal behind a session cookie or a bearer token, or nobody."""
        if authorization is not None:
            scheme, _, credentials = authorization.partition(" ")
            if scheme.lower() == "bearer" and credentials.strip():
                return Identified(await self._token_principal(credentials.strip()))
            return Identified(None)
        if not cookie_value:
            return Identified(None)
        now = self._clock()
        session = self.cookies.decode(cookie_value, now=now)
        if session is None:
            return Identified(None, clear_cookie=True)
        if self.revocations.ended(session_id=session.session_id, user_id=session.user_id):
            return Identified(None, clear_cookie=True)
        stale = now - session.checked_at >= RECHECK_AFTER_S
        changed = self._changed_at.get(session.user_id)
        if stale or (changed is not None and changed >= session.checked_at):
            user = await self._store.live_session_user(session.session_id, now=int(now * 1000))
            if user is None:
                self.revocations.forget_session(session.session_id)
                return Identified(None, clear_cookie=True)
            session = replace(session, name=user.name, role=user.role, checked_at=int(now) + 1)
            principal = _session_principal(session)
            return Identified(principal, refreshed_cookie=self.cookies.encode(session))
        return Identified(_session_principal(session))

    async def _token_principal(self, secret: str) -> Principal | None:
        if not secret.startswith(TOKEN_PREFIX) or len(secret) > 200:
            return None
        digest = _digest(secret)
        now = self._clock()
        cached = self._token_cache.get(digest)
        if cached is not None and now - cached[1] < _TOKEN_CACHE_S:
            held = cached[0]
            # Revoked, or its user removed, on another replica since it was let in here.
            ended = self.revocations.token_ended(token_id=held.token_id or "", user_id=held.user_id)
            if not ended:
                return held
        found = await self._store.token_user(digest)
        if found is None:
            self._token_cache.pop(digest, None)
            return None
        token, user = found
        role = _capped(user.role, token.max_role)
        principal = Principal(user.id, user.name, role, Via.TOKEN, token_id=token.id)
        self._token_cache[digest] = (principal, now)
        await self._store.touch_token(token.id, now=int(now * 1000))
        return principal

    def _membership_changed(self, user_id: str) -> None:
        # Cookies issued before now are re-read on their next request (here; other replicas
        # within RECHECK_AFTER_S); cached tokens are dropped.
        self._changed_at[user_id] = self._clock()
        self._token_cache.clear()

    # --- members ---

    async def me(self, principal: Principal) -> User:
        user = await self._store.user(principal.user_id)
        if user is None:
            raise Unauthorized("Your account no longer exists")
        return user

    async def members(self) -> list[User]:
        return await self._store.list_users()

    async def change_role(self, actor: Principal, member_id: str, role: Role) -> User:
        member = await self._member(member_id)
        if role is Role.OWNER:
            raise Unprocessable(
                "role must be admin or member; use the ownership transfer to make an owner",
                field="role",
            )
        if member.role is Role.OWNER:
            raise Forbidden("The owner's role changes only by transferring ownership")
        if member.id == actor.user_id:
            raise Forbidden("You cannot change your own role")
        await self._store.set_role(member.id, role)
        self._membership_changed(member.id)
        return replace(member, role=role)

    async def remove_member(self, actor: Principal, member_id: str) -> User:
        """The member, removed: their sessions and tokens end at once."""
        member = await self._member(member_id)
        if member.role is Role.OWNER:
            raise Forbidden("The owner cannot be removed; transfer ownership first")
        if member.id == actor.user_id:
            raise Forbidden("You cannot remove yourself")
        await self._store.remove_user(member.id)
        # At once, not after the cookie cache: their next request is refused, here and
        # (within revocations.SYNC_EVERY_S) on every replica.
        await self.revocations.end_user(member.id)
        self._membership_changed(member.id)
        return member

    async def transfer_ownership(self, actor: Principal, member_id: str) -> User:
        member = await self._member(member_id)
        if actor.role is not Role.OWNER:
            raise Forbidden("Only the owner can transfer ownership")
        if member.id == actor.user_id:
            raise Unprocessable("memberId is already the owner", field="memberId")
        await self._store.transfer_ownership(actor.user_id, member.id)
        self._membership_changed(actor.user_id)
        self._membership_changed(member.id)
        return replace(member, role=Role.OWNER)

    async def _member(self, member_id: str) -> User:
        member = await self._store.user(member_id)
        if member is None:
            raise NotFound(f"No member with id {member_id}")
        return member

    # --- invitations ---

    async def invite(self, actor: Principal, email: str, role: Role) -> tuple[Invitation, str]:
        """A pending invitation and its one-time token (shown once, stored as a digest)."""
        email = _clean_email(email)
        if role is Role.OWNER:
            raise Unprocessable("role must be member or admin", field="role")
        if await self._store.user_by_email(email) is not None:
            raise Conflict(f"{email} is already a member of this workspace", field="email")
        now = self._now_ms()
        token = secrets.token_urlsafe(32)
        invitation = Invitation(
            id=uuid.uuid4().hex,
            email=email,
            role=role,
            status=InvitationStatus.PENDING,
            created_at=now,
            expires_at=now + INVITATION_LIFETIME_MS,
            invited_by=actor.user_id,
        )
        await self._store.add_invitation(invitation, _digest(token))
        return invitation, token

    async def invitations(self) -> list[Invitation]:
        return await self._store.list_invitations(now=self._now_ms())

    async def revoke_invitation(self, invitation_id: str) -> Invitation:
        invitation = await self._store.invitation(invitation_id, now=self._now_ms())
        if invitation is None:
            raise NotFound(f"No invitation with id {invitation_id}")
        if not await self._store.revoke_invitation(invitation_id):
            raise Conflict(f"The invitation is {invitation.status.value}, not pending")
        return replace(invitation, status=InvitationStatus.REVOKED)

    async def pending_invitation(self, token: str) -> Invitation:
        """The invitation behind a link, while it can still be accepted."""
        invitation = await self._store.invitation_by_token(_digest(token), now=self._now_ms())
        if invitation is None or invitation.status is not InvitationStatus.PENDING:
            raise NotFound(INVALID_INVITATION)
        return invitation

    async def accept_invitation(self, token: str, name: str, password: str, *, ip: str) -> SignedIn:
        """Join with the invitation's email and role, and sign in."""
        name = _clean_name(name)
        check_new_password(password)
        invitation = await self.pending_invitation(token)
        return await self._join(
            invitation, name, await hash_password(password), ip=ip, how="invitation"
        )

    async def user_by_email(self, email: str) -> User | None:
        return await self._store.user_by_email(email.strip().lower())

    async def pending_invitation_for(self, email: str) -> Invitation | None:
        return await self._store.pending_invitation_for(email.strip().lower(), now=self._now_ms())

    async def accept_verified(
        self, invitation_id: str, email: str, name: str, *, ip: str, how: str
    ) -> SignedIn:
        """Join through a pending invitation for `email`, which the broker proved: the
        account has no password and signs in only through the broker."""
        invitation = await self._store.invitation(invitation_id, now=self._now_ms())
        email = _clean_email(email)
        if (
            invitation is None
            or invitation.status is not InvitationStatus.PENDING
            or invitation.email != email
        ):
            raise NotFound(INVALID_INVITATION)
        return await self._join(invitation, _clean_name(name), None, ip=ip, how=how)

    async def _join(
        self, invitation: Invitation, name: str, password_hash: str | None, *, ip: str, how: str
    ) -> SignedIn:
        """The invitee's account, made as the invitation is marked accepted (a link works
        once), then signed in. `password_hash` None: it signs in through the broker only."""
        if await self._store.user_by_email(invitation.email) is not None:
            raise NotFound(INVALID_INVITATION)
        user = User(
            id=uuid.uuid4().hex,
            email=invitation.email,
            name=name,
            role=invitation.role,
            created_at=self._now_ms(),
            password_hash=password_hash,
        )
        if not await self._store.accept_invitation(invitation.id, user, now=self._now_ms()):
            raise NotFound(INVALID_INVITATION)
        self._claimed = True
        return await self._sign_in(user, ip=ip, how=how)

    async def claim_verified(
        self, email: str, name: str, *, ip: str, how: str = "broker"
    ) -> SignedIn:
        """The broker's empty-workspace claim: owner without a password."""
        user = User(
            id=uuid.uuid4().hex,
            email=_clean_email(email),
            name=_clean_name(name),
            role=Role.OWNER,
            created_at=self._now_ms(),
        )
        if not await self._store.add_first_user(user):
            raise Forbidden("Registration is closed: ask an admin of this workspace to invite you")
        self._claimed = True
        return await self._sign_in(user, ip=ip, how=how)

    # --- personal API tokens ---

    async def create_token(self, principal: Principal, name: str) -> tuple[ApiToken, str]:
        """A token of the caller's own. One a member makes (by session or by a member's
        token) never acts beyond the member role, even after a promotion; an admin's or the
        owner's follows their current role, up or down."""
        name = _clean_name(name)
        secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
        token = ApiToken(
            id=uuid.uuid4().hex,
            user_id=principal.user_id,
            name=name,
            prefix=secret[: len(TOKEN_PREFIX) + 4],
            created_at=self._now_ms(),
            last_used_at=None,
            revoked_at=None,
            max_role=Role.MEMBER if principal.role is Role.MEMBER else None,
        )
        await self._store.add_token(token, _digest(secret))
        return token, secret

    async def tokens(self, principal: Principal) -> list[ApiToken]:
        """The caller's own tokens only: nobody, admins included, lists another user's."""
        return await self._store.tokens_of(principal.user_id)

    async def revoke_token(self, principal: Principal, token_id: str) -> None:
        """Revoke one of the caller's own tokens. Another user's token, a revoked one and
        an unknown id get the same NotFound, so the answer tells nothing of others' tokens."""
        if not await self._store.revoke_token(token_id, principal.user_id, now=self._now_ms()):
            raise NotFound(f"No active token with id {token_id}")
        self._token_cache.clear()
        # Other replicas hold a token they let in for _TOKEN_CACHE_S; this reaches them
        # within revocations.SYNC_EVERY_S.
        await self.revocations.end_token(token_id)

    # --- housekeeping ---

    async def prune(self) -> None:
        await self._store.prune_sessions(now=self._now_ms())
        await self.revocations.prune()
        await self.activity.prune()
        oldest = self._clock() - RECHECK_AFTER_S
        for user_id in [u for u, at in self._changed_at.items() if at < oldest]:
            del self._changed_at[user_id]

    async def run_housekeeping(self) -> None:
        """Drop ended sessions and activity past retention: at startup, then daily."""
        while True:
            try:
                await self.prune()
            except Exception:
                logger.exception("workspace housekeeping failed; retrying in a day")
            await asyncio.sleep(HOUSEKEEPING_EVERY_S)

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)


def _capped(role: Role, ceiling: Role | None) -> Role:
    """The user's role, lowered to the token's ceiling when it has one."""
    return ceiling if ceiling is not None and not ceiling.at_least(role) else role


def _session_principal(session: CookieSession) -> Principal:
    return Principal(
        session.user_id, session.name, session.role, Via.SESSION, session_id=session.session_id
    )


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _clean_email(email: str) -> str:
    email = email.strip().lower()
    if len(email) > MAX_EMAIL_LENGTH or not _EMAIL.fullmatch(email):
        raise Unprocessable("email must be an email address", field="email")
    return email


def _clean_name(name: str) -> str:
    name = " ".join(name.split())  # no CR/LF or runs of spaces in names shown to others
    if not name:
        raise Unprocessable("name must not be empty", field="name")
    if len(name) > MAX_NAME_LENGTH or any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise Unprocessable(
            f"name must be at most {MAX_NAME_LENGTH} printable characters", field="name"
        )
    return name
