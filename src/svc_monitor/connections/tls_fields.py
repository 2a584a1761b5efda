"""A request's TLS fields merged over a stored connection's, and the rules they keep."""

from typing import Any

from svc_monitor.connections.models import Connection
from svc_monitor.connections.schemas import ConnectionFields
from svc_monitor.errors import Unprocessable
from svc_monitor.kit.pem import key_matches

# Their change means the instance must be tested again before saving.
TLS_FIELDS = frozenset({"tls_ca_cert", "tls_cert", "tls_key", "tls_insecure"})


def tls_material(body: ConnectionFields, base: Connection | None) -> dict[str, Any]:
    """The TLS fields of the connection `body` makes of `base` (None for a new one), by
    Connection's field names. Absent keeps a stored value and "" clears it, as for the
    password. A client certificate and its key come as a pair and must belong together:
    Unprocessable (422) naming the field otherwise."""
    cert = given_or(body.tls_cert, base.tls_cert if base else None)
    key = given_or(body.tls_key, base.tls_key if base else None)
    if cert and not key:
        raise Unprocessable("tlsKey: tlsCert needs its private key in tlsKey", field="tlsKey")
    if key and not cert:
        raise Unprocessable("tlsCert: tlsKey needs its certificate in tlsCert", field="tlsCert")
    if cert and key and not key_matches(cert, key):
        raise Unprocessable(
            "tlsKey: the private key does not belong to tlsCert (send both together)",
            field="tlsKey",
        )
    insecure = base.tls_insecure if base else False
    return {
        "tls_ca_cert": given_or(body.tls_ca_cert, base.tls_ca_cert if base else None),
        "tls_cert": cert,
        "tls_key": key,
        "tls_insecure": body.tls_insecure if body.tls_insecure is not None else insecure,
    }


def given_or(given: str | None, stored: str | None) -> str | None:
    """An edit's secret: absent keeps the stored one, "" clears it (the SSH tunnel's too)."""
    if given is None:
        return stored
    return given or None
