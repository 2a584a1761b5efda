"""PEM public keys that verify signed tokens: RSA of 2048 bits or more (RS256) and
Ed25519 (EdDSA) only. Each key fixes the one algorithm it verifies, so a token can never
pick a weaker one (`none`, or HS256 keyed with the public PEM).

config.py checks configured keys with `load_public_key` at startup, so this module
imports nothing from the app. cryptography is imported on first use.
"""

import functools
from typing import TYPE_CHECKING, Literal, TypeAlias

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey

PublicKey: TypeAlias = "RSAPublicKey | Ed25519PublicKey"
Algorithm = Literal["RS256", "EdDSA"]

MIN_RSA_BITS = 2048
# A PEM public key is under 1 KB (RSA 4096: ~800 characters); far larger is not one.
MAX_PEM_CHARS = 16 * 1024


class PublicKeyError(ValueError):
    """The text is not a usable public key; the message says why, without the key."""


def normalize_pem(text: str) -> str:
    """Compose files and one-line env values often carry the PEM's newlines as `\\n`."""
    return text.strip().replace("\\n", "\n")


@functools.lru_cache(maxsize=8)
def load_public_key(pem: str) -> PublicKey:
    """The parsed key, or PublicKeyError (cached: every verification uses it)."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    text = normalize_pem(pem)
    if len(text) > MAX_PEM_CHARS:
        raise PublicKeyError("is too long to be a PEM public key")
    if "PRIVATE KEY" in text:
        raise PublicKeyError("is a private key; give the broker's public key")
    try:
        key = load_pem_public_key(text.encode())
    except (ValueError, TypeError, UnicodeEncodeError):
        raise PublicKeyError(
            "is not a PEM public key (-----BEGIN PUBLIC KEY-----, RSA or Ed25519)"
        ) from None
    if isinstance(key, RSAPublicKey):
        if key.key_size < MIN_RSA_BITS:
            raise PublicKeyError(
                f"is an RSA key of {key.key_size} bits; at least {MIN_RSA_BITS} are needed"
            )
        return key
    if isinstance(key, Ed25519PublicKey):
        return key
    raise PublicKeyError("must be an RSA (2048 bits or more) or Ed25519 public key")


def algorithm_of(key: PublicKey) -> Algorithm:
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey

    return "RS256" if isinstance(key, RSAPublicKey) else "EdDSA"
