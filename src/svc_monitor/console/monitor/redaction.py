"""MONITOR_REDACT_VALUES: keep command names and key names, replace every other argument.

Which arguments are keys is decided from the command name alone, from the small tables
below: asking the server (COMMAND GETKEYS) would cost a round trip per captured line.
The default is "the first argument is the key", right for most data commands; the tables
cover the common exceptions. Anything not known to be a key or a sub-command is replaced,
so a wrong guess hides a key name, never shows a value.

The engines already replace AUTH and HELLO credentials with "(redacted)" themselves
(and keep admin commands such as CONFIG out of MONITOR entirely); that text is kept.
"""

from dataclasses import replace

from svc_monitor.console.monitor.models import MonitorLine

MARKER = "(redacted)"
UNPARSED = "(unparsed line redacted)"

# Every argument is a key (or a channel name, which is a name, not a value).
_ALL_NAMES = frozenset(
    {
        "DEL", "UNLINK", "EXISTS", "TOUCH", "MGET", "WATCH", "SINTER", "SUNION", "SDIFF",
        "SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE", "PFCOUNT", "PFMERGE",
        "SUBSCRIBE", "UNSUBSCRIBE", "PSUBSCRIBE", "PUNSUBSCRIBE", "SSUBSCRIBE", "SUNSUBSCRIBE",
    }
)  # fmt: skip
# The first n arguments are keys.
_LEADING_KEYS = {
    "RENAME": 2, "RENAMENX": 2, "COPY": 2, "SMOVE": 2, "LMOVE": 2, "BLMOVE": 2,
    "RPOPLPUSH": 2, "BRPOPLPUSH": 2, "GEOSEARCHSTORE": 2, "ZRANGESTORE": 2,
}  # fmt: skip
# Key, value, key, value ...
_PAIRS = frozenset({"MSET", "MSETNX"})
# Arguments that are names or numbers about the server, never data: kept whole.
_KEEP_ALL = frozenset({"INFO", "SELECT", "SCAN", "KEYS", "DBSIZE", "WAIT", "TYPE", "TTL", "PTTL"})
# No key at all: every argument replaced.
_NO_KEYS = frozenset({"PING", "ECHO", "AUTH", "HELLO", "PUBLISH", "SPUBLISH", "SWAPDB"})
# Position of `numkeys` and whether it is preceded by a key (ZUNIONSTORE dest numkeys ...).
_NUMKEYS = {
    "EVAL": 1, "EVALSHA": 1, "EVAL_RO": 1, "EVALSHA_RO": 1, "FCALL": 1, "FCALL_RO": 1,
    "ZUNION": 0, "ZINTER": 0, "ZDIFF": 0, "ZINTERCARD": 0, "SINTERCARD": 0,
    "LMPOP": 0, "ZMPOP": 0, "BLMPOP": 1, "BZMPOP": 1,
}  # fmt: skip
_DEST_NUMKEYS = frozenset({"ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE"})
# Container commands: the first argument is a sub-command, kept.
_CONTAINERS = frozenset(
    {
        "CLIENT", "CONFIG", "CLUSTER", "COMMAND", "ACL", "DEBUG", "MEMORY", "OBJECT", "SCRIPT",
        "FUNCTION", "SLOWLOG", "COMMANDLOG", "LATENCY", "MODULE", "PUBSUB", "XINFO", "XGROUP",
    }
)  # fmt: skip
# ... and for these the argument after the sub-command is a key (OBJECT ENCODING k).
_CONTAINER_KEYED = frozenset({"OBJECT", "MEMORY", "XINFO", "XGROUP"})


def redact_line(line: MonitorLine) -> MonitorLine:
    """The line with every value replaced by MARKER; names and the command kept."""
    if line.command is None:
        return replace(line, raw=UNPARSED) if line.raw is not None else line
    kept = _kept_positions(line.command, line.args)
    return replace(line, args=tuple(a if i in kept else MARKER for i, a in enumerate(line.args)))


def _kept_positions(command: str, args: tuple[str, ...]) -> set[int]:
    count = len(args)
    if command in _KEEP_ALL or command in _ALL_NAMES:
        return set(range(count))
    if command in _NO_KEYS:
        return set()
    if command in _PAIRS:
        return set(range(0, count, 2))
    if command in _LEADING_KEYS:
        return set(range(min(count, _LEADING_KEYS[command])))
    if command in _NUMKEYS:
        return _numkeys(args, _NUMKEYS[command])
    if command in _DEST_NUMKEYS:
        return {0} | _numkeys(args, 1) if count else set()
    if command in _CONTAINERS:
        return {0, 1} if command in _CONTAINER_KEYED else {0}
    return {0}


def _numkeys(args: tuple[str, ...], position: int) -> set[int]:
    """`numkeys` at `position` (kept: a count), then that many keys."""
    if position >= len(args) or not args[position].isdigit():
        return set()
    keys = int(args[position]) if len(args[position]) < 7 else 0
    return {position, *range(position + 1, min(len(args), position + 1 + keys))}
