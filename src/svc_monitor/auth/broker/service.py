"""Third-party sign-in (GitHub, Google) through the broker; the rules are those of
docs/features/users-and-access.md#third-party-sign-in-github-google.

The flow. The browser asks `/api/auth/broker/{provider}/start`; we set a signed state
cookie (broker_tokens.py) and send the browser to the broker page at AUTH_BROKER_URL
with a return address and the cookie's nonce as `state`. The broker signs the person in
with the provider and sends the browser back to `/api/auth/broker/callback` with a signed
assertion naming the verified email. We check that the state, the cookie's nonce and the
assertion's nonce agree (one use), verify the assertion, then match the email, lower-cased:
an existing member signs in; a pending invitation for it is accepted (an account without
a password: it signs in through the broker only); an empty workspace is claimed (owner);
anyone else is refused. Every failure sends the browser to `/login?error=<code>`, and
BROKER_ERRORS says what the login page shows for each code.

Availability: hidden when user control or the broker is off; unavailable without a
verification key, or in production without AUTH_PUBLIC_URL (the assertion's audience and
our return address must not come from a request's Host header there); available
otherwise. Every broker route except the providers list answers 404 unless available.
"""

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import urlencode, urlsplit

from svc_monitor.auth.broker.keys import trusted_keys
from svc_monitor.auth.broker.tokens import (
    COOKIE_PATH,
    INTENTS,
    PROVIDERS,
    STATE_LIFETIME_S,
    AssertionRefused,
    FlowState,
    StateCookies,
    VerifiedIdentity,
    same_secret,
    verify_assertion,
)
from svc_monitor.auth.dependencies.origin import origin_of
from svc_monitor.auth.service import AuthService, SignedIn
from svc_monitor.auth.sessions import new_secret
from svc_monitor.config import Settings
from svc_monitor.errors import Forbidden, NotFound, Unprocessable
from svc_monitor.kit.public_keys import PublicKey, PublicKeyError

logger = logging.getLogger(__name__)

CALLBACK_PATH = f"{COOKIE_PATH}/callback"
SIGNED_IN_LOCATION = "/"
FAILED_LOCATION = "/login"
MAX_NAME_CHARS = 100  # as AuthService allows
# Used nonces kept for replay checks; past this many the oldest go first (each one
# needed a fresh /start, and a replay also needs the victim's state cookie).
MAX_USED_NONCES = 50_000
_NEEDS = "third-party sign-in needs {}"
_INVITE_TOKEN = re.compile(r"^[A-Za-z0-9_-]{1,200}$")

# What the login page shows for each `error` code a failed broker sign-in sends it.
BROKER_ERRORS: dict[str, str] = {
    "broker_no_account": (
        "No member of this workspace has that email address; ask an admin for an invitation"
    ),
    "broker_other_email": (
        "This invitation was sent to a different email address than the one you signed in "
        "with; sign in with the account that has the invited address"
    ),
    "broker_unverified": (
        "Your identity provider has not verified that email address; verify it there and try again"
    ),
    "broker_invalid": "The sign-in service's answer was not valid or has expired; try again",
    "broker_state": (
        "This sign-in expired, was already used, or was started in another browser; "
        "start again from this page"
    ),
    "broker_cancelled": "Sign-in with the identity provider was cancelled or failed; try again",
}
_NO_ACCOUNT_FOR = (
    "No member of this workspace has the email {email}; ask an admin for an invitation"
)


def broker_error_message(code: str | None, email: str | None = None) -> str | None:
    """The message for a `/login?error=<code>[&email=...]` the callback sent, or None.

    The email is the one the person just proved to the provider; anything that does not
    look like an email (a crafted link) is left out rather than shown."""
    if code is None or code not in BROKER_ERRORS:
        return None
    if code == "broker_no_account" and email is not None and _plain_email(email):
        return _NO_ACCOUNT_FOR.format(email=email)
    return BROKER_ERRORS[code]


class BrokerState(StrEnum):
    HIDDEN = "hidden"  # WORKSPACE_DISABLED or AUTH_BROKER_DISABLED: no buttons at all
    UNAVAILABLE = "unavailable"  # buttons shown disabled, with the reason
    AVAILABLE = "available"


