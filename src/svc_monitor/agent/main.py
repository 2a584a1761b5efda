"""`svc-monitor agent`: read the environment, keep the link up until SIGTERM or Ctrl-C."""

import asyncio
import contextlib
import signal

from svc_monitor import __version__
from svc_monitor.agent.instance import Target
from svc_monitor.agent.link import run
from svc_monitor.agent.settings import AgentSettings


def target_of(settings: AgentSettings) -> Target:
    return Target(
        host=settings.DB_HOST,
        port=settings.DB_PORT,
        username=settings.DB_USERNAME,
        password=settings.password(),
        tls=settings.DB_TLS,
        tls_ca_file=str(settings.DB_TLS_CA_FILE) if settings.DB_TLS_CA_FILE else None,
        db=settings.DB_DB,
        connect_timeout_s=settings.CONNECT_TIMEOUT_MS / 1000,
        command_timeout_s=settings.COMMAND_TIMEOUT_MS / 1000,
    )


async def serve(settings: AgentSettings) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await run(
        settings.link_url(),
        settings.token,
        target_of(settings),
        version=__version__,
        ca_bundle=str(settings.SVC_CA_BUNDLE) if settings.SVC_CA_BUNDLE else None,
        connect_timeout_s=settings.CONNECT_TIMEOUT_MS / 1000,
        stop=stop,
    )


def main(settings: AgentSettings) -> None:
    with contextlib.suppress(KeyboardInterrupt):
        try:
            import uvloop

            uvloop.run(serve(settings))
        except ImportError:  # a slim image without uvloop runs on asyncio's own loop
            asyncio.run(serve(settings))
