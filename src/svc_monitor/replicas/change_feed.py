"""Changes made on one replica reach every replica sharing the storage within a second.

A replica that changes a connection, the runtime settings, a webhook or the offline
licence sends one PostgreSQL NOTIFY; every other replica LISTENs on one connection held
aside and applies the change as if it were made locally: a ConnectionsChanged or
RuntimeSettingsChanged on its own bus (the poll supervisor reconciles at once, the
dispatcher drops what it knew of the connection), or a topic's reload (the webhook list,
the licence). Without it they would learn of it on their next periodic reload, seconds
later (a minute for the licence).

A listener connection that drops loses what was sent meanwhile, so after reconnecting
the replica reloads everything once. Memory and SQLite storage serve one process and
Turso has no LISTEN: there the feed does nothing (Turso replicas reload periodically).
"""

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable

from svc_monitor.events import (
    ConnectionsChanged,
    Event,
    EventBus,
    RuntimeSettingsChanged,
    Subscription,
)
from svc_monitor.storage.database import Database

logger = logging.getLogger(__name__)

CHANNEL = "svc_monitor_changes"
# How often the listener connection is checked, and how long to wait before reconnecting.
CHECK_EVERY_S = 5.0
RECONNECT_AFTER_S = 1.0
CONNECTIONS, SETTINGS = "connections", "settings"
Reload = Callable[[], Awaitable[None]]


class ChangeFeed:
    def __init__(self, db: Database, bus: EventBus, replica_id: str, *, shared: bool) -> None:
        self._db = db
        self._bus = bus
        self._replica_id = replica_id
        self.shared = shared  # False: one process on this storage, nothing to tell
        self._reloads: dict[str, list[Reload]] = {}
        self._incoming: asyncio.Queue[str] = asyncio.Queue()
        self._sending: set[asyncio.Task[None]] = set()

    def on(self, topic: str, reload: Reload) -> None:
        """Run `reload` when another replica announces a change of `topic`."""
        self._reloads.setdefault(topic, []).append(reload)

    def announce(self, topic: str, **details: str) -> None:
        """Tell the other replicas (in the background: a change never waits on it)."""
        if not self.shared:
            return
        payload = json.dumps({"from": self._replica_id, "topic": topic, **details})
        task = asyncio.get_running_loop().create_task(self._send(payload))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def run(self) -> None:
        """Relay this replica's changes out and the others' in, until cancelled."""
        if not self.shared:
            return
        relay = self._bus.subscribe(
            "change-feed", maxsize=1000, kinds=(ConnectionsChanged, RuntimeSettingsChanged)
        )
        outgoing = asyncio.create_task(self._relay_out(relay), name="change-feed-out")
        try:
            first = True
            while True:
                try:
                    await self._listen(catch_up=not first)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # storage down: reconnect, then catch up
                    logger.warning("change feed: listener lost (%s); reconnecting", exc)
                first = False
                await asyncio.sleep(RECONNECT_AFTER_S)
        finally:
            outgoing.cancel()
            self._bus.unsubscribe(relay)
            await asyncio.gather(outgoing, *self._sending, return_exceptions=True)

    # --- internals ---

    async def _listen(self, *, catch_up: bool) -> None:
        async with self._db.listening(CHANNEL, self._incoming.put_nowait) as alive:
            if catch_up:
                await self._reload_everything()
            while True:
                get = asyncio.ensure_future(self._incoming.get())
                try:
                    done, _ = await asyncio.wait({get}, timeout=CHECK_EVERY_S)
                finally:
                    get.cancel()  # a finished get keeps its result
                if done:
                    await self._apply(get.result())
                else:
                    await alive()  # quiet for a while: is the listener still there?

    async def _relay_out(self, relay: Subscription) -> None:
        while True:
            event = await relay.get()
            if isinstance(event, ConnectionsChanged) and event.from_replica is None:
                self.announce(CONNECTIONS, connection_id=event.connection_id)
            elif isinstance(event, RuntimeSettingsChanged) and event.from_replica is None:
                self.announce(SETTINGS)

    async def _send(self, payload: str) -> None:
        try:
            await self._db.notify(CHANNEL, payload)
        except Exception as exc:  # the others reload periodically anyway
            logger.warning("change feed: could not tell the other replicas: %s", exc)

    async def _apply(self, payload: str) -> None:
        try:
            message = json.loads(payload)
            sender, topic = str(message["from"]), str(message["topic"])
        except (ValueError, KeyError, TypeError):
            logger.warning("change feed: ignored a message it cannot read")
            return
        if sender == self._replica_id:
            return  # our own, already applied
        event: Event | None = None
        if topic == CONNECTIONS:
            event = ConnectionsChanged(
                connection_id=str(message.get("connection_id", "")), from_replica=sender
            )
        elif topic == SETTINGS:
            event = RuntimeSettingsChanged(from_replica=sender)
        if event is not None:
            self._bus.publish(event)
        for reload in self._reloads.get(topic, ()):
            await self._reload(topic, reload)

    async def _reload_everything(self) -> None:
        self._bus.publish(ConnectionsChanged(connection_id="", from_replica="change-feed"))
        self._bus.publish(RuntimeSettingsChanged(from_replica="change-feed"))
        for topic, reloads in self._reloads.items():
            for reload in reloads:
                await self._reload(topic, reload)

    @staticmethod
    async def _reload(topic: str, reload: Reload) -> None:
        try:
            await reload()
        except Exception as exc:  # storage hiccup: the periodic reload still comes
            logger.warning("change feed: reloading %s failed: %s", topic, exc)
