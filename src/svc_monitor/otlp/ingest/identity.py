"""Which instance a pushed ResourceMetrics is about, and the push connection it belongs to.

Identity (docs/features/otlp-push-and-traces.md#which-connection-a-payload-is-for):
1. `service.instance.id` as `host:port` (`[::1]:6379` too), or the host-port form of
   Valkey Admin's node ids, `sanitize(host + "-" + port)`: the port is after the last
   `-`, and the rest is compared with a registered host sanitised the same way.
2. Else `server.address` + `server.port` (the port a string, as the Collector sends it,
   or an int, as semconv says).
3. Else unidentified. An id that parses as neither form (the OTel SDK's random UUID)
   falls back to 2 like a missing one.
"""

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from svc_monitor.connections.models import Connection

if TYPE_CHECKING:
    from opentelemetry.proto.common.v1.common_pb2 import KeyValue

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
# A port as people write one: no sign, no leading zero, at most five digits.
_PORT = re.compile(r"[1-9][0-9]{0,4}")


@dataclass(frozen=True, slots=True)
class PushedAddress:
    """A pushed instance's address. `sanitized` marks the Valkey Admin form, whose host
    lost its dots and colons and so matches registered hosts only after sanitising."""

    host: str
    port: int
    sanitized: bool = False

    @property
    def text(self) -> str:
        return f"{self.host}:{self.port}"

    def key(self) -> str:
        return (
            sanitized_key(self.host, self.port)
            if self.sanitized
            else exact_key(self.host, self.port)
        )


def exact_key(host: str, port: int) -> str:
    return f"{host.lower()}:{port}"


def sanitized_key(host: str, port: int) -> str:
    return f"{_UNSAFE.sub('-', host).lower()}-{port}"


def resource_address(attributes: Iterable["KeyValue"]) -> PushedAddress | None:
    instance_id = server_address = server_port = None
    for attribute in attributes:
        key = attribute.key
        if key == "service.instance.id":
            instance_id = attribute.value.string_value
        elif key == "server.address":
            server_address = attribute.value.string_value
        elif key == "server.port":
            value = attribute.value
            kind = value.WhichOneof("value")
            if kind == "int_value":
                server_port = str(value.int_value)
            elif kind == "string_value":
                server_port = value.string_value.strip()
    if instance_id and (parsed := parse_instance_id(instance_id)) is not None:
        return _usable(parsed)
    if server_address and server_port and _PORT.fullmatch(server_port):
        port = int(server_port)
        if port <= 65535:
            return _usable(PushedAddress(_unbracket(server_address.strip()), port))
    return None


def parse_instance_id(text: str) -> PushedAddress | None:
    text = text.strip()
    host, colon, port_text = text.rpartition(":")
    if colon:
        if host and _PORT.fullmatch(port_text) and int(port_text) <= 65535:
            return PushedAddress(_unbracket(host), int(port_text))
        return None
    host, dash, port_text = text.rpartition("-")
    valid_port = bool(_PORT.fullmatch(port_text)) and int(port_text or 0) <= 65535
    if dash and host and valid_port and _UNSAFE.search(host) is None:
        return PushedAddress(host, int(port_text), sanitized=True)
    return None


def _unbracket(host: str) -> str:
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


# The longest DNS name: a longer "host" names nothing we could ever register.
MAX_HOST_CHARS = 253


def _usable(address: PushedAddress) -> PushedAddress | None:
    return address if 0 < len(address.host) <= MAX_HOST_CHARS else None


class AddressBook:
    """Registered connections by the keys a pushed address can take: looked up once per
    ResourceMetrics, rebuilt whenever the registry changes."""

    def __init__(self, connections: Iterable[Connection] = ()) -> None:
        self._by_key: dict[str, Connection] = {}
        for connection in connections:
            for key in (
                exact_key(connection.host, connection.port),
                sanitized_key(connection.host, connection.port),
            ):
                # A push connection wins a shared key: it is the one that expects points.
                current = self._by_key.get(key)
                if current is None or (connection.pushed and not current.pushed):
                    self._by_key[key] = connection

    def find(self, address: PushedAddress) -> Connection | None:
        return self._by_key.get(address.key())
