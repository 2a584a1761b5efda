"""Sessions and members ended here or on another replica, refused before the cookie's
30 s recheck would notice.

The session cookie caches who its holder is for RECHECK_AFTER_S, so a sign-out or a
member's removal would otherwise reach a replica that did not make it only at the next
recheck. Each end is written to `auth_revocations`; every replica on shared storage
reads the new rows every SYNC_EVERY_S (one indexed query), and at startup all rows still
within a session's lifetime, so a session ended before a restart stays ended.
With memory storage there is one process and nothing to read.
"""

import asyncio
import logging
import time
from collections.abc import Callable

from svc_monitor.auth.sessions import SESSION_LIFETIME_S
from svc_monitor.auth.store import AuthStore

logger = logging.getLogger(__name__)

SYNC_EVERY_S = 2.0  # how late another replica may honour an ended session


class Revocations:
    def __init__(
        self, store: AuthStore, *, shared: bool, clock: Callable[[], float] = time.time
    ) -> None:
        self._store = store
        self._shared = shared
        self._clock = clock
        # id -> when it ended (epoch s): kept for a session's lifetime, then forgotten,
        # since no cookie that old is accepted anyway.
        self._sessions: dict[str, float] = {}
        self._users: dict[str, float] = {}
        self._last_id = 0

    def ended(self, *, session_id: str, user_id: str) -> bool:
        return session_id in self._sessions or user_id in self._users

    def forget_session(self, session_id: str) -> None:
        """A recheck found the session gone: refuse its cookie from now on (here only)."""
        self._sessions[session_id] = self._clock()

    async def end_session(self, session_id: str, user_id: str) -> None:
        self._sessions[session_id] = self._clock()
        await self._store.add_revocation(session_id=session_id, user_id=None, at=self._now_ms())

    async def end_user(self, user_id: str) -> None:
        """Every session of a removed member, on every replica."""
        self._users[user_id] = self._clock()
        await self._store.add_revocation(session_id=None, user_id=user_id, at=self._now_ms())

    async def sync(self) -> None:
        """Take in what other replicas ended since the last look."""
        for row_id, session_id, user_id, at in await self._store.revocations_after(self._last_id):
            if session_id:
                self._sessions.setdefault(session_id, at / 1000)
            if user_id:
                self._users.setdefault(user_id, at / 1000)
            self._last_id = max(self._last_id, row_id)

    async def run_sync(self) -> None:
        if not self._shared:
            return
        while True:
            try:
                await self.sync()
            except Exception:  # storage away for a moment: the 30 s recheck still holds
                logger.warning("could not read ended sessions; retrying", exc_info=True)
            await asyncio.sleep(SYNC_EVERY_S)

    async def prune(self) -> None:
        oldest = self._clock() - SESSION_LIFETIME_S
        for ended in (self._sessions, self._users):
            for key in [k for k, at in ended.items() if at < oldest]:
                del ended[key]
        await self._store.prune_revocations(older_than=int(oldest * 1000))

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)
