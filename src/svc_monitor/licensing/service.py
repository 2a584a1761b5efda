"""Which tier this install runs, resolved in this order (docs/features/licensing.md#licence-tiers):

1. a fresh online check: SVC_LICENSE_KEY posted to ENTITLEMENT_URL, the token it
   returns verified here, then persisted as license.jwt;
2. the last online answer, for LICENSE_CACHE_TTL_MS;
3. license.jwt, up to LICENSE_MAX_STALE_MS after the check that fetched it;
4. an offline token: SVC_OFFLINE_LICENSE, else (replicas sharing PostgreSQL or Turso)
   the one activated through the API on any replica, else SVC_OFFLINE_LICENSE_FILE, else
   license-offline.jwt in SVC_DATA_DIR;
5. community.

An activation or removal on one replica is written to storage first and announced; the
others take it up within a second (the change feed), or on their next minute's check.

With an offline token and no SVC_LICENSE_KEY the install is air-gapped: nothing here
(or in the update check or telemetry, which ask `air_gapped`) sends a request.

The clock is injectable. When it jumps back more than a day behind the latest time
seen, `clockRollbackSuspected` is set and tokens are judged at that latest time: a
rolled-back clock neither extends a licence nor takes it away.
"""

import asyncio
import contextlib
import hashlib
import logging
import socket
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from sqlalchemy.exc import SQLAlchemyError

from svc_monitor import __version__
from svc_monitor.config import Settings
from svc_monitor.errors import AppError, Conflict, NotFound, Unavailable
from svc_monitor.kit.gil_handover import to_thread
from svc_monitor.kit.outbound import Reply, post_json
from svc_monitor.licensing.files import LicenseFiles, PersistedToken, key_fingerprint
from svc_monitor.licensing.models import Feature, Tier
from svc_monitor.licensing.resolution import COMMUNITY, Entitlement, Notice, Source
from svc_monitor.licensing.store import SharedLicenseStore
from svc_monitor.licensing.tokens import LEEWAY_S, LicenseClaims, TokenRefused, day_of, verify

logger = logging.getLogger(__name__)

DAY_MS = 86_400_000
ROLLBACK_TOLERANCE_MS = DAY_MS
# Local re-checks (expiry, grace windows, the clock file) need no network: run them often.
LOCAL_CHECK_S = 60.0
# The clock file is rewritten at most this often while time moves forward.
CLOCK_WRITE_EVERY_MS = 60_000
EXPIRY_WARNING_DAYS = 30
EXPIRY_ERROR_DAYS = 7
# The answers that mean "this key is not (or no longer) entitled", as opposed to "no answer".
_DENIED = frozenset({400, 401, 402, 403, 404, 410})


class LicenseRefused(AppError):
    """An offline token that cannot be activated; the message says why (400)."""


class _Denied(Exception):
    """The entitlement server answered that the key is not entitled."""


class _Unset:
    pass


UNSET = _Unset()


