"""The two tokens of a broker sign-in: our state cookie and the broker's assertion.

The state cookie binds a sign-in to the browser that started it: a random nonce (also
sent to the broker as `state`), the provider, the intent and the invitation token. It is
signed with the session secret under its own salt, and lives ten minutes on the broker's
path only.

The assertion is a JWT the broker signs. Its algorithm is fixed by the key it must match
(RS256 for RSA, EdDSA for Ed25519), so `none` and HS256-with-the-public-PEM never reach
a key; `jku`/`jwk`/`x5u` headers are ignored because keys come only from the
configuration. Every claim we rely on is required and type-checked; times are checked
against the service's clock with a small leeway, and an assertion may live a few minutes
at most.
"""

import hmac
import secrets
from dataclasses import dataclass
from typing import Any

from itsdangerous import BadSignature, URLSafeSerializer

from svc_monitor.kit.public_keys import PublicKey, algorithm_of

PROVIDERS = {"github": "GitHub", "google": "Google"}
INTENTS = ("login", "register", "invite")

STATE_LIFETIME_S = 600
STATE_COOKIE = "svc_broker_state"
# Browsers keep a __Secure- cookie only when it is Secure (__Host- would need Path=/).
SECURE_STATE_COOKIE = "__Secure-svc_broker_state"
COOKIE_PATH = "/api/auth/broker"
MAX_STATE_COOKIE_CHARS = 1024  # ours are ~200 with an invitation token
_SALT = "svc-monitor broker state"

LEEWAY_S = 30  # clock skew between us and the broker
MAX_LIFETIME_S = 300  # the broker signs for 2 minutes; anything longer-lived is not its
MAX_ASSERTION_CHARS = 16 * 1024  # a real one is under 1 KB
MAX_EMAIL_CHARS = 320
REQUIRED_CLAIMS = ["exp", "iat", "aud", "iss", "sub", "email", "nonce", "provider"]


@dataclass(frozen=True, slots=True)
class FlowState:
    """What the state cookie carries from the start of a sign-in to its callback."""

    nonce: str
    provider: str
    intent: str
    invite: str | None
    started_at: int  # epoch s


class StateCookies:
    """Encode, check and set the state cookie."""

    def __init__(self, secret: str, *, secure: bool) -> None:
        self._serializer = URLSafeSerializer(secret, salt=_SALT)
        self.secure = secure
        self.name = SECURE_STATE_COOKIE if secure else STATE_COOKIE

    def new(self, provider: str, *, intent: str, invite: str | None, now: float) -> FlowState:
        return FlowState(secrets.token_urlsafe(32), provider, intent, invite, int(now))

    def encode(self, flow: FlowState) -> str:
        payload = {
            "n": flow.nonce,
            "p": flow.provider,
            "i": flow.intent,
            "t": flow.invite,
            "a": flow.started_at,
        }
        return str(self._serializer.dumps(payload))

    def decode(self, value: str | None, *, now: float) -> FlowState | None:
        """The flow in a cookie we signed and that is still fresh, or None."""
        if not value or len(value) > MAX_STATE_COOKIE_CHARS:
            return None
        try:
            payload: Any = self._serializer.loads(value)
            flow = FlowState(
                nonce=_text(payload["n"]),
                provider=_text(payload["p"]),
                intent=_text(payload["i"]),
                invite=None if payload["t"] is None else _text(payload["t"]),
                started_at=_integer(payload["a"]),
            )
        except (BadSignature, KeyError, TypeError, ValueError, UnicodeDecodeError):
            return None
        if not 0 <= now - flow.started_at < STATE_LIFETIME_S:
            return None
        return flow

    def set_header(self, value: str) -> str:
        return self._header(f"{self.name}={value}", f"Max-Age={STATE_LIFETIME_S}")

    def clear_header(self) -> str:
        return self._header(f"{self.name}=", "Max-Age=0")

    def _header(self, pair: str, max_age: str) -> str:
        # Lax: the broker sends the browser back with a top-level GET from its own site.
        attributes = [pair, f"Path={COOKIE_PATH}", "HttpOnly", "SameSite=Lax", max_age]
        if self.secure:
            attributes.append("Secure")
        return "; ".join(attributes)


def same_secret(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode(), b.encode())


class AssertionRefused(Exception):
    """The assertion cannot be trusted; `code` is a key of broker.BROKER_ERRORS."""

    def __init__(self, code: str, why: str) -> None:
        super().__init__(why)
        self.code = code


