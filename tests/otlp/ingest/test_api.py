"""The OTLP/HTTP receivers as a Collector or an SDK meets them (otlp/ingest/api.py).

Gate (404, 401), content type and encoding (415), size measured while inflating (413),
malformed bodies (400 with a google.rpc.Status in the request's encoding, never 500),
and the Export*ServiceResponse answered in kind (docs/features/otlp-push-and-traces.md).
Hostile inputs are the receiver's cases of svc-monitor's security review; their ids (A01
...) start the docstrings where they apply, so a case can be found by its id.
"""

import asyncio
import contextlib
import gzip
import json
import tracemalloc
import zlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import zstandard
from google.rpc import status_pb2
from hypothesis import HealthCheck, given, settings, strategies as st
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import KeyValue

from svc_monitor.app import create_app
from svc_monitor.otlp.ingest import api as ingest_http
from svc_monitor.otlp.ingest.api import MAX_BODY_BYTES, Encoding, IngestRefused
from tests.fixtures.app import AppFactory, RunningApp, make_settings, serve_app, target_of
from tests.fixtures.servers import RunningServer

METRICS = "/v1/external/metrics"
TRACES = "/v1/traces"
PROTOBUF = "application/x-protobuf"
JSON = "application/json"
PUSHED_HOST, PUSHED_PORT = "10.0.0.1", 6379
TOKEN = "ingest-tok-7f3a9c2e51"


# --- payloads ---


def _attribute(key: str, value: str | int) -> KeyValue:
    attribute = KeyValue(key=key)
    if isinstance(value, int):
        attribute.value.int_value = value
    else:
        attribute.value.string_value = value
    return attribute


def pushed(
    points: dict[str, int | float],
    *,
    host: str = PUSHED_HOST,
    port: int | str = PUSHED_PORT,
    request: ExportMetricsServiceRequest | None = None,
) -> ExportMetricsServiceRequest:
    """`redis.<name>` gauges from one instance identified by server.address/port."""
    request = request if request is not None else ExportMetricsServiceRequest()
    resource_metrics = request.resource_metrics.add()
    resource_metrics.resource.attributes.extend(
        [_attribute("server.address", host), _attribute("server.port", port)]
    )
    scope = resource_metrics.scope_metrics.add()
    for name, value in points.items():
        point = scope.metrics.add(name=f"redis.{name}").gauge.data_points.add()
        if isinstance(value, float):
            point.as_double = value
        else:
            point.as_int = value
    return request


def pushed_json(data_points: list[dict[str, Any]], name: str = "memory.used") -> dict[str, Any]:
    """An OTLP JSON document with one gauge of the pushed instance, as written by hand."""
    return {
        "resourceMetrics": [
            {
                "resource": {
                    "attributes": [
                        {"key": "server.address", "value": {"stringValue": PUSHED_HOST}},
                        {"key": "server.port", "value": {"intValue": str(PUSHED_PORT)}},
                    ]
                },
                "scopeMetrics": [
                    {"metrics": [{"name": f"redis.{name}", "gauge": {"dataPoints": data_points}}]}
                ],
            }
        ]
    }


def protobuf_of_size(size: int) -> bytes:
    """A valid export of the pushed instance, padded with a resource attribute to
    exactly `size` bytes."""
    request = pushed({"memory.used": 4242})
    padding = request.resource_metrics[0].resource.attributes.add(key="padding")
    length = size - request.ByteSize()
    for _ in range(8):  # the length's own varint can shift the total by a byte or two
        padding.value.string_value = "p" * length
        if (missing := size - request.ByteSize()) == 0:
            return request.SerializeToString()
        length += missing
    raise AssertionError(f"could not pad a request to {size} bytes")


def json_of_size(size: int) -> bytes:
    body = json.dumps(pushed_json([{"asInt": "4242"}])).encode()
    return body + b" " * (size - len(body))


def raw_deflate(data: bytes) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


def gzip_of_zeros(mebibytes: int) -> bytes:
    """gzip of `mebibytes` MiB of zeros, built fast: the compressor's output for each
    further MiB of zeros, sync-flushed, is the same bytes, so it is repeated."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = bytes(1 << 20)
    head = compressor.compress(zeros) + compressor.flush(zlib.Z_SYNC_FLUSH)
    block = compressor.compress(zeros) + compressor.flush(zlib.Z_SYNC_FLUSH)
    assert block == compressor.compress(zeros) + compressor.flush(zlib.Z_SYNC_FLUSH)
    return head + block * (mebibytes - 1)  # no trailer: the receiver stops long before


def deep_any_value_protobuf(depth: int) -> bytes:
    """An export whose one resource attribute nests `depth` arrays: AnyValue.array_value
    (field 5) holding ArrayValue.values (field 1), written by hand because the protobuf
    runtime refuses to build what it would refuse to parse."""

    def length_delimited(field: int, payload: bytes) -> bytes:
        size, header = len(payload), bytearray([field << 3 | 2])
        while size > 0x7F:
            header.append(size & 0x7F | 0x80)
            size >>= 7
        header.append(size)
        return bytes(header) + payload

    value = length_delimited(1, b"x")  # AnyValue.string_value
    for _ in range(depth):
        value = length_delimited(5, length_delimited(1, value))
    key_value = length_delimited(1, b"deep") + length_delimited(2, value)
    resource = length_delimited(1, key_value)  # Resource.attributes
    return length_delimited(1, length_delimited(1, resource))  # resource_metrics.resource


# --- the app ---


@dataclass
class Receiver:
    running: RunningApp
    client: httpx.AsyncClient  # answers a crash with a 500, as a real server would
    pushed_id: str

    async def post(
        self,
        body: bytes,
        *,
        content_type: str | None = PROTOBUF,
        path: str = METRICS,
        headers: dict[str, str] | list[tuple[str, str]] | None = None,
    ) -> httpx.Response:
        sent = httpx.Headers(headers or {})
        if content_type is not None:
            sent.setdefault("content-type", content_type)
        return await self.client.post(path, content=body, headers=sent)

    async def pushed_fields(self) -> dict[str, Any]:
        answer = await self.client.get(
            "/api/metrics/info", headers={"X-Connection-Id": self.pushed_id}
        )
        if answer.status_code == 503:  # nothing fresh pushed yet
            return {}
        assert answer.status_code == 200, answer.text
        sections: dict[str, Any] = answer.json()["sections"]
        return sections


@pytest.fixture
def receiver_factory(memory_app_factory: AppFactory) -> Any:
    @contextlib.asynccontextmanager
    async def start(**overrides: Any) -> AsyncIterator[Receiver]:
        async with memory_app_factory(**overrides) as running:
            transport = httpx.ASGITransport(app=running.app, raise_app_exceptions=False)
            async with httpx.AsyncClient(transport=transport, base_url="http://svc.test") as c:
                created = await c.post(
                    "/api/connections",
                    json={
                        "source": "push",
                        "name": "pushed",
                        "host": PUSHED_HOST,
                        "port": PUSHED_PORT,
                    },
                )
                assert created.status_code == 201, created.text
                yield Receiver(running, c, created.json()["id"])

    return start


@pytest.fixture
async def receiver(receiver_factory: Any) -> AsyncIterator[Receiver]:
    async with receiver_factory() as started:
        yield started


def status_of(response: httpx.Response) -> status_pb2.Status:
    """The google.rpc.Status of a refusal, decoded from the response's own encoding."""
    if response.headers["content-type"].startswith(PROTOBUF):
        return status_pb2.Status.FromString(response.content)
    document = response.json()
    assert set(document) == {"code", "message"}
    return status_pb2.Status(code=document["code"], message=document["message"])


