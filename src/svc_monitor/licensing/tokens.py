"""Licence tokens: RS256 JWTs, verified against the embedded keys, minted by the
entitlement server.

Verification refuses anything but RS256 (so `none` and HS256 never get near a key),
ignores `jku`/`x5u`/`jwk`/`x5c` (keys come only from keys.py by `kid`), requires the
claims docs/features/licensing.md#the-licence-token names and checks their types, and
allows a minute of clock skew. PyJWT is imported on first use: an install without a
licence never loads it.
"""

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from svc_monitor.licensing.keys import UntrustedKey, public_key
from svc_monitor.licensing.models import Tier

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

ISSUER = "svc-entitlement"
LEEWAY_S = 60
# A real token is about 1 KB; anything far larger is not one of ours.
MAX_TOKEN_CHARS = 16 * 1024

Mode = Literal["online", "offline"]


class TokenRefused(Exception):
    """The token cannot be trusted; the message says why, for the operator."""


@dataclass(frozen=True, slots=True)
class Customer:
    name: str
    email: str


@dataclass(frozen=True, slots=True)
class LicenseClaims:
    license_id: str  # `sub`
    issuance_id: str  # `jti`
    issuer: str
    tier: Tier
    features: tuple[str, ...]
    customer: Customer
    instance_limit: int
    mode: Mode
    issued_at: int  # epoch seconds
    expires_at: int  # epoch seconds
    kid: str


def verify(token: str, *, now: float, mode: Mode | None = None) -> LicenseClaims:
    """The claims of a token we signed, or TokenRefused naming what is wrong."""
    import jwt

    token = token.strip()
    if not token:
        raise TokenRefused("the licence token is empty")
    if len(token) > MAX_TOKEN_CHARS:
        raise TokenRefused("the licence token is too long to be a svc-monitor licence")
    try:
        header = jwt.get_unverified_header(token)
    except jwt.InvalidTokenError:
        raise TokenRefused("the licence token is not a well-formed JWT") from None
    if header.get("alg") != "RS256":
        raise TokenRefused(
            f"the licence token uses algorithm {str(header.get('alg'))[:20]!r}; only RS256 "
            "tokens from the svc-monitor entitlement server are accepted"
        )
    try:
        key = public_key(header.get("kid"))
    except UntrustedKey as exc:
        raise TokenRefused(str(exc)) from None
    try:
        payload = jwt.decode(
            token,
            key,
            algorithms=["RS256"],
            issuer=ISSUER,
            options={
                "require": ["exp", "iat", "iss", "sub", "jti"],
                "verify_aud": False,
                # Times are checked below against `now`: PyJWT would read the wall clock,
                # and the licence service runs on an injectable one.
                "verify_exp": False,
                "verify_iat": False,
                "verify_nbf": False,
            },
        )
    except jwt.InvalidSignatureError:
        raise TokenRefused(
            "the licence token's signature does not match: it was altered or not issued by "
            "svc-monitor"
        ) from None
    except jwt.InvalidIssuerError:
        raise TokenRefused(
            "the licence token was not issued by the svc-monitor entitlement server"
        ) from None
    except jwt.MissingRequiredClaimError as exc:
        raise TokenRefused(f"the licence token lacks the {exc.claim!r} claim") from None
    except jwt.InvalidTokenError as exc:
        raise TokenRefused(f"the licence token is invalid: {str(exc)[:200]}") from None
    claims = _claims(payload, str(header["kid"]))
    if claims.expires_at + LEEWAY_S < now:
        raise TokenRefused(f"the licence token expired on {day_of(claims.expires_at)}")
    nbf = payload.get("nbf")
    not_before = nbf if isinstance(nbf, int) and not isinstance(nbf, bool) else claims.issued_at
    if max(claims.issued_at, not_before) - LEEWAY_S > now:
        raise TokenRefused("the licence token is dated in the future; check the system clock")
    if mode is not None and claims.mode != mode:
        raise TokenRefused(f"this is an {claims.mode} licence token; an {mode} one is needed")
    return claims


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def day_of(epoch_s: int) -> str:
    """The UTC date of an epoch-seconds time, as messages about expiry show it."""
    return time.strftime("%Y-%m-%d", time.gmtime(max(epoch_s, 0)))


def _claims(payload: dict[str, Any], kid: str) -> LicenseClaims:
    def need(name: str, kind: type, *, optional: bool = False) -> Any:
        value = payload.get(name)
        if value is None and optional:
            return None
        # bool is an int in Python; a `true` expiry is still nonsense.
        if not (_is_int(value) if kind is int else isinstance(value, kind)):
            raise TokenRefused(f"the licence token's {name!r} claim is not a valid {kind.__name__}")
        return value

    try:
        tier = Tier(need("tier", str))
    except ValueError:
        raise TokenRefused("the licence token names an unknown tier") from None
    mode = need("mode", str)
    if mode not in ("online", "offline"):
        raise TokenRefused("the licence token's 'mode' must be online or offline")
    features = need("features", list, optional=True) or []
    customer = need("customer", dict, optional=True) or {}
    limit = need("instanceLimit", int, optional=True)
    return LicenseClaims(
        license_id=need("sub", str),
        issuance_id=need("jti", str),
        issuer=need("iss", str),
        tier=tier,
        features=tuple(str(f) for f in features if isinstance(f, str)),
        customer=Customer(
            name=str(customer.get("name") or "")[:200], email=str(customer.get("email") or "")[:200]
        ),
        instance_limit=limit if limit is not None and limit >= 0 else 1,
        mode=mode,
        issued_at=need("iat", int),
        expires_at=need("exp", int),
        kid=kid,
    )


def sign(
    *,
    private_key: "RSAPrivateKey",
    kid: str,
    license_id: str,
    issuance_id: str,
    tier: Tier,
    features: list[str],
    customer: Customer,
    instance_limit: int,
    mode: Mode,
    issued_at: int,
    expires_at: int,
) -> str:
    """A token for the entitlement server to hand out."""
    import jwt

    payload = {
        "iss": ISSUER,
        "sub": license_id,
        "jti": issuance_id,
        "tier": tier.value,
        "features": features,
        "customer": {"name": customer.name, "email": customer.email},
        "instanceLimit": instance_limit,
        "mode": mode,
        "iat": issued_at,
        "exp": expires_at,
    }
    return jwt.encode(payload, private_key, algorithm="RS256", headers={"kid": kid})


def load_private_key(pem: str) -> "RSAPrivateKey":
    """Parsed once by the signer: parsing checks the key, which costs ~100 ms for 3072 bits."""
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    key = load_pem_private_key(pem.encode(), password=None)
    if not isinstance(key, RSAPrivateKey):
        raise ValueError("must be an RSA private key")
    return key


def key_pair(bits: int = 3072) -> tuple[str, str]:
    """(private PEM, public PEM) for a new signing key."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    private = rsa.generate_private_key(public_exponent=65537, key_size=bits)
    private_pem = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    public_pem = (
        private.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return private_pem, public_pem
