"""The one ssl.SSLContext an engine client (or a MONITOR stream) uses for one instance.

Trust is the system store plus what the connection adds: its own CA certificates
(`tlsCaCert`) and the service-wide ENGINE_TLS_CA_FILE. A client certificate (mutual TLS)
is loaded from files, since Python's ssl cannot take a private key from memory: they live
in a private directory (0700, files 0600) only while load_cert_chain reads them.
"""

import contextlib
import functools
import os
import ssl
import tempfile
from pathlib import Path

from svc_monitor.engine.errors import EngineTlsError

# Contexts are kept by their material and shared: a context is safe to share between
# sockets, and building one loads the system trust store (~20 ms on the event loop,
# bench/transport.py), which cluster node clients and key analytics' shard clients would
# otherwise pay on every run. Material that fails to load raises and is not kept.
CONTEXTS_KEPT = 64


@functools.lru_cache(maxsize=CONTEXTS_KEPT)
def client_context(
    *,
    ca_pem: str | None = None,
    ca_file: str | None = None,
    cert_pem: str | None = None,
    key_pem: str | None = None,
    insecure: bool = False,
) -> ssl.SSLContext:
    """A context that verifies the server's certificate and host name, unless `insecure`.

    EngineTlsError (reason "setup") when the material does not load; its message names
    what failed and never includes the material.
    """
    # create_default_context loads the system trust store: ~20 ms, once per client.
    context = ssl.create_default_context()
    if insecure:
        # Labs only (docs/features/connections.md, "tlsInsecure"): anyone on the path can
        # pose as the server.
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    try:
        if ca_file:
            context.load_verify_locations(cafile=ca_file)
    except (OSError, ssl.SSLError) as exc:
        message = f"ENGINE_TLS_CA_FILE could not be loaded: {exc}"
        raise EngineTlsError(message, reason="setup") from None
    try:
        if ca_pem:
            context.load_verify_locations(cadata=ca_pem)
    except (ValueError, ssl.SSLError) as exc:
        raise EngineTlsError(f"tlsCaCert could not be loaded: {exc}", reason="setup") from None
    if cert_pem and key_pem:
        _load_chain(context, cert_pem, key_pem)
    return context


def _load_chain(context: ssl.SSLContext, cert_pem: str, key_pem: str) -> None:
    with tempfile.TemporaryDirectory(prefix="svc-monitor-tls-") as directory:  # mode 0700
        cert_path = _write_private(Path(directory) / "cert.pem", cert_pem)
        key_path = _write_private(Path(directory) / "key.pem", key_pem)
        try:
            context.load_cert_chain(certfile=cert_path, keyfile=key_path)
        except (OSError, ssl.SSLError) as exc:
            reason = getattr(exc, "reason", None) or type(exc).__name__
            raise EngineTlsError(
                f"tlsCert/tlsKey could not be loaded ({reason})", reason="setup"
            ) from None
        finally:
            # Gone before anything else runs, rather than at the end of the with block.
            for path in (key_path, cert_path):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)


def _write_private(path: Path, text: str) -> str:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        file.write(text)
    return str(path)
