"""The group-commit writer: shared transactions, a bounded backlog, storage failures as 503s."""

import asyncio
from typing import Any

import pytest
from google.rpc import status_pb2
from sqlalchemy.exc import OperationalError

from svc_monitor.traces.writer import GroupWriter, TraceStorageBusy, TraceStorageFailed
from tests.fixtures.app import RunningApp
from tests.traces.builders import SpanSpec, export_request, new_trace_id

Rows = list[tuple[Any, ...]]


class GatedStorage:
    """A write that waits until the test opens the gate, recording each batch."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.batches: list[int] = []

    async def write(self, rows: Rows) -> None:
        await self.gate.wait()
        self.batches.append(len(rows))


def rows(n: int) -> Rows:
    return [(i,) for i in range(n)]


class TestGroupWriter:
    async def test_requests_waiting_meanwhile_share_one_transaction(self):
        storage = GatedStorage()
        writer = GroupWriter(storage.write)
        first = asyncio.create_task(writer.write(rows(10)))
        await asyncio.sleep(0)  # the first batch is being written
        rest = [asyncio.create_task(writer.write(rows(5))) for _ in range(3)]
        await asyncio.sleep(0)
        storage.gate.set()
        await asyncio.gather(first, *rest)
        assert storage.batches == [10, 15]

    async def test_a_batch_stops_at_the_size_bound(self):
        storage = GatedStorage()
        writer = GroupWriter(storage.write, max_batch_rows=8)
        tasks = [asyncio.create_task(writer.write(rows(5))) for _ in range(3)]
        await asyncio.sleep(0)
        storage.gate.set()
        await asyncio.gather(*tasks)
        assert storage.batches == [5, 5, 5]

    async def test_a_backlog_past_the_bound_is_refused_with_503(self):
        storage = GatedStorage()
        writer = GroupWriter(storage.write, max_pending_rows=20)
        waiting = [asyncio.create_task(writer.write(rows(10))) for _ in range(2)]
        await asyncio.sleep(0)
        with pytest.raises(TraceStorageBusy) as refused:
            await writer.write(rows(1))
        assert refused.value.status_code == 503
        assert refused.value.headers == {"Retry-After": "1"}
        storage.gate.set()
        await asyncio.gather(*waiting)
        await writer.write(rows(1))  # room again once written

    async def test_flush_waits_for_what_was_handed_over(self):
        storage = GatedStorage()
        writer = GroupWriter(storage.write)
        task = asyncio.create_task(writer.write(rows(3)))
        await asyncio.sleep(0)
        task.cancel()  # the request went away; its rows are written all the same
        flushed = asyncio.create_task(writer.flush())
        await asyncio.sleep(0.01)
        assert not flushed.done()
        storage.gate.set()
        await flushed
        assert storage.batches == [3]

    async def test_a_storage_error_is_a_503_for_every_request_of_the_batch(self):
        async def broken(_: Rows) -> None:
            raise OperationalError("INSERT", {}, Exception("disk I/O error"))

        writer = GroupWriter(broken)
        results = await asyncio.gather(
            writer.write(rows(1)), writer.write(rows(2)), return_exceptions=True
        )
        assert all(isinstance(r, TraceStorageFailed) for r in results)


async def test_an_export_storage_cannot_take_answers_503(api: RunningApp):
    await api.services.db.run(lambda conn: conn.exec_driver_sql("DROP TABLE trace_spans"))
    body = export_request(SpanSpec("lost", new_trace_id())).SerializeToString()
    response = await api.client.post(
        "/v1/traces", content=body, headers={"content-type": "application/x-protobuf"}
    )
    assert response.status_code == 503  # OTLP senders retry a 503
    # Refusals are a google.rpc.Status in the request's encoding, as OTLP/HTTP says.
    assert response.headers["content-type"] == "application/x-protobuf"
    status = status_pb2.Status.FromString(response.content)
    assert status.message == "Trace storage failed to store the spans; retry the export"
