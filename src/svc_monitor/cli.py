"""The `svc-monitor` command.

    svc-monitor [serve] [--embedded-valkey]     start the service on PORT
    svc-monitor check-config                    validate the environment and exit

A bad environment variable ends the process with one line naming it (exit 2).
"""

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Iterator
from typing import NoReturn

from pydantic import ValidationError

from svc_monitor import __version__
from svc_monitor.config import Settings, describe_validation_error

logger = logging.getLogger("svc_monitor")

EXIT_CONFIG = 2
EXIT_STARTUP = 3


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    try:
        settings = Settings()
    except ValidationError as exc:
        _fail(f"configuration error: {describe_validation_error(exc)}", EXIT_CONFIG)
    _configure_logging(settings.LOG_LEVEL)
    if args.command == "check-config":
        print("configuration ok")  # noqa: T201
        return
    serve(settings, embedded_valkey=args.embedded_valkey)


def serve(settings: Settings, *, embedded_valkey: bool) -> None:
    import uvicorn

    from svc_monitor.app import StartupError, create_app, preflight
    from svc_monitor.embedded import EmbeddedValkey, EmbeddedValkeyError

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
        app = create_app(
            settings,
            embedded_valkey_port=embedded.port if embedded else None,
            # Answer /health first; the feature routes follow a fraction of a second later.
            features_in_background=True,
            ui_on_demand=True,
        )
        config = uvicorn.Config(
            app,
            host=settings.BIND_HOST,
            port=settings.PORT,
            loop="uvloop",
            http="httptools",
            log_config=None,
            access_log=False,
            server_header=False,
            lifespan="on",
            ws="none",  # no WebSocket route yet; "auto" would import a WebSocket library
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


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="svc-monitor", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"svc-monitor {__version__}")
    commands = parser.add_subparsers(dest="command")
    serve_cmd = commands.add_parser("serve", help="start the service (the default)")
    serve_cmd.add_argument(
        "--embedded-valkey",
        action="store_true",
        help="start a Valkey on a free loopback port and watch it as the default connection",
    )
    commands.add_parser("check-config", help="validate the environment and exit")
    parser.set_defaults(command="serve", embedded_valkey=False)
    return parser


def _configure_logging(level: str) -> None:
    logging.basicConfig(
        level=level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    # Alembic narrates every migration step at INFO; its warnings are what matter.
    logging.getLogger("alembic").setLevel(max(logging.WARNING, logging.getLogger().level))


def _fail(message: str, code: int) -> NoReturn:
    print(f"svc-monitor: {message}", file=sys.stderr)  # noqa: T201
    raise SystemExit(code)
