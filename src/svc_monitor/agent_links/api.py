"""Agent tokens (under /api) and the agents' WebSocket, /agent/ws at the root and under /api
(docs/features/agent.md)."""

import asyncio
import contextlib
import json

from fastapi import APIRouter, WebSocket, WebSocketDisconnect

from svc_monitor.agent_links.dependencies import AgentLinksDep
from svc_monitor.agent_links.models import AgentToken
from svc_monitor.agent_links.schemas import (
    AgentLinkRead,
    AgentTokenCreate,
    AgentTokenCreated,
    AgentTokenRead,
)
from svc_monitor.agent_links.service import HEARTBEAT_S, AgentLinkService, Close
from svc_monitor.api.error_responses import error_responses
from svc_monitor.engine.agent_link import AgentHello, AgentLink
from svc_monitor.engine.agent_wire import WireError, decode
from svc_monitor.errors import NotFound

router = APIRouter(tags=["agents"])
socket_router = APIRouter(tags=["agents"])

HELLO_TIMEOUT_S = 10.0


@router.post(
    "/agent-tokens",
    status_code=201,
    response_model=AgentTokenCreated,
    responses=error_responses(403, 422),
)
async def create_token(body: AgentTokenCreate, agents: AgentLinksDep) -> AgentTokenCreated:
    """Make an agent token and the agent connection it links (named `name`).

    The token is in this answer only; only its SHA-256 is kept. Start `svc-monitor agent`
    beside the instance with it (SVC_AGENT_TOKEN); the connection shows down until the
    agent links."""
    token, secret = await agents.create(body.name)
    return AgentTokenCreated(**AgentTokenRead.of(token).model_dump(), token=secret)


@router.get("/agent-tokens", response_model=list[AgentTokenRead], responses=error_responses(403))
async def list_tokens(agents: AgentLinksDep) -> list[AgentTokenRead]:
    """Every agent token, revoked ones included (never the token itself)."""
    return [AgentTokenRead.of(t) for t in await agents.tokens()]


@router.delete(
    "/agent-tokens/{token_id}", response_model=AgentTokenRead, responses=error_responses(403, 404)
)
async def revoke_token(token_id: str, agents: AgentLinksDep) -> AgentTokenRead:
    """Revoke a token: its link closes at once (code 4003) and it is refused from then on.
    Its connection and history stay; the connection shows down."""
    return AgentTokenRead.of(await agents.revoke(token_id))


@router.get("/agents", response_model=list[AgentLinkRead], responses=error_responses(403))
async def list_agents(agents: AgentLinksDep) -> list[AgentLinkRead]:
    """Each agent connection and its link: up or not, the agent's version, what it found
    of its instance, the heartbeat's round trip and the commands it refused."""
    return [AgentLinkRead.of(view) for view in await agents.views()]


@socket_router.websocket("/agent/ws")
async def agent_socket(websocket: WebSocket, agents: AgentLinksDep) -> None:
    """An agent's link. `Authorization: Bearer <agent token>`; an unknown or revoked token is
    refused before the handshake (HTTP 403). Then the agent's `hello` within 10 s (else close
    4001), the service's `welcome`, and frames both ways (docs/features/agent.md#the-link);
    4000: no pong in time, 4003: the token was revoked, 4004: its connection was deleted."""
    scheme, _, secret = websocket.headers.get("authorization", "").partition(" ")
    token = await agents.authenticate(secret.strip()) if scheme.lower() == "bearer" else None
    if token is None:
        await websocket.close(code=1008)
        return
    await websocket.accept()
    try:
        hello = _hello(await asyncio.wait_for(websocket.receive_text(), HELLO_TIMEOUT_S))
    except (TimeoutError, WireError, WebSocketDisconnect, KeyError, RuntimeError):
        await _close(websocket, 4001, "no hello within 10 s")
        return

    async def send(data: bytes) -> None:
        await websocket.send_bytes(data)

    async def close(code: int, reason: str) -> None:
        await _close(websocket, code, reason)

    link = AgentLink(send, hello)
    try:
        await agents.linked(token, hello, link, close)
    except NotFound:
        await _close(websocket, 4004, "the connection of this token was deleted")
        return
    await websocket.send_text(
        json.dumps(
            {"type": "welcome", "connectionId": token.connection_id, "heartbeatS": HEARTBEAT_S}
        )
    )
    await _serve(websocket, agents, token, link, close)


async def _serve(
    websocket: WebSocket,
    agents: AgentLinkService,
    token: AgentToken,
    link: AgentLink,
    close: Close,
) -> None:
    """Frames until the link ends; then the connection's instance shows down."""
    pongs: asyncio.Queue[float] = asyncio.Queue(maxsize=16)

    async def ping(t: float) -> None:
        await websocket.send_text(json.dumps({"type": "ping", "t": t}))

    heartbeat = asyncio.get_running_loop().create_task(agents.heartbeat(link, ping, close, pongs))
    try:
        while link.open:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                break
            data = message.get("bytes")
            if data is not None:
                link.deliver(decode(data))
                continue
            _control(message.get("text") or "", link, pongs)
    except (WireError, WebSocketDisconnect, RuntimeError):
        await close(1002, "not a frame of the agent link")
    finally:
        heartbeat.cancel()
        agents.unlinked(token, link)
        await asyncio.gather(heartbeat, return_exceptions=True)


def _control(text: str, link: AgentLink, pongs: "asyncio.Queue[float]") -> None:
    try:
        message = json.loads(text)
    except ValueError:
        raise WireError("a text frame that is not JSON") from None
    kind = message.get("type") if isinstance(message, dict) else None
    if kind == "pong" and isinstance(message.get("t"), float) and not pongs.full():
        pongs.put_nowait(message["t"])
    elif kind == "refused":
        link.note_refused(str(message.get("command"))[:64])


def _hello(text: str) -> AgentHello:
    message = json.loads(text)
    if not isinstance(message, dict) or message.get("type") != "hello":
        raise WireError("the first frame must be the agent's hello")
    given = message.get("instance")
    instance: dict[str, object] = given if isinstance(given, dict) else {}
    listed = instance.get("nodes")
    nodes: list[object] = listed if isinstance(listed, list) else []
    return AgentHello(
        version=str(message.get("version"))[:40],
        engine=_short(instance.get("engine")),
        engine_version=_short(instance.get("version")),
        tls=instance.get("tls") is True,
        cluster=instance.get("cluster") is True,
        nodes=[str(n)[:300] for n in nodes[:1000]],
    )


def _short(value: object) -> str | None:
    return None if value is None else str(value)[:40]


async def _close(websocket: WebSocket, code: int, reason: str) -> None:
    with contextlib.suppress(RuntimeError):  # already closed
        await websocket.close(code=code, reason=reason)
