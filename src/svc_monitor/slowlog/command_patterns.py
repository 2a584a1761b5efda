"""Turning a logged command into a pattern, so a thousand `GET user:1001` become one row.

The rule, in order:

1. The command is the first argument, upper-cased (`UNKNOWN` when there is none).
   Container commands (CLIENT, CONFIG, CLUSTER, ACL ...) keep their subcommand:
   `CLIENT SETNAME`, never the name that was set.
2. Only key arguments are kept; values, scores, options and script bodies are
   dropped (`SET user:1 <value> EX 60` -> `SET user:*`). Which arguments are keys:
   - commands without keys (PING, INFO, SCAN, SELECT, AUTH ...): none;
   - multi-key commands (DEL, MGET, EXISTS, SUNION ...): every argument;
   - MSET/MSETNX: every other argument; BLPOP and friends: all but the timeout;
   - RENAME, LMOVE, SMOVE, COPY ...: the first two;
   - EVAL/EVALSHA/FCALL (and _RO): the `numkeys` keys after the script;
   - OBJECT, MEMORY USAGE, XINFO, XGROUP: the argument after the subcommand;
   - anything else: the first argument after the command.
   Repeated key patterns are listed once, at most three, then `...`.
3. Inside a key, the variable parts become `*`: a UUID, a hex run of 8 or more
   characters holding a digit (hashes, object ids), and any run of digits
   (`user:1001` -> `user:*`, `order-17/items` -> `order-*/items`, `v2` -> `v*`).
   A key that is not text (it held bytes that are not UTF-8, or control
   characters) becomes `*`; a pattern key is cut at 100 characters.
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from svc_monitor.engine.slowlog import LogEntry
from svc_monitor.slowlog.schemas import CommandStats, PatternAnalysis, PatternExample, PatternStats

UNKNOWN = "UNKNOWN"
MAX_KEYS_SHOWN = 3
MAX_KEY_LENGTH = 100
EXAMPLES = 3
EXAMPLE_ARGS = 16
EXAMPLE_ARG_CHARS = 128


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_HEX = re.compile(r"(?<![0-9A-Za-z])(?=[A-Fa-f]*[0-9])[0-9a-fA-F]{8,}(?![0-9A-Za-z])")
_DIGITS = re.compile(r"[0-9]+")
_STARS = re.compile(r"\*{2,}")
_NOT_TEXT = re.compile(r"[\x00-\x1f\x7f\ufffd]")

_NO_KEYS = _words(
    """PING ECHO INFO DBSIZE SELECT AUTH HELLO QUIT RESET TIME LASTSAVE SAVE BGSAVE
    BGREWRITEAOF FLUSHALL FLUSHDB MULTI EXEC DISCARD UNWATCH SCAN RANDOMKEY WAIT WAITAOF
    SWAPDB SHUTDOWN MONITOR READONLY READWRITE ROLE REPLICAOF SLAVEOF SYNC PSYNC
    REPLCONF FAILOVER LOLWUT"""
)
_SUBCOMMAND = _words(
    """CLIENT CONFIG CLUSTER ACL COMMAND SLOWLOG COMMANDLOG LATENCY MODULE FUNCTION SCRIPT
    DEBUG PUBSUB"""
)
_SUBCOMMAND_THEN_KEY = frozenset({"OBJECT", "MEMORY", "XINFO", "XGROUP"})
_ALL_KEYS = _words(
    """DEL UNLINK EXISTS TOUCH MGET WATCH SINTER SUNION SDIFF SINTERSTORE SUNIONSTORE
    SDIFFSTORE PFCOUNT PFMERGE"""
)
_TWO_KEYS = frozenset({"RENAME", "RENAMENX", "RPOPLPUSH", "BRPOPLPUSH", "LMOVE", "BLMOVE"})
_TWO_KEYS |= {"SMOVE", "COPY", "GEOSEARCHSTORE", "ZRANGESTORE"}
_ALL_BUT_LAST = frozenset({"BLPOP", "BRPOP", "BZPOPMIN", "BZPOPMAX"})
_PAIRS = frozenset({"MSET", "MSETNX"})
_SCRIPTS = frozenset({"EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO"})


def normalize_key(key: str) -> str:
    """A key with its variable parts replaced by `*` (rule 3 above)."""
    if _NOT_TEXT.search(key):
        return "*"
    key = _UUID.sub("*", key)
    key = _HEX.sub("*", key)
    key = _DIGITS.sub("*", key)
    key = _STARS.sub("*", key)
    if len(key) > MAX_KEY_LENGTH:
        key = key[:MAX_KEY_LENGTH] + "..."
    return key


def command_pattern(args: Sequence[str]) -> str:
    """The pattern of one logged command: its name (and subcommand) and its key patterns."""
    if not args:
        return UNKNOWN
    command = args[0].upper()
    rest = list(args[1:])
    if command in _SUBCOMMAND:
        return f"{command} {rest[0].upper()}" if rest else command
    if command in _SUBCOMMAND_THEN_KEY and rest:
        command = f"{command} {rest[0].upper()}"
        rest = rest[1:2]
    else:
        rest = _key_arguments(command, rest)
    keys: list[str] = []
    for key in (normalize_key(k) for k in rest):
        if key not in keys:
            keys.append(key)
    if len(keys) > MAX_KEYS_SHOWN:
        keys = [*keys[:MAX_KEYS_SHOWN], "..."]
    return " ".join([command, *keys])


def _key_arguments(command: str, rest: list[str]) -> list[str]:
    if command in _NO_KEYS:
        return []
    if command in _ALL_KEYS:
        return rest
    if command in _PAIRS:
        return rest[::2]
    if command in _ALL_BUT_LAST:
        return rest[:-1]
    if command in _TWO_KEYS:
        return rest[:2]
    if command in _SCRIPTS:
        try:
            numkeys = int(rest[1])
        except (IndexError, ValueError):
            return []
        return rest[2 : 2 + max(0, numkeys)]
    return rest[:1]


@dataclass(slots=True)
class _Group:
    command: str
    durations: list[int] = field(default_factory=list)
    examples: list[LogEntry] = field(default_factory=list)


def analyze(entries: Sequence[LogEntry], *, analyzed_at: int) -> PatternAnalysis:
    """Entries (newest first) grouped by pattern and by command, busiest first."""
    total = len(entries)
    patterns: dict[str, _Group] = {}
    commands: dict[str, list[int]] = {}
    for entry in entries:
        group = patterns.setdefault(command_pattern(entry.args), _Group(entry.command or UNKNOWN))
        group.durations.append(entry.duration)
        if len(group.examples) < EXAMPLES:
            group.examples.append(entry)
        commands.setdefault(entry.command or UNKNOWN, []).append(entry.duration)
    return PatternAnalysis(
        totalEntries=total,
        analyzedAt=analyzed_at,
        patterns=sorted(
            (_pattern_stats(p, g, total) for p, g in patterns.items()),
            key=lambda s: (-s.count, -s.totalDuration, s.pattern),
        ),
        byCommand=sorted(
            (
                CommandStats(
                    command=c,
                    count=len(d),
                    percentage=_share(len(d), total),
                    avgDuration=round(sum(d) / len(d), 2),
                )
                for c, d in commands.items()
            ),
            key=lambda s: (-s.count, s.command),
        ),
    )


def _pattern_stats(pattern: str, group: _Group, total: int) -> PatternStats:
    durations = group.durations
    return PatternStats(
        pattern=pattern,
        command=group.command,
        count=len(durations),
        percentage=_share(len(durations), total),
        avgDuration=round(sum(durations) / len(durations), 2),
        maxDuration=max(durations),
        minDuration=min(durations),
        totalDuration=sum(durations),
        examples=[
            PatternExample(
                id=e.id,
                startedAt=e.started_at_ms,
                duration=e.duration,
                args=[a[:EXAMPLE_ARG_CHARS] for a in e.args[:EXAMPLE_ARGS]],
                clientAddress=e.client_address,
            )
            for e in group.examples
        ],
    )


def _share(count: int, total: int) -> float:
    return round(100 * count / total, 2) if total else 0.0
