"""What a failed connection test usually means, and what to change: refused = wrong port
or TLS missing, WRONGPASS = wrong user or token, timeout = TLS mismatch
(docs/features/connections.md#connection-test-hints).

Hints come from the EngineError's kind and reason (engine/errors.py), never from the
server's text, which stays verbatim in `error`. What each case looks like on the wire was
tried against Debian's redis-server 7.0.15 with `port 0` and a `tls-port`:
- a plain client on the TLS port: the server resets the connection at the first command;
- a TLS client on a plain port: the handshake gets no answer (the server waits for the end
  of what it reads as an inline command) or, when the ClientHello happens to hold a
  newline, an error reply that OpenSSL calls a wrong version number;
- no client certificate for `tls-auth-clients yes`: the handshake completes (TLS 1.3) and
  the server resets the connection at the first command.
"""

from svc_monitor.engine.client import EngineTarget
from svc_monitor.engine.errors import EngineError

REFUSED = (
    "Nothing accepts connections on this host and port: check the port (managed providers "
    "often use a high, non-standard one, shown as host:port). Some serve TLS only, on a port "
    "of its own: then turn TLS on and use that port."
)
DNS = "The host name does not resolve: check its spelling, or use the IP address."
CLOSED_PLAIN = (
    "The server closed the connection as soon as it was used: the port most likely expects "
    "TLS. Turn TLS on (or paste a rediss:// URL)."
)
CLOSED_NO_CLIENT_CERT = (
    "The server closed the TLS connection as soon as it was used: it most likely requires "
    "a client certificate (mutual TLS, tls-auth-clients yes). Give tlsCert and tlsKey."
)
CLOSED_TLS = (
    "The server closed the TLS connection as soon as it was used: it may refuse this client "
    "certificate or have reached maxclients; its log says which."
)
PLAIN_PORT = (
    "The TLS handshake got no TLS answer: this port most likely speaks plain (non-TLS) "
    "Redis/Valkey. Turn TLS off, or use the instance's TLS port."
)
TIMEOUT_TLS = (
    "No answer in time: a firewall may drop the connection, the host may be wrong, or TLS "
    "may not match what the port speaks."
)
TIMEOUT_PLAIN = (
    "No answer in time: a firewall may drop the connection, the host may be wrong, or the "
    "port may expect TLS (turn TLS on)."
)
WRONGPASS = (
    "The server refused this user name and password. On managed providers the password is "
    "the account token from the TCP connection details (not a REST token), and the user "
    "name is `default` or left blank."
)
NOAUTH = (
    "The server wants a password and none was given. On managed providers it is the account "
    "token from the TCP connection details, with user name `default` or blank."
)
UNTRUSTED = (
    "The server's certificate is not signed by a CA this service trusts: give the CA "
    "certificate in tlsCaCert (or ENGINE_TLS_CA_FILE), and check that the host name matches "
    "the certificate."
)
EXPIRED = (
    "The server's certificate has expired or is not valid yet: renew it, or check this "
    "machine's clock."
)
CLIENT_CERT_REQUIRED = (
    "The server requires a client certificate (mutual TLS): give tlsCert and tlsKey."
)
CLIENT_CERT_REFUSED = (
    "The server refused the client certificate: it is not signed by a CA the server trusts "
    "(its tls-ca-cert-file)."
)
SETUP = "The TLS settings could not be loaded: check tlsCaCert, tlsCert and tlsKey."
SSH_UNREACHABLE = (
    "The SSH bastion did not accept a connection: check sshTunnel host and port (22 unless "
    "its sshd listens elsewhere), and that this service may reach it."
)
SSH_TIMEOUT = (
    "The SSH bastion did not answer in time: a firewall may drop the connection, or the "
    "host or port may be wrong."
)
SSH_AUTH = (
    "The bastion refused the login: check sshTunnel username and the password or key. Some "
    "bastions take only keyboard-interactive (authMethod keyboard-interactive) or only keys."
)
SSH_KEY = (
    "The private key could not be used: check that it is an OpenSSH or PEM private key and "
    "that the passphrase is right (a key file: readable, inside SVC_SSH_KEY_DIR)."
)
SSH_HOST_KEY = (
    "The bastion showed another host key than the pinned one: someone may be intercepting "
    "the connection. If the bastion was rebuilt on purpose, check its new key and have an "
    "admin re-pin it (POST /api/connections/{id}/ssh/repin, or Re-pin in the connection "
    "dialog)."
)


def hint_for(error: EngineError, *, target: EngineTarget) -> str | None:
    """A hint for people, or None when there is nothing to add to the error itself."""
    reason = error.reason
    if reason == "closed":
        if not target.tls:
            return CLOSED_PLAIN
        return CLOSED_TLS if target.tls_cert else CLOSED_NO_CLIENT_CERT
    if reason == "hostname":
        return (
            f"The server's certificate does not name '{target.host}': connect by a host name "
            "the certificate lists (its subjectAltName), or have it reissued for this name."
        )
    if reason in _BY_REASON:
        return _BY_REASON[reason]
    if error.kind in _SSH:
        return _SSH[error.kind]
    if error.kind == "timeout":
        return TIMEOUT_TLS if target.tls else TIMEOUT_PLAIN
    if error.kind == "auth":
        return NOAUTH if error.message.startswith("NOAUTH") else WRONGPASS
    return None


_BY_REASON = {
    "refused": REFUSED,
    "dns": DNS,
    "tls_handshake_timeout": PLAIN_PORT,
    "not_tls": PLAIN_PORT,
    "untrusted": UNTRUSTED,
    "expired": EXPIRED,
    "client_cert_required": CLIENT_CERT_REQUIRED,
    "client_cert_refused": CLIENT_CERT_REFUSED,
    "setup": SETUP,
}
# engine/errors.py's SshTunnelError kinds.
_SSH = {
    "ssh_unreachable": SSH_UNREACHABLE,
    "ssh_timeout": SSH_TIMEOUT,
    "ssh_auth": SSH_AUTH,
    "ssh_key": SSH_KEY,
    "ssh_host_key": SSH_HOST_KEY,
}