def metrics_answer(response: httpx.Response) -> ExportMetricsServiceResponse:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == PROTOBUF
    return ExportMetricsServiceResponse.FromString(response.content)


# --- encodings ---


class TestContentEncoding:
    async def test_a_gzip_body_is_taken(self, receiver: Receiver):
        body = gzip.compress(pushed({"memory.used": 1001}).SerializeToString())
        answer = await receiver.post(body, headers={"content-encoding": "gzip"})
        assert not metrics_answer(answer).HasField("partial_success")
        assert (await receiver.pushed_fields())["memory"]["used_memory"] == 1001

    @pytest.mark.parametrize("coding", ["GZIP", "x-gzip", " gzip "])
    async def test_gzip_is_recognised_in_any_case_and_as_x_gzip(
        self, receiver: Receiver, coding: str
    ):
        """A11: the coding token is case-insensitive."""
        body = gzip.compress(pushed({"memory.used": 1002}).SerializeToString())
        answer = await receiver.post(body, headers={"content-encoding": coding})
        assert answer.status_code == 200, answer.text

    @pytest.mark.parametrize(
        "compress",
        [pytest.param(zlib.compress, id="zlib-wrapped"), pytest.param(raw_deflate, id="raw")],
    )
    async def test_a_deflate_body_is_taken_wrapped_or_raw(self, receiver: Receiver, compress: Any):
        """A10: HTTP's deflate is zlib-wrapped; some senders send raw DEFLATE."""
        body = compress(pushed({"memory.used": 1003}).SerializeToString())
        answer = await receiver.post(body, headers={"content-encoding": "deflate"})
        assert not metrics_answer(answer).HasField("partial_success")
        assert (await receiver.pushed_fields())["memory"]["used_memory"] == 1003

    async def test_an_identity_body_is_taken(self, receiver: Receiver):
        body = pushed({"memory.used": 1004}).SerializeToString()
        answer = await receiver.post(body, headers={"content-encoding": "identity"})
        assert answer.status_code == 200

    @pytest.mark.parametrize("coding", ["br", "snappy", "compress", "gzip, gzip"])
    async def test_other_codings_are_refused_with_415(self, receiver: Receiver, coding: str):
        """A08, A11: stacked codings are unsupported rather than inflated twice."""
        body = gzip.compress(gzip.compress(pushed({"memory.used": 1}).SerializeToString()))
        answer = await receiver.post(body, headers={"content-encoding": coding})
        assert answer.status_code == 415
        status = status_of(answer)
        assert "Content-Encoding" in status.message
        assert status.code == 3  # INVALID_ARGUMENT
        assert await receiver.pushed_fields() == {}

    async def test_gzip_inside_gzip_sent_as_one_layer_is_not_inflated_twice(
        self, receiver: Receiver
    ):
        """A09: after one inflate the body is gzip bytes, not a message."""
        body = gzip.compress(gzip.compress(pushed({"memory.used": 1}).SerializeToString()))
        answer = await receiver.post(body, headers={"content-encoding": "gzip"})
        assert answer.status_code == 400
        assert await receiver.pushed_fields() == {}

    async def test_a_truncated_gzip_body_is_400_and_nothing_is_taken(self, receiver: Receiver):
        """A12."""
        whole = gzip.compress(pushed({"memory.used": 1005}).SerializeToString())
        answer = await receiver.post(whole[: len(whole) // 2], headers={"content-encoding": "gzip"})
        assert answer.status_code == 400
        assert "truncated" in status_of(answer).message
        assert await receiver.pushed_fields() == {}

    async def test_a_truncated_deflate_body_is_400(self, receiver: Receiver):
        whole = zlib.compress(pushed({"memory.used": 1006}).SerializeToString())
        answer = await receiver.post(whole[:-6], headers={"content-encoding": "deflate"})
        assert answer.status_code == 400

    async def test_a_gzip_body_with_a_bad_checksum_is_400(self, receiver: Receiver):
        """A14: the CRC32 in the trailer does not match."""
        whole = bytearray(gzip.compress(pushed({"memory.used": 1007}).SerializeToString()))
        whole[-8] ^= 0xFF
        answer = await receiver.post(bytes(whole), headers={"content-encoding": "gzip"})
        assert answer.status_code == 400
        assert await receiver.pushed_fields() == {}

    async def test_garbage_after_the_gzip_trailer_is_400(self, receiver: Receiver):
        """A14: bytes after the end of the gzip stream are not silently ignored."""
        whole = gzip.compress(pushed({"memory.used": 1008}).SerializeToString())
        answer = await receiver.post(whole + b"trailing", headers={"content-encoding": "gzip"})
        assert answer.status_code == 400

    async def test_a_second_gzip_member_is_never_silently_dropped(self, receiver: Receiver):
        """A13: two members are either both inflated (under one limit) or refused; two
        protobuf messages back to back merge, so both points arrive if both are read."""
        first = gzip.compress(pushed({"memory.used": 1009}).SerializeToString())
        second = gzip.compress(pushed({"clients.connected": 9}).SerializeToString())
        answer = await receiver.post(first + second, headers={"content-encoding": "gzip"})
        fields = await receiver.pushed_fields()
        if answer.status_code == 200:
            assert fields["memory"]["used_memory"] == 1009
            assert fields["clients"]["connected_clients"] == 9
        else:
            assert answer.status_code == 400
            assert fields == {}


def zstd(data: bytes) -> bytes:
    return zstandard.ZstdCompressor().compress(data)


# Each coding's header alone: what is left of a body cut right after it.
_HEADER_SIZE: dict[str, Callable[[bytes], int]] = {
    "gzip": lambda _: 10,
    "zstd": zstandard.frame_header_size,
}
_COMPRESS: dict[str, Callable[[bytes], bytes]] = {"gzip": gzip.compress, "zstd": zstd}


class TestIncompleteBodies:
    """gzip and zstd answer alike: a body must be exactly one complete member or frame.
    A cut body or bytes after it is a 400 naming what is wrong, in the request's
    encoding; two in a row are refused the same way (the gzip path never read a second
    member), so a sender never gets a 200 for points that were dropped."""

    @staticmethod
    def body(coding: str, content_type: str, used: int) -> bytes:
        if content_type == JSON:
            plain = json.dumps(pushed_json([{"asInt": str(used)}])).encode()
        else:
            plain = pushed({"memory.used": used}).SerializeToString()
        return _COMPRESS[coding](plain)

    async def refused(
        self, receiver: Receiver, body: bytes, *, coding: str, content_type: str
    ) -> str:
        answer = await receiver.post(
            body, content_type=content_type, headers={"content-encoding": coding}
        )
        assert answer.status_code == 400, answer.text
        assert answer.headers["content-type"] == content_type
        status = status_of(answer)
        assert status.code == 3  # INVALID_ARGUMENT
        assert await receiver.pushed_fields() == {}
        message: str = status.message
        return message

    @pytest.mark.parametrize("content_type", [PROTOBUF, JSON])
    @pytest.mark.parametrize("coding", ["gzip", "zstd"])
    async def test_a_body_cut_to_its_header_is_400_truncated(
        self, receiver: Receiver, coding: str, content_type: str
    ):
        whole = self.body(coding, content_type, 1012)
        cut = whole[: _HEADER_SIZE[coding](whole)]
        message = await self.refused(receiver, cut, coding=coding, content_type=content_type)
        assert "truncated" in message

    @pytest.mark.parametrize("content_type", [PROTOBUF, JSON])
    @pytest.mark.parametrize("coding", ["gzip", "zstd"])
    async def test_junk_after_the_body_is_400_naming_the_extra_bytes(
        self, receiver: Receiver, coding: str, content_type: str
    ):
        body = self.body(coding, content_type, 1013) + b"junk"
        message = await self.refused(receiver, body, coding=coding, content_type=content_type)
        assert "Unexpected bytes after" in message

    @pytest.mark.parametrize("content_type", [PROTOBUF, JSON])
    @pytest.mark.parametrize("coding", ["gzip", "zstd"])
    async def test_two_members_or_frames_in_a_row_are_400_like_junk(
        self, receiver: Receiver, coding: str, content_type: str
    ):
        body = self.body(coding, content_type, 1014) + self.body(coding, content_type, 1015)
        message = await self.refused(receiver, body, coding=coding, content_type=content_type)
        assert "Unexpected bytes after" in message

    async def test_an_empty_zstd_body_is_400_like_an_empty_gzip_one(self, receiver: Receiver):
        for coding in ("gzip", "zstd"):
            message = await self.refused(receiver, b"", coding=coding, content_type=PROTOBUF)
            assert "truncated" in message

    async def test_a_zstd_bomb_behind_a_small_first_frame_is_refused(self, receiver: Receiver):
        """The size bound still holds: the second frame is never decompressed."""
        small = zstd(pushed({"memory.used": 1016}).SerializeToString())
        bomb = zstd(b"\0" * (64 * 1024 * 1024))
        answer = await receiver.post(small + bomb, headers={"content-encoding": "zstd"})
        assert answer.status_code == 400
        assert await receiver.pushed_fields() == {}


class TestContentType:
    @pytest.mark.parametrize("content_type", ["text/plain", "multipart/form-data", None])
    async def test_a_body_that_is_neither_protobuf_nor_json_is_415(
        self, receiver: Receiver, content_type: str | None
    ):
        """A15: chosen by media type, never by sniffing the body."""
        body = json.dumps(pushed_json([{"asInt": "5"}])).encode()
        answer = await receiver.post(body, content_type=content_type)
        assert answer.status_code == 415
        assert answer.headers["content-type"] == JSON
        assert "Content-Type" in status_of(answer).message
        assert await receiver.pushed_fields() == {}

    async def test_json_with_a_charset_parameter_is_taken(self, receiver: Receiver):
        body = json.dumps(pushed_json([{"asInt": "1010"}])).encode()
        answer = await receiver.post(body, content_type="application/json; charset=utf-8")
        assert answer.status_code == 200, answer.text
        assert answer.json() == {}
        assert (await receiver.pushed_fields())["memory"]["used_memory"] == 1010


# --- size ---


class TestSizeLimit:
    async def test_a_protobuf_body_of_exactly_1_mib_is_taken(self, receiver: Receiver):
        body = protobuf_of_size(MAX_BODY_BYTES)
        assert len(body) == MAX_BODY_BYTES
        answer = await receiver.post(body)
        assert not metrics_answer(answer).HasField("partial_success")
        assert (await receiver.pushed_fields())["memory"]["used_memory"] == 4242

    async def test_a_body_one_byte_over_1_mib_is_413(self, receiver: Receiver):
        answer = await receiver.post(protobuf_of_size(MAX_BODY_BYTES + 1))
        assert answer.status_code == 413
        assert answer.headers["content-type"] == PROTOBUF
        assert status_of(answer).message
        assert await receiver.pushed_fields() == {}

    async def test_a_gzip_body_inflating_to_exactly_1_mib_is_taken(self, receiver: Receiver):
        body = gzip.compress(json_of_size(MAX_BODY_BYTES))
        answer = await receiver.post(body, content_type=JSON, headers={"content-encoding": "gzip"})
        assert answer.status_code == 200, answer.text
        assert (await receiver.pushed_fields())["memory"]["used_memory"] == 4242

    async def test_a_small_gzip_body_inflating_past_1_mib_is_413(self, receiver: Receiver):
        body = gzip.compress(json_of_size(MAX_BODY_BYTES + 1))
        assert len(body) < 10_000
        answer = await receiver.post(body, content_type=JSON, headers={"content-encoding": "gzip"})
        assert answer.status_code == 413
        assert "after decompression" in status_of(answer).message
        assert await receiver.pushed_fields() == {}

    async def test_a_zstd_body_is_taken_as_the_collector_sends_it(self, receiver: Receiver):
        body = zstandard.ZstdCompressor().compress(
            pushed({"memory.used": 1011}).SerializeToString()
        )
        answer = await receiver.post(body, headers={"content-encoding": "zstd"})
        assert answer.status_code == 200, answer.text
        assert (await receiver.pushed_fields())["memory"]["used_memory"] == 1011

    async def test_a_zstd_body_past_1_mib_or_broken_is_refused(self, receiver: Receiver):
        bomb = zstandard.ZstdCompressor().compress(b"\0" * (64 * 1024 * 1024))
        assert len(bomb) < 10_000
        answer = await receiver.post(bomb, headers={"content-encoding": "zstd"})
        assert answer.status_code == 413
        whole = zstandard.ZstdCompressor().compress(pushed({"memory.used": 1}).SerializeToString())
        cut = await receiver.post(whole[: len(whole) // 2], headers={"content-encoding": "zstd"})
        assert cut.status_code == 400
        assert await receiver.pushed_fields() == {}

    @pytest.mark.parametrize("mebibytes", [64, 1000])
    async def test_a_zip_bomb_is_413(self, receiver: Receiver, mebibytes: int):
        """A07: 64 MiB of zeros is ~64 KB on the wire; 1000 MiB still fits under 1 MiB."""
        bomb = gzip_of_zeros(mebibytes)
        assert len(bomb) < MAX_BODY_BYTES
        answer = await receiver.post(bomb, headers={"content-encoding": "gzip"})
        assert answer.status_code == 413
        assert status_of(answer).code == 8  # RESOURCE_EXHAUSTED

    async def test_a_chunked_upload_is_cut_off_at_the_limit(self, receiver: Receiver):
        """A05: no Content-Length; the receiver stops reading once past 1 MiB of 50."""
        chunk = b"\x00" * 65536
        sent = 0

        async def fifty_mebibytes() -> AsyncIterator[bytes]:
            nonlocal sent
            for _ in range(800):
                sent += len(chunk)
                yield chunk

        answer = await receiver.client.post(
            METRICS, content=fifty_mebibytes(), headers={"content-type": PROTOBUF}
        )
        assert answer.status_code == 413
        assert sent <= MAX_BODY_BYTES + 2 * len(chunk)

    async def test_a_megabyte_of_points_is_taken(self, receiver: Receiver):
        """A26: some 90,000 points of one gauge in one request are decoded and mapped."""
        request = pushed({"memory.used": 1})
        points = request.resource_metrics[0].scope_metrics[0].metrics[0].gauge.data_points
        for value in range(2, 90_000):
            points.add(as_int=value)
        body = request.SerializeToString()
        assert len(body) < MAX_BODY_BYTES
        answer = await receiver.post(body)
        assert not metrics_answer(answer).HasField("partial_success")
        assert (await receiver.pushed_fields())["memory"]["used_memory"] == 89_999

    async def test_half_a_million_empty_points_are_counted_not_refused(self, receiver: Receiver):
        """A26: the smallest possible point is two bytes; each is an invalid_value."""
        request = pushed({"memory.used": 1})
        points = request.resource_metrics[0].scope_metrics[0].metrics[0].gauge.data_points
        for _ in range(500_000):
            points.add()
        body = request.SerializeToString()
        assert len(body) < MAX_BODY_BYTES
        response = metrics_answer(await receiver.post(body))
        assert response.partial_success.rejected_data_points == 500_000
        assert response.partial_success.error_message == "invalid_value=500000"
        assert (await receiver.pushed_fields())["memory"]["used_memory"] == 1


def test_inflating_a_zip_bomb_holds_little_memory():
    """A07: 64 MiB of zeros is refused after about 1 MiB of output; the inflater never
    holds much more than the limit."""
    bomb = gzip_of_zeros(64)
    tracemalloc.start()
    try:
        with pytest.raises(IngestRefused) as refused:
            ingest_http.inflate(bomb, gzip=True)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert refused.value.status == 413
    assert peak < 2 * 1024 * 1024


def test_inflating_a_near_limit_bomb_holds_a_bounded_amount():
    """1000 MiB of zeros in ~1 MiB of gzip: the inflater holds about the limit, not
    copies of the still unread input besides."""
    bomb = gzip_of_zeros(1000)
    tracemalloc.start()
    try:
        with pytest.raises(IngestRefused):
            ingest_http.inflate(bomb, gzip=True)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2 * 1024 * 1024


# --- over real HTTP, where framing matters ---


@pytest.fixture
async def served(valkey_server: RunningServer) -> AsyncIterator[str]:
    app = create_app(make_settings(**target_of(valkey_server)))
    async with serve_app(app) as base_url:
        yield base_url


async def _exchange(base_url: str, head: bytes, body: bytes = b"") -> bytes:
    """Send raw bytes, return what the server answers before closing or in 10 s."""
    host, port = base_url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(head + body)
        await writer.drain()
        return await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    finally:
        writer.close()


class TestOverRealHttp:
    async def test_an_honest_oversize_content_length_is_413_before_the_body(self, served: str):
        """A04: the answer comes though not one byte of the body was sent."""
        head = (
            b"POST /v1/external/metrics HTTP/1.1\r\nHost: svc\r\n"
            b"Content-Type: application/x-protobuf\r\nContent-Length: 1048577\r\n\r\n"
        )
        answered = await _exchange(served, head)
        assert answered.startswith(b"HTTP/1.1 413 ")

    async def test_a_streamed_upload_is_answered_413_long_before_it_ends(self, served: str):
        """A05: chunked, 50 MiB offered; the 413 arrives while most is still unsent."""
        host, port = served.removeprefix("http://").split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        head = (
            b"POST /v1/external/metrics HTTP/1.1\r\nHost: svc\r\n"
            b"Content-Type: application/x-protobuf\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        chunk = b"10000\r\n" + b"\x00" * 65536 + b"\r\n"
        answer = asyncio.create_task(reader.readuntil(b"\r\n\r\n"))
        sent = 0
        try:
            writer.write(head)
            while not answer.done() and sent < 50 * 1024 * 1024:
                writer.write(chunk)
                sent += 65536
                try:
                    await asyncio.wait_for(writer.drain(), 0.5)
                except (TimeoutError, ConnectionError):
                    break  # the server stopped reading: what we want
            answered = await asyncio.wait_for(answer, 10)
        finally:
            answer.cancel()
            writer.close()
        assert answered.startswith(b"HTTP/1.1 413 ")
        assert sent < 40 * 1024 * 1024

    async def test_a_short_content_length_reads_only_that_much(self, served: str):
        """A06: ten bytes declared, 2 MiB sent: the ten bytes are the body (no message)."""
        head = (
            b"POST /v1/external/metrics HTTP/1.1\r\nHost: svc\r\n"
            b"Content-Type: application/json\r\nContent-Length: 10\r\n\r\n"
        )
        answered = await _exchange(served, head, b"{" * (2 * 1024 * 1024))
        assert answered.startswith(b"HTTP/1.1 400 ")


# --- malformed bodies ---


class TestMalformedBodies:
    @pytest.mark.parametrize(
        "body",
        [
            pytest.param(b"\xff\xff\xff\xff", id="bad-varint"),
            pytest.param(b"\x0a\x64short", id="length-past-end"),
            pytest.param(b"\x0f", id="bad-wire-type"),
        ],
    )
    async def test_malformed_protobuf_is_400_with_a_protobuf_status(
        self, receiver: Receiver, body: bytes
    ):
        """A17."""
        answer = await receiver.post(body)
        assert answer.status_code == 400
        assert answer.headers["content-type"] == PROTOBUF
        status = status_pb2.Status.FromString(answer.content)
        assert status.code == 3
        assert "protobuf" in status.message

    async def test_protobuf_nested_past_the_depth_limit_is_400(self, receiver: Receiver):
        """A18: AnyValue arrays nested 5000 deep."""
        answer = await receiver.post(deep_any_value_protobuf(5000))
        assert answer.status_code == 400
        assert status_of(answer).code == 3

    @pytest.mark.parametrize(
        "body",
        [
            pytest.param(b"{not json", id="syntax"),
            pytest.param(b"", id="empty"),
            pytest.param(b'"a string"', id="not-an-object"),
            pytest.param(b'{"resourceMetrics": {"a": 1}}', id="wrong-shape"),
            pytest.param(b"\xff\xfe{}", id="not-utf8"),
            pytest.param(
                json.dumps(pushed_json([{"asInt": "1" * 5000}])).encode(), id="int-5000-digits"
            ),
            pytest.param(json.dumps(pushed_json([{"asInt": 1.5}])).encode(), id="fractional-int"),
            pytest.param(
                json.dumps(pushed_json([{"asInt": 1, "timeUnixNano": -5}])).encode(),
                id="negative-time",
            ),
        ],
    )
    async def test_malformed_json_is_400_with_a_json_status(self, receiver: Receiver, body: bytes):
        """A20 among others: every reason a JSON body cannot be a message."""
        answer = await receiver.post(body, content_type=JSON)
        assert answer.status_code == 400
        assert answer.headers["content-type"] == JSON
        document = answer.json()
        assert set(document) == {"code", "message"}
        assert document["code"] == 3
        assert document["message"]
        assert await receiver.pushed_fields() == {}

    @pytest.mark.parametrize(
        "body",
        [
            pytest.param(b"[" * 100_000, id="arrays-100000-deep"),
            pytest.param(b'{"a":' * 100_000, id="objects-100000-deep"),
            pytest.param(
                (
                    b'{"resourceMetrics": [{"resource": {"attributes": [{"key": "k", "value": '
                    + b'{"arrayValue": {"values": [' * 400
                    + b'{"stringValue": "x"}'
                    + b"]}}" * 400
                    + b"}]}}]}"
                ),
                id="any-value-400-deep",
            ),
        ],
    )
    async def test_deeply_nested_json_is_400_not_a_crash(self, receiver: Receiver, body: bytes):
        """A19: json.loads raises RecursionError, which is not a ValueError."""
        answer = await receiver.post(body, content_type=JSON)
        assert answer.status_code == 400
        assert status_of(answer).code == 3


def refusal_of(call: Callable[..., object], *args: Any, **kwargs: Any) -> int | None:
    """The status `call` refuses with, or None when it returns; anything else escapes."""
    try:
        call(*args, **kwargs)
    except IngestRefused as refused:
        return refused.status
    return None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=st.binary(max_size=512))
def test_any_bytes_decode_to_a_message_or_a_400(body: bytes):
    """A17 as a property: random bytes never escape as anything but a 400 refusal."""
    for encoding in Encoding:
        assert refusal_of(ingest_http.decode, body, ExportMetricsServiceRequest, encoding) in (
            None,
            400,
        )


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=20,
)
_otlp_keys = st.sampled_from(
    ["resourceMetrics", "scopeMetrics", "metrics", "gauge", "sum", "dataPoints", "asInt",
     "asDouble", "attributes", "key", "value", "stringValue", "intValue", "exemplars",
     "traceId", "spanId", "timeUnixNano", "name", "resource"]
)  # fmt: skip
_otlp_like = st.recursive(
    st.none() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_otlp_keys, inner, max_size=4),
    max_leaves=25,
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=st.dictionaries(_otlp_keys, _otlp_like, max_size=3) | _json_values)
def test_any_json_decodes_to_a_message_or_a_400(document: Any):
    body = json.dumps(document).encode()
    refused = refusal_of(ingest_http.decode, body, ExportMetricsServiceRequest, Encoding.JSON)
    assert refused in (None, 400)


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=256), as_gzip=st.booleans())
def test_any_bytes_inflate_to_a_body_or_a_refusal(data: bytes, as_gzip: bool):
    assert refusal_of(ingest_http.inflate, data, gzip=as_gzip) in (None, 400, 413)


