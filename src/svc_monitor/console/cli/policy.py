"""Which commands the browser CLI runs for whom: an explicit allowlist, deny by default.

Checked on the tokenized command after ASCII upper-casing (never `str.upper()`: it turns
the long s U+017F into `S`, so "\u017fet" would pass as SET). A name that is not plain
ASCII matches nothing, so look-alikes (CONFIG spelt with a Cyrillic U+0421) are refused
as unknown.

Why an allowlist and not the server's command flags: EVAL, EVALSHA and FCALL carry no
WRITE flag although their scripts write, and INFO is in @dangerous, so a flag filter would
be both leaky and over-strict (docs/features/browser-cli.md#what-runs-for-whom).

- READ: what every role may run, whatever SVC_UNSAFE_CLI says.
- NEVER: refused for everyone, admins with SVC_UNSAFE_CLI included, because they would
  hang the socket, hijack or re-shape its server connection, or stop the server.
- Everything else (writes, admin commands, scripts, unknown names) runs only for admins
  and the owner, and only with SVC_UNSAFE_CLI=true.
"""

from dataclasses import dataclass
from enum import StrEnum

from svc_monitor.auth.models import Role


class Kind(StrEnum):
    READ = "read"
    WRITE = "write"  # anything not on the read list: writes, admin commands, unknown names
    NEVER = "never"


@dataclass(frozen=True, slots=True)
class Decision:
    """What the policy says of one command; `name` is "GET" or "CONFIG SET"."""

    name: str
    kind: Kind
    allowed: bool
    reason: str | None  # why it was refused, for the user
    arity: int  # how many leading words `name` spans (1 or 2)


# Commands with subcommands: their name is "COMMAND SUBCOMMAND".
CONTAINERS = frozenset(
    {
        "ACL", "CLIENT", "CLUSTER", "COMMAND", "COMMANDLOG", "CONFIG", "DEBUG", "FUNCTION",
        "LATENCY", "MEMORY", "MODULE", "OBJECT", "PUBSUB", "SCRIPT", "SLOWLOG", "XGROUP",
        "XINFO",
    }
)  # fmt: skip

READ = frozenset(
    {
        # keys and strings
        "GET", "MGET", "STRLEN", "GETRANGE", "SUBSTR", "LCS", "EXISTS", "TYPE", "TTL",
        "PTTL", "EXPIRETIME", "PEXPIRETIME", "SCAN", "DBSIZE", "GETBIT", "BITCOUNT",
        "BITPOS", "BITFIELD_RO", "SORT_RO", "PFCOUNT",
        # hashes
        "HGET", "HMGET", "HGETALL", "HKEYS", "HVALS", "HLEN", "HEXISTS", "HSTRLEN", "HSCAN",
        "HRANDFIELD",
        # lists
        "LRANGE", "LLEN", "LINDEX", "LPOS",
        # sets
        "SMEMBERS", "SISMEMBER", "SMISMEMBER", "SCARD", "SSCAN", "SRANDMEMBER", "SINTER",
        "SUNION", "SDIFF", "SINTERCARD",
        # sorted sets
        "ZRANGE", "ZRANGEBYSCORE", "ZRANGEBYLEX", "ZREVRANGE", "ZREVRANGEBYSCORE",
        "ZREVRANGEBYLEX", "ZCARD", "ZSCORE", "ZMSCORE", "ZRANK", "ZREVRANK", "ZCOUNT",
        "ZLEXCOUNT", "ZSCAN", "ZRANDMEMBER", "ZINTER", "ZUNION", "ZDIFF", "ZINTERCARD",
        # streams (XREAD only without BLOCK: see NEVER)
        "XRANGE", "XREVRANGE", "XLEN", "XREAD", "XPENDING",
        "XINFO STREAM", "XINFO GROUPS", "XINFO CONSUMERS", "XINFO HELP",
        # geo
        "GEOPOS", "GEODIST", "GEOHASH", "GEOSEARCH", "GEORADIUS_RO", "GEORADIUSBYMEMBER_RO",
        # the server
        "INFO", "PING", "ECHO", "ROLE", "TIME", "LASTSAVE",
        "MEMORY USAGE", "MEMORY STATS", "MEMORY DOCTOR", "MEMORY MALLOC-STATS", "MEMORY HELP",
        "OBJECT ENCODING", "OBJECT FREQ", "OBJECT IDLETIME", "OBJECT REFCOUNT", "OBJECT HELP",
        "SLOWLOG GET", "SLOWLOG LEN", "SLOWLOG HELP",
        "COMMANDLOG GET", "COMMANDLOG LEN", "COMMANDLOG HELP",
        "LATENCY LATEST", "LATENCY HISTORY", "LATENCY DOCTOR", "LATENCY GRAPH",
        "LATENCY HISTOGRAM", "LATENCY HELP",
        "CLUSTER INFO", "CLUSTER NODES", "CLUSTER SLOTS", "CLUSTER SHARDS", "CLUSTER MYID",
        "CLUSTER MYSHARDID", "CLUSTER KEYSLOT", "CLUSTER COUNTKEYSINSLOT", "CLUSTER LINKS",
        "CLUSTER SLOT-STATS", "CLUSTER HELP",
        "COMMAND", "COMMAND COUNT", "COMMAND DOCS", "COMMAND INFO", "COMMAND LIST",
        "COMMAND GETKEYS", "COMMAND GETKEYSANDFLAGS", "COMMAND HELP",
        "PUBSUB CHANNELS", "PUBSUB NUMSUB", "PUBSUB NUMPAT", "PUBSUB SHARDCHANNELS",
        "PUBSUB SHARDNUMSUB", "PUBSUB HELP",
        "FUNCTION LIST", "FUNCTION STATS", "SCRIPT EXISTS",
    }
)  # fmt: skip
# Left out on purpose: KEYS (walks the whole keyspace in one call and stalls the server;
# SCAN does the same in steps), EVAL_RO/FCALL_RO (a read-only script can still loop for
# ever and block the server until SCRIPT KILL, which members may not run), DEBUG OBJECT,
# and CONFIG GET / ACL / CLIENT LIST, which can show credentials (requirepass, masterauth).

