"""Every environment variable of the service, validated once at startup.

Field name = environment variable name, so one grep finds both. `cli.py` builds
`Settings()` once and hands it to `create_app(settings)`; nothing else reads
`os.environ`. Tests build `Settings(_env_file=None, ...)` directly.

Booleans take `true/1/yes/on` and `false/0/no/off` (pydantic's words), case-insensitive.
"""

import ipaddress
import logging
import re
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict

from svc_monitor.kit import cloud_ports
from svc_monitor.kit.header_list import parse_headers
from svc_monitor.kit.pem import check_certificates, check_private_key, key_matches
from svc_monitor.kit.public_keys import PublicKeyError, load_public_key

logger = logging.getLogger(__name__)

_MIN_SECRET_LENGTH = {"ENCRYPTION_KEY": 16, "AUTH_SECRET": 32, "PROMETHEUS_BEARER_TOKEN": 16}

# The OTLP exporters' TLS files (otlp/export/exporter_options.py), general and per signal.
_OTLP_PEM_FILES = tuple(
    f"OTEL_EXPORTER_OTLP_{signal}{kind}"
    for kind in ("CERTIFICATE", "CLIENT_CERTIFICATE", "CLIENT_KEY")
    for signal in ("", "METRICS_", "LOGS_")
)

PositiveMs = Annotated[int, Field(ge=1)]
Port = Annotated[int, Field(ge=1, le=65535)]


class StorageType(StrEnum):
    MEMORY = "memory"
    SQLITE = "sqlite"
    POSTGRES = "postgres"
    TURSO = "turso"


class EngineTypeSetting(StrEnum):
    AUTO = "auto"
    VALKEY = "valkey"
    REDIS = "redis"


class ExportMode(StrEnum):
    MIRROR = "mirror"
    SEMCONV = "semconv"