# --- OTLP JSON ---


class TestOtlpJson:
    @pytest.mark.parametrize(
        "value", [pytest.param("2048", id="string"), pytest.param(2048, id="number")]
    )
    async def test_int64_as_string_or_number_is_taken(self, receiver: Receiver, value: Any):
        body = json.dumps(pushed_json([{"asInt": value, "timeUnixNano": value}])).encode()
        answer = await receiver.post(body, content_type=JSON)
        assert answer.status_code == 200, answer.text
        assert answer.json() == {}
        assert (await receiver.pushed_fields())["memory"]["used_memory"] == 2048

    async def test_unknown_fields_are_ignored(self, receiver: Receiver):
        """A22: at every level."""
        document = pushed_json([{"asInt": "77", "fooBar": 1}])
        document["fooBar"] = {"x": [1]}
        document["resourceMetrics"][0]["fooBar"] = 2
        answer = await receiver.post(json.dumps(document).encode(), content_type=JSON)
        assert answer.status_code == 200, answer.text
        assert (await receiver.pushed_fields())["memory"]["used_memory"] == 77

    @pytest.mark.parametrize(
        "temporality",
        [
            pytest.param(2, id="integer"),
            pytest.param("AGGREGATION_TEMPORALITY_CUMULATIVE", id="name"),
        ],
    )
    async def test_a_cumulative_sum_is_taken_whether_the_enum_is_a_number_or_a_name(
        self, receiver: Receiver, temporality: Any
    ):
        """A23: OTLP writes enums as integers; the receiver also reads their names."""
        document = pushed_json([])
        metric = document["resourceMetrics"][0]["scopeMetrics"][0]["metrics"][0]
        metric.update(
            name="redis.commands.processed",
            sum={
                "aggregationTemporality": temporality,
                "isMonotonic": True,
                "dataPoints": [{"asInt": "31"}],
            },
        )
        del metric["gauge"]
        answer = await receiver.post(json.dumps(document).encode(), content_type=JSON)
        assert answer.status_code == 200, answer.text
        assert answer.json() == {}
        assert (await receiver.pushed_fields())["stats"]["total_commands_processed"] == 31

    async def test_nan_as_a_string_is_dropped_as_invalid_value(self, receiver: Receiver):
        """A21: the policy: JSON's "NaN" reads as a float and is dropped as invalid_value;
        a bare NaN literal is not JSON the message accepts (400)."""
        body = json.dumps(pushed_json([{"asDouble": "NaN"}, {"asDouble": "Infinity"}])).encode()
        answer = await receiver.post(body, content_type=JSON)
        assert answer.status_code == 200
        assert answer.json()["partialSuccess"] == {
            "rejectedDataPoints": "2",
            "errorMessage": "invalid_value=2",
        }
        bare = b'{"resourceMetrics": [{"scopeMetrics": [{"metrics": [{"name": "redis.uptime", '
        bare += b'"gauge": {"dataPoints": [{"asDouble": NaN}]}}]}]}]}'
        assert (await receiver.post(bare, content_type=JSON)).status_code == 400
        assert await receiver.pushed_fields() == {}

    @pytest.mark.parametrize(
        "time_unix_nano", [pytest.param("0", id="zero"), pytest.param(str(2**64 - 1), id="max")]
    )
    async def test_an_unset_or_far_future_timestamp_counts_as_now(
        self, receiver: Receiver, time_unix_nano: str
    ):
        """A29: clamped, no overflow."""
        body = json.dumps(pushed_json([{"asInt": "55", "timeUnixNano": time_unix_nano}]))
        answer = await receiver.post(body.encode(), content_type=JSON)
        assert answer.status_code == 200
        assert answer.json() == {}
        assert (await receiver.pushed_fields())["memory"]["used_memory"] == 55

    async def test_exemplar_ids_are_read_as_hex(self, receiver: Receiver):
        """A24: upper-case hex, as the example in OpenTelemetry's OTLP documentation writes them."""
        exemplar = {
            "traceId": "5B8EFFF798038103D269B633813FC60C",
            "spanId": "EEE19B7EC3C1B174",
            "asInt": "1",
        }
        body = json.dumps(pushed_json([{"asInt": "66", "exemplars": [exemplar]}])).encode()
        answer = await receiver.post(body, content_type=JSON)
        assert answer.status_code == 200, answer.text
        exemplar["traceId"] = "not-hex"
        body = json.dumps(pushed_json([{"asInt": "67", "exemplars": [exemplar]}])).encode()
        answer = await receiver.post(body, content_type=JSON)
        assert answer.status_code == 400
        assert "traceId" in answer.json()["message"]
        assert (await receiver.pushed_fields())["memory"]["used_memory"] == 66


