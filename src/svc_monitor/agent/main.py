"""`svc-monitor agent`: read the environment, keep the link up until SIGTERM or Ctrl-C."""

import asyncio
import contextlib
import signal
from collections.abc import Callable

from svc_monitor import __version__
from svc_monitor.agent.instance import Target
from svc_monitor.agent.link import run
from svc_monitor.agent.settings import AgentSettings


async def serve(settings: AgentSettings, links: list[tuple[Callable[[], str], Target]]) -> None:
    """One link per instance, side by side, until SIGTERM or SIGINT."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    ca_bundle = str(settings.SVC_CA_BUNDLE) if settings.SVC_CA_BUNDLE else None
    await asyncio.gather(
        *(
            run(
                settings.link_url(),
                token,
                target,
                version=__version__,
                ca_bundle=ca_bundle,
                connect_timeout_s=settings.CONNECT_TIMEOUT_MS / 1000,
                stop=stop,
            )
            for token, target in links
        )
    )


def main(settings: AgentSettings, links: list[tuple[Callable[[], str], Target]]) -> None:
    with contextlib.suppress(KeyboardInterrupt):
        try:
            import uvloop

            uvloop.run(serve(settings, links))
        except ImportError:  # a slim image without uvloop runs on asyncio's own loop
            asyncio.run(serve(settings, links))
