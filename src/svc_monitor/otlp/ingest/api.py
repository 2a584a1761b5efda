"""The OTLP/HTTP receivers at the server root: `/v1/traces` and `/v1/external/metrics`.

Open to anyone who can reach them unless OTEL_INGEST_TOKEN is set (then a bearer token);
session auth never applies, since collectors and SDKs carry no session. Both routes go
through `handle_export`: gate, body, decode, answer.

What OTLP/HTTP senders expect (docs/features/otlp-push-and-traces.md): protobuf or JSON
bodies, gzip, deflate, zstd or none, a 200 whose body is the Export*ServiceResponse in the
request's own content type, and on refusal a 4xx with a `google.rpc.Status` in that
type. The Collector retries only 429/502/503/504, so every refusal here is permanent
and says why.

Order of the checks, so a caller learns the most basic problem first: receiver off
(404), token (401), content type and encoding (415), size (413), body (400). The size
limit counts decompressed bytes while inflating, in bounded steps: a zip bomb stops at
the limit having held at most the limit plus one step in memory.
"""

import binascii
import hmac
import json
import zlib
from collections.abc import Awaitable, Callable
from enum import StrEnum
from typing import TYPE_CHECKING, Any, TypeVar

from fastapi import APIRouter, Request, Response

from svc_monitor.api.dependencies import get_services
from svc_monitor.config import Settings
from svc_monitor.errors import AppError, Unavailable

if TYPE_CHECKING:
    from google.protobuf.message import Message

# The protobuf classes load with the first export received, not at start-up: an install
# nobody pushes to never holds them (bench/startup.py).

router = APIRouter(tags=["otlp"])


def _body(example: dict[str, Any]) -> dict[str, Any]:
    """The request body as OTLP/HTTP sends it; `example` is an empty export in JSON."""
    json_body = {"schema": {"type": "object"}, "example": example}
    binary = {"schema": {"type": "string", "format": "binary"}}
    content = {"application/x-protobuf": binary, "application/json": json_body}
    return {"requestBody": {"required": True, "content": content}}


_TRACES_BODY = _body({"resourceSpans": []})
_BODY = _body({"resourceMetrics": []})
_ANSWERS: dict[int | str, dict[str, Any]] = {
    200: {"description": "Taken; `partialSuccess` counts what was not, `<reason>=<count>` items"},
    400: {"description": "Malformed body (google.rpc.Status, in the request's encoding)"},
    401: {"description": "OTEL_INGEST_TOKEN is set and the bearer token is missing or wrong"},
    404: {"description": "OTEL_INGEST_ENABLED is off"},
    413: {"description": "Over 1 MiB after decompression"},
    415: {"description": "Content-Type not protobuf/JSON, or Content-Encoding not supported"},
}


