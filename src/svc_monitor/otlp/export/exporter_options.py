"""What the OpenTelemetry SDKs' standard exporter variables ask of our OTLP export, per
signal (`metrics`, `logs`): extra headers, compression and a timeout.

Each per-signal variable (`OTEL_EXPORTER_OTLP_METRICS_HEADERS` ...) takes precedence over
the general one (`OTEL_EXPORTER_OTLP_HEADERS` ...), as the OpenTelemetry specification
orders them. Headers are `key=value` pairs separated by commas, values percent-encoded
(`Authorization=Bearer%20abc`); they usually carry a token, so they are settings kept
secret and no error names a value. Compression is `gzip` (our default, as the
Collector's own exporter) or `none`; the timeout is in milliseconds (10 s by default).
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from svc_monitor.config import Settings
from svc_monitor.kit.header_list import parse_headers

Signal = Literal["metrics", "logs"]
DEFAULT_TIMEOUT_MS = 10_000


@dataclass(frozen=True, slots=True)
class SignalOptions:
    headers: Mapping[str, str] = field(default_factory=dict)
    gzip: bool = True
    timeout_s: float = DEFAULT_TIMEOUT_MS / 1000


def signal_options(settings: Settings, signal: Signal) -> SignalOptions:
    upper = signal.upper()
    headers_setting = getattr(settings, f"OTEL_EXPORTER_OTLP_{upper}_HEADERS")
    if headers_setting is None:
        headers_setting = settings.OTEL_EXPORTER_OTLP_HEADERS
    compression = getattr(settings, f"OTEL_EXPORTER_OTLP_{upper}_COMPRESSION")
    compression = compression or settings.OTEL_EXPORTER_OTLP_COMPRESSION or "gzip"
    timeout_ms = getattr(settings, f"OTEL_EXPORTER_OTLP_{upper}_TIMEOUT")
    if timeout_ms is None:
        timeout_ms = settings.OTEL_EXPORTER_OTLP_TIMEOUT or DEFAULT_TIMEOUT_MS
    return SignalOptions(
        headers=parse_headers(headers_setting.get_secret_value()) if headers_setting else {},
        gzip=compression == "gzip",
        timeout_s=timeout_ms / 1000,
    )