_HANGS = "it blocks until data arrives and would hold this CLI and its server connection"
_HIJACKS = "it turns the connection into a stream the CLI cannot show as replies"
_STATE = "it changes the state of the CLI's server connection (use the connection switcher)"
_TRANSACTION = "the CLI sends each command on its own, so a transaction cannot span lines"
_STOPS = "it would stop or crash the monitored server"
NEVER: dict[str, str] = {
    # Streams that never end: no reply ever comes back, only pushed messages.
    "MONITOR": f"{_HIJACKS} (the Monitor page shows live commands)",
    "SUBSCRIBE": _HIJACKS,
    "PSUBSCRIBE": _HIJACKS,
    "SSUBSCRIBE": _HIJACKS,
    "UNSUBSCRIBE": _HIJACKS,
    "PUNSUBSCRIBE": _HIJACKS,
    "SUNSUBSCRIBE": _HIJACKS,
    "SYNC": _HIJACKS,
    "PSYNC": _HIJACKS,
    "REPLCONF": _HIJACKS,
    # Blocking commands: they wait (with timeout 0, for ever) for another client.
    "BLPOP": _HANGS,
    "BRPOP": _HANGS,
    "BRPOPLPUSH": _HANGS,
    "BLMOVE": _HANGS,
    "BLMPOP": _HANGS,
    "BZPOPMIN": _HANGS,
    "BZPOPMAX": _HANGS,
    "BZMPOP": _HANGS,
    "WAIT": "it blocks until replicas acknowledge writes",
    "WAITAOF": "it blocks until writes reach the append-only file",
    # Connection state: the CLI's client may hold more than one connection to the server
    # and reconnects on its own, so a SELECT or AUTH would apply to some commands only.
    "SELECT": _STATE,
    "AUTH": _STATE,
    "HELLO": _STATE,
    "RESET": _STATE,
    "QUIT": _STATE,
    "READONLY": _STATE,
    "READWRITE": _STATE,
    "CLIENT SETNAME": _STATE,
    "CLIENT SETINFO": _STATE,
    "CLIENT REPLY": "with replies off, every later answer of this CLI would be lost",
    "CLIENT TRACKING": _STATE,
    "CLIENT CACHING": _STATE,
    "CLIENT NO-EVICT": _STATE,
    "CLIENT NO-TOUCH": _STATE,
    "CLIENT CAPA": _STATE,
    "MULTI": _TRANSACTION,
    "EXEC": _TRANSACTION,
    "DISCARD": _TRANSACTION,
    "WATCH": _TRANSACTION,
    "UNWATCH": _TRANSACTION,
    # It stops every client of the server, our own polling included.
    "CLIENT PAUSE": "it stops every client of the server, svc-monitor's polling included",
    "SHUTDOWN": _STOPS,
    "DEBUG SEGFAULT": _STOPS,
    "DEBUG PANIC": _STOPS,
    "DEBUG RESTART": _STOPS,
    "DEBUG CRASH-AND-RECOVER": _STOPS,
}
# Options that make an otherwise allowed command block (XREAD ... BLOCK ms STREAMS ...).
_BLOCKING_OPTION = {"XREAD": _HANGS, "XREADGROUP": _HANGS}
# Whole families with no read subcommand: the refusal names the family.
_FAMILIES_REFUSED = frozenset({"CONFIG", "ACL", "DEBUG", "CLIENT", "MODULE", "XGROUP"})
_NAME_SHOWN_MAX = 64


