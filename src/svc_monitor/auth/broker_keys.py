"""The keys that verify the sign-in broker's assertions.

A release that turns third-party sign-in on for the hosted broker embeds its public key
here, keyed by the broker's origin; until then an operator enables it with
AUTH_BROKER_PUBLIC_KEY (a PEM public key). Only RSA of 2048 bits or more (RS256) and
Ed25519 (EdDSA) are accepted: each key fixes the one algorithm it verifies, so a token
can never pick a weaker one (`none`, or HS256 keyed with the public PEM).

config.py checks AUTH_BROKER_PUBLIC_KEY with `load_broker_key` at startup, so this
module imports nothing from the app. cryptography is imported on first use.
"""

import functools
from typing import TYPE_CHECKING, Literal, TypeAlias

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey

BrokerKey: TypeAlias = "RSAPublicKey | Ed25519PublicKey"
Algorithm = Literal["RS256", "EdDSA"]

MIN_RSA_BITS = 2048
# A PEM public key is under 1 KB (RSA 4096: ~800 characters); far larger is not one.
MAX_PEM_CHARS = 16 * 1024

# Broker origin -> PEM public keys this release trusts for it (empty: no release has
# enabled the hosted broker yet; AUTH_BROKER_PUBLIC_KEY does meanwhile).
EMBEDDED_BROKER_KEYS: dict[str, tuple[str, ...]] = {}


class BrokerKeyError(ValueError):
    """The text is not a usable broker key; the message says why, without the key."""


def normalize_pem(text: str) -> str:
    """Compose files and one-line env values often carry the PEM's newlines as `\\n`."""
    return text.strip().replace("\\n", "\n")


@functools.lru_cache(maxsize=8)
def load_broker_key(pem: str) -> BrokerKey:
    """The parsed key, or BrokerKeyError (cached: every sign-in verifies with it)."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    text = normalize_pem(pem)
    if len(text) > MAX_PEM_CHARS:
        raise BrokerKeyError("is too long to be a PEM public key")
    if "PRIVATE KEY" in text:
        raise BrokerKeyError("is a private key; give the broker's public key")
    try:
        key = load_pem_public_key(text.encode())
    except (ValueError, TypeError, UnicodeEncodeError):
        raise BrokerKeyError(
            "is not a PEM public key (-----BEGIN PUBLIC KEY-----, RSA or Ed25519)"
        ) from None
    if isinstance(key, RSAPublicKey):
        if key.key_size < MIN_RSA_BITS:
            raise BrokerKeyError(
                f"is an RSA key of {key.key_size} bits; at least {MIN_RSA_BITS} are needed"
            )
        return key
    if isinstance(key, Ed25519PublicKey):
        return key
    raise BrokerKeyError("must be an RSA (2048 bits or more) or Ed25519 public key")


def algorithm_of(key: BrokerKey) -> Algorithm:
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey

    return "RS256" if isinstance(key, RSAPublicKey) else "EdDSA"


def trusted_keys(broker_origin: str, configured: str | None) -> tuple[BrokerKey, ...]:
    """The embedded keys for this broker, then the configured one, if any."""
    pems = [*EMBEDDED_BROKER_KEYS.get(broker_origin, ()), *([configured] if configured else [])]
    return tuple(load_broker_key(p) for p in pems)
