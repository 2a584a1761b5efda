"""The browser CLI: one CliSession per socket, opened by the CliService.

A command goes through, in order: the caller is re-checked (a sign-out, a removal or
a demotion reaches an open socket on its next command), the socket's rate limit, the
tokenizer, the command policy, then the server on the socket's own engine client, and
the activity log.

Each socket has its own EngineClient, made on the first command with the connection's
credentials and closed with the socket: a slow command or a reconnect in the CLI never
touches the clients the pollers share. It is built without the connection's command
ledger, so what people type is not counted as the monitor's own load on the server.

Refused commands (by the policy, the tokenizer or the rate limit) are not recorded in
the activity log: nothing ran, and the log keeps to what happened
(docs/features/browser-cli.md#activity-log).
"""

import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable

from svc_monitor.auth.models import Principal, Role
from svc_monitor.auth.service import AuthService
from svc_monitor.config import Settings
from svc_monitor.connections.models import Connection
from svc_monitor.connections.service import (
    ConnectionNotFound,
    ConnectionService,
    NeedsLiveConnection,
)
from svc_monitor.console.cli.models import (
    CLOSE_POLICY,
    CLOSE_UNKNOWN_CONNECTION,
    CLOSE_UNUSABLE_CONNECTION,
    CommandRefused,
    CommandResult,
    SessionClosed,
)
from svc_monitor.console.cli.parsing import CommandParseError, split_command
from svc_monitor.console.cli.policy import Decision, Kind, decide
from svc_monitor.console.cli.replies import format_error, format_reply
from svc_monitor.console.cli.throttle import TokenBucket
from svc_monitor.engine.client import EngineClient
from svc_monitor.engine.errors import EngineError, EngineResponseError

logger = logging.getLogger(__name__)

# 100 tabs of one user must not mean 100 server connections; more sockets are refused
# (docs/features/browser-cli.md#limits).
MAX_SOCKETS_PER_USER = 10
# A person types a few commands a second; 50/s leaves room for pasted lines and scripts
# and still bounds what one socket can ask of a server.
COMMANDS_PER_SECOND = 50
BURST = 50
ACTIVITY_ACTION = "cli.command"
ROUTE = "/api/cli/ws"
MAX_LOGGED_ARGS = 16
MAX_LOGGED_ARG_CHARS = 128
# Their arguments can be credentials or configuration secrets: never logged
# (docs/features/browser-cli.md#activity-log).
NEVER_LOGGED_VALUES = frozenset({"AUTH", "HELLO", "CONFIG", "ACL", "MIGRATE"})

RATE_LIMITED = "Too many commands: at most {rate:g} per second in one CLI; this one was not run"
SESSION_ENDED = "Your session has ended (signed out, expired or removed): sign in again"


class CliSession:
    """One open CLI socket: who is typing, on which connection, with which engine client."""

    def __init__(
        self,
        connection: Connection,
        *,
        principal: Principal | None,
        cookie: str | None,
        authorization: str | None,
        source_ip: str,
        auth: AuthService,
        connections: ConnectionService,
        unsafe: bool,
        bucket: TokenBucket,
    ) -> None:
        self.connection = connection
        self.principal = principal
        self._cookie = cookie
        self._authorization = authorization
        self._source_ip = source_ip
        self._auth = auth
        self._connections = connections
        self._unsafe = unsafe
        self._bucket = bucket
        self._client: EngineClient | None = None

    @property
    def role(self) -> Role | None:
        """The caller's role now; None when user control is off (the admin policy)."""
        return self.principal.role if self.principal is not None else None

    async def run(self, line: str) -> CommandResult | CommandRefused:
        """Run one command line; SessionClosed when the caller may no longer use the CLI."""
        await self._recheck()
        if not self._bucket.take():
            return CommandRefused(RATE_LIMITED.format(rate=self._bucket.rate))
        try:
            words = split_command(line)
        except CommandParseError as exc:
            return CommandRefused(f"Parse error: {exc}; nothing was sent")
        if not words:
            return CommandRefused("Nothing to run: type a command, for example PING")
        decision = decide(words, role=self.role, unsafe=self._unsafe)
        if not decision.allowed:
            return CommandRefused(decision.reason or f"{decision.name} is not allowed")
        outcome = await self._execute(words, decision)
        ok = isinstance(outcome, CommandResult) and outcome.result_type != "error"
        await self._record(words, decision, ok=ok)
        return outcome

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()

    async def _recheck(self) -> None:
        if not self._auth.enabled:
            return
        identified = await self._auth.identify(self._cookie, self._authorization)
        if identified.principal is None:
            raise SessionClosed(SESSION_ENDED, code=CLOSE_POLICY)
        if identified.refreshed_cookie is not None:
            # Keep the re-checked cookie: the next checks are then cheap for 30 s again.
            self._cookie = identified.refreshed_cookie
        self.principal = identified.principal

    async def _execute(
        self, words: list[bytes], decision: Decision
    ) -> CommandResult | CommandRefused:
        if self._client is None:
            connections = self._connections
            self._client = connections.node_client(connections.target(self.connection))
        started = time.perf_counter()
        try:
            # The name goes as bytes too: valkey-py then applies no response callback
            # (they are keyed by str), so SET answers OK rather than True, HGETALL a
            # flat list rather than a dict, exactly what the server sent.
            reply = await self._client.execute(*words)
        except EngineResponseError as exc:
            return CommandResult(format_error(exc), "error", _ms_since(started), False)
        except EngineError as exc:
            return CommandRefused(f"No reply from the server: {exc.message}")
        duration = _ms_since(started)
        formatted = format_reply(
            reply, name=decision.name, kind=decision.kind, args=len(words) - decision.arity
        )
        return CommandResult(formatted.text, formatted.result_type, duration, formatted.truncated)

    async def _record(self, words: list[bytes], decision: Decision, *, ok: bool) -> None:
        principal = self.principal
        if principal is None:  # user control is off: there is no one to name
            return
        arguments = words[decision.arity :]
        details: dict[str, object] = {
            "command": decision.name,
            "argCount": len(arguments),
            "via": principal.via.value,
            "ok": ok,
        }
        family = decision.name.split(" ", 1)[0]
        if decision.kind is Kind.READ and family not in NEVER_LOGGED_VALUES:
            details["args"] = [_logged(a) for a in arguments[:MAX_LOGGED_ARGS]]
        try:
            await self._auth.activity.record(
                ACTIVITY_ACTION,
                actor_id=principal.user_id,
                actor_name=principal.name,
                source_ip=self._source_ip,
                connection_id=self.connection.id,
                route=ROUTE,
                details=details,
            )
        except Exception:  # the command ran; a failed log write must not hide its answer
            logger.exception("could not record a CLI command in the activity log")