# --- answers ---


class TestAnswers:
    async def test_full_success_in_protobuf_leaves_partial_success_unset(self, receiver: Receiver):
        answer = await receiver.post(pushed({"memory.used": 3000}).SerializeToString())
        assert answer.headers["content-type"] == PROTOBUF
        assert not metrics_answer(answer).HasField("partial_success")

    async def test_partial_success_in_protobuf(self, receiver: Receiver):
        request = pushed({"memory.used": 3001, "no.such.metric": 1})
        pushed({"memory.used": 5}, host="10.9.9.9", request=request)
        response = metrics_answer(await receiver.post(request.SerializeToString()))
        assert response.partial_success.rejected_data_points == 2
        assert response.partial_success.error_message == "unknown_instance=1 unmapped_metric=1"
        assert (await receiver.pushed_fields())["memory"]["used_memory"] == 3001

    async def test_partial_success_in_json(self, receiver: Receiver):
        document = pushed_json([{"asInt": "3002"}])
        document["resourceMetrics"][0]["scopeMetrics"][0]["metrics"].append(
            {"name": "redis.no.such.metric", "gauge": {"dataPoints": [{"asInt": "1"}]}}
        )
        anonymous = {
            "scopeMetrics": [
                {"metrics": [{"name": "redis.uptime", "gauge": {"dataPoints": [{"asInt": 9}]}}]}
            ]
        }
        document["resourceMetrics"].append(anonymous)
        answer = await receiver.post(json.dumps(document).encode(), content_type=JSON)
        assert answer.status_code == 200
        assert answer.headers["content-type"] == JSON
        partial = answer.json()["partialSuccess"]
        assert int(partial["rejectedDataPoints"]) == 2
        assert partial["errorMessage"] == "unidentified=1 unmapped_metric=1"

    async def test_an_empty_export_is_a_full_success(self, receiver: Receiver):
        """A25: nothing to take is not a failure, in either encoding."""
        assert not metrics_answer(await receiver.post(b"")).HasField("partial_success")
        answer = await receiver.post(b"{}", content_type=JSON)
        assert (answer.status_code, answer.json()) == (200, {})

    async def test_resources_without_points_reject_nothing(self, receiver: Receiver):
        """A25: envelopes with zero points: no partialSuccess, no `reason=0` items."""
        document = {"resourceMetrics": [{"resource": {}}, {"scopeMetrics": [{"metrics": []}]}]}
        answer = await receiver.post(json.dumps(document).encode(), content_type=JSON)
        assert (answer.status_code, answer.json()) == (200, {})

    async def test_metrics_without_points_reject_nothing(self, receiver: Receiver):
        """A25: a histogram, a delta sum and an unmapped name, all without points, from
        the registered instance: nothing was rejected, so no `reason=0` items."""
        document = pushed_json([{"asInt": "12"}])
        document["resourceMetrics"][0]["scopeMetrics"][0]["metrics"] += [
            {"name": "redis.cmd.latency", "histogram": {"aggregationTemporality": 2}},
            {"name": "redis.keys.expired", "sum": {"aggregationTemporality": 1}},
            {"name": "redis.no.such.metric", "gauge": {}},
        ]
        answer = await receiver.post(json.dumps(document).encode(), content_type=JSON)
        assert (answer.status_code, answer.json()) == (200, {})
        assert (await receiver.pushed_fields())["memory"]["used_memory"] == 12


