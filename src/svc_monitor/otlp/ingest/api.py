"""The OTLP/HTTP receivers at the server root: `/v1/traces` and `/v1/external/metrics`.

Open to anyone who can reach them unless OTEL_INGEST_TOKEN is set (then a bearer token);
session auth never applies, since collectors and SDKs carry no session.
"""

from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from svc_monitor.api.dependencies import get_services
from svc_monitor.api.error_responses import error_body
from svc_monitor.otlp.ingest.protocol import handle_export

router = APIRouter(tags=["otlp"])

_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "application/x-protobuf": {"schema": {"type": "string", "format": "binary"}},
            "application/json": {"schema": {"type": "object"}},
        },
    }
}
_ANSWERS: dict[int | str, dict[str, Any]] = {
    200: {"description": "Taken; `partialSuccess` counts what was not, `<reason>=<count>` items"},
    400: {"description": "Malformed body (google.rpc.Status, in the request's encoding)"},
    401: {"description": "OTEL_INGEST_TOKEN is set and the bearer token is missing or wrong"},
    404: {"description": "OTEL_INGEST_ENABLED is off"},
    413: {"description": "Over 1 MiB after decompression"},
    415: {"description": "Content-Type not protobuf/JSON, or Content-Encoding not gzip/deflate"},
}


@router.post("/v1/traces", openapi_extra=_BODY, responses=_ANSWERS)
async def receive_traces(request: Request) -> Response:
    """OTLP/HTTP trace export. Spans of `@svc/...` scopes and root spans are stored (the AI
    Traces page); other spans are counted in `partialSuccess.rejectedSpans`."""
    services = get_services(request)
    return await handle_export(
        request, services.settings, ExportTraceServiceRequest, services.traces.ingest
    )


@router.post("/v1/external/metrics", openapi_extra=_BODY, responses=_ANSWERS)
async def receive_metrics(request: Request) -> Response:
    """OTLP/HTTP metrics export from a Collector watching an instance we cannot reach.
    `redis.*`/`valkey.*` gauges and cumulative sums are matched to a push connection by
    `service.instance.id` or `server.address` + `server.port`; each point not taken is
    counted by reason in `partialSuccess.errorMessage`
    (unidentified, unknown_instance, already_polled, unsupported_type,
    unsupported_temporality, unmapped_metric, invalid_value, cardinality_limit)."""
    services = get_services(request)
    return await handle_export(
        request, services.settings, ExportMetricsServiceRequest, services.metrics_receiver.ingest
    )


# Other methods on the receivers: without these routes the UI's GET catch-all would claim
# them and answer an HTML 404, which tells a misconfigured sender nothing.
OTHER_METHODS = ["GET", "PUT", "PATCH", "DELETE"]


@router.api_route("/v1/traces", methods=OTHER_METHODS, include_in_schema=False)
@router.api_route("/v1/external/metrics", methods=OTHER_METHODS, include_in_schema=False)
async def only_post(request: Request) -> JSONResponse:
    message = f"{request.method} is not allowed here; OTLP exports are POSTed"
    return JSONResponse(error_body(405, message), 405, headers={"Allow": "POST"})