@router.post("/v1/traces", openapi_extra=_TRACES_BODY, responses=_ANSWERS)
async def receive_traces(request: Request) -> Response:
    """OTLP/HTTP trace export. Spans of `@svc/...` scopes and root spans are stored (the AI
    Traces page); other spans are counted in `partialSuccess.rejectedSpans`."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    services = get_services(request)
    return await handle_export(
        request, services.settings, ExportTraceServiceRequest, services.traces.ingest
    )


@router.post("/v1/metrics", openapi_extra=_BODY, responses=_ANSWERS)
@router.post("/v1/external/metrics", openapi_extra=_BODY, responses=_ANSWERS)
async def receive_metrics(request: Request) -> Response:
    """OTLP/HTTP metrics export from a Collector watching an instance we cannot reach, at
    the standard path (an SDK or Collector given only `OTEL_EXPORTER_OTLP_ENDPOINT=<base>`
    posts to `<base>/v1/metrics`) and at `/v1/external/metrics`: same rules, same token.
    `redis.*`/`valkey.*` gauges and cumulative sums are matched to a push connection by
    `service.instance.id` or `server.address` + `server.port`; each point not taken is
    counted by reason in `partialSuccess.errorMessage`
    (unidentified, unknown_instance, already_polled, unsupported_type,
    unsupported_temporality, unmapped_metric, invalid_value, cardinality_limit)."""
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
        ExportMetricsServiceRequest,
    )

    services = get_services(request)

    async def ingest(message: ExportMetricsServiceRequest) -> "Message":
        features = request.app.state.features
        if features is None:  # the receiver is built with the features, just after start
            starting = Unavailable("svc-monitor is still starting; retry in a moment")
            starting.headers = {"Retry-After": "1"}
            raise starting
        response: Message = await features.metrics_receiver.ingest(message)
        return response

    return await handle_export(request, services.settings, ExportMetricsServiceRequest, ingest)


# Other methods on the receivers: without these routes the UI's GET catch-all would claim
# them and answer an HTML page, which tells a misconfigured sender nothing. A 405 in the
# OTLP error shape is what an OTLP client can log. (OPTIONS stays with the access rules.)
OTHER_METHODS = ["GET", "HEAD", "PUT", "PATCH", "DELETE"]


@router.api_route("/v1/traces", methods=OTHER_METHODS, include_in_schema=False)
@router.api_route("/v1/metrics", methods=OTHER_METHODS, include_in_schema=False)
@router.api_route("/v1/external/metrics", methods=OTHER_METHODS, include_in_schema=False)
async def only_post(request: Request) -> Response:
    """A 405 as a google.rpc.Status in the request's encoding, with `Allow: POST`."""
    refused = IngestRefused(
        405, f"{request.method} is not allowed on {request.url.path}; OTLP exports are POSTed"
    )
    response = refusal(refused, _encoding_of(request) or Encoding.JSON)
    response.headers["Allow"] = "POST"
    return response


MAX_BODY_BYTES = 1024 * 1024
# Inflate in steps of this many output bytes: memory stays bounded whatever the ratio.
_INFLATE_STEP = 64 * 1024

M = TypeVar("M", bound="Message")

# JSON fields that carry ids as hex in OTLP JSON (protobuf's JSON reads bytes as base64).
_HEX_ID_FIELDS = frozenset({"traceId", "spanId", "parentSpanId", "trace_id", "span_id"})

# gRPC status codes for the Status body, by HTTP status.
_GRPC_CODES = {400: 3, 401: 16, 404: 5, 405: 12, 413: 8, 415: 3, 503: 14}


class Encoding(StrEnum):
    PROTOBUF = "application/x-protobuf"
    JSON = "application/json"