def ascii_upper(word: bytes) -> str | None:
    """The word upper-cased in ASCII only; None unless it is a short, printable ASCII word
    (nothing else can name a command, so nothing else needs a message of its own)."""
    if not word or len(word) > _NAME_SHOWN_MAX or not all(0x20 < b < 0x7F for b in word):
        return None
    return word.upper().decode("ascii")


def command_name(words: list[bytes]) -> tuple[str, int]:
    """The name the policy matches ("GET", "CONFIG SET") and how many words it spans."""
    first = ascii_upper(words[0])
    if first is None:
        return _shown(words[0]), 1
    if first in CONTAINERS and len(words) > 1:
        sub = ascii_upper(words[1])
        if sub is not None:
            return f"{first} {sub}", 2
        return f"{first} {_shown(words[1])}", 2
    return first, 1


def decide(words: list[bytes], *, role: Role | None, unsafe: bool) -> Decision:
    """May `role` run this command? `role` None: user control is off (admin policy)."""
    name, arity = command_name(words)
    never = NEVER.get(name) or _blocking(name, words)
    if never is not None:
        return Decision(
            name, Kind.NEVER, False, f"{name} is not allowed in the CLI: {never}", arity
        )
    if name in READ:
        return Decision(name, Kind.READ, True, None, arity)
    if role is not None and not role.at_least(Role.ADMIN):
        return Decision(
            name,
            Kind.WRITE,
            False,
            f"{_family(name)} is not allowed for members: the CLI is read-only for the "
            f"member role{_hint(name)}",
            arity,
        )
    if not unsafe:
        return Decision(
            name,
            Kind.WRITE,
            False,
            f"{_family(name)} is not allowed: the CLI runs read commands only; set "
            f"SVC_UNSAFE_CLI=true to allow write commands for admins{_hint(name)}",
            arity,
        )
    return Decision(name, Kind.WRITE, True, None, arity)


def _blocking(name: str, words: list[bytes]) -> str | None:
    reason = _BLOCKING_OPTION.get(name)
    if reason is None:
        return None
    for word in words[1:]:
        option = ascii_upper(word)
        if option == "STREAMS":  # keys and ids follow: a key may be called "block"
            return None
        if option == "BLOCK":
            return f"{reason} (drop BLOCK to read what is there now)"
    return None


def _family(name: str) -> str:
    first = name.split(" ", 1)[0]
    return first if first in _FAMILIES_REFUSED else name


def _hint(name: str) -> str:
    if name == "KEYS":
        return " (SCAN lists keys without blocking the server)"
    if name in ("SORT", "BITFIELD", "GEORADIUS", "GEORADIUSBYMEMBER"):
        return f" ({name}_RO is the read-only form)"
    return ""


def _shown(word: bytes) -> str:
    """A word as it may appear in a message: printable, and not too long."""
    if not word:
        return '""'
    text = word[:_NAME_SHOWN_MAX].decode("utf-8", errors="replace")
    text = "".join(c if c.isprintable() else "\ufffd" for c in text)
    return text + ("\u2026" if len(word) > _NAME_SHOWN_MAX else "")
