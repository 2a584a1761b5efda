"""svc-monitor: self-hosted monitoring for Valkey and Redis.

It watches your instances read-only (or receives their metrics over OTLP), keeps their
history, detects trouble and tells you: a web UI and HTTP API, webhooks, Prometheus and
OTLP. Every setting is an environment variable.

commands:
  serve                 start the service on PORT (the default when no command is given)
  check-config          validate the environment and exit: 0 when it is good
  config [--json]       print every setting's effective value and where it came from
                        (environment or default), secrets masked
  mcp                   the MCP server over stdio for AI assistants, acting through a
                        running service at SVC_URL with the personal token SVC_TOKEN
  agent                 run beside an instance svc-monitor cannot dial: dial SVC_URL with
                        an agent token and carry its read commands to DB_HOST:DB_PORT
  entitlement serve     start the entitlement server, which signs licences
  license keygen        make a licence signing key pair for the entitlement server

`svc-monitor COMMAND --help` describes a command and its options.

A bad environment variable ends any command that reads the settings with one line naming
it (exit 2).
"""

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

from pydantic import ValidationError

from svc_monitor import __version__
from svc_monitor.config import Settings, describe_validation_error
from svc_monitor.kit import settings_report

logger = logging.getLogger("svc_monitor")

EXIT_CONFIG = 2
EXIT_STARTUP = 3


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    if args.command == "entitlement":
        serve_entitlement()
        return
    if args.command == "license":
        keygen(args.kid, Path(args.private_key_out))
        return
    if args.command == "mcp":
        serve_mcp()
        return
    if args.command == "agent":
        serve_agent()
        return
    try:
        settings = Settings()
    except ValidationError as exc:
        _fail(f"configuration error: {describe_validation_error(exc)}", EXIT_CONFIG)
    _configure_logging(settings.LOG_LEVEL)
    if args.command == "check-config":
        print("configuration ok")  # noqa: T201
        return
    if args.command == "config":
        rows = settings_report.report(settings, os.environ)
        shown = settings_report.as_json(rows) if args.json else settings_report.as_text(rows)
        print(shown)  # noqa: T201
        return
    serve(settings, embedded_valkey=args.embedded_valkey)


def serve_mcp() -> None:
    """The MCP server on stdin/stdout; logs go to stderr, stdout is the protocol's."""
    from svc_monitor.config import McpClientSettings
    from svc_monitor.mcp.stdio import serve_stdio

    try:
        settings = McpClientSettings()
    except ValidationError as exc:
        _fail(f"configuration error: {describe_validation_error(exc)}", EXIT_CONFIG)
    _configure_logging("warning")
    token = settings.SVC_TOKEN.get_secret_value() if settings.SVC_TOKEN else None
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve_stdio(settings.SVC_URL, token))


def serve_agent() -> None:
    """The agent beside an instance nobody can dial: it dials SVC_URL (docs/features/agent.md)."""
    from svc_monitor.agent.main import main as agent_main
    from svc_monitor.agent.settings import AgentSettings

    try:
        settings = AgentSettings()
        links = settings.links()
    except ValidationError as exc:
        _fail(f"configuration error: {describe_validation_error(exc)}", EXIT_CONFIG)
    except (ValueError, OSError) as exc:
        _fail(f"configuration error: {exc}", EXIT_CONFIG)
    _configure_logging("info")
    agent_main(settings, links)


def serve(settings: Settings, *, embedded_valkey: bool) -> None:
    import uvicorn

    from svc_monitor.app import StartupError, create_app, preflight
    from svc_monitor.console.limits import WS_MAX_MESSAGE_BYTES
    from svc_monitor.console.socket_protocol import LAZY_WS
    from svc_monitor.kit.embedded_valkey import EmbeddedValkey, EmbeddedValkeyError

    try:
        asyncio.run(preflight(settings))
    except StartupError as exc:
        _fail(str(exc), EXIT_STARTUP)
    embedded: EmbeddedValkey | None = None
    if embedded_valkey:
        embedded = EmbeddedValkey()
        try:
            embedded.start()
        except EmbeddedValkeyError as exc:
            _fail(str(exc), EXIT_STARTUP)
        logger.info(
            "No DB_HOST: watching an embedded Valkey on 127.0.0.1:%d (pid %s); it stops with "
            "svc-monitor",
            embedded.port,
            embedded.pid,
        )
    received: list[int] = []
    try:
        try:
            app = create_app(
                settings,
                embedded_valkey_port=embedded.port if embedded else None,
                # Answer /health first; the feature routes follow a fraction of a second
                # later.
                features_in_background=True,
                ui_on_demand=True,
                freeze_heap=True,
            )
        except StartupError as exc:  # another process took the SQLite file since preflight
            _fail(str(exc), EXIT_STARTUP)
        config = uvicorn.Config(
            app,
            host=settings.BIND_HOST,
            port=settings.PORT,
            loop="uvloop",
            http="httptools",
            log_config=None,
            access_log=False,
            server_header=False,
            # X-Forwarded-* is read by auth/dependencies/origin.py, and only with
            # TRUST_PROXY: uvicorn's own reading believes any loopback peer.
            proxy_headers=False,
            lifespan="on",
            # The browser CLI and MONITOR tail, loaded on the first socket.
            ws=LAZY_WS,
            ws_max_size=WS_MAX_MESSAGE_BYTES,
        )
        logger.info(
            "svc-monitor %s on http://%s:%d", __version__, settings.BIND_HOST, settings.PORT
        )
        with _deferred_sigterm(received), contextlib.suppress(KeyboardInterrupt):
            # Ctrl-C: uvicorn has already shut down gracefully; no traceback for that.
            uvicorn.Server(config).run()
    finally:
        if embedded is not None:
            embedded.stop()
    if received:
        # End the way uvicorn meant to, killed by SIGTERM, now that cleanup has run.
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.raise_signal(signal.SIGTERM)