# --- the gate ---


class TestToken:
    @pytest.fixture
    async def guarded(self, receiver_factory: Any) -> AsyncIterator[Receiver]:
        async with receiver_factory(OTEL_INGEST_TOKEN=TOKEN) as started:
            yield started

    @staticmethod
    def _body() -> bytes:
        return pushed({"memory.used": 4000}).SerializeToString()

    async def test_no_authorization_is_401_before_the_body_is_read(self, guarded: Receiver):
        """A01: a broken gzip body is not even inflated."""
        answer = await guarded.post(b"\x1f\x8bbroken", headers={"content-encoding": "gzip"})
        assert answer.status_code == 401
        assert answer.headers["www-authenticate"] == "Bearer"
        assert status_of(answer).code == 16  # UNAUTHENTICATED
        assert await guarded.pushed_fields() == {}

    @pytest.mark.parametrize(
        "authorization",
        [
            pytest.param(f"Bearer {TOKEN[:-1]}X", id="last-byte-wrong"),
            pytest.param(f"Bearer {TOKEN}x", id="one-byte-longer"),
            pytest.param("Bearer ", id="empty"),
            pytest.param(TOKEN, id="no-scheme"),
            pytest.param(f"Basic {TOKEN}", id="basic"),
            pytest.param("Bearer wrong-credential-abc", id="other"),
        ],
    )
    async def test_a_wrong_token_is_401(self, guarded: Receiver, authorization: str):
        """A02."""
        answer = await guarded.post(self._body(), headers={"authorization": authorization})
        assert answer.status_code == 401
        assert "wrong-credential-abc" not in answer.text
        assert await guarded.pushed_fields() == {}

    @pytest.mark.parametrize(
        "authorization",
        [f"Bearer {TOKEN}", f"bearer {TOKEN}", f"BEARER   {TOKEN}  "],
    )
    async def test_the_right_bearer_token_is_taken(self, guarded: Receiver, authorization: str):
        """A03: the scheme is case-insensitive and spaces around the token do not count."""
        answer = await guarded.post(self._body(), headers={"authorization": authorization})
        assert not metrics_answer(answer).HasField("partial_success")
        assert (await guarded.pushed_fields())["memory"]["used_memory"] == 4000

    async def test_the_token_guards_the_trace_receiver_too(self, guarded: Receiver):
        assert (await guarded.post(b"", path=TRACES)).status_code == 401
        answer = await guarded.post(b"", path=TRACES, headers={"authorization": f"Bearer {TOKEN}"})
        assert answer.status_code == 200

    @pytest.mark.parametrize(
        "order", [pytest.param(0, id="right-first"), pytest.param(1, id="wrong-first")]
    )
    async def test_two_authorization_headers_are_401(self, guarded: Receiver, order: int):
        """A03: Authorization is a singleton field (RFC 9110 11.6.2); two are refused
        whichever comes first."""
        both = [f"Bearer {TOKEN}", "Bearer wrong"]
        headers = [("authorization", value) for value in both[order:] + both[:order]]
        answer = await guarded.post(self._body(), headers=headers)
        assert answer.status_code == 401

    async def test_the_token_never_appears_in_a_response(self, guarded: Receiver):
        given = [
            ({}, b"\x00"),
            ({"authorization": f"Bearer {TOKEN[:-1]}"}, self._body()),
            ({"authorization": f"Bearer {TOKEN}"}, self._body()),
            ({"authorization": f"Bearer {TOKEN}"}, b"\xff\xff"),
            ({"authorization": f"Bearer {TOKEN}", "content-encoding": "br"}, self._body()),
            ({"authorization": f"Bearer {TOKEN}", "content-encoding": "gzip"}, b"junk"),
        ]
        for headers, body in given:
            for content_type in (PROTOBUF, JSON, "text/plain"):
                answer = await guarded.post(body, content_type=content_type, headers=headers)
                shown = answer.content + str(answer.headers).encode()
                assert TOKEN.encode() not in shown
                assert TOKEN[:-1].encode() not in shown


