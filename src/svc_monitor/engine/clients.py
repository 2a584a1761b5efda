"""CLIENT LIST replies (and ACL LOG `client-info` strings) parsed into typed fields.

One line per client: `key=value` pairs separated by single spaces. Values cannot hold a
space on any engine we know (CLIENT SETNAME and CLIENT SETINFO refuse them), but a
token without `=` is still glued to the previous value rather than dropped, so an odd
value from some fork costs one field, not the line. Known fields are typed; a number
that does not parse is None; every field not typed here is kept as text in `extra`
(Valkey 8 adds `capa`, `tot-net-in` ...; Redis 7 `ssub`, `rbs` ...).
"""

from collections.abc import Iterable
from dataclasses import dataclass, field

_INT_FIELDS = (
    "id",
    "db",
    "age",
    "idle",
    "sub",
    "psub",
    "multi",
    "qbuf",
    "qbuf-free",
    "obl",
    "oll",
    "omem",
    "tot-mem",
)
_TEXT_FIELDS = ("addr", "laddr", "name", "user", "cmd", "flags", "lib-name")


@dataclass(frozen=True, slots=True)
class ClientInfo:
    """One connected client as CLIENT LIST describes it. Missing fields are None."""

    id: int | None = None
    addr: str | None = None
    laddr: str | None = None
    name: str | None = None
    user: str | None = None
    db: int | None = None
    cmd: str | None = None
    age: int | None = None  # seconds
    idle: int | None = None  # seconds
    flags: str | None = None
    sub: int | None = None
    psub: int | None = None
    multi: int | None = None
    qbuf: int | None = None
    qbuf_free: int | None = None
    obl: int | None = None
    oll: int | None = None
    omem: int | None = None
    tot_mem: int | None = None
    lib_name: str | None = None
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def ip(self) -> str | None:
        """The host part of `addr` (IPv6 addresses keep their colons)."""
        if not self.addr:
            return None
        host, sep, _ = self.addr.rpartition(":")
        return host if sep else self.addr


def parse_client_line(line: str) -> dict[str, str]:
    """`key=value ...` as a dict of strings; later duplicates win."""
    pairs: dict[str, str] = {}
    last: str | None = None
    for token in line.strip().split(" "):
        if not token:
            continue
        key, sep, value = token.partition("=")
        if sep and key:
            pairs[key] = value
            last = key
        elif last is not None:
            pairs[last] = f"{pairs[last]} {token}"
    return pairs


def client_info(pairs: dict[str, str]) -> ClientInfo:
    values: dict[str, object] = {}
    for name in _INT_FIELDS:
        if name in pairs:
            values[name.replace("-", "_")] = _int(pairs[name])
    for name in _TEXT_FIELDS:
        if name in pairs:
            values[name.replace("-", "_")] = pairs[name]
    known = set(_INT_FIELDS) | set(_TEXT_FIELDS)
    extra = {k: v for k, v in pairs.items() if k not in known}
    return ClientInfo(**values, extra=extra)  # type: ignore[arg-type]


def parse_client_list(reply: bytes | str | Iterable[str]) -> list[ClientInfo]:
    """Every well-formed line of a CLIENT LIST reply; lines without an `id=` are junk."""
    if isinstance(reply, bytes):
        lines: Iterable[str] = reply.decode("utf-8", errors="replace").splitlines()
    elif isinstance(reply, str):
        lines = reply.splitlines()
    else:
        lines = reply
    clients = []
    for line in lines:
        pairs = parse_client_line(line)
        info = client_info(pairs)
        if info.id is not None:
            clients.append(info)
    return clients


def _int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None
