"""Sends deliveries and retries them on schedule, without letting one receiver hold up another.

- New deliveries are attempted at once, each in its own task; their rows were written
  first (store.py), so an attempt that never finishes is picked up again by the queue.
- Each webhook has at most MAX_IN_FLIGHT_PER_WEBHOOK attempts open: a receiver that hangs
  until its timeout fills only its own slots, and what it cannot take waits in the
  queue (stored), so memory stays flat and other webhooks and polling carry on.
- Results are written in batches (one transaction per ~10 ms of results).
- The queue loop claims due rows (`claim_due`), sleeping until the earliest retry it
  knows of or QUEUE_POLL_MS, whichever is sooner: retries run on time here, and rows
  another replica scheduled are seen within QUEUE_POLL_MS.
- A row being attempted is leased for its webhook's timeout plus LEASE_MARGIN_MS
  (schemas.py): a process that dies mid-attempt has it tried again after that, and the
  attempt counts (the row is written counting it before it starts).
- Deliveries of a state (states.py): an attempt starts only while no newer delivery of
  its key is known here, and one attempt of a key is on the wire at a time, so a newer
  state waits for an older one already sent to be answered (at most its timeout) and
  the receiver never has both at once. A superseded delivery is not retried.
"""

import asyncio
import contextlib
import heapq
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace

from svc_monitor.webhooks.models import AttemptResult, Delivery, DeliveryStatus, Outcome, Webhook
from svc_monitor.webhooks.sender import Sender
from svc_monitor.webhooks.states import Stamp, StateKey, key_of
from svc_monitor.webhooks.store import WebhookStore

logger = logging.getLogger(__name__)

MAX_IN_FLIGHT_PER_WEBHOOK = 16
MAX_IN_FLIGHT = 1024
QUEUE_POLL_MS = 1000
CLAIM_BATCH = 200
# The state keys whose newest delivery this process remembers (states.py); past this the
# least recently used are forgotten, and storage's checks alone order their deliveries.
NEWEST_KEYS = 10_000
# Rows deferred because their webhook had no free slot come back this much later.
DEFER_MS = 100
# Memory storage keeps the last 1000 deliveries per webhook (docs/features/webhooks.md#never-lost).
MEMORY_HISTORY_PER_WEBHOOK = 1000
_TRIM_EVERY = 100
_SPAWN_GROUP = 8


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True, slots=True)
class Job:
    webhook: Webhook
    delivery: Delivery


WebhookLookup = Callable[[str], Awaitable[Webhook | None]]