class LicenseService:
    def __init__(
        self,
        settings: Settings,
        *,
        clock: Callable[[], float] = time.time,
        shared: SharedLicenseStore | None = None,
    ) -> None:
        self._settings = settings
        self._clock = clock
        self._files = LicenseFiles(settings.SVC_DATA_DIR, settings.offline_license_file)
        # Where replicas share the storage, the offline licence activated through the API
        # lives there, and what it holds (a token, or None once removed) outranks the file
        # in this replica's data directory. Unset until storage has been read.
        self._shared = shared
        self._shared_offline: str | _Unset | None = UNSET
        self.on_change: Callable[[], None] = lambda: None  # tells the other replicas
        self._key = (
            settings.SVC_LICENSE_KEY.get_secret_value() if settings.SVC_LICENSE_KEY else None
        )
        self._current = COMMUNITY
        self._cache: Entitlement | None = None  # the last online answer
        self._notices: dict[str, Notice] = {}  # by topic: online, offline
        self._last_seen_ms: int | None = None
        self._clock_written_ms = 0
        self._rollback_suspected = False
        self._last_attempt_ms: int | None = None
        self._expiry_logged: tuple[str, int] | None = None
        self._lock = asyncio.Lock()
        self.instance_hash = _instance_hash(settings)

    # --- what the rest of the service asks ---

    @property
    def tier(self) -> Tier:
        return self.entitlement().tier

    def allows(self, feature: Feature) -> bool:
        return self.tier.includes(feature.tier)

    @property
    def air_gapped(self) -> bool:
        """An offline token present and no online key: no outbound request at all."""
        return self._key is None and self._offline_token() is not None

    def entitlement(self) -> Entitlement:
        """The entitlement in force now (re-resolved locally when it has run out)."""
        now_ms = self._now_ms()
        settles = self._current.settles_at_ms
        if settles is not None and now_ms >= settles:
            self._current = self._resolve_locally(now_ms, use_cache=True)
        return self._current

    @property
    def rollback_suspected(self) -> bool:
        return self._rollback_suspected

    @property
    def last_check_ms(self) -> int | None:
        return self._last_attempt_ms

    def notices(self) -> list[Notice]:
        entitlement = self.entitlement()
        notices = list(self._notices.values())
        expiry = self._expiry_notice(entitlement, self._now_ms())
        if expiry is not None:
            notices.append(expiry)
        if self._rollback_suspected:
            notices.append(
                Notice(
                    "warning",
                    "the system clock moved back more than 24 hours; licence times are judged "
                    "at the latest time seen",
                )
            )
        return notices

    # --- lifecycle ---

    def start(self) -> None:
        """Resolve from what is on disk, before the first request and without the network."""
        self._last_seen_ms = self._files.read_clock()
        self._current = self._resolve_locally(self._now_ms(), use_cache=True)
        self._log_entitlement("starting with")
        if self._key is not None and _clear_text_remote(self._settings.ENTITLEMENT_URL):
            self._note(
                "transport",
                "warning",
                "ENTITLEMENT_URL is plain http:// to another host: the licence key travels "
                "unencrypted; use https://",
            )
            logger.warning("ENTITLEMENT_URL is plain http:// to another host; use https://")

    async def run(self) -> None:
        """The background loop: an online check every LICENSE_CACHE_TTL_MS (when there is
        a key), local checks every minute; cancelled at shutdown."""
        ttl_ms = self._settings.LICENSE_CACHE_TTL_MS
        while True:
            due = self._last_attempt_ms is None or self._now_ms() - self._last_attempt_ms >= ttl_ms
            if due and self._key is not None:
                await self.refresh()
            else:
                self._log_expiry(self.entitlement())
            await asyncio.sleep(LOCAL_CHECK_S)
            # Storage without change notices (Turso) learns of another replica's activation here.
            with contextlib.suppress(SQLAlchemyError, OSError):
                await self.adopt_shared()

    async def refresh(self) -> Entitlement:
        """Check online now (when there is a key), then fall back in order."""
        async with self._lock:
            now_ms = self._now_ms()
            use_cache = True
            if self._key is not None:
                self._last_attempt_ms = now_ms
                try:
                    online = await self._check_online(self._key, now_ms)
                except _Denied:
                    use_cache = False  # the server said no: older answers no longer count
                    self._cache = None
                    self._files.remove_online()
                else:
                    if online is not None:
                        self._cache = online
                        self._notices.pop("online", None)
                        self._set(online)
                        return online
            self._set(self._resolve_locally(self._now_ms(), use_cache=use_cache))
            return self._current

    # --- offline activation ---

    async def activate_offline(self, token: str) -> Entitlement:
        """Verify and save an offline token; a refused one changes nothing."""
        self._refuse_when_env_pinned()
        try:
            claims = verify(token, now=self._now_ms() / 1000, mode="offline")
        except TokenRefused as exc:
            raise LicenseRefused(str(exc), field="token") from None
        await self._share_offline(token.strip())
        try:
            self._files.write_offline(token)
        except OSError as exc:
            raise Unavailable(
                f"cannot save the licence to {self._files.offline_file}: {exc.strerror or exc}"
            ) from None
        logger.info(
            "offline licence %s activated: %s for %s, instance limit %d (shown, not enforced "
            "offline), valid until %s",
            claims.license_id,
            claims.tier.value,
            claims.customer.name or "unnamed customer",
            claims.instance_limit,
            day_of(claims.expires_at),
        )
        self._notices.pop("offline", None)
        self._set(self._resolve_locally(self._now_ms(), use_cache=True))
        self.on_change()
        return self._current

    async def remove_offline(self) -> Entitlement:
        self._refuse_when_env_pinned()
        if self._offline_token() is None:
            raise NotFound("no offline licence is activated")
        await self._share_offline(None)
        self._files.remove_offline()
        logger.info("offline licence removed")
        self._notices.pop("offline", None)
        self._set(self._resolve_locally(self._now_ms(), use_cache=True))
        self.on_change()
        return self._current

    async def adopt_shared(self) -> None:
        """Take up the offline licence as the shared storage holds it: at start, when
        another replica announces a change, and with every local check."""
        if self._shared is None:
            return
        stored = await self._shared.read_offline()
        if stored is None or stored.token == self._shared_offline:
            return  # never activated through shared storage, or nothing new
        self._shared_offline = stored.token
        if self.offline_from_env:
            return  # SVC_OFFLINE_LICENSE outranks any activation
        logger.info(
            "offline licence %s by another replica", "removed" if stored.token is None else "set"
        )
        self._notices.pop("offline", None)
        self._set(self._resolve_locally(self._now_ms(), use_cache=True))

    async def _share_offline(self, token: str | None) -> None:
        """Write the activation where the other replicas read it, before this replica
        takes it up: a write that fails changes nothing anywhere."""
        if self._shared is None:
            return
        try:
            await self._shared.write_offline(token, self._now_ms())
        except (SQLAlchemyError, OSError) as exc:
            raise Unavailable(
                f"cannot save the licence in storage for the other replicas: {type(exc).__name__}"
            ) from None
        self._shared_offline = token

    @property
    def online_key_configured(self) -> bool:
        return self._key is not None

    @property
    def offline_from_env(self) -> bool:
        return self._settings.SVC_OFFLINE_LICENSE is not None

    def _refuse_when_env_pinned(self) -> None:
        if self.offline_from_env:
            raise Conflict(
                "SVC_OFFLINE_LICENSE is set in the environment and takes precedence; change "
                "or unset it there",
                field="token",
            )

    # --- resolution ---

    async def _check_online(self, key: str, now_ms: int) -> Entitlement | None:
        """The server's answer, verified; None when there is no usable answer."""
        url = self._settings.ENTITLEMENT_URL.rstrip("/") + "/v1/entitlements"
        body = {
            "licenseKey": key,
            "instanceId": self.instance_hash,
            "eventType": "license_check",
            "version": __version__,
        }
        timeout_s = self._settings.LICENSE_TIMEOUT_MS / 1000
        try:
            reply = await to_thread(post_json, url, body, timeout_s=timeout_s)
        except OSError as exc:
            self._note("online", "warning", f"the entitlement server did not answer: {exc}")
            return None
        return self._read_reply(reply, key, now_ms)

    def _read_reply(self, reply: Reply, key: str, now_ms: int) -> Entitlement | None:
        data = reply.body if isinstance(reply.body, dict) else {}
        if reply.status in _DENIED:
            reason = str(data.get("message") or f"HTTP {reply.status}")[:300]
            self._note(
                "online", "error", f"the entitlement server refused the licence key: {reason}"
            )
            logger.error("licence key refused by the entitlement server: %s", reason)
            raise _Denied
        if reply.status != 200:
            self._note("online", "warning", f"the entitlement server answered HTTP {reply.status}")
            return None
        token = data.get("token")
        if isinstance(token, str) and token:
            try:
                claims = verify(token, now=now_ms / 1000, mode="online")
            except TokenRefused as exc:
                self._note("online", "error", f"the entitlement server's token was refused: {exc}")
                logger.error("online licence token refused: %s", exc)
                return None
            self._persist(PersistedToken(key_fingerprint(key), token, now_ms))
            return self._from_claims(claims, Source.ONLINE, checked_at_ms=now_ms, now_ms=now_ms)
        return self._unsigned(data, now_ms)

    def _unsigned(self, data: dict[str, object], now_ms: int) -> Entitlement | None:
        try:
            tier = Tier(str(data.get("tier") or "community"))
        except ValueError:
            self._note("online", "warning", "the entitlement server named an unknown tier")
            return None
        if tier is Tier.COMMUNITY:
            return Entitlement(Tier.COMMUNITY, Source.ONLINE, checked_at_ms=now_ms)
        if not self._settings.LICENSE_ALLOW_UNSIGNED:
            self._note(
                "online",
                "error",
                f"the entitlement server granted {tier.value} without a signed token; refused "
                "(LICENSE_ALLOW_UNSIGNED=true accepts unsigned grants)",
            )
            return None
        ttl = self._settings.LICENSE_CACHE_TTL_MS
        return Entitlement(
            tier, Source.ONLINE, signed=False, checked_at_ms=now_ms, settles_at_ms=now_ms + ttl
        )

    def _resolve_locally(self, now_ms: int, *, use_cache: bool) -> Entitlement:
        """Steps 2 to 5 of the order: no network. Without `use_cache` (the server has
        just refused the key) steps 2 and 3 are skipped."""
        if self._key is not None:
            cached = self._cache if use_cache else None
            ttl = self._settings.LICENSE_CACHE_TTL_MS
            if cached is not None and cached.checked_at_ms is not None:
                settles = _settles(cached.claims, cached.checked_at_ms + ttl)
                if now_ms < settles:
                    return replace(cached, source=Source.CACHED, settles_at_ms=settles)
            persisted = self._persisted(now_ms) if use_cache else None
            if persisted is not None:
                return persisted
        return self._offline(now_ms) or COMMUNITY

    def _persisted(self, now_ms: int) -> Entitlement | None:
        assert self._key is not None
        stored = self._files.read_online()
        if stored is None or stored.key_fingerprint != key_fingerprint(self._key):
            return None
        stale_at = stored.checked_at_ms + self._settings.LICENSE_MAX_STALE_MS
        if now_ms >= stale_at:
            return None
        try:
            claims = verify(stored.token, now=now_ms / 1000, mode="online")
        except TokenRefused as exc:
            logger.warning("the persisted licence token is not usable: %s", exc)
            return None
        return Entitlement(
            claims.tier,
            Source.PERSISTED,
            claims,
            checked_at_ms=stored.checked_at_ms,
            settles_at_ms=_settles(claims, stale_at),
        )

    def _offline(self, now_ms: int) -> Entitlement | None:
        token = self._offline_token()
        if token is None:
            return None
        try:
            claims = verify(token, now=now_ms / 1000, mode="offline")
        except TokenRefused as exc:
            self._note("offline", "error", f"the offline licence is not used: {exc}")
            return None
        self._notices.pop("offline", None)
        return self._from_claims(claims, Source.OFFLINE, checked_at_ms=None, now_ms=now_ms)

    def _offline_token(self) -> str | None:
        env = self._settings.SVC_OFFLINE_LICENSE
        if env is not None:
            return env.get_secret_value().strip() or None
        if not isinstance(self._shared_offline, _Unset):
            return self._shared_offline
        return self._files.read_offline()

    def _from_claims(
        self, claims: LicenseClaims, source: Source, *, checked_at_ms: int | None, now_ms: int
    ) -> Entitlement:
        never = (claims.expires_at + LEEWAY_S) * 1000
        ttl_end = now_ms + self._settings.LICENSE_CACHE_TTL_MS
        settles = _settles(claims, ttl_end if source is Source.ONLINE else never)
        return Entitlement(
            claims.tier, source, claims, checked_at_ms=checked_at_ms, settles_at_ms=settles
        )

    def _set(self, entitlement: Entitlement) -> None:
        changed = (entitlement.tier, entitlement.source) != (
            self._current.tier,
            self._current.source,
        )
        self._current = entitlement
        if changed:
            self._log_entitlement("now")

    def _persist(self, persisted: PersistedToken) -> None:
        try:
            self._files.write_online(persisted)
        except OSError as exc:
            self._note(
                "persist",
                "warning",
                f"cannot save the licence token in {self._settings.SVC_DATA_DIR}: "
                f"{exc.strerror or exc}; an outage of the entitlement server will fall back "
                "to community sooner",
            )
        else:
            self._notices.pop("persist", None)

    def _note(self, topic: str, level: Literal["info", "warning", "error"], message: str) -> None:
        self._notices[topic] = Notice(level, message)

    # --- time ---

    def _now_ms(self) -> int:
        """The clock, or the latest time seen when the clock went back (see module doc)."""
        now_ms = int(self._clock() * 1000)
        last = self._last_seen_ms
        if last is not None and now_ms < last - ROLLBACK_TOLERANCE_MS:
            if not self._rollback_suspected:
                logger.warning(
                    "the system clock is %.1f days behind the latest time seen; licence checks "
                    "use the latest time",
                    (last - now_ms) / DAY_MS,
                )
            self._rollback_suspected = True
            return last
        if last is None or now_ms >= last:
            self._rollback_suspected = False  # caught up (or never behind)
            self._last_seen_ms = now_ms
            if now_ms - self._clock_written_ms >= CLOCK_WRITE_EVERY_MS:
                self._write_clock(now_ms)
        return now_ms

    def _write_clock(self, now_ms: int) -> None:
        self._clock_written_ms = now_ms
        try:
            self._files.write_clock(now_ms)
        except OSError as exc:
            logger.debug("cannot write the licence clock file: %s", exc)

    # --- expiry notices ---

    def _expiry_notice(self, entitlement: Entitlement, now_ms: int) -> Notice | None:
        claims = entitlement.claims
        if entitlement.source is not Source.OFFLINE or claims is None:
            return None
        days_left = (claims.expires_at * 1000 - now_ms) / DAY_MS
        when = day_of(claims.expires_at)
        if days_left <= EXPIRY_ERROR_DAYS:
            return Notice("error", f"the offline licence expires on {when}; renew it now")
        if days_left <= EXPIRY_WARNING_DAYS:
            return Notice("warning", f"the offline licence expires on {when}")
        return None

    def _log_expiry(self, entitlement: Entitlement) -> None:
        """Log an approaching offline expiry once a day (warning at 30 days, error at 7)."""
        now_ms = self._now_ms()
        notice = self._expiry_notice(entitlement, now_ms)
        if notice is None:
            return
        today = now_ms // DAY_MS
        if self._expiry_logged == (notice.level, today):
            return
        self._expiry_logged = (notice.level, today)
        logger.log(logging.ERROR if notice.level == "error" else logging.WARNING, notice.message)

    def _log_entitlement(self, what: str) -> None:
        current = self._current
        claims = current.claims
        if claims is None:
            logger.info("licence: %s %s (%s)", what, current.tier.value, current.source.value)
            return
        logger.info(
            "licence: %s %s (%s) for %s, instance limit %d, until %s",
            what,
            current.tier.value,
            current.source.value,
            claims.customer.name or claims.license_id,
            claims.instance_limit,
            day_of(claims.expires_at),
        )
        self._log_expiry(current)


def _clear_text_remote(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme.lower() == "http" and parts.hostname not in _LOOPBACK


_LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})


def _settles(claims: LicenseClaims | None, at_ms: int) -> int:
    """`at_ms`, or earlier when the token expires first (with verification's leeway)."""
    if claims is None:
        return at_ms
    return min(at_ms, (claims.expires_at + LEEWAY_S) * 1000)


def _instance_hash(settings: Settings) -> str:
    """Stable per install, and says nothing about it: no secret goes into it."""
    data_dir = settings.SVC_DATA_DIR
    with contextlib.suppress(OSError):
        data_dir = Path(data_dir).resolve()
    parts = ["svc-monitor", socket.gethostname(), str(data_dir), settings.DB_HOST]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:32]
