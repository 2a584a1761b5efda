"""The OTLP receivers under a mutation fuzzer (hypothesis): valid metrics and trace
requests, protobuf and JSON, with bytes overwritten, cut short or thrown away, and JSON
with any value put anywhere. A served svc-monitor answers each as the OTLP/HTTP spec
lets it (2xx with or without a partial success, 4xx naming the fault), never a 5xx, and
keeps serving."""

import base64
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from google.protobuf import json_format
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.fixtures.replica_processes import replica_process, service_env
from tests.fixtures.servers import RunningServer
from tests.otlp.push_payloads import at, body, cumulative, gauge, point, resource
from tests.traces.builders import SpanSpec, export_request, new_trace_id

METRICS, TRACES = "/v1/external/metrics", "/v1/traces"
PROTOBUF, JSON = "application/x-protobuf", "application/json"
FUZZ = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,  # the same requests on every run: a failure reproduces
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

METRICS_BODY = body(
    resource(
        at("10.20.30.40", 6379, **{"service.name": "cache"}),
        gauge("redis.memory.used", point(1024), point(2048.5)),
        cumulative("redis.commands.processed", point(10)),
        gauge("redis.db.keys", point(3, db="0")),
    )
)
TRACES_BODY = export_request(
    SpanSpec("GET /cart", new_trace_id(), attributes={"db.system": "redis"})
).SerializeToString()


def as_json(payload: bytes, kind: str) -> str:
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
        ExportMetricsServiceRequest,
    )
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    message = ExportMetricsServiceRequest() if kind == METRICS else ExportTraceServiceRequest()
    message.ParseFromString(payload)
    return json.dumps(_hex_ids(json_format.MessageToDict(message)))


def _hex_ids(value: Any) -> Any:
    """OTLP/JSON writes trace and span ids in hex, where protobuf's JSON writes base64."""
    if isinstance(value, dict):
        return {
            k: base64.b64decode(v).hex() if k in _IDS and isinstance(v, str) else _hex_ids(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_hex_ids(v) for v in value]
    return value


_IDS = {"traceId", "spanId", "parentSpanId"}


@pytest.fixture(scope="module")
def receiver(
    valkey_server: RunningServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("otlp-fuzz")
    env = service_env(valkey_server, tmp / "data", OTLP_DISCOVER_INSTANCES="true")
    with replica_process(env, tmp / "serve.log") as service:
        yield service.url
        log = service.log_path.read_text(errors="replace")
        assert "Traceback" not in log, log[-4000:]


def post(base: str, path: str, content: bytes | str, content_type: str) -> httpx.Response:
    reply = httpx.post(
        f"{base}{path}", content=content, headers={"Content-Type": content_type}, timeout=10
    )
    assert reply.status_code < 500, (reply.status_code, reply.text[:300], content[:200])
    return reply


@st.composite
def mutated(draw: st.DrawFn, payload: bytes) -> bytes:
    """`payload` with some bytes overwritten, some cut out, or cut short."""
    data = bytearray(payload)
    for _ in range(draw(st.integers(0, 8))):
        at_ = draw(st.integers(0, len(data) - 1))
        data[at_] = draw(st.integers(0, 255))
    if draw(st.booleans()):
        start = draw(st.integers(0, len(data)))
        data[start : start + draw(st.integers(0, 16))] = b""
    if draw(st.booleans()):
        data = data[: draw(st.integers(0, len(data)))]
    return bytes(data)


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=20,
)


@st.composite
def json_mutated(draw: st.DrawFn, document: Any) -> Any:
    """`document` with one value (anywhere in it) replaced by any JSON value."""
    if isinstance(document, dict) and document and draw(st.booleans()):
        key = draw(st.sampled_from(sorted(document)))
        return {**document, key: draw(json_mutated(document[key]))}
    if isinstance(document, list) and document and draw(st.booleans()):
        index = draw(st.integers(0, len(document) - 1))
        copy = list(document)
        copy[index] = draw(json_mutated(document[index]))
        return copy
    return draw(JSON_VALUES)


@pytest.mark.parametrize(("path", "payload"), [(METRICS, METRICS_BODY), (TRACES, TRACES_BODY)])
def test_mutated_protobuf_is_never_a_server_error(receiver: str, path: str, payload: bytes) -> None:
    @FUZZ
    @given(content=mutated(payload) | st.binary(max_size=512))
    def send(content: bytes) -> None:
        post(receiver, path, content, PROTOBUF)

    send()
    assert post(receiver, path, payload, PROTOBUF).status_code == 200  # still serving


@pytest.mark.parametrize(("path", "payload"), [(METRICS, METRICS_BODY), (TRACES, TRACES_BODY)])
def test_mutated_json_is_never_a_server_error(receiver: str, path: str, payload: bytes) -> None:
    document = json.loads(as_json(payload, path))

    @FUZZ
    @given(changed=json_mutated(document))
    def send(changed: Any) -> None:
        post(receiver, path, json.dumps(changed), JSON)

    send()
    assert post(receiver, path, as_json(payload, path), JSON).status_code == 200