@dataclass(frozen=True, slots=True)
class VerifiedIdentity:
    """What a valid assertion proves."""

    email: str  # lower-cased
    name: str | None
    provider: str
    subject: str
    nonce: str


def verify_assertion(
    token: str, *, keys: tuple[PublicKey, ...], issuer: str, audience: str, now: float
) -> VerifiedIdentity:
    """The identity in an assertion the broker signed for us, or AssertionRefused."""
    import jwt

    if not token or len(token) > MAX_ASSERTION_CHARS:
        raise AssertionRefused("broker_invalid", "empty or oversized assertion")
    try:
        alg = jwt.get_unverified_header(token).get("alg")
    except (jwt.InvalidTokenError, ValueError, TypeError):
        raise AssertionRefused("broker_invalid", "not a well-formed JWT") from None
    candidates = [k for k in keys if algorithm_of(k) == alg]
    if not isinstance(alg, str) or not candidates:
        raise AssertionRefused("broker_invalid", "algorithm does not match the broker's key")
    payload = _decode(token, candidates, alg, issuer=issuer, audience=audience)
    identity = _identity(payload)
    _check_times(payload, now)
    if payload.get("email_verified") is not True:
        raise AssertionRefused("broker_unverified", "email not verified by the provider")
    return identity


def _decode(
    token: str, keys: list[PublicKey], alg: str, *, issuer: str, audience: str
) -> dict[str, Any]:
    import jwt

    for key in keys:
        try:
            payload: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=[alg],
                issuer=issuer,
                audience=audience,
                options={
                    "require": REQUIRED_CLAIMS,
                    "strict_aud": True,  # one audience, ours; not a list that includes us
                    # Times are checked against the service's clock (tests move it).
                    "verify_exp": False,
                    "verify_iat": False,
                    "verify_nbf": False,
                },
            )
            return payload
        except jwt.InvalidSignatureError:
            continue  # maybe the next trusted key (an embedded one and a configured one)
        except (jwt.InvalidTokenError, ValueError, TypeError) as exc:
            raise AssertionRefused("broker_invalid", type(exc).__name__) from None
    raise AssertionRefused("broker_invalid", "signature does not match a trusted key")


def _identity(payload: dict[str, Any]) -> VerifiedIdentity:
    email, subject, nonce = payload.get("email"), payload.get("sub"), payload.get("nonce")
    provider, name = payload.get("provider"), payload.get("name")
    if not (isinstance(email, str) and _looks_like_email(email)):
        raise AssertionRefused("broker_invalid", "email claim is not an email address")
    if not (isinstance(subject, str) and subject and len(subject) <= 256):
        raise AssertionRefused("broker_invalid", "sub claim is not a string")
    if not (isinstance(nonce, str) and 0 < len(nonce) <= 256):
        raise AssertionRefused("broker_invalid", "nonce claim is not a string")
    if provider not in PROVIDERS:
        raise AssertionRefused("broker_invalid", "provider claim names no provider of ours")
    return VerifiedIdentity(
        email=email.strip().lower(),
        name=name if isinstance(name, str) else None,
        provider=str(provider),
        subject=subject,
        nonce=nonce,
    )


def _check_times(payload: dict[str, Any], now: float) -> None:
    try:
        exp, iat = _integer(payload.get("exp")), _integer(payload.get("iat"))
        nbf = _integer(payload.get("nbf", iat))
    except TypeError:
        raise AssertionRefused("broker_invalid", "exp, iat or nbf is not an integer") from None
    if exp + LEEWAY_S <= now:
        raise AssertionRefused("broker_invalid", "expired")
    if max(iat, nbf) - LEEWAY_S > now:
        raise AssertionRefused("broker_invalid", "dated in the future")
    if exp - now > MAX_LIFETIME_S + LEEWAY_S or now - iat > MAX_LIFETIME_S + LEEWAY_S:
        raise AssertionRefused("broker_invalid", "lives longer than a broker assertion may")


def _looks_like_email(text: str) -> bool:
    local, at, domain = text.strip().partition("@")
    return (
        bool(at and local and "." in domain and "@" not in domain)
        and len(text) <= MAX_EMAIL_CHARS
        and not any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in text.strip())
    )


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError("not a string")
    return value


def _integer(value: object) -> int:
    if not _is_int(value):
        raise TypeError("not an integer")
    assert isinstance(value, int)
    return value
