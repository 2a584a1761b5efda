"""The OpenTelemetry Collector configuration that pushes one instance's metrics to us.

The Add Connection dialog's OTLP push tab and `GET /api/otlp/collector-config` show it:
a complete file an operator runs next to an instance svc-monitor cannot reach. Every key
is the real Collector's (contrib `redisreceiver`, `resourceprocessor`, core `batch` and
`otlphttp`), checked against their config structs and generated metadata:

- the receiver leaves `server.address`/`server.port` off by default, and without them
  (no `service.instance.id` either) the receiver's points reach us `unidentified`;
- `maxmemory`, `role`, `cmd.calls` and `cmd.usec` are off by default too;
- `otlphttp` appends `/v1/metrics` to `endpoint` but sends to `metrics_endpoint` as written,
  and our route is `/v1/external/metrics`;
- Valkey answers INFO with its compatibility `redis_version` (7.2.4), so the version we
  scan for CVEs comes from a `valkey.version` resource attribute the operator sets.

The text is written here rather than dumped from a dict so that it carries the comments
an operator needs to keep it right (the token variable, the version to bump on upgrade).
"""

import json
from typing import Literal

Engine = Literal["redis", "valkey"]

INGEST_PATH = "/v1/external/metrics"
# The environment variable the Collector reads the bearer token from.
TOKEN_VARIABLE = "SVC_INGEST_TOKEN"
# Shown until the operator types the Valkey version they run.
VALKEY_VERSION_PLACEHOLDER = "9.0.0"
# Our receiver refuses a request over 1 MiB once decompressed. Measured: 1,000 cmd.calls
# and cmd.usec points with 30-character command names are 72 KB as protobuf and 205 KB as
# JSON, so 1,000 points a request stay far below the limit in either encoding, with room
# for longer names. One scrape of an instance with 200 commands in commandstats is about
# 1,050 points (calls, usec and three latency percentiles each): two requests, which the
# receiver merges as it merges any two pushes.
BATCH_MAX_POINTS = 1000
COLLECTION_INTERVAL = "15s"
# A version as the Valkey project numbers its releases (9.0.0, 8.1.4, 9.1.0-rc1).
VERSION_PATTERN = r"^\d{1,3}\.\d{1,3}(\.\d{1,3})?(-[0-9A-Za-z.]{1,20})?$"
# Off by default in the receiver; each maps to an INFO field we chart and alert on.
# redis.mode is not listed: only recent receivers have it, and naming a metric that a
# Collector's receiver lacks makes it refuse the whole file.
EXTRA_METRICS = (
    "redis.maxmemory",
    "redis.role",
    "redis.cmd.calls",
    "redis.cmd.usec",
    "redis.cmd.latency",
    "redis.replication.replica_offset",
)


def collector_config(
    *,
    host: str,
    port: int,
    service_url: str,
    engine: Engine = "redis",
    valkey_version: str | None = None,
    token: bool = True,
) -> str:
    """The Collector's YAML for the instance at `host:port`, pushing to `service_url`."""
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    valkey = engine == "valkey"
    parts = [
        _header(address, valkey=valkey),
        _receivers(address),
        _processors(valkey=valkey, version=valkey_version),
        _exporters(service_url.rstrip("/") + INGEST_PATH, token=token),
        _service(valkey=valkey),
    ]
    return "\n".join(parts)


def _quoted(text: str) -> str:
    # A JSON string is a valid YAML double-quoted scalar: it keeps "9.0" a string, not a
    # float, and a `#` or `: ` in a value from being read as YAML.
    return json.dumps(text)


def _header(address: str, *, valkey: bool) -> str:
    engine = "Valkey" if valkey else "Redis"
    return (
        f"# OpenTelemetry Collector (contrib) configuration, made by svc-monitor:\n"
        f"# collects INFO from the {engine} instance at {address} every {COLLECTION_INTERVAL}\n"
        f"# and pushes it to svc-monitor over OTLP/HTTP.\n"
    )


def _receivers(address: str) -> str:
    metrics = "".join(f"      {name}:\n        enabled: true\n" for name in EXTRA_METRICS)
    return (
        "receivers:\n"
        "  redis:\n"
        f"    endpoint: {_quoted(address)}\n"
        f"    collection_interval: {COLLECTION_INTERVAL}\n"
        "    # password: ${env:REDIS_PASSWORD}  # when the instance requires one\n"
        "    # svc-monitor matches what arrives to the push connection by these two\n"
        "    # attributes; the receiver leaves them off unless they are enabled.\n"
        "    resource_attributes:\n"
        "      server.address:\n"
        "        enabled: true\n"
        "      server.port:\n"
        "        enabled: true\n"
        "    # Off by default: memory limit, role, per-command calls, time and latency\n"
        "    # percentiles, and a replica's offset.\n"
        "    metrics:\n"
        f"{metrics}"
    )


def _processors(*, valkey: bool, version: str | None) -> str:
    text = (
        "processors:\n"
        "  # svc-monitor refuses a request over 1 MiB (measured after decompression);\n"
        f"  # {BATCH_MAX_POINTS} points a request stay far below it, as protobuf or JSON.\n"
        "  batch:\n"
        f"    send_batch_size: {BATCH_MAX_POINTS}\n"
        f"    send_batch_max_size: {BATCH_MAX_POINTS}\n"
    )
    if not valkey:
        return text
    return text + (
        "  # Valkey reports the compatibility version 7.2.4 as redis_version: svc-monitor\n"
        "  # scans Valkey's own version for CVEs from valkey.version. Update it on upgrade.\n"
        "  resource:\n"
        "    attributes:\n"
        "      - key: valkey.version\n"
        f"        value: {_quoted(version or VALKEY_VERSION_PLACEHOLDER)}\n"
        "        action: upsert\n"
        "      - key: db.system.name\n"
        '        value: "valkey"\n'
        "        action: upsert\n"
    )


def _exporters(metrics_endpoint: str, *, token: bool) -> str:
    text = (
        "exporters:\n"
        "  otlphttp:\n"
        "    # metrics_endpoint is used as written (endpoint would get /v1/metrics appended).\n"
        f"    metrics_endpoint: {_quoted(metrics_endpoint)}\n"
    )
    if not token:
        return text
    return text + (
        "    headers:\n"
        f"      # Set {TOKEN_VARIABLE} in the Collector's environment to the value of\n"
        "      # svc-monitor's OTEL_INGEST_TOKEN.\n"
        f'      Authorization: "Bearer ${{env:{TOKEN_VARIABLE}}}"\n'
    )


def _service(*, valkey: bool) -> str:
    processors = "[resource, batch]" if valkey else "[batch]"
    return (
        "service:\n"
        "  pipelines:\n"
        "    metrics:\n"
        "      receivers: [redis]\n"
        f"      processors: {processors}\n"
        "      exporters: [otlphttp]\n"
    )
