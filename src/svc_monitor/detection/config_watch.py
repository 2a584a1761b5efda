"""acl.modified and config.changed: who changed a server's users or configuration.

One check per connection every CONFIG_WATCH_INTERVAL_MS (polling/config_watch_poll.py):

- `INFO commandstats` first: it tells whether anything could have changed since the last
  pass, so a quiet server costs one cheap command per pass.
- `ACL LIST`, diffed with the previous pass: an `AclModified` per user added, removed, or
  whose rule line changed (a new password changes the line too; the line itself, which
  holds password hashes, is never published). Asked only when the ACL SETUSER, DELUSER
  or LOAD counts moved, or the server restarted (its run_id, from the INFO poll, changed);
  on Redis 6.2, which counts only whole commands (our own ACL LOG included), every pass.
- When the CONFIG SET call count moved, `CONFIG GET *` diffed with the previous snapshot
  gives a `ConfigChanged` per key. Redis 6.2 has no per-subcommand stats: its
  `cmdstat_config` counts every CONFIG call, our own CONFIG GET included, which is
  subtracted so our read is not taken for a change on the next pass.

The first pass on a connection takes the baseline and publishes nothing. ACL LIST is not
asked where the identity has no ACL LOG (Redis < 6, or a monitoring user without ACL
rights), so our refusal never lands in the log the audit poll reports, nor CONFIG GET where
detection found CONFIG missing (renamed away by a managed provider, denied to the user). A
command the server refuses anyway is logged once at debug level and not tried again until
the connection is detected afresh (a reconnect) or re-added or edited (`forget`); a passing
error (-LOADING, a timeout) reaches the loop and its backoff.

`modified_by` is best effort: the clients of `CLIENT LIST` whose last command was the one
that makes such a change (`user@ip:port`, several joined by ", "), else "unknown". A client
that disconnected or ran something else since cannot be told apart from nobody.
"""

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from svc_monitor.engine.buffer_limits import replica_hard_limit
from svc_monitor.engine.capabilities import EngineIdentity, is_refusal
from svc_monitor.engine.client import CLIENT_NAME, EngineClient
from svc_monitor.engine.clients import ClientInfo, parse_client_list
from svc_monitor.engine.errors import EngineError, EngineResponseError
from svc_monitor.engine.info import ParsedInfo
from svc_monitor.engine.reply_values import pairs, text
from svc_monitor.event_types.access import AclModified, ConfigChanged
from svc_monitor.events import EventBus, now_ms
from svc_monitor.pipe.facts import ReplicaBufferLimitFacts
from svc_monitor.pipe.live_view import LiveView
from svc_monitor.pipe.pressure import pressure_reason

logger = logging.getLogger(__name__)

UNKNOWN = "unknown"
# Shown instead of the value of a parameter that holds a credential.
MASKED = "***"

# CLIENT LIST `cmd=` of the commands that make each kind of change. Redis < 7 names only
# the container command ("config", "acl"), so those match any of its subcommands there.
_CONFIG_WRITERS = frozenset({"config|set", "config"})
_ACL_WRITERS = frozenset({"acl|setuser", "acl|deluser", "acl|load", "acl"})
# Configuration names and values shared by every watched server (parse_config): at most
# this many, each at most this long, about 5 MB at worst.
_SHARED: dict[str, str] = {}
_SHARED_MAX = 20_000
_SHARED_MAX_CHARS = 256


def is_secret_parameter(name: str) -> bool:
    """requirepass, masterauth / primaryauth (Valkey 8), tls-key-file-pass ...: CONFIG GET
    shows them in clear, and an event must not carry them to a webhook."""
    return name.endswith(("pass", "auth"))


@dataclass(frozen=True, slots=True)
class _Server:
    """The server one check reads."""

    connection_id: str
    client: EngineClient


