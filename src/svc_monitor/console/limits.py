"""Bounds of the browser CLI and MONITOR sockets that the server itself enforces.

uvicorn's default largest WebSocket message is 16 MiB; nothing our pages send comes near
a mebibyte, so a bigger frame is refused by the protocol layer (close code 1009) before
it is buffered whole.
"""

WS_MAX_MESSAGE_BYTES = 1024 * 1024