def serve_entitlement() -> None:
    import uvicorn

    from svc_monitor.licensing.entitlement.app import create_entitlement_app
    from svc_monitor.licensing.entitlement.config import EntitlementSettings

    try:
        settings = EntitlementSettings()
    except ValidationError as exc:
        _fail(f"configuration error: {describe_validation_error(exc)}", EXIT_CONFIG)
    _configure_logging(settings.LOG_LEVEL)
    logger.info(
        "svc-monitor entitlement server %s on http://%s:%d, signing with %s",
        __version__,
        settings.ENTITLEMENT_BIND_HOST,
        settings.ENTITLEMENT_PORT,
        settings.LICENSE_SIGNING_KID,
    )
    with contextlib.suppress(KeyboardInterrupt):
        uvicorn.run(
            create_entitlement_app(settings),
            host=settings.ENTITLEMENT_BIND_HOST,
            port=settings.ENTITLEMENT_PORT,
            log_config=None,
            access_log=False,
            server_header=False,
            ws="none",
        )


def keygen(kid: str, private_key_out: Path) -> None:
    """Write a new signing key (mode 0600) and print what goes where."""
    from svc_monitor.licensing.keys import KID_FORM
    from svc_monitor.licensing.tokens import key_pair

    if not KID_FORM.match(kid):
        _fail(f"--kid must look like lic-YYYY-MM, not {kid!r}", EXIT_CONFIG)
    private_pem, public_pem = key_pair()
    try:
        fd = os.open(private_key_out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        _fail(f"{private_key_out} exists; choose another path", EXIT_CONFIG)
    with os.fdopen(fd, "w") as handle:
        handle.write(private_pem)
    print(  # noqa: T201
        f"Private key written to {private_key_out} (mode 0600). On the entitlement server set\n"
        f"  LICENSE_SIGNING_KID={kid}\n"
        f"  LICENSE_SIGNING_PRIVATE_KEY=<the contents of {private_key_out}>\n"
        "and keep the file out of version control.\n\n"
        "Add the public half to EMBEDDED_PUBLIC_KEYS in src/svc_monitor/licensing/keys.py and "
        "ship it in a release before signing with this key:\n\n"
        f'    "{kid}": """{public_pem}""",'
    )


@contextlib.contextmanager
def _deferred_sigterm(received: list[int]) -> Iterator[None]:
    """After a graceful shutdown uvicorn re-raises the SIGTERM it caught, which with the default
    handler ends the process at once: `finally` blocks never run, so the embedded Valkey's
    directory was left behind (and on non-Linux the server too). Record it instead."""
    previous = signal.signal(signal.SIGTERM, lambda signum, _frame: received.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


SETTINGS_REFERENCE = (
    "Every setting is described in the configuration reference "
    "(docs/reference/configuration.md);\n`svc-monitor config` shows the values this "
    "environment gives."
)

SERVE_DESCRIPTION = f"""\
Start the service: the web UI, the HTTP API (/api) and the pollers, on BIND_HOST:PORT.

The settings that matter most (environment variables):
  PORT, BIND_HOST           where it listens (3001, 0.0.0.0)
  STORAGE_TYPE              memory (the default: history is lost on restart), sqlite,
                            postgres or turso; STORAGE_URL for postgres and turso,
                            STORAGE_SQLITE_FILEPATH for sqlite
  DB_HOST, DB_PORT, DB_USERNAME, DB_PASSWORD, DB_TLS
                            the instance watched as the default connection
  ENCRYPTION_KEY            encrypts stored connection passwords (16+ characters)
  AUTH_SECRET               signs session cookies; the same on every replica (32+)
  SVC_DATA_DIR              where licences and local files are kept (./data)
  LOG_LEVEL                 debug, info, warning or error

{SETTINGS_REFERENCE}
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="svc-monitor",
        usage="%(prog)s [-h] [--version] [COMMAND [OPTIONS]]",
        description=__doc__,
        epilog=SETTINGS_REFERENCE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"svc-monitor {__version__}")
    # The module docstring lists the commands in words; argparse's own list would repeat it.
    commands = parser.add_subparsers(
        dest="command", metavar="COMMAND", help=argparse.SUPPRESS, prog="svc-monitor"
    )
    serve_cmd = commands.add_parser(
        "serve",
        help="start the service (the default)",
        description=SERVE_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve_cmd.add_argument(
        "--embedded-valkey",
        action="store_true",
        help="start a Valkey on a free loopback port and watch it as the default connection",
    )
    commands.add_parser(
        "check-config",
        help="validate the environment and exit",
        description="Validate the environment as `serve` would, print `configuration ok` and "
        "exit 0; a bad variable ends with one line naming it (exit 2).",
        epilog=SETTINGS_REFERENCE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    config_cmd = commands.add_parser(
        "config",
        help="print every setting's value and source, secrets masked",
        description="Print every setting with the value `serve` would run with and where it "
        "came from\n(environment or default). Secrets (passwords, keys, tokens, header "
        "lists) show as ********.",
        epilog=SETTINGS_REFERENCE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    config_cmd.add_argument(
        "--json",
        action="store_true",
        help='print a JSON object instead: {"NAME": {"value", "source", "secret"}}',
    )
    commands.add_parser(
        "mcp",
        help="the MCP server over stdio, for AI assistants",
        description="Serve MCP on stdin/stdout for a desktop assistant. Every tool calls the "
        "running service's API at SVC_URL (default http://127.0.0.1:3001) with SVC_TOKEN, a "
        "personal token, as the Bearer: the calls act as its user and are recorded in the "
        "activity log under that name. Without a token only installs with user control off "
        "(WORKSPACE_DISABLED=true) answer, and only read tools.",
    )
    commands.add_parser(
        "agent",
        help="the agent beside an instance svc-monitor cannot dial",
        description="Dial svc-monitor at SVC_URL (https://) with an agent token "
        "(SVC_AGENT_TOKEN or SVC_AGENT_TOKEN_FILE) and run its read commands on the instance "
        "at DB_HOST:DB_PORT (DB_USERNAME, DB_PASSWORD or DB_PASSWORD_FILE, DB_TLS, "
        "DB_TLS_CA_FILE); SVC_CA_BUNDLE names the CAs of svc-monitor's certificate. Write "
        "commands are refused by the agent itself. See docs/features/agent.md.",
    )
    entitlement = commands.add_parser(
        "entitlement", help="the entitlement server, which signs licences"
    )
    entitlement_commands = entitlement.add_subparsers(dest="entitlement_command", required=True)
    entitlement_commands.add_parser(
        "serve",
        help="start it on ENTITLEMENT_PORT (its environment: docs/features/licensing.md)",
        description="Start the entitlement server on ENTITLEMENT_BIND_HOST:ENTITLEMENT_PORT; it "
        "needs LICENSE_SIGNING_KID and LICENSE_SIGNING_PRIVATE_KEY (see `license keygen`).",
    )
    license_cmd = commands.add_parser("license", help="licence tools")
    license_commands = license_cmd.add_subparsers(dest="license_command", required=True)
    keygen_cmd = license_commands.add_parser(
        "keygen",
        help="make a signing key pair; print the public half for keys.py",
        description="Write a new licence signing private key (mode 0600) and print the "
        "environment the entitlement server needs and the public half to embed.",
    )
    keygen_cmd.add_argument("--kid", required=True, help="key id, lic-YYYY-MM")
    keygen_cmd.add_argument(
        "--private-key-out", required=True, help="file for the private key (created, mode 0600)"
    )
    parser.set_defaults(command="serve", embedded_valkey=False, json=False)
    return parser


def _configure_logging(level: str) -> None:
    logging.basicConfig(
        level=level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    # Alembic narrates every migration step at INFO, and asyncssh every tunnelled
    # connection and channel (each pooled engine connection through a bastion); their
    # warnings are what matter, unless LOG_LEVEL=debug asks for everything.
    root = logging.getLogger().level
    for chatty in ("alembic", "asyncssh"):
        logging.getLogger(chatty).setLevel(
            root if root <= logging.DEBUG else max(logging.WARNING, root)
        )


def _fail(message: str, code: int) -> NoReturn:
    print(f"svc-monitor: {message}", file=sys.stderr)  # noqa: T201
    raise SystemExit(code)
