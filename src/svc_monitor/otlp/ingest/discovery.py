"""Instances that push metrics over OTLP but are not registered: offered for registration.

Memory only (a restart forgets them): at most 200, each forgotten 24 h after its last
push; Dismiss hides one for 24 h; registering it removes it.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

MAX_DISCOVERED = 200
FORGET_AFTER_MS = 24 * 3_600_000
DISMISS_FOR_MS = 24 * 3_600_000
# A pusher chooses its service.name: keep what a person can read, not what it sends.
MAX_NAME_CHARS = 256


@dataclass(frozen=True, slots=True)
class DiscoveredInstance:
    name: str | None  # the pusher's `service.name`, when it sends one
    host: str
    port: int
    first_seen_ms: int
    last_seen_ms: int

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


class DiscoveredInstances:
    """Unregistered pushers by address, and the addresses dismissed for a while."""

    def __init__(self, *, enabled: bool = True, clock: Callable[[], float] = time.time) -> None:
        self.enabled = enabled
        self._clock = clock
        self._seen: dict[str, DiscoveredInstance] = {}
        self._dismissed: dict[str, int] = {}  # address -> until ms

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    def saw(self, host: str, port: int, name: str | None) -> None:
        if not self.enabled:
            return
        now = self._now_ms()
        address = f"{host.lower()}:{port}"
        name = name[:MAX_NAME_CHARS] if name else None
        known = self._seen.get(address)
        if known is not None:
            self._seen[address] = replace(known, last_seen_ms=now, name=name or known.name)
            return
        self._expire(now)
        if len(self._seen) >= MAX_DISCOVERED:
            return  # full of live pushers: a newcomer waits for a slot
        self._seen[address] = DiscoveredInstance(name, host, port, now, now)

    def visible(self) -> list[DiscoveredInstance]:
        """Recently seen, not dismissed; most recent first."""
        now = self._now_ms()
        self._expire(now)
        shown = [d for a, d in self._seen.items() if self._dismissed.get(a, 0) <= now]
        return sorted(shown, key=lambda d: -d.last_seen_ms)

    def dismiss(self, address: str) -> bool:
        key = address.strip().lower()
        if key not in self._seen:
            return False
        self._dismissed[key] = self._now_ms() + DISMISS_FOR_MS
        return True

    def registered(self, host: str, port: int) -> None:
        address = f"{host.lower()}:{port}"
        self._seen.pop(address, None)
        self._dismissed.pop(address, None)

    def _expire(self, now: int) -> None:
        for address in [
            a for a, d in self._seen.items() if now - d.last_seen_ms >= FORGET_AFTER_MS
        ]:
            del self._seen[address]
        for address in [a for a, until in self._dismissed.items() if until <= now]:
            del self._dismissed[address]
