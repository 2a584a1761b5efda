"""Sessions, members and API tokens ended here or on another replica, refused before the
30 s recheck would notice.

The session cookie caches who its holder is for RECHECK_AFTER_S, and each replica caches
a token's user for as long, so a sign-out, a member's removal or a token's revocation
would otherwise reach a replica that did not make it only at the next
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
        self._tokens: dict[str, float] = {}
        self._last_id = 0

    def ended(self, *, session_id: str, user_id: str) -> bool:
        return session_id in self._sessions or user_id in self._users

    def token_ended(self, *, token_id: str, user_id: str) -> bool:
        """The token was revoked, or its user removed."""
        return token_id in self._tokens or user_id in self._users

    def forget_session(self, session_id: str) -> None:
        """A recheck found the session gone: refuse its cookie from now on (here only)."""
        self._sessions[session_id] = self._clock()

    async def end_session(self, session_id: str, user_id: str) -> None:
        self._sessions[session_id] = self._clock()
        await self._store.add_revocation(session_id=session_id, at=self._now_ms())

    async def end_user(self, user_id: str) -> None:
        """Every session and token of a removed member, on every replica."""
        self._users[user_id] = self._clock()
        await self._store.add_revocation(user_id=user_id, at=self._now_ms())

    async def end_token(self, token_id: str) -> None:
        """A revoked API token, on every replica."""
        self._tokens[token_id] = self._clock()
        await self._store.add_revocation(token_id=token_id, at=self._now_ms())

    async def sync(self) -> None:
        """Take in what other replicas ended since the last look."""
        rows = await self._store.revocations_after(self._last_id)
        for row_id, session_id, user_id, token_id, at in rows:
            for ended, key in (
                (self._sessions, session_id),
                (self._users, user_id),
                (self._tokens, token_id),
            ):
                if key:
                    ended.setdefault(key, at / 1000)
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
        for ended in (self._sessions, self._users, self._tokens):
            for key in [k for k, at in ended.items() if at < oldest]:
                del ended[key]
        await self._store.prune_revocations(older_than=int(oldest * 1000))

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)
