"""What the OpenTelemetry SDKs' standard exporter variables ask of our OTLP export, per
signal (`metrics`, `logs`): where to post, extra headers, compression, a timeout and TLS.

Each per-signal variable (`OTEL_EXPORTER_OTLP_METRICS_HEADERS` ...) takes precedence over
the general one (`OTEL_EXPORTER_OTLP_HEADERS` ...), as the OpenTelemetry SDKs order them.
Endpoints follow the SDKs' rule too: a per-signal endpoint
(`OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`) is the whole URL, used as it is; the general one
is a base that gets `/v1/metrics` or `/v1/logs` appended
(docs/features/otlp-export.md#otlp-export-metrics-and-events). A signal with neither is not
exported. Headers are `key=value` pairs separated by commas, values percent-encoded
(`Authorization=Bearer%20abc`); they usually carry a token, so they are settings kept
secret and no error names a value. Compression is `gzip` (our default, as the
Collector's own exporter) or `none`; the timeout is in milliseconds (10 s by default).
TLS files are PEM paths, checked at start-up (config.py): CERTIFICATE is the CA bundle
that replaces the system's trust store for that signal, CLIENT_CERTIFICATE and
CLIENT_KEY the pair a collector that asks for client certificates gets.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from svc_monitor.config import Settings
from svc_monitor.kit.header_list import parse_headers

Signal = Literal["metrics", "logs"]
SIGNALS: tuple[Signal, ...] = ("metrics", "logs")
DEFAULT_TIMEOUT_MS = 10_000


@dataclass(frozen=True, slots=True)
class SignalOptions:
    # The whole URL to post this signal to; None: the transport's base endpoint + path.
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    gzip: bool = True
    timeout_s: float = DEFAULT_TIMEOUT_MS / 1000
    certificate: Path | None = None  # CA bundle to trust instead of the system's
    client_certificate: Path | None = None
    client_key: Path | None = None


def signal_url(settings: Settings, signal: Signal) -> str | None:
    """Where `signal` goes: its own endpoint as-is, else the general one + `/v1/<signal>`."""
    own: str | None = getattr(settings, f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT")
    if own:
        return own
    base = settings.OTEL_EXPORTER_OTLP_ENDPOINT
    return f"{base.rstrip('/')}/v1/{signal}" if base else None


def signal_options(settings: Settings, signal: Signal) -> SignalOptions:
    def pick(name: str) -> Any:  # the per-signal setting, else the general one
        own = getattr(settings, f"OTEL_EXPORTER_OTLP_{signal.upper()}_{name}")
        return own if own is not None else getattr(settings, f"OTEL_EXPORTER_OTLP_{name}")

    headers_setting = pick("HEADERS")
    compression = pick("COMPRESSION") or "gzip"
    timeout_ms: int = pick("TIMEOUT") or DEFAULT_TIMEOUT_MS
    return SignalOptions(
        url=signal_url(settings, signal),
        headers=parse_headers(headers_setting.get_secret_value()) if headers_setting else {},
        gzip=compression == "gzip",
        timeout_s=timeout_ms / 1000,
        certificate=pick("CERTIFICATE"),
        client_certificate=pick("CLIENT_CERTIFICATE"),
        client_key=pick("CLIENT_KEY"),
    )