class IngestRefused(Exception):
    """A request the receiver will not take; permanent, with a reason for the sender."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


async def handle_export(
    request: Request,
    settings: Settings,
    request_type: type[M],
    handler: Callable[[M], Awaitable["Message"]],
) -> Response:
    """Gate, read and decode an export request, let `handler` take it, answer in kind."""
    encoding = _encoding_of(request)
    try:
        _check_gate(request, settings)
        if encoding is None:
            raise IngestRefused(
                415,
                "Content-Type must be application/x-protobuf or application/json",
            )
        body = await read_body(request)
        message = decode(body, request_type, encoding)
    except IngestRefused as refused:
        return refusal(refused, encoding or Encoding.JSON)
    try:
        taken = await handler(message)
    except AppError as exc:  # storage busy or failing (503): an OTLP body, so senders retry
        response = refusal(IngestRefused(exc.status_code, exc.message), encoding)
        response.headers.update(exc.headers or {})
        return response
    return answer(taken, encoding)


def _check_gate(request: Request, settings: Settings) -> None:
    if not settings.OTEL_INGEST_ENABLED:
        raise IngestRefused(404, "OTLP ingest is disabled (OTEL_INGEST_ENABLED)")
    token = settings.OTEL_INGEST_TOKEN
    if token is None:
        return
    sent = request.headers.getlist("authorization")
    # Two Authorization headers are ambiguous: refuse rather than pick one.
    given = sent[0] if len(sent) == 1 else ""
    scheme, _, credential = given.partition(" ")
    expected = token.get_secret_value().encode()
    # Compared in constant time whatever the scheme, so timing tells nothing either way.
    matches = hmac.compare_digest(credential.strip().encode(), expected)
    if scheme.lower() != "bearer" or not matches:
        raise IngestRefused(401, "Missing or invalid ingest token (Authorization: Bearer)")


def _encoding_of(request: Request) -> Encoding | None:
    media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media in ("application/x-protobuf", "application/protobuf"):
        return Encoding.PROTOBUF
    if media == "application/json":
        return Encoding.JSON
    return None


async def read_body(request: Request, limit: int = MAX_BODY_BYTES) -> bytes:
    """The decompressed body, refused (413) as soon as it would pass `limit`."""
    coding = request.headers.get("content-encoding", "identity").strip().lower()
    if coding not in ("identity", "", "gzip", "x-gzip", "deflate", "zstd"):
        raise IngestRefused(
            415, f"Content-Encoding {coding!r} is not supported (gzip, deflate, zstd)"
        )
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise IngestRefused(413, _too_large(limit))
    raw = bytearray()
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > limit:  # compressed bodies never legitimately exceed the limit either
            raise IngestRefused(413, _too_large(limit))
    if coding in ("identity", ""):
        return bytes(raw)
    if coding == "zstd":
        return unzstd(raw, limit=limit)
    return inflate(raw, gzip=coding != "deflate", limit=limit)


def unzstd(data: bytes | bytearray, *, limit: int = MAX_BODY_BYTES) -> bytes:
    """Decompress one whole zstd frame, holding at most `limit` + 1 bytes of output.

    The same rules as `inflate` for gzip: a bomb is refused (413), and so is a body that
    is not exactly one complete frame (400): a frame cut short (down to its header, which
    would decompress to nothing and be taken as an empty export), bytes after it, or a
    second frame (a second gzip member is refused too; see the OTLP docs page).

    Two passes, since zstandard offers no one reader that both bounds its output and
    tells where the frame ended: `stream_reader` measures the first frame without holding
    more than the limit (one `read` stops at the end of a frame), then `decompressobj`,
    which stops there too, says whether the frame was complete (`eof`) and what came after
    it (`unused_data`). The second pass only runs on a frame known to fit, so it holds no
    more than the limit either; decompressing twice costs about 1 ms per MiB."""
    import zstandard

    try:
        with zstandard.ZstdDecompressor().stream_reader(bytes(data)) as reader:
            measured = len(reader.read(limit + 1))
        if measured > limit:
            raise IngestRefused(413, _too_large(limit))
        frame = zstandard.ZstdDecompressor().decompressobj()
        out = frame.decompress(data)
    except zstandard.ZstdError as exc:
        raise IngestRefused(400, f"The zstd body is not valid: {exc}") from None
    if not frame.eof:
        raise IngestRefused(400, "The zstd body is truncated: its frame ends early")
    if frame.unused_data:
        raise IngestRefused(
            400, "Unexpected bytes after the zstd frame: a body is one complete frame"
        )
    return out


def inflate(data: bytes | bytearray, *, gzip: bool, limit: int = MAX_BODY_BYTES) -> bytes:
    """Decompress gzip, or deflate (zlib-wrapped as HTTP means it, or raw as some send),
    holding at most `limit` plus a few steps of output.

    The input goes in _INFLATE_STEP slices: zlib copies what it could not yet take into
    `unconsumed_tail`, and fed the whole body at once a bomb near the limit made it copy
    ~1 MiB per step (measured peak 3.4 MB for 1 GiB of zeros; 1.5 MB in slices)."""
    if gzip:
        wbits = 16 + zlib.MAX_WBITS
    else:
        wbits = zlib.MAX_WBITS if _looks_zlib_wrapped(data) else -zlib.MAX_WBITS
    inflater = zlib.decompressobj(wbits)
    out = bytearray()
    view = memoryview(data)
    try:
        for start in range(0, len(view), _INFLATE_STEP):
            pending: bytes | memoryview = view[start : start + _INFLATE_STEP]
            while pending and not inflater.eof:
                out += inflater.decompress(pending, _INFLATE_STEP)
                if len(out) > limit:
                    raise IngestRefused(413, _too_large(limit))
                pending = inflater.unconsumed_tail
            if inflater.eof:
                if inflater.unused_data or start + _INFLATE_STEP < len(view):
                    # a second stream or junk: not one message
                    raise IngestRefused(400, "Unexpected bytes after the compressed body")
                break
        if not inflater.eof:
            out += inflater.flush()
            if not inflater.eof:
                raise IngestRefused(400, "The compressed body is truncated")
    except zlib.error as exc:
        kind = "gzip" if gzip else "deflate"
        raise IngestRefused(400, f"The body is not valid {kind}: {exc}") from None
    finally:
        view.release()
    if len(out) > limit:
        raise IngestRefused(413, _too_large(limit))
    return bytes(out)


def _looks_zlib_wrapped(data: bytes | bytearray) -> bool:
    return len(data) >= 2 and data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0


def _too_large(limit: int) -> str:
    return f"The request body is over {limit // 1024} KiB after decompression"


def decode(body: bytes, request_type: type[M], encoding: Encoding) -> M:
    from google.protobuf import json_format
    from google.protobuf.message import DecodeError

    message = request_type()
    if encoding is Encoding.PROTOBUF:
        try:
            message.ParseFromString(body)
        except DecodeError as exc:
            raise IngestRefused(400, f"The body is not a valid protobuf message: {exc}") from None
        return message
    try:
        document = json.loads(body)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise IngestRefused(400, f"The body is not valid JSON: {exc}") from None
    if not isinstance(document, dict):
        raise IngestRefused(400, "The body must be a JSON object")
    try:
        json_format.ParseDict(_hex_ids_to_base64(document), message, ignore_unknown_fields=True)
    except json_format.ParseError as exc:
        raise IngestRefused(400, f"The body is not a valid OTLP JSON message: {exc}") from None
    return message


def _hex_ids_to_base64(node: Any) -> Any:
    """OTLP JSON writes trace and span ids as hex; protobuf's JSON reads bytes as base64."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _HEX_ID_FIELDS and isinstance(value, str):
                node[key] = _hex_to_base64(key, value)
            elif isinstance(value, dict | list):
                _hex_ids_to_base64(value)
    elif isinstance(node, list):
        for item in node:
            if isinstance(item, dict | list):
                _hex_ids_to_base64(item)
    return node