@dataclass(slots=True)
class _Watch:
    """What one connection looked like at the last pass."""

    # The detection these flags were learnt under: a reconnect detects afresh, and what was
    # refused then (a user given the right since, a provider plan changed) is asked again.
    identity: EngineIdentity | None = None
    users: dict[str, str] | None = None  # user -> rule line; None until the baseline
    config: dict[str, str] | None = None
    config_set_calls: int | None = None  # as counted at the last pass, our own reads added
    # (run_id, ACL SETUSER + DELUSER + LOAD calls) when the users were last listed.
    acl_writes: tuple[str | None, int] | None = None
    acl_off: bool = False
    config_off: bool = False
    clients_off: bool = False


class ConfigWatch:
    """Publishes AclModified and ConfigChanged from ACL LIST and CONFIG GET diffs."""

    def __init__(self, bus: EventBus, live_state: LiveView) -> None:
        self._bus = bus
        self._live_state = live_state
        self._watches: dict[str, _Watch] = {}

    async def check(
        self,
        connection_id: str,
        client: EngineClient,
        identity: EngineIdentity | None,
        *,
        commandstats: ParsedInfo | None = None,
    ) -> ReplicaBufferLimitFacts | None:
        """One pass; `commandstats` is this pass's INFO commandstats when it was already
        read (along with INFO), else the pass reads it when a part needs it. Returns the
        replica buffer limit the last CONFIG GET read, for the poll to put into the pipe
        (None while none was read)."""
        if identity is None:
            return None  # not detected yet: whether ACL exists is unknown
        target = _Server(connection_id, client)
        watch = self._watches.setdefault(connection_id, _Watch())
        if watch.identity is not identity:
            watch.identity = identity
            watch.acl_off = watch.config_off = watch.clients_off = False
        by = _Attribution(target, watch, self._live_state)
        if commandstats is None:
            commandstats = await self._commandstats(target, identity, watch)
        # Each part publishes before the next runs: a failure in the CONFIG part must not
        # lose user changes the ACL part has already taken into its baseline.
        for change, user in await self._user_changes(target, identity, watch, commandstats):
            self._bus.publish(
                AclModified(
                    connection_id=target.connection_id,
                    change_type=change,
                    affected_user=user,
                    modified_by=await by.of(_ACL_WRITERS),
                )
            )
        for key, old, new in await self._config_changes(target, identity, watch, commandstats):
            self._bus.publish(
                ConfigChanged(
                    connection_id=target.connection_id,
                    key=key,
                    old_value=old,
                    new_value=new,
                    modified_by=await by.of(_CONFIG_WRITERS),
                )
            )
        return _replica_limit(watch)

    def parameter(self, connection_id: str, name: str) -> str | None:
        """A configuration parameter's value as the last CONFIG GET read it; None when not
        read (CONFIG missing or denied, or no pass yet). At most one pass behind a CONFIG
        SET, which moves the count every pass checks."""
        watch = self._watches.get(connection_id)
        config = watch.config if watch is not None else None
        return config.get(name) if config is not None else None

    def forget(self, connection_id: str) -> None:
        # Removed or edited (maybe to another server, or given new rights): start over.
        self._watches.pop(connection_id, None)

    async def _commandstats(
        self, target: _Server, identity: EngineIdentity, watch: _Watch
    ) -> ParsedInfo | None:
        """INFO commandstats, from which both parts tell whether anything was written since
        the last pass; None when neither part can use it, or when it is refused."""
        for_config = not watch.config_off and identity.capabilities.has_config
        for_users = self._users_gated(identity, watch)
        if not (for_config or for_users):
            return None
        try:
            return await target.client.info("commandstats")
        except EngineResponseError as exc:
            if not is_refusal(exc):
                raise
            watch.config_off = True
            _stopped(target.connection_id, "INFO commandstats", exc.message)
            return None

    @staticmethod
    def _users_gated(identity: EngineIdentity, watch: _Watch) -> bool:
        # Only where ACL subcommands are counted apart: on Redis < 7 `cmdstat_acl` moves with
        # our own ACL LIST and ACL LOG too, so every pass lists the users there.
        has_acl = not watch.acl_off and identity.capabilities.has_acl_log
        return has_acl and not _counts_whole_command(identity)

    async def _user_changes(
        self,
        target: _Server,
        identity: EngineIdentity,
        watch: _Watch,
        commandstats: ParsedInfo | None,
    ) -> list[tuple[str, str]]:
        # Redis < 6 has no ACL, and a user denied ACL LOG is denied ACL LIST too: asking
        # anyway would put our own refusal in the very log the audit poll reports.
        if watch.acl_off or not identity.capabilities.has_acl_log:
            return []
        connection_id = target.connection_id
        # Users change by ACL SETUSER, DELUSER or LOAD, or by a restart with another ACL
        # file: while neither count nor run_id moved, the list is the one already held.
        writes = None
        if commandstats is not None and self._users_gated(identity, watch):
            writes = (self._run_id(connection_id), acl_write_calls(commandstats))
            if watch.users is not None and writes == watch.acl_writes:
                return []
        try:
            reply = await target.client.execute("ACL", "LIST")
        except EngineResponseError as exc:
            if not is_refusal(exc):
                raise
            watch.acl_off = True
            _stopped(connection_id, "ACL LIST", exc.message)
            return []
        users = parse_acl_list(reply)
        previous, watch.users = watch.users, users
        watch.acl_writes = writes
        return [] if previous is None else diff_users(previous, users)

    def _run_id(self, connection_id: str) -> str | None:
        latest = self._live_state.latest(connection_id)
        return None if latest is None else latest.info.get_str("server", "run_id")

    async def _config_changes(
        self,
        target: _Server,
        identity: EngineIdentity,
        watch: _Watch,
        commandstats: ParsedInfo | None,
    ) -> list[tuple[str, str, str]]:
        if watch.config_off or not identity.capabilities.has_config or commandstats is None:
            return []
        whole_command = _counts_whole_command(identity)
        calls = config_set_calls(commandstats, whole_command=whole_command)
        if watch.config is not None and calls == watch.config_set_calls:
            return []
        try:
            reply = await target.client.execute("CONFIG", "GET", "*")
        except EngineResponseError as exc:
            if not is_refusal(exc):
                raise
            watch.config_off = True
            _stopped(target.connection_id, "CONFIG GET", exc.message)
            return []
        # On Redis < 7 our CONFIG GET just added one to the count the next pass reads.
        watch.config_set_calls = calls + 1 if whole_command else calls
        config = parse_config(reply)
        previous, watch.config = watch.config, config
        return [] if previous is None else diff_config(previous, config)


