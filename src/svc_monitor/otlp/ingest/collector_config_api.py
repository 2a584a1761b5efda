"""`GET /api/otlp/collector-config`: the Collector configuration for a push connection.

The same text the Add Connection dialog's OTLP push tab shows, for scripts and for
operators who set up the Collector before they register the connection.
"""

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import PlainTextResponse

from svc_monitor.api.dependencies import ServicesDep
from svc_monitor.api.error_responses import error_responses
from svc_monitor.auth.dependencies.origin import reached_base
from svc_monitor.errors import Unprocessable
from svc_monitor.kit.addresses import is_plain_host
from svc_monitor.otlp.ingest.collector_config import VERSION_PATTERN, Engine, collector_config

router = APIRouter(tags=["otlp"])


@router.get(
    "/otlp/collector-config",
    response_class=PlainTextResponse,
    responses={
        200: {"content": {"text/yaml": {}}, "description": "The Collector's YAML"},
        **error_responses(422),
    },
)
async def get_collector_config(
    request: Request,
    services: ServicesDep,
    host: Annotated[str, Query(min_length=1, max_length=255)],
    port: Annotated[int, Query(ge=1, le=65535)] = 6379,
    engine: Engine = "redis",
    valkey_version: Annotated[
        str | None, Query(alias="valkeyVersion", pattern=VERSION_PATTERN)
    ] = None,
) -> PlainTextResponse:
    """An OpenTelemetry Collector configuration that pushes the instance at `host:port` to
    this service: the `redis` receiver (15 s, `server.address`/`server.port` and the
    metrics off by default turned on), a batch processor sized under the 1 MiB limit,
    for Valkey a resource processor setting `valkey.version` and `db.system.name`, and
    the `otlphttp` exporter with `metrics_endpoint` on `/v1/external/metrics` (plus the
    bearer header when OTEL_INGEST_TOKEN is set). The service URL is AUTH_PUBLIC_URL, or
    the address this request was sent to."""
    host = host.strip()
    if not is_plain_host(host):
        raise Unprocessable("host: must be a host name or IP address", field="host")
    text = collector_config(
        host=host,
        port=port,
        service_url=reached_base(request, services.settings),
        engine=engine,
        valkey_version=valkey_version,
        token=services.settings.OTEL_INGEST_TOKEN is not None,
    )
    return PlainTextResponse(text, media_type="text/yaml")
