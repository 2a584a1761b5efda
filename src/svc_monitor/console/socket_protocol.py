"""The WebSocket protocol uvicorn serves the CLI and MONITOR sockets with, loaded on the
first socket instead of at start-up.

uvicorn imports its `ws` protocol when it starts; the websockets library costs ~2.6 MB of
resident memory, which an install nobody opens a CLI on never needs (bench/startup.py
holds idle memory under 80 MB). uvicorn takes `ws` as a "module:attribute" string and only
ever calls the attribute to make a protocol per upgraded connection, so a function that
imports the real class on its first call is enough.
"""

import asyncio
from typing import Any

# What cli.py and the tests pass as uvicorn's `ws`.
LAZY_WS = "svc_monitor.console.socket_protocol:websocket_protocol"


def websocket_protocol(*args: Any, **kwargs: Any) -> asyncio.Protocol:
    """uvicorn's sans-I/O websockets protocol (its legacy one is deprecated)."""
    from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

    return WebSocketsSansIOProtocol(*args, **kwargs)