def _replica_limit(watch: _Watch) -> ReplicaBufferLimitFacts | None:
    # For svc_repl_output_buffer_ratio: the scrape reads live state only, never this
    # watch, so each pass hands the pipe the limit its last CONFIG GET read.
    value = watch.config.get("client-output-buffer-limit") if watch.config else None
    limit = replica_hard_limit(value) if value is not None else None
    return None if limit is None else ReplicaBufferLimitFacts(now_ms(), limit)


class _Attribution:
    """Who made this pass's changes: one CLIENT LIST at most, and only when asked."""

    def __init__(self, target: _Server, watch: _Watch, live_state: LiveView) -> None:
        self._target = target
        self._watch = watch
        self._live_state = live_state
        self._clients: list[ClientInfo] | None = None

    async def of(self, writers: frozenset[str]) -> str:
        if self._clients is None:
            self._clients = await self._client_list()
        return modifiers(self._clients, writers)

    async def _client_list(self) -> list[ClientInfo]:
        connection_id = self._target.connection_id
        if self._watch.clients_off:
            return []
        pressure = pressure_reason(self._live_state, connection_id)
        if pressure is not None:
            logger.debug(
                "%s under pressure (%s): changes left unattributed", connection_id, pressure
            )
            return []
        try:
            reply = await self._target.client.execute("CLIENT", "LIST")
        except EngineError as exc:
            # Broader than elsewhere on purpose: the changes are already in the baseline,
            # so failing the pass here would lose their events for a name that is a bonus.
            if isinstance(exc, EngineResponseError) and is_refusal(exc):
                self._watch.clients_off = True
                _stopped(connection_id, "CLIENT LIST", exc.message)
            else:
                logger.debug("%s: CLIENT LIST failed (%s)", connection_id, exc.message)
            return []
        return parse_client_list(reply if isinstance(reply, bytes | str) else text(reply))


# --- pure parts: replies in, facts out ---