@dataclass(frozen=True, slots=True)
class BrokerConfig:
    """Whether third-party sign-in can run here, and with what."""

    state: BrokerState
    reason: str | None
    start_url: str  # the broker's /start page
    issuer: str  # the broker's origin: the `iss` its assertions carry
    keys: tuple[PublicKey, ...]

    @classmethod
    def from_settings(cls, settings: Settings) -> "BrokerConfig":
        base = settings.AUTH_BROKER_URL.strip().rstrip("/")
        issuer = origin_of(base) if urlsplit(base).scheme.lower() in ("http", "https") else ""
        try:
            keys = trusted_keys(issuer, settings.AUTH_BROKER_PUBLIC_KEY) if issuer else ()
        except PublicKeyError:  # Settings refuses a bad configured key; embedded ones are ours
            keys = ()
        state, reason = BrokerState.AVAILABLE, None
        if settings.WORKSPACE_DISABLED or settings.AUTH_BROKER_DISABLED:
            state = BrokerState.HIDDEN
        elif not issuer:
            state, reason = (
                BrokerState.UNAVAILABLE,
                _NEEDS.format("AUTH_BROKER_URL (an http(s) URL)"),
            )
        elif not keys:
            state, reason = BrokerState.UNAVAILABLE, _NEEDS.format("AUTH_BROKER_PUBLIC_KEY")
        elif settings.is_production and not settings.AUTH_PUBLIC_URL:
            state, reason = BrokerState.UNAVAILABLE, _NEEDS.format("AUTH_PUBLIC_URL")
        return cls(state, reason, f"{base}/start", issuer, keys)


@dataclass(frozen=True, slots=True)
class ProviderLink:
    id: str
    name: str
    start_url: str  # relative: where "Continue with <name>" goes


@dataclass(frozen=True, slots=True)
class BrokerView:
    """The `broker` variable of account/broker_buttons.html, and the providers list."""

    state: BrokerState
    reason: str | None
    providers: tuple[ProviderLink, ...]


@dataclass(frozen=True, slots=True)
class Started:
    """Where to send the browser to sign in, and the state cookie to set first."""

    location: str
    state_cookie: str  # a Set-Cookie header value


@dataclass(frozen=True, slots=True)
class Finished:
    """Where the callback sends the browser; `signed` is the new session on success."""

    location: str
    signed: SignedIn | None