class CliService:
    """Opens CLI sessions on a connection, at most MAX_SOCKETS_PER_USER per user."""

    def __init__(
        self,
        settings: Settings,
        *,
        auth: AuthService,
        connections: ConnectionService,
        clock: Callable[[], float] = time.monotonic,
        commands_per_second: float = COMMANDS_PER_SECOND,
        burst: int = BURST,
    ) -> None:
        self._unsafe = settings.SVC_UNSAFE_CLI
        self._rate = commands_per_second
        self._burst = burst
        self._auth = auth
        self._connections = connections
        self._clock = clock
        self._open: dict[str, int] = {}

    @contextlib.asynccontextmanager
    async def session(
        self,
        connection_id: str | None,
        *,
        principal: Principal | None,
        cookie: str | None,
        authorization: str | None,
        source_ip: str,
    ) -> AsyncIterator[CliSession]:
        """A session on the connection (the default one for None); SessionClosed when the
        connection is unknown or unusable, or the user has too many CLI sockets open."""
        connection = await self._connection(connection_id)
        owner = principal.user_id if principal is not None else f"address {source_ip}"
        if self._open.get(owner, 0) >= MAX_SOCKETS_PER_USER:
            raise SessionClosed(
                f"Too many CLI sessions open: at most {MAX_SOCKETS_PER_USER} per user; "
                "close one (another tab) and try again",
                code=CLOSE_POLICY,
            )
        self._open[owner] = self._open.get(owner, 0) + 1
        session = CliSession(
            connection,
            principal=principal,
            cookie=cookie,
            authorization=authorization,
            source_ip=source_ip,
            auth=self._auth,
            connections=self._connections,
            unsafe=self._unsafe,
            bucket=TokenBucket(rate=self._rate, burst=self._burst, clock=self._clock),
        )
        try:
            yield session
        finally:
            left = self._open.pop(owner) - 1
            if left:
                self._open[owner] = left
            await session.close()

    async def _connection(self, connection_id: str | None) -> Connection:
        try:
            connection = (
                await self._connections.get(connection_id)
                if connection_id is not None
                else await self._connections.resolve(None)
            )
        except ConnectionNotFound as exc:
            message = f"Connection '{connection_id}' not found" if connection_id else exc.message
            raise SessionClosed(message, code=CLOSE_UNKNOWN_CONNECTION) from None
        if connection.pushed:
            # The one live-connection answer the API's live-only routes give (409 there).
            raise SessionClosed(
                NeedsLiveConnection(connection).message, code=CLOSE_UNUSABLE_CONNECTION
            )
        if "password" in connection.unreadable:
            raise SessionClosed(
                f"The stored password of connection '{connection.name}' cannot be decrypted "
                "with this ENCRYPTION_KEY: enter it again under Manage connections",
                code=CLOSE_UNUSABLE_CONNECTION,
            )
        return connection


def _logged(argument: bytes) -> str:
    return argument[: MAX_LOGGED_ARG_CHARS * 4].decode("utf-8", errors="replace")[
        :MAX_LOGGED_ARG_CHARS
    ]


def _ms_since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