class TestDisabled:
    @pytest.mark.parametrize("path", [METRICS, TRACES])
    async def test_both_receivers_are_404_when_ingest_is_off(
        self, receiver_factory: Any, path: str
    ):
        async with receiver_factory(OTEL_INGEST_ENABLED=False) as off:
            answer = await off.post(b"", path=path)
            assert answer.status_code == 404
            assert status_of(answer).code == 5  # NOT_FOUND
            answer = await off.post(
                json.dumps(pushed_json([{"asInt": "1"}])).encode(), path=path, content_type=JSON
            )
            assert answer.status_code == 404
            assert await off.pushed_fields() == {}


class TestOtherMethods:
    @pytest.mark.parametrize("path", [METRICS, "/v1/metrics", TRACES])
    @pytest.mark.parametrize("method", ["GET", "PUT", "PATCH", "DELETE"])
    async def test_anything_but_post_is_405_naming_post(
        self, receiver: Receiver, path: str, method: str
    ):
        """A16: a sender configured with the wrong method learns which one to use, in the
        OTLP error shape its client can decode."""
        answer = await receiver.client.request(method, path, content=b"")
        assert answer.status_code == 405
        assert answer.headers["allow"] == "POST"
        assert answer.headers["content-type"].startswith(JSON)
        status = status_of(answer)
        assert status.code == 12  # UNIMPLEMENTED
        assert "POST" in status.message
        assert path in status.message

    async def test_a_405_is_a_protobuf_status_when_the_request_speaks_protobuf(
        self, receiver: Receiver
    ):
        answer = await receiver.client.put(TRACES, content=b"", headers={"content-type": PROTOBUF})
        assert answer.status_code == 405
        assert answer.headers["allow"] == "POST"
        assert answer.headers["content-type"] == PROTOBUF
        assert "POST" in status_of(answer).message

    async def test_head_is_405_with_allow_and_no_body(self, receiver: Receiver):
        answer = await receiver.client.head("/v1/metrics")
        assert answer.status_code == 405
        assert answer.headers["allow"] == "POST"

    async def test_a_get_stores_nothing_and_the_page_catch_all_still_answers(
        self, receiver: Receiver
    ):
        await receiver.client.get(METRICS, params={"memory.used": "1"})
        assert await receiver.pushed_fields() == {}
        assert (await receiver.client.get("/v1/other")).status_code == 404