def parse_acl_list(reply: Any) -> dict[str, str]:
    """`user <name> <rules...>` lines as name -> rules; other lines are skipped."""
    users: dict[str, str] = {}
    for item in reply if isinstance(reply, list) else []:
        word, _, rest = text(item).partition(" ")
        name, _, rules = rest.partition(" ")
        if word == "user" and name:
            users[name] = rules
    return users


def diff_users(before: dict[str, str], after: dict[str, str]) -> list[tuple[str, str]]:
    """(change_type, user) for every user added, removed or with other rules."""
    changes = [("user_added", u) for u in sorted(after.keys() - before.keys())]
    changes += [("user_removed", u) for u in sorted(before.keys() - after.keys())]
    changes += [
        ("permissions_changed", u)
        for u in sorted(before.keys() & after.keys())
        if before[u] != after[u]
    ]
    return changes


def parse_config(reply: Any) -> dict[str, str]:
    """CONFIG GET as parameter -> value (a RESP3 map or a RESP2 flat list).

    Names and short values are interned: the watch keeps each server's whole
    configuration (about 200 parameters), and across a fleet nearly all of them are the
    same, so a thousand servers share one copy of each instead of holding their own
    (about 24 KB a server).
    """
    items: Iterable[tuple[Any, Any]] = reply.items() if isinstance(reply, dict) else pairs(reply)
    return {_shared(text(name)): _shared(text(value)) for name, value in items}


def _shared(value: str) -> str:
    # A table of our own rather than sys.intern, which keeps strings for the life of the
    # process on some Python versions: this one is bounded, and a value it has no room
    # for (or too long to be worth it) is simply kept unshared.
    shared = _SHARED.get(value)
    if shared is not None:
        return shared
    if len(_SHARED) < _SHARED_MAX and len(value) <= _SHARED_MAX_CHARS:
        _SHARED[value] = value
    return value


def diff_config(before: dict[str, str], after: dict[str, str]) -> list[tuple[str, str, str]]:
    """(key, old, new) per parameter whose value differs; "" for a side where it is absent,
    and MASKED in place of a credential."""
    changes = []
    for key in sorted(before.keys() | after.keys()):
        old, new = before.get(key, ""), after.get(key, "")
        if old != new:
            if is_secret_parameter(key):
                old, new = MASKED, MASKED
            changes.append((key, old, new))
    return changes


def config_set_calls(info: ParsedInfo, *, whole_command: bool) -> int:
    """CONFIG SET calls so far (every CONFIG call when the server counts only whole commands);
    0 when the server has not counted any yet."""
    stats = info.get("commandstats", "cmdstat_config" if whole_command else "cmdstat_config|set")
    calls = stats.get("calls") if isinstance(stats, dict) else None
    return calls if isinstance(calls, int) else 0


def acl_write_calls(info: ParsedInfo) -> int:
    """ACL SETUSER, DELUSER and LOAD calls so far, on a server counting subcommands apart."""
    total = 0
    for name in ("cmdstat_acl|setuser", "cmdstat_acl|deluser", "cmdstat_acl|load"):
        stats = info.get("commandstats", name)
        calls = stats.get("calls") if isinstance(stats, dict) else None
        total += calls if isinstance(calls, int) else 0
    return total


def modifiers(clients: Iterable[ClientInfo], writers: frozenset[str]) -> str:
    """`user@addr` of each client whose last command is one of `writers`, our own aside."""
    found = [
        f"{c.user or 'default'}@{c.addr}"
        for c in clients
        if c.cmd in writers and c.addr and c.name != CLIENT_NAME
    ]
    return ", ".join(found) or UNKNOWN


def _counts_whole_command(identity: EngineIdentity) -> bool:
    # Per-subcommand commandstats (`cmdstat_config|set`) arrived in Redis 7.0; every Valkey has
    # them (it forked from 7.2).
    return identity.type == "redis" and identity.release() < (7, 0, 0)


def _stopped(connection_id: str, command: str, why: str) -> None:
    logger.debug(
        "%s: %s refused, not asked again until the connection is detected afresh (%s)",
        connection_id, command, why,
    )  # fmt: skip