class BrokerService:
    """Start and finish third-party sign-ins; AuthService makes the sessions."""

    def __init__(
        self, settings: Settings, auth: AuthService, *, clock: Callable[[], float] = time.time
    ) -> None:
        self.settings = settings
        self.config = BrokerConfig.from_settings(settings)
        self._auth = auth
        self._clock = clock
        public = (settings.AUTH_PUBLIC_URL or "").lower()
        # The same secret as the session cookies (another salt): with AUTH_SECRET set, a
        # sign-in started on one replica finishes on any.
        secret = settings.AUTH_SECRET.get_secret_value() if settings.AUTH_SECRET else None
        self.cookies = StateCookies(secret or new_secret(), secure=public.startswith("https://"))
        self._used: dict[str, float] = {}  # nonce -> when it may be forgotten

    @property
    def available(self) -> bool:
        return self.config.state is BrokerState.AVAILABLE

    def require_available(self) -> None:
        if not self.available:
            raise NotFound(
                f"Third-party sign-in is not available here: {self.config.reason}"
                if self.config.reason
                else "Third-party sign-in is turned off on this install"
            )

    def view(self, *, intent: str = "login", invite: str | None = None) -> BrokerView:
        """The buttons for a page: `intent` login, register or invite (with its token)."""
        if self.config.state is BrokerState.HIDDEN:
            return BrokerView(BrokerState.HIDDEN, None, ())
        query = {"intent": intent if intent in INTENTS else "login"}
        if intent == "invite" and invite and _INVITE_TOKEN.match(invite):
            query["invite"] = invite
        links = tuple(
            ProviderLink(pid, name, f"{COOKIE_PATH}/{pid}/start?{urlencode(query)}")
            for pid, name in PROVIDERS.items()
        )
        return BrokerView(self.config.state, self.config.reason, links)

    def start(self, provider: str, *, intent: str, invite: str | None, public_base: str) -> Started:
        """The broker page for `provider`, and the cookie that ties its answer to us."""
        self.require_available()
        if provider not in PROVIDERS:
            raise NotFound(f"No identity provider by that name; use one of {', '.join(PROVIDERS)}")
        if intent not in INTENTS:
            raise Unprocessable(f"intent must be one of {', '.join(INTENTS)}", field="intent")
        if invite is not None and not _INVITE_TOKEN.match(invite):
            raise Unprocessable("invite must be the token of an invitation link", field="invite")
        flow = self.cookies.new(
            provider,
            intent=intent,
            invite=invite if intent == "invite" else None,
            now=self._clock(),
        )
        query = urlencode(
            {"provider": provider, "return_to": public_base + CALLBACK_PATH, "state": flow.nonce}
        )
        return Started(
            f"{self.config.start_url}?{query}", self.cookies.set_header(self.cookies.encode(flow))
        )

    async def finish(
        self,
        *,
        assertion: str | None,
        state: str | None,
        state_cookie: str | None,
        public_base: str,
        ip: str,
    ) -> Finished:
        """Check the broker's answer and sign the person in, or say why not."""
        self.require_available()
        now = self._clock()
        flow = self.cookies.decode(state_cookie, now=now)
        if flow is None or state is None or not same_secret(state, flow.nonce):
            return _failed("broker_state", ip)
        if not self._first_use(flow.nonce, now):
            return _failed("broker_state", ip)
        if not assertion:
            return _failed("broker_cancelled", ip)
        try:
            identity = verify_assertion(
                assertion,
                keys=self.config.keys,
                issuer=self.config.issuer,
                audience=origin_of(public_base),
                now=now,
            )
        except AssertionRefused as refused:
            logger.info("broker assertion refused (%s)", refused)
            return _failed(refused.code, ip)
        if not same_secret(identity.nonce, flow.nonce) or identity.provider != flow.provider:
            return _failed("broker_invalid", ip)
        return await self._match(identity, flow, ip=ip)

    async def _match(self, identity: VerifiedIdentity, flow: FlowState, *, ip: str) -> Finished:
        auth, email = self._auth, identity.email
        how = f"broker:{identity.provider}"
        user = await auth.user_by_email(email)
        if user is not None:
            return _succeeded(await auth.sign_in_verified(user, ip=ip, how=how))
        invitation = None
        if flow.invite is not None:
            try:
                invitation = await auth.pending_invitation(flow.invite)
            except NotFound:
                invitation = None  # used or expired: one for this email may still be pending
            if invitation is not None and invitation.email != email:
                return _failed("broker_other_email", ip)
        invitation = invitation or await auth.pending_invitation_for(email)
        name = _display_name(identity)
        try:
            if invitation is not None:
                signed = await auth.accept_verified(invitation.id, email, name, ip=ip, how=how)
                return _succeeded(signed)
            if await auth.workspace_empty():
                return _succeeded(await auth.claim_verified(email, name, ip=ip, how=how))
        except (NotFound, Forbidden, Unprocessable):
            pass  # accepted, revoked or claimed a moment ago; or an address we cannot store
        return _failed("broker_no_account", ip, email=email)

    def _first_use(self, nonce: str, now: float) -> bool:
        used = self._used
        if nonce in used and used[nonce] > now:
            return False
        for old in [n for n, until in used.items() if until <= now]:
            del used[old]
        while len(used) >= MAX_USED_NONCES:
            del used[next(iter(used))]
        used[nonce] = now + STATE_LIFETIME_S
        return True


def _succeeded(signed: SignedIn) -> Finished:
    return Finished(SIGNED_IN_LOCATION, signed)


def _failed(code: str, ip: str, *, email: str | None = None) -> Finished:
    logger.info("third-party sign-in from %s refused: %s", ip, code)
    query = {"error": code, **({"email": email} if email else {})}
    return Finished(f"{FAILED_LOCATION}?{urlencode(query)}", None)


def _display_name(identity: VerifiedIdentity) -> str:
    """The provider's name for the person, made safe to show others; else the email's
    local part."""
    for candidate in (identity.name or "", identity.email.partition("@")[0]):
        cleaned = "".join(c for c in candidate if c.isprintable())
        cleaned = " ".join(cleaned.split())[:MAX_NAME_CHARS].strip()
        if cleaned:
            return cleaned
    return "Member"


def _plain_email(text: str) -> bool:
    local, at, domain = text.partition("@")
    return (
        bool(at and local and "." in domain and "@" not in domain)
        and len(text) <= 320
        and all(c.isprintable() and not c.isspace() for c in text)
    )
