"""The public keys this release trusts for licence tokens, by key id (`kid`).

Keys ship in a release before the entitlement server signs with them, and stay
until the longest-lived offline token signed with them has expired (366 days).
A new pair comes from `svc-monitor license keygen`, which prints the entry to add
here; the private half never enters this repository.

Tests trust their own keys through `trusted_for_tests`, a context manager in code:
there is deliberately no environment variable that adds a key, because one would
let anyone who can set the environment mint their own licence.
"""

import contextlib
import functools
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey

KID_FORM = re.compile(r"^lic-\d{4}-(0[1-9]|1[0-2])$")

# A key shorter than this is refused when loaded, however it got here.
MIN_KEY_BITS = 2048

EMBEDDED_PUBLIC_KEYS: dict[str, str] = {
    "lic-2026-11": """-----BEGIN PUBLIC KEY-----
MIIBojANBgkqhkiG9w0BAQEFAAOCAY8AMIIBigKCAYEArLdU2CupsiR/fU7R6yBd
V3FFDPtRU5YdR0duWZ6IdCJtAqlxQEQlElzZSNNwLFWjD+H3NRvGCbaC0/eHigEJ
4MRlMvB9ay/c+0NAaTjyzWooN/zb8qs291u957fdbTsGB8rXsfdZ6DLc+5CvoBsX
r6uQ7wocKlqg0ATs3d3i93oPXVeQRmp1y0033/rXK+wNSXYR+ORW7DCJut80caly
zPRF9JCQEtAsJzBB3ckutd6m87Bq1czav/Rah4xmmPDCmkl95ozsSYe5cnI83GIj
1jGzECuI/NtuX5mWmUnEi2O/2QKO9OXC7xF9IML5Ec+pWJIK39tF8sbonvaGtDfq
PaMUsPLcrSCbLshsRZRNC5+1ldUYLzHmNyYSBGodiGB+iGtDz2LTfijmkUiGSU4I
bbVRbwJ/KRMbKx62bx+/3t8n9y2lmQ8ZyeLCQDALpwuup6fX3lFtV/xPtmG9F4wa
9bgVt8eCvIRhnjpRYa2yaJLHLi3pwPQId3idejOehbpnAgMBAAE=
-----END PUBLIC KEY-----
""",
}

_test_keys: dict[str, str] = {}


class UntrustedKey(Exception):
    """The token names a key this release does not hold, or the key is unusable."""


def public_key(kid: object) -> "RSAPublicKey":
    """The trusted key for `kid`; `kid` only ever indexes the built-in map."""
    if not isinstance(kid, str) or not KID_FORM.match(kid):
        raise UntrustedKey("the token's key id (kid) is missing or malformed")
    pem = _test_keys.get(kid) or EMBEDDED_PUBLIC_KEYS.get(kid)
    if pem is None:
        raise UntrustedKey(
            f"the token is signed with key {kid}, which this version of svc-monitor does not "
            "know yet; upgrade svc-monitor to use this licence"
        )
    return load_public_key(pem)


@functools.lru_cache(maxsize=16)
def load_public_key(pem: str) -> "RSAPublicKey":
    """The parsed key (cached: every verification needs it, and it never changes)."""
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    key = load_pem_public_key(pem.encode())
    if not isinstance(key, RSAPublicKey):
        raise UntrustedKey("a licence key must be an RSA public key")
    if key.key_size < MIN_KEY_BITS:
        raise UntrustedKey(f"a licence key must have at least {MIN_KEY_BITS} bits")
    return key


@contextlib.contextmanager
def trusted_for_tests(kid: str, pem: str) -> Iterator[None]:
    """Trust `pem` under `kid` inside the block (the test hook; see the module doc)."""
    if not KID_FORM.match(kid):
        raise ValueError(f"kid must look like lic-YYYY-MM, not {kid!r}")
    load_public_key(pem)
    _test_keys[kid] = pem
    try:
        yield
    finally:
        _test_keys.pop(kid, None)