class Settings(BaseSettings):
    """The service's configuration. Each field's docstring is its description, from which
    the docs' configuration reference is generated."""

    model_config = SettingsConfigDict(
        env_file=None,
        extra="ignore",
        case_sensitive=True,
        frozen=True,
        validate_default=True,
        use_attribute_docstrings=True,
    )

    # --- the default connection, created from these on the first start ---
    DB_HOST: str = "localhost"
    """Host of the default connection, created on the first start."""
    DB_PORT: Port = 6379
    """Port of the default connection."""
    DB_USERNAME: str = "default"
    """ACL user of the default connection."""
    DB_PASSWORD: SecretStr | None = None
    """Password of the default connection."""
    DB_TLS: bool = False
    """TLS for the default connection."""
    # ours: PEM files whose text becomes the default connection's tlsCaCert, tlsCert and
    # tlsKey when it is created (first start), like DB_HOST; the API changes them later.
    DB_TLS_CA_FILE: Path | None = None
    """PEM file whose text becomes the default connection's tlsCaCert when it is created."""
    DB_TLS_CERT_FILE: Path | None = None
    """PEM client certificate for the default connection's mutual TLS (needs DB_TLS_KEY_FILE)."""
    DB_TLS_KEY_FILE: Path | None = None
    """Unencrypted PEM private key of DB_TLS_CERT_FILE."""
    DB_TYPE: EngineTypeSetting = EngineTypeSetting.AUTO
    """Forces the engine type of the default connection: auto, valkey or redis."""

    # --- storage ---
    STORAGE_TYPE: StorageType = StorageType.MEMORY
    """Where history, connections and settings are kept: memory, sqlite, postgres or turso."""
    STORAGE_URL: SecretStr | None = None
    """Database URL; required for postgres (postgresql://) and turso (libsql://, https:// or
    file:)."""
    STORAGE_AUTH_TOKEN: SecretStr | None = None
    """Turso token: required for libsql://, refused for plain http://."""
    STORAGE_SQLITE_FILEPATH: Path = Path("./data/audit.db")
    """The SQLite file when STORAGE_TYPE=sqlite."""

    # --- HTTP server ---
    PORT: Port = 3001
    """HTTP port."""
    BIND_HOST: str = "0.0.0.0"  # ours: the address uvicorn listens on
    """Address the HTTP server listens on."""
    NODE_ENV: Literal["production", "development", "test"] = "production"
    """production, development or test; outside production, webhooks may target loopback (and
    http:// in development)."""
    LOG_LEVEL: Literal["debug", "info", "warning", "error"] = "info"  # ours
    """debug, info, warning or error."""

    # --- replicas sharing one storage (ours) ---
    REPLICA_HEARTBEAT_MS: Annotated[int, Field(ge=100, le=60000)] = 2000
    """How often this process refreshes its row in the replicas table."""
    REPLICA_TIMEOUT_MS: Annotated[int, Field(ge=300, le=600000)] = 10000
    """A replica silent longer than this is gone (at least 3 x REPLICA_HEARTBEAT_MS)."""
    # How the other replicas and operators reach this one; default http://<hostname>:<PORT>
    REPLICA_ADDRESS: Annotated[str, Field(max_length=300)] | None = None
    """How operators and the other replicas reach this one; default http://<hostname>:<PORT>."""

    # --- reaching instances (docs/reference/configuration.md#reaching-instances) ---
    ENGINE_CONNECT_TIMEOUT_MS: Annotated[int, Field(ge=100, le=60000)] = 3000
    """Connect timeout to monitored instances."""
    ENGINE_COMMAND_TIMEOUT_MS: Annotated[int, Field(ge=100, le=300000)] = 5000
    """Reply timeout; connect + reply make one deadline for every call."""
    ENGINE_TLS_CA_FILE: Path | None = None  # extra CA bundle for instances behind TLS
    """Extra CA bundle trusted for every TLS connection, beside the system store and each
    connection's tlsCaCert."""

    # --- polling and history (docs/features/polling-and-history.md) ---
    # The intervals beside the five runtime settings, read at startup like every variable.
    HISTORY_SAMPLE_INTERVAL_MS: Annotated[int, Field(ge=100)] = 10000
    """How often INFO becomes a stored memory snapshot and stats sample."""
    SLOWLOG_POLL_INTERVAL_MS: Annotated[int, Field(ge=100)] = 10000
    """SLOWLOG and COMMANDLOG polling interval."""
    COMMANDSTATS_POLL_INTERVAL_MS: Annotated[int, Field(ge=100)] = 15000
    """INFO commandstats polling interval."""
    LATENCY_POLL_INTERVAL_MS: Annotated[int, Field(ge=100)] = 30000
    """LATENCY LATEST / HISTOGRAM polling interval."""
    # ACL LIST + INFO commandstats per pass for acl.modified and config.changed; CONFIG GET *
    # only after a CONFIG SET was counted
    # (docs/features/webhooks.md#how-aclmodified-and-configchanged-are-detected)
    CONFIG_WATCH_INTERVAL_MS: Annotated[int, Field(ge=100)] = 10000
    """How often ACL LIST and the CONFIG SET count are checked for acl.modified and
    config.changed."""

    # --- secrets at rest ---
    ENCRYPTION_KEY: SecretStr | None = None
    """Master key (16+ characters) sealing stored passwords, TLS client keys and SSH secrets."""
    ENCRYPTION_KEK_SALT: Annotated[str, Field(min_length=1)] = "svc-kek-salt-v1"
    """Salt of the key derivation from ENCRYPTION_KEY."""
    SVC_SSH_KEY_DIR: Path | None = None
    """Directory of server-side SSH key files; unset disables key files."""

    # --- pollers and detectors (seed the runtime settings) ---
    AUDIT_POLL_INTERVAL_MS: PositiveMs = 60000
    """ACL LOG polling interval (seeds the runtime setting auditPollIntervalMs)."""
    CLIENT_ANALYTICS_POLL_INTERVAL_MS: PositiveMs = 60000
    """CLIENT LIST polling interval (seeds clientAnalyticsPollIntervalMs)."""
    ANOMALY_DETECTION_ENABLED: bool = True
    """Anomaly detection (Pro)."""
    ANOMALY_POLL_INTERVAL_MS: PositiveMs = 1000
    """INFO polling interval, which anomaly detection samples (seeds anomalyPollIntervalMs)."""
    FULL_INFO_INTERVAL_MS: Annotated[int, Field(ge=0, le=2_147_483_647)] = 10000
    """How often a pass reads the full INFO rather than the per-second sections; 0: every
    pass (seeds fullInfoIntervalMs)."""
    ANOMALY_CACHE_TTL_MS: PositiveMs = 3600000
    """Anomaly cache lifetime (seeds anomalyCacheTtlMs)."""
    ANOMALY_PROMETHEUS_INTERVAL_MS: PositiveMs = 30000
    """Anomaly summary update interval (seeds anomalyPrometheusIntervalMs)."""
    # capacity forecasting (forecast/): the master switch, and the defaults of each
    # connection's per-metric settings until an admin saves its own (1 min - 24 h each)
    METRIC_FORECASTING_ENABLED: bool = True
    """Capacity forecasting: forecasts, alerts and the time-to-limit gauge."""
    METRIC_FORECASTING_DEFAULT_ROLLING_WINDOW_MS: Annotated[
        int, Field(ge=60_000, le=86_400_000)
    ] = 21_600_000
    """A metric's trend window until an admin saves its own."""
    METRIC_FORECASTING_DEFAULT_ALERT_THRESHOLD_MS: Annotated[
        int, Field(ge=60_000, le=86_400_000)
    ] = 7_200_000
    """metric_forecast.limit fires when the time to the ceiling is this or less."""
    LOCAL_RETENTION_DAYS: Annotated[int, Field(ge=1)] | None = None
    """History retention window in days, seeding the retentionDays runtime setting when its
    row is first created; afterwards the setting counts. Unset keeps everything. Ignored
    in cloud mode (CLOUD_MODE), where the licence tier sets the window."""
    KEY_ANALYTICS_SAMPLE_SIZE: Annotated[int, Field(ge=1)] = 10000
    """Keys sampled per key analytics run (Pro)."""
    KEY_ANALYTICS_SCAN_BATCH_SIZE: Annotated[int, Field(ge=1)] = 1000
    """SCAN batch size of key analytics."""
    KEY_ANALYTICS_INTERVAL_MS: PositiveMs = 300000
    """Key analytics interval."""
    VECTOR_INDEX_POLL_INTERVAL_MS: PositiveMs = 60000
    """FT._LIST and FT.INFO of every search index (seeds vectorIndexPollIntervalMs)."""
    VECTOR_BACKFILL_ALERT_MS: PositiveMs = 600000
    """vector_index.backfill_stalled fires when an index stays below 100 % this long."""
    SEARCH_LATENCY_WINDOW_MS: PositiveMs = 900000
    """The window search latency figures cover (histogram and slow log alike)."""
    SEARCH_UNHEALTHY_P50_US: Annotated[int, Field(ge=1)] = 10000
    """A search bucket is unhealthy while its p50 is over this many microseconds."""
    SEARCH_SLA_P99_US: Annotated[int, Field(ge=1)] = 50000
    """Seeds searchSlaP99Us: the p99 every index's searches should stay under (Pro)."""
    SEARCH_SLA_DEBOUNCE_MS: PositiveMs = 600000
    """How long a search SLA's p99 must stay back under 90 % of it to recover, and the
    least time between two breach events of one index."""
    # CVE scanning (cve/): where dataset updates come from (unset: ENTITLEMENT_URL +
    # /v1/cve-dataset; never asked when air-gapped), how often, and the dataset age in days
    # past which svc_cve_dataset_stale is 1.
    CVE_DATASET_URL: str | None = None
    """Where CVE dataset updates come from; unset: ENTITLEMENT_URL + /v1/cve-dataset. Never asked
    when air-gapped."""
    CVE_DATASET_UPDATE_INTERVAL_MS: Annotated[int, Field(ge=60000)] = 86400000
    """How often to ask for a CVE dataset update."""
    CVE_DATASET_MAX_AGE_DAYS: Annotated[int, Field(ge=1)] = 30
    """Dataset age in days past which svc_cve_dataset_stale is 1."""

    # --- licensing, telemetry, updates ---
    SVC_LICENSE_KEY: SecretStr | None = None
    """Online licence key, checked against ENTITLEMENT_URL."""
    SVC_OFFLINE_LICENSE: SecretStr | None = None
    """Offline licence token; outranks every other offline source."""
    SVC_OFFLINE_LICENSE_FILE: Path | None = None
    """Offline licence token file; default license-offline.jwt in SVC_DATA_DIR."""
    SVC_DATA_DIR: Path = Path("./data")
    """Licence state: license.jwt, license-offline.jwt, license-clock.json (mode 0600)."""
    SVC_TELEMETRY: bool = True
    """Anonymous daily telemetry; always off when air-gapped."""
    ENTITLEMENT_URL: str = "https://entitlement.svc-monitor.io"
    """Entitlement server's base URL: licence check, telemetry, first source of the update check."""
    RELEASES_URL: str = "https://api.github.com/repos/svc-monitor/svc-monitor/releases/latest"
    """Second source of the update check."""
    LICENSE_ALLOW_UNSIGNED: bool = False
    """Accept a paid grant that comes without a signed token."""
    LICENSE_CACHE_TTL_MS: PositiveMs = 3600000
    """How long the last online licence answer is used."""
    LICENSE_MAX_STALE_MS: PositiveMs = 604800000
    """How long a saved signed licence outlives the check that fetched it."""
    LICENSE_TIMEOUT_MS: Annotated[int, Field(ge=100, le=120000)] = 10000
    """Timeout of licence and update requests."""
    VERSION_CHECK_INTERVAL_MS: Annotated[int, Field(ge=60000)] = 3600000
    """Update check interval."""
    LICENSE_SIGNING_PRIVATE_KEY: SecretStr | None = None  # entitlement server only
    """Entitlement server only: PEM RSA private key (2048+ bits) that signs licence tokens."""
    LICENSE_SIGNING_KID: str | None = None  # entitlement server only
    """Entitlement server only: the signing key's id, lic-YYYY-MM."""

    # --- experimental AI features ---
    AI_ENABLED: bool = False
    """Experimental AI features."""
    OLLAMA_BASE_URL: str = "http://localhost:11434"
    """Inference endpoint of the experimental AI features."""
    OLLAMA_KEEP_ALIVE: str = "24h"
    """How long the inference endpoint keeps its model loaded (experimental AI features)."""
    AI_USE_LLM_CLASSIFICATION: bool = False
    """Experimental AI features: classify with the language model."""
    LANCEDB_PATH: Path = Path("./data/lancedb")
    """Experimental AI features: the vector store's directory."""
    VALKEY_DOCS_PATH: Path = Path("./data/valkey-docs")
    """Experimental AI features: the Valkey documentation's directory."""

    # --- users and access ---
    AUTH_SECRET: SecretStr | None = None
    """Session signing secret (32+ characters); unset: a random key per process, so sessions end at
    restart."""
    AUTH_PUBLIC_URL: str | None = None
    """The public origin: pins the origin check, makes invitation links, marks cookies Secure when
    https."""
    AUTH_BROKER_URL: str = "https://auth.svc-monitor.io"
    """Third-party sign-in broker (GitHub, Google)."""
    AUTH_BROKER_PUBLIC_KEY: str | None = None
    """The broker's PEM public key (RSA 2048+ or Ed25519); turns third-party sign-in on."""
    AUTH_BROKER_DISABLED: bool = False
    """Hide third-party sign-in; every broker route answers 404."""
    TRUST_PROXY: bool = False
    """Behind a proxy: read X-Forwarded-For, -Proto and -Host."""
    # With TRUST_PROXY: the proxies' addresses or networks, comma-separated; empty
    # believes X-Forwarded-* from any peer (the proxy is the only way in).
    TRUSTED_PROXIES: str = ""
    """With TRUST_PROXY: the proxies' addresses or networks, comma-separated; empty believes any
    peer."""
    WORKSPACE_DISABLED: bool = False
    """Turn user control off: no sign-in, no roles, full access for everyone."""
    MONITOR_REDACT_VALUES: bool = False
    """Replace argument values in MONITOR captures with (redacted), keeping commands and keys."""
    SVC_UNSAFE_CLI: bool = False
    """Allow write and admin commands in the browser CLI for admins and the owner."""
    ACTIVITY_RETENTION_DAYS: Annotated[int, Field(ge=1)] = 90
    """Activity log retention, pruned at startup and daily."""
    CLOUD_MODE: bool = False
    """Run as a hosted service for other people's instances: direct connections only on
    ports 443, 2000-2999 and 6000-6999 (not 2375-2376, 2379-2380, 6443; DB_PORT too),
    history kept for the licence tier's window (Community 7 days, Pro 90, Enterprise 365)
    in place of LOCAL_RETENTION_DAYS, and POST /v1/traces let in by the ingest token.
    Requires OTEL_INGEST_TOKEN."""

    # --- OTLP in and out ---
    OTEL_INGEST_ENABLED: bool = True
    """The OTLP receivers (/v1/metrics, /v1/external/metrics, /v1/traces)."""
    OTEL_INGEST_TOKEN: SecretStr | None = None
    """Bearer token the OTLP receivers require when set."""
    OTEL_METRICS_STALE_AFTER_MS: Annotated[int, Field(ge=60000)] = 300000
    """How long a pushed value stays valid."""
    OTLP_DISCOVER_INSTANCES: bool = True
    """Remember pushers with no connection, listed as discovered."""
    OTEL_EXPORTER_OTLP_ENDPOINT: str | None = None
    """OTLP/HTTP collector base URL; set, metrics and events are exported there (each
    signal's path, /v1/metrics or /v1/logs, is appended)."""
    OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: str | None = None
    """Whole URL metrics are exported to, used as given; wins over the base URL."""
    OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: str | None = None
    """Whole URL events (OTLP logs) are exported to, used as given; wins over the base URL."""
    OTEL_EXPORTER_OTLP_CERTIFICATE: Path | None = None
    """PEM file of the CA an https collector's certificate is checked against."""
    OTEL_EXPORTER_OTLP_METRICS_CERTIFICATE: Path | None = None
    """The CA file for the metrics export only; wins over the general one."""
    OTEL_EXPORTER_OTLP_LOGS_CERTIFICATE: Path | None = None
    """The CA file for the events export only; wins over the general one."""
    OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE: Path | None = None
    """PEM client certificate for collectors that require mutual TLS (with the key)."""
    OTEL_EXPORTER_OTLP_METRICS_CLIENT_CERTIFICATE: Path | None = None
    """The client certificate for the metrics export only."""
    OTEL_EXPORTER_OTLP_LOGS_CLIENT_CERTIFICATE: Path | None = None
    """The client certificate for the events export only."""
    OTEL_EXPORTER_OTLP_CLIENT_KEY: Path | None = None
    """PEM private key of the client certificate (the file's contents are never logged)."""
    OTEL_EXPORTER_OTLP_METRICS_CLIENT_KEY: Path | None = None
    """The client key for the metrics export only."""
    OTEL_EXPORTER_OTLP_LOGS_CLIENT_KEY: Path | None = None
    """The client key for the events export only."""
    # The SDKs' standard exporter variables (otlp/export/exporter_options.py); a per-signal
    # one takes precedence over the general one.
    OTEL_EXPORTER_OTLP_HEADERS: SecretStr | None = None
    """Extra export request headers: key=value pairs, comma-separated, values percent-encoded."""
    OTEL_EXPORTER_OTLP_METRICS_HEADERS: SecretStr | None = None
    """Headers of the metrics export; outranks OTEL_EXPORTER_OTLP_HEADERS."""
    OTEL_EXPORTER_OTLP_LOGS_HEADERS: SecretStr | None = None
    """Headers of the event (logs) export; outranks OTEL_EXPORTER_OTLP_HEADERS."""
    OTEL_EXPORTER_OTLP_COMPRESSION: Literal["gzip", "none"] | None = None
    """Export compression, gzip or none; unset: gzip."""
    OTEL_EXPORTER_OTLP_METRICS_COMPRESSION: Literal["gzip", "none"] | None = None
    """Compression of the metrics export; outranks OTEL_EXPORTER_OTLP_COMPRESSION."""
    OTEL_EXPORTER_OTLP_LOGS_COMPRESSION: Literal["gzip", "none"] | None = None
    """Compression of the event export; outranks OTEL_EXPORTER_OTLP_COMPRESSION."""
    OTEL_EXPORTER_OTLP_TIMEOUT: Annotated[int, Field(ge=1, le=600_000)] | None = None
    """Milliseconds to wait for the collector; unset: 10000."""
    OTEL_EXPORTER_OTLP_METRICS_TIMEOUT: Annotated[int, Field(ge=1, le=600_000)] | None = None
    """Timeout of the metrics export; outranks OTEL_EXPORTER_OTLP_TIMEOUT."""
    OTEL_EXPORTER_OTLP_LOGS_TIMEOUT: Annotated[int, Field(ge=1, le=600_000)] | None = None
    """Timeout of the event export; outranks OTEL_EXPORTER_OTLP_TIMEOUT."""
    OTEL_TELEMETRY_ENABLED: bool = True
    """false turns off both OTLP exports (metrics and events)."""
    OTEL_EVENTS_ENABLED: bool = True
    """false turns off only the event (logs) export."""
    OTEL_METRICS_EXPORT_INTERVAL_MS: Annotated[int, Field(ge=1000)] = 15000
    """OTLP metrics export interval."""
    OTEL_METRICS_EXPORT_MODE: ExportMode = ExportMode.MIRROR
    """mirror (scrape names, one resource) or semconv (one resource per node); anything else logs a
    warning and means mirror."""
    # `full` adds the high-cardinality and diagnostic families (docs: Prometheus metrics).
    METRICS_EXPORT_PROFILE: Literal["standard", "full"] = "standard"
    """standard or full; full adds the high-cardinality and diagnostic families."""
    PROMETHEUS_STALENESS_MS: PositiveMs = 300000
    """A connection not observed for this long loses its series."""
    # Set: /api/prometheus/metrics wants it (Prometheus's `authorization` block sends it).
    PROMETHEUS_BEARER_TOKEN: SecretStr | None = None
    """Set (16+ characters): /api/prometheus/metrics wants this bearer token or a signed-in user."""

    @field_validator("OTEL_METRICS_EXPORT_MODE", mode="before")
    @classmethod
    def _unknown_export_mode_is_mirror(cls, value: Any) -> Any:
        # An unknown mode logs a warning and falls back, it does not stop the service
        # (docs/features/otlp-export.md#otlp-export-metrics-and-events).
        if isinstance(value, str) and value.strip().lower() not in {m.value for m in ExportMode}:
            logger.warning(
                "OTEL_METRICS_EXPORT_MODE=%r is not mirror or semconv; using mirror", value
            )
            return ExportMode.MIRROR
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator(
        "OTEL_EXPORTER_OTLP_HEADERS",
        "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
        "OTEL_EXPORTER_OTLP_LOGS_HEADERS",
    )
    @classmethod
    def _headers_parse(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            parse_headers(value.get_secret_value())
        return value

    @field_validator(
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
        "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
    )
    @classmethod
    def _collector_url(cls, value: str | None) -> str | None:
        # The URL may hold credentials (https://user:token@host/), so it is never echoed.
        if value is None:
            return None
        try:
            parts = urlsplit(value.strip())
            parts.port  # noqa: B018 - reading it is what checks it
        except ValueError:
            raise ValueError("is not a valid URL") from None
        if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an http:// or https:// URL with a host")
        return value.strip()

    @field_validator("TRUSTED_PROXIES")
    @classmethod
    def _proxies_are_addresses(cls, value: str) -> str:
        for part in (p.strip() for p in value.split(",")):
            if part:
                try:
                    ipaddress.ip_network(part, strict=False)
                except ValueError:
                    raise ValueError(f"{part!r} is not an IP address or network") from None
        return value

    @field_validator(
        "DB_TYPE", "STORAGE_TYPE", "NODE_ENV", "LOG_LEVEL", "METRICS_EXPORT_PROFILE", mode="before"
    )
    @classmethod
    def _lower_case_words(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator(
        "DB_PASSWORD",
        "DB_TLS_CA_FILE",
        "DB_TLS_CERT_FILE",
        "DB_TLS_KEY_FILE",
        "STORAGE_URL",
        "STORAGE_AUTH_TOKEN",
        "ENCRYPTION_KEY",
        "SVC_LICENSE_KEY",
        "SVC_OFFLINE_LICENSE",
        "SVC_OFFLINE_LICENSE_FILE",
        "SVC_SSH_KEY_DIR",
        "AUTH_SECRET",
        "AUTH_PUBLIC_URL",
        "OTEL_INGEST_TOKEN",
        "PROMETHEUS_BEARER_TOKEN",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
        "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
        *_OTLP_PEM_FILES,
        "OTEL_EXPORTER_OTLP_HEADERS",
        "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
        "OTEL_EXPORTER_OTLP_LOGS_HEADERS",
        "OTEL_EXPORTER_OTLP_COMPRESSION",
        "OTEL_EXPORTER_OTLP_METRICS_COMPRESSION",
        "OTEL_EXPORTER_OTLP_LOGS_COMPRESSION",
        "OTEL_EXPORTER_OTLP_TIMEOUT",
        "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT",
        "OTEL_EXPORTER_OTLP_LOGS_TIMEOUT",
        "LOCAL_RETENTION_DAYS",
        mode="before",
    )
    @classmethod
    def _empty_is_unset(cls, value: Any) -> Any:
        # `FOO=` in a compose file means "not set", not "set to the empty string".
        return None if isinstance(value, str) and value.strip() == "" else value

    @field_validator("ENCRYPTION_KEY", "AUTH_SECRET", "PROMETHEUS_BEARER_TOKEN")
    @classmethod
    def _long_enough(cls, value: SecretStr | None, info: ValidationInfo) -> SecretStr | None:
        minimum = _MIN_SECRET_LENGTH[str(info.field_name)]
        if value is not None and len(value.get_secret_value()) < minimum:
            raise ValueError(f"must be at least {minimum} characters")
        return value

    @field_validator("AUTH_BROKER_PUBLIC_KEY")
    @classmethod
    def _usable_broker_key(cls, value: str | None) -> str | None:
        # Checked here so a bad key stops startup with one line, not the first sign-in.
        if value is None or not value.strip():
            return None
        try:
            load_public_key(value)
        except PublicKeyError as exc:
            raise ValueError(str(exc)) from None
        return value

    @field_validator("DB_TLS_CA_FILE", "DB_TLS_CERT_FILE", "DB_TLS_KEY_FILE", *_OTLP_PEM_FILES)
    @classmethod
    def _pem_file(cls, path: Path | None, info: ValidationInfo) -> Path | None:
        # Checked here so a wrong file stops startup with one line, not the first connect.
        if path is None:
            return None
        text = _read_pem(path)
        name = str(info.field_name)
        if name.endswith(("_KEY_FILE", "_CLIENT_KEY")):
            check_private_key(text)
            return path
        # A key given here is pointed to the variable of the same family that takes it.
        key_variable = (
            re.sub(r"(_CLIENT)?_CERTIFICATE$", "_CLIENT_KEY", name)
            if name.startswith("OTEL_")
            else "DB_TLS_KEY_FILE"
        )
        if name.endswith(("_CERT_FILE", "_CLIENT_CERTIFICATE")):
            check_certificates(text, what="a client certificate", key_goes_in=key_variable)
        else:
            check_certificates(text, what="CA certificates", key_goes_in=key_variable)
        return path

    @model_validator(mode="after")
    def _cross_field_rules(self) -> "Settings":
        _check_client_pair(self.DB_TLS_CERT_FILE, self.DB_TLS_KEY_FILE)
        for signal in ("METRICS", "LOGS"):
            _check_otlp_client_pair(self, signal)
        if self.STORAGE_TYPE in (StorageType.POSTGRES, StorageType.TURSO) and not self.STORAGE_URL:
            raise ValueError(f"STORAGE_URL is required when STORAGE_TYPE={self.STORAGE_TYPE.value}")
        if self.STORAGE_TYPE is StorageType.TURSO:
            _check_turso(self.STORAGE_URL, self.STORAGE_AUTH_TOKEN)
        if self.REPLICA_TIMEOUT_MS < 3 * self.REPLICA_HEARTBEAT_MS:
            # One late heartbeat must not read as a dead replica.
            raise ValueError("REPLICA_TIMEOUT_MS must be at least 3 x REPLICA_HEARTBEAT_MS")
        if self.CLOUD_MODE and not self.OTEL_INGEST_TOKEN:
            raise ValueError("OTEL_INGEST_TOKEN is required when CLOUD_MODE=true")
        if self.CLOUD_MODE and not cloud_ports.dialled_in_cloud(self.DB_PORT):
            # The default connection is made from DB_* without the API's check: refused
            # here, in one line, as the API refuses an added connection on that port.
            raise ValueError(f"DB_PORT: {cloud_ports.refusal(self.DB_PORT)}")
        return self

    @property
    def is_production(self) -> bool:
        return self.NODE_ENV == "production"

    @property
    def offline_license_file(self) -> Path:
        return self.SVC_OFFLINE_LICENSE_FILE or self.SVC_DATA_DIR / "license-offline.jwt"


def _read_pem(path: Path) -> str:
    try:
        return path.expanduser().read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not PEM text") from None


def _check_client_pair(
    cert: Path | None,
    key: Path | None,
    *,
    cert_name: str = "DB_TLS_CERT_FILE",
    key_name: str = "DB_TLS_KEY_FILE",
) -> None:
    if cert is not None and key is None:
        raise ValueError(f"{key_name} is required with {cert_name}")
    if key is not None and cert is None:
        raise ValueError(f"{cert_name} is required with {key_name}")
    if cert is not None and key is not None and not key_matches(_read_pem(cert), _read_pem(key)):
        raise ValueError(f"{key_name} is not the private key of {cert_name}")


def _check_otlp_client_pair(settings: Settings, signal: str) -> None:
    """The client certificate and key one signal's export would use (its own variable,
    else the general one) come as a matching pair, named as they were set."""

    def pick(name: str) -> tuple[Path | None, str]:
        own = f"OTEL_EXPORTER_OTLP_{signal}_{name}"
        if getattr(settings, own) is not None:
            return getattr(settings, own), own
        general = f"OTEL_EXPORTER_OTLP_{name}"
        return getattr(settings, general), general

    (cert, cert_name), (key, key_name) = pick("CLIENT_CERTIFICATE"), pick("CLIENT_KEY")
    _check_client_pair(cert, key, cert_name=cert_name, key_name=key_name)


def _check_turso(url: SecretStr | None, token: SecretStr | None) -> None:
    assert url is not None  # checked by the caller
    scheme = urlsplit(url.get_secret_value()).scheme.lower()
    if scheme not in ("libsql", "https", "http", "file", "wss", "ws"):
        raise ValueError(
            "STORAGE_URL for turso must be a libsql://, https://, http:// or file: URL"
        )
    if scheme in ("libsql", "wss") and token is None:
        raise ValueError(f"STORAGE_AUTH_TOKEN is required for a {scheme}:// STORAGE_URL")
    if scheme in ("http", "ws") and token is not None:
        raise ValueError(
            f"STORAGE_AUTH_TOKEN must not be sent over plain {scheme}://; "
            "use https:// or drop the token"
        )


def describe_validation_error(error: ValidationError) -> str:
    """One line naming each bad variable, without echoing its (possibly secret) value."""
    parts = []
    for item in error.errors(include_url=False, include_input=False):
        name = ".".join(str(p) for p in item["loc"])
        message = str(item["msg"]).removeprefix("Value error, ")
        parts.append(f"{name}: {message}" if name else message)
    return "; ".join(parts)


class McpClientSettings(BaseSettings):
    """`svc-monitor mcp` (stdio): the running service it talks to and the token it acts
    with; nothing else of the service's environment applies to it."""

    model_config = SettingsConfigDict(env_file=None, extra="ignore", case_sensitive=True)

    SVC_URL: Annotated[str, Field(pattern=r"^https?://[^\s/]+(/\S*)?$")] = "http://127.0.0.1:3001"
    # A personal token (Settings, API tokens); optional where user control is off.
    SVC_TOKEN: SecretStr | None = None

    @field_validator("SVC_TOKEN", mode="before")
    @classmethod
    def _one_token(cls, value: Any) -> Any:
        """A token pasted into an assistant's JSON config often keeps a line break or spaces
        around it: not part of it. One inside cannot go into an HTTP header."""
        if not isinstance(value, str):
            return value
        token = value.strip()
        if any(not "!" <= char <= "~" for char in token):
            raise ValueError(
                "the token holds a space, a line break or a character outside printable ASCII;"
                " copy it again from Settings, API and MCP tokens"
            )
        return token or None