class DeliveryWorker:
    """Attempts deliveries, records outcomes and runs the retry queue."""

    def __init__(
        self,
        store: WebhookStore,
        sender: Sender,
        lookup: WebhookLookup,
        *,
        cap_history: bool,
    ) -> None:
        self._store = store
        self._sender = sender
        self._lookup = lookup
        self._cap_history = cap_history
        self._in_flight: dict[str, int] = {}
        self._total_in_flight = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._outcomes: list[Outcome] = []
        self._outcomes_ready = asyncio.Event()
        self._wake = asyncio.Event()
        self._due: list[int] = []  # a heap of retry times this process scheduled
        self._inserted: dict[str, int] = {}
        # Rows inserted overall, and that count as the last trim pass saw it: a pass that
        # sees no new rows is a quiet moment, when any remainder is trimmed too.
        self._inserted_total = 0
        self._inserted_seen = 0
        # The newest delivery of each state key queued or claimed here, and the attempt of
        # a key on the wire now (set when it ends): see states.py.
        self._newest: OrderedDict[StateKey, Stamp] = OrderedDict()
        self._on_wire: dict[StateKey, asyncio.Event] = {}
        # Called with each finished attempt (tests and the bench watch deliveries end).
        self.on_outcome: Callable[[Outcome], None] | None = None

    # --- new deliveries ---

    async def submit(self, jobs: Sequence[Job]) -> None:
        """Store new deliveries (one transaction), then attempt those with a free slot.

        A row attempted at once is written with that attempt counted and leased, so one
        a crash cuts off counts once whoever picks it up after the lease sends it again."""
        if not jobs:
            return
        now = now_ms()
        sendable = [self._has_slot(job.webhook.id, reserve=True) for job in jobs]
        rows = [
            replace(
                job.delivery,
                attempts=job.delivery.attempts + 1,
                next_retry_at=now + self._lease_ms(job),
            )
            if send
            else replace(job.delivery, next_retry_at=now)
            for job, send in zip(jobs, sendable, strict=True)
        ]
        try:
            superseded = await self._store.add_deliveries(rows, now_ms=now)
        except BaseException:
            for job, send in zip(jobs, sendable, strict=True):
                if send:
                    self._release_slot(job.webhook.id)
            raise
        started = 0
        for job, row, send in zip(jobs, rows, sendable, strict=True):
            if row.id in superseded:
                if send:
                    self._release_slot(job.webhook.id)
                continue
            self._saw(job.delivery)
            if not send:
                self._wake.set()
                continue
            self._spawn(job.webhook, replace(row, attempts=job.delivery.attempts))
            started += 1
            if started % _SPAWN_GROUP == 0:
                # Let this group put its requests on the wire before starting the next:
                # aiohttp writes a body from a task of its own, queued behind every task
                # already ready, so 100 spawned at once delay the first body by all 100.
                await asyncio.sleep(0)
        if self._cap_history:
            for job in jobs:
                self._inserted[job.webhook.id] = self._inserted.get(job.webhook.id, 0) + 1
            self._inserted_total += len(jobs)

    def _lease_ms(self, job: Job) -> int:
        lease = job.webhook.delivery_config.lease_ms
        key = key_of(job.delivery)
        if key is not None and key in self._on_wire:
            # It first waits for the attempt of its key on the wire to end.
            lease += job.webhook.delivery_config.timeoutMs
        return lease

    def wake(self) -> None:
        """Look at the queue now (a manual retry was queued)."""
        self._wake.set()

    # --- attempts ---

    def _has_slot(self, webhook_id: str, *, reserve: bool) -> bool:
        used = self._in_flight.get(webhook_id, 0)
        if used >= MAX_IN_FLIGHT_PER_WEBHOOK or self._total_in_flight >= MAX_IN_FLIGHT:
            return False
        if reserve:
            self._in_flight[webhook_id] = used + 1
            self._total_in_flight += 1
        return True

    def _release_slot(self, webhook_id: str) -> None:
        left = self._in_flight.get(webhook_id, 1) - 1
        if left:
            self._in_flight[webhook_id] = left
        else:
            self._in_flight.pop(webhook_id, None)
        self._total_in_flight -= 1

    def _spawn(self, webhook: Webhook, delivery: Delivery) -> None:
        task = asyncio.create_task(self._attempt(webhook, delivery), name="webhook-attempt")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _attempt(self, webhook: Webhook, delivery: Delivery) -> None:
        key = key_of(delivery)
        done: asyncio.Event | None = None
        try:
            if key is not None:
                while (busy := self._on_wire.get(key)) is not None:
                    await busy.wait()
                newer = self._newer_than(key, delivery)
                if newer is not None:
                    self._superseded(delivery, newer)
                    return
                done = self._on_wire[key] = asyncio.Event()
            result = await self._sender.post(
                webhook,
                delivery_id=delivery.id,
                event_type=delivery.event_type,
                body=delivery.payload.encode(),
            )
        except Exception:  # a bug in the sender must not lose the row or the slot
            logger.exception("webhook %s: delivery attempt crashed", webhook.id)
            result = AttemptResult(error="internal error during the attempt")
        finally:
            self._release_slot(webhook.id)
            if done is not None and key is not None:
                del self._on_wire[key]
                done.set()
        self._finish(webhook, delivery, result)

    # --- states (states.py) ---

    def _saw(self, delivery: Delivery) -> None:
        """A delivery of a state was queued or claimed here: remember it if it is the
        newest of its key."""
        key = key_of(delivery)
        if key is None:
            return
        stamp = _stamp(delivery)
        known = self._newest.get(key)
        if known is None or stamp > known:
            self._newest[key] = stamp
        self._newest.move_to_end(key)
        if len(self._newest) > NEWEST_KEYS:
            self._newest.popitem(last=False)

    def _newer_than(self, key: StateKey, delivery: Delivery) -> str | None:
        known = self._newest.get(key)
        if known is not None and known > _stamp(delivery):
            return known.delivery_id
        return None

    def _superseded(self, delivery: Delivery, by: str) -> None:
        """Not attempted: a newer delivery of its state was queued here meanwhile."""
        outcome = Outcome(
            delivery.id,
            DeliveryStatus.SUPERSEDED,
            delivery.attempts,
            AttemptResult(
                status_code=delivery.status_code,
                response_body=delivery.response_body,
                duration_ms=delivery.duration_ms or 0,
                error=delivery.error,
            ),
            now_ms(),
            superseded_by=by,
        )
        self._push(outcome)

    def _finish(self, webhook: Webhook, delivery: Delivery, result: AttemptResult) -> None:
        finished = now_ms()
        attempts = delivery.attempts + 1
        next_retry_at: int | None = None
        key = key_of(delivery)
        newer = self._newer_than(key, delivery) if key is not None else None
        if result.succeeded:
            status = DeliveryStatus.SUCCESS
        elif newer is not None:
            status = DeliveryStatus.SUPERSEDED  # not retried: a newer state is on its way
        elif result.permanent:
            status = DeliveryStatus.FAILED
        elif attempts < delivery.max_attempts:
            status = DeliveryStatus.RETRYING
            next_retry_at = finished + webhook.retry_policy.delay_before_retry_ms(attempts)
            self._expect(next_retry_at)
        else:
            status = DeliveryStatus.DEAD_LETTER
            logger.warning(
                "webhook %s: delivery %s dead-lettered after %d attempts",
                webhook.id,
                delivery.id,
                attempts,
            )
        superseded_by = newer if status is DeliveryStatus.SUPERSEDED else None
        self._push(
            Outcome(delivery.id, status, attempts, result, finished, next_retry_at, superseded_by)
        )

    def _push(self, outcome: Outcome) -> None:
        self._outcomes.append(outcome)
        self._outcomes_ready.set()
        if self.on_outcome is not None:
            self.on_outcome(outcome)

    def _expect(self, due_at: int) -> None:
        if not self._due or due_at < self._due[0]:
            self._wake.set()
        heapq.heappush(self._due, due_at)

    # --- background loops ---

    async def run(self) -> None:
        """The outcome writer and the queue loop, until cancelled; then a last flush."""
        writer = asyncio.create_task(self._write_outcomes(), name="webhook-outcomes")
        try:
            await self._run_queue()
        finally:
            writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await writer
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            await self._flush()
            await self._sender.close()

    async def _write_outcomes(self) -> None:
        while True:
            await self._outcomes_ready.wait()
            await asyncio.sleep(0.01)  # gather the results that finish together
            await self._flush()

    async def _flush(self) -> None:
        self._outcomes_ready.clear()
        batch, self._outcomes = self._outcomes, []
        if not batch:
            return
        try:
            await self._store.record(batch)
        except Exception:
            # Unrecorded rows keep their lease and are attempted again when it ends:
            # a duplicate is better than a lost notification.
            logger.exception("could not record %d webhook delivery results", len(batch))

    async def _run_queue(self) -> None:
        while True:
            await self._claim_and_send()
            await self._trim()
            await self._sleep_until_due()

    async def _claim_and_send(self) -> None:
        try:
            claimed = await self._store.claim_due(now_ms=now_ms(), limit=CLAIM_BATCH)
        except Exception:
            logger.exception("could not read the webhook retry queue")
            return
        busy: list[str] = []
        for delivery in claimed:
            self._saw(delivery)
        for delivery in claimed:
            webhook = await self._lookup(delivery.webhook_id)
            if webhook is None or not webhook.enabled:
                why = "webhook deleted" if webhook is None else "webhook disabled"
                self._push(_closed(delivery, why))
            elif self._has_slot(webhook.id, reserve=True):
                self._spawn(webhook, delivery)
            else:
                busy.append(delivery.id)
        if busy:
            await self._store.release(busy, due_at=now_ms() + DEFER_MS)
            self._expect(now_ms() + DEFER_MS)
        if len(claimed) == CLAIM_BATCH:
            self._wake.set()  # more may be due right now

    async def _sleep_until_due(self) -> None:
        await self._flush()  # the queue must see the due times just computed
        now = now_ms()
        while self._due and self._due[0] <= now:
            heapq.heappop(self._due)
        wait_ms = QUEUE_POLL_MS
        if self._due:
            wait_ms = min(wait_ms, self._due[0] - now)
        if self._wake.is_set():
            self._wake.clear()
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), wait_ms / 1000)
        self._wake.clear()

    async def _trim(self) -> None:
        """Memory storage: cut the history of webhooks that grew by _TRIM_EVERY rows, in
        one transaction, off the path of new deliveries. Once deliveries go quiet, what is
        left under _TRIM_EVERY is trimmed as well, so the cap holds after every burst."""
        quiet = self._inserted_total == self._inserted_seen
        self._inserted_seen = self._inserted_total
        due = [
            w for w, count in self._inserted.items() if count >= _TRIM_EVERY or (quiet and count)
        ]
        if not due:
            return
        for webhook_id in due:
            self._inserted[webhook_id] = 0
        try:
            await self._store.trim(due, keep=MEMORY_HISTORY_PER_WEBHOOK)
        except Exception:
            logger.exception("could not trim webhook delivery history")

    async def settle(self) -> None:
        """Wait for attempts in flight and write their results (tests, shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
        await self._flush()


def _stamp(delivery: Delivery) -> Stamp:
    return Stamp(delivery.happened_at, delivery.created_at, delivery.id)


def _closed(delivery: Delivery, why: str) -> Outcome:
    return Outcome(
        delivery.id,
        DeliveryStatus.FAILED,
        delivery.attempts,
        AttemptResult(error=why, permanent=True),
        now_ms(),
    )