def _hex_to_base64(key: str, value: str) -> str:
    try:
        return binascii.b2a_base64(bytes.fromhex(value), newline=False).decode()
    except ValueError:
        raise IngestRefused(400, f"{key} must be a hex string, got {value[:40]!r}") from None


def answer(message: "Message", encoding: Encoding) -> Response:
    from google.protobuf import json_format

    if encoding is Encoding.PROTOBUF:
        return Response(message.SerializeToString(), 200, media_type=encoding.value)
    if not message.ListFields():
        return Response(b"{}", 200, media_type=encoding.value)
    text = json_format.MessageToJson(message, indent=None, use_integers_for_enums=True)
    return Response(text, 200, media_type=encoding.value)


def refusal(refused: IngestRefused, encoding: Encoding) -> Response:
    from google.rpc import status_pb2

    status = status_pb2.Status(code=_GRPC_CODES.get(refused.status, 2), message=refused.message)
    headers = {"WWW-Authenticate": "Bearer"} if refused.status == 401 else None
    if encoding is Encoding.PROTOBUF:
        body: bytes | str = status.SerializeToString()
    else:
        body = json.dumps({"code": status.code, "message": status.message})
    return Response(body, refused.status, media_type=encoding.value, headers=headers)


@router.api_route("/v1/{path:path}", methods=["POST", *OTHER_METHODS], include_in_schema=False)
async def no_receiver(request: Request, path: str) -> Response:
    """Any other path under /v1/: a 404 in the OTLP error shape (a google.rpc.Status, in
    the request's encoding), which a sender's log shows, rather than the UI's HTML."""
    refused = IngestRefused(
        404,
        f"no OTLP receiver at /v1/{path}: metrics are POSTed to /v1/external/metrics, "
        "traces to /v1/traces",
    )
    return refusal(refused, _encoding_of(request) or Encoding.JSON)