# --- traces (the trace store is the traces domain's; here only what the gate decides) ---


def _trace_document(**ids: str) -> bytes:
    span = {
        "traceId": "0af7651916cd43dd8448eb211c80319c",
        "spanId": "b7ad6b7169203331",
        "name": "GET /api/health",
        "kind": 2,
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": 1700000000005000000,
    }
    span.update(ids)
    scope = {"scope": {"name": "@svc/test"}, "spans": [span]}
    return json.dumps({"resourceSpans": [{"scopeSpans": [scope]}]}).encode()


class TestTraceJson:
    async def test_hex_ids_are_taken(self, receiver: Receiver):
        answer = await receiver.post(_trace_document(), content_type=JSON, path=TRACES)
        assert answer.status_code == 200, answer.text
        assert answer.headers["content-type"] == JSON

    async def test_upper_case_hex_ids_are_taken(self, receiver: Receiver):
        ids = {"traceId": "0AF7651916CD43DD8448EB211C80319C", "spanId": "B7AD6B7169203331"}
        answer = await receiver.post(_trace_document(**ids), content_type=JSON, path=TRACES)
        assert answer.status_code == 200, answer.text

    @pytest.mark.parametrize(
        ("field", "value"),
        [
            ("traceId", "zz" * 16),
            ("traceId", "AAECAwQFBgcICQoLDA0ODw=="),  # base64, as protobuf's own JSON writes
            ("spanId", "0xb7ad6b7169"),
            ("parentSpanId", "not hex"),
        ],
    )
    async def test_an_id_that_is_not_hex_is_400_naming_the_field(
        self, receiver: Receiver, field: str, value: str
    ):
        answer = await receiver.post(
            _trace_document(**{field: value}), content_type=JSON, path=TRACES
        )
        assert answer.status_code == 400
        assert field in status_of(answer).message

    async def test_an_empty_protobuf_trace_export_is_a_full_success(self, receiver: Receiver):
        answer = await receiver.post(b"", path=TRACES)
        assert (answer.status_code, answer.content) == (200, b"")
        assert answer.headers["content-type"] == PROTOBUF


# --- what a sender can make the receiver keep ---


class TestHeldBySenders:
    async def test_a_huge_service_name_is_not_held_whole_for_discovery(self, receiver: Receiver):
        """A28: without a token anyone may push; 200 unregistered pushers, each with a
        900 KiB service.name, must not pin 180 MiB for 24 hours."""
        request = pushed({"memory.used": 1}, host="10.7.7.7")
        name = request.resource_metrics[0].resource.attributes.add(key="service.name")
        name.value.string_value = "n" * (900 * 1024)
        answer = await receiver.post(request.SerializeToString())
        assert answer.status_code == 200
        [discovered] = (await receiver.client.get("/api/connections/discovered")).json()
        assert discovered["host"] == "10.7.7.7"
        assert len(discovered["name"] or "") <= 1024

    async def test_a_host_longer_than_any_dns_name_is_not_discovered(self, receiver: Receiver):
        """A28: a 900 KiB server.address names no host (DNS names stop at 253 bytes)."""
        request = pushed({"memory.used": 1}, host="h" * (900 * 1024))
        answer = await receiver.post(request.SerializeToString())
        assert answer.status_code == 200
        assert (await receiver.client.get("/api/connections/discovered")).json() == []
