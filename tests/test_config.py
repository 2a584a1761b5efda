import logging

import pytest
from pydantic import ValidationError

from svc_monitor.config import ExportMode, Settings, StorageType, describe_validation_error


def settings(**values: object) -> Settings:
    return Settings(_env_file=None, **values)  # type: ignore[arg-type]


def error_of(**values: object) -> str:
    with pytest.raises(ValidationError) as caught:
        settings(**values)
    return describe_validation_error(caught.value)


class TestDefaults:
    def test_spec_defaults(self):
        s = settings()
        assert (s.DB_HOST, s.DB_PORT, s.DB_USERNAME, s.DB_TYPE.value) == (
            "localhost",
            6379,
            "default",
            "auto",
        )
        assert s.STORAGE_TYPE is StorageType.MEMORY
        assert str(s.STORAGE_SQLITE_FILEPATH) == "data/audit.db"
        assert s.PORT == 3001
        assert s.ENCRYPTION_KEK_SALT == "svc-kek-salt-v1"
        assert s.OTEL_METRICS_STALE_AFTER_MS == 300000
        assert s.OTEL_METRICS_EXPORT_INTERVAL_MS == 15000
        assert s.OTEL_METRICS_EXPORT_MODE is ExportMode.MIRROR
        assert s.VERSION_CHECK_INTERVAL_MS == 3600000
        assert s.ACTIVITY_RETENTION_DAYS == 90
        assert s.LOCAL_RETENTION_DAYS is None

    def test_reads_the_environment(self, monkeypatch: pytest.MonkeyPatch):
        monkeypatch.setenv("DB_PORT", "6380")
        monkeypatch.setenv("OTLP_DISCOVER_INSTANCES", "off")
        s = Settings(_env_file=None)
        assert s.DB_PORT == 6380
        assert s.OTLP_DISCOVER_INSTANCES is False


class TestRules:
    @pytest.mark.parametrize(
        ("values", "named"),
        [
            pytest.param({"AUTH_SECRET": "x" * 31}, "AUTH_SECRET", id="auth-secret-short"),
            pytest.param({"ENCRYPTION_KEY": "x" * 15}, "ENCRYPTION_KEY", id="encryption-key-short"),
            pytest.param(
                {"OTEL_METRICS_STALE_AFTER_MS": 59999},
                "OTEL_METRICS_STALE_AFTER_MS",
                id="stale-after-under-60s",
            ),
            pytest.param(
                {"OTEL_METRICS_EXPORT_INTERVAL_MS": 999},
                "OTEL_METRICS_EXPORT_INTERVAL_MS",
                id="export-interval-under-1s",
            ),
            pytest.param({"DB_PORT": 70000}, "DB_PORT", id="port-too-high"),
            pytest.param({"DB_TLS": "maybe"}, "DB_TLS", id="not-a-boolean"),
            pytest.param({"STORAGE_TYPE": "mongo"}, "STORAGE_TYPE", id="unknown-storage"),
            pytest.param({"STORAGE_TYPE": "postgres"}, "STORAGE_URL", id="postgres-without-url"),
            pytest.param(
                {"STORAGE_TYPE": "turso", "STORAGE_URL": "libsql://db.example.turso.io"},
                "STORAGE_AUTH_TOKEN",
                id="libsql-without-token",
            ),
            pytest.param(
                {
                    "STORAGE_TYPE": "turso",
                    "STORAGE_URL": "http://127.0.0.1:8080",
                    "STORAGE_AUTH_TOKEN": "tok",
                },
                "STORAGE_AUTH_TOKEN",
                id="token-over-plain-http",
            ),
            pytest.param({"CLOUD_MODE": "true"}, "OTEL_INGEST_TOKEN", id="cloud-without-token"),
        ],
    )
    def test_bad_value_is_refused_naming_the_variable(self, values: dict[str, object], named: str):
        assert named in error_of(**values)

    def test_hosted_turso_url_without_token_starts(self):
        # It starts, and fails on the first query instead (docs/features/storage.md).
        s = settings(STORAGE_TYPE="turso", STORAGE_URL="https://db.example.turso.io")
        assert s.STORAGE_TYPE is StorageType.TURSO

    @pytest.mark.parametrize("word", ["false", "0", "no", "off", "FALSE", "Off"])
    def test_boolean_off_words(self, word: str):
        assert settings(OTEL_INGEST_ENABLED=word).OTEL_INGEST_ENABLED is False

    @pytest.mark.parametrize("word", ["true", "1", "yes", "on"])
    def test_boolean_on_words(self, word: str):
        assert settings(WORKSPACE_DISABLED=word).WORKSPACE_DISABLED is True

    def test_unknown_export_mode_warns_and_uses_mirror(self, caplog: pytest.LogCaptureFixture):
        with caplog.at_level(logging.WARNING):
            s = settings(OTEL_METRICS_EXPORT_MODE="prometheus-ish")
        assert s.OTEL_METRICS_EXPORT_MODE is ExportMode.MIRROR
        assert "OTEL_METRICS_EXPORT_MODE" in caplog.text

    def test_empty_value_means_unset(self):
        assert settings(ENCRYPTION_KEY="", DB_PASSWORD="").ENCRYPTION_KEY is None

    def test_errors_never_echo_secret_values(self):
        message = error_of(AUTH_SECRET="hunter2-secret", ENCRYPTION_KEY="tiny-secret")
        assert "hunter2" not in message
        assert "tiny-secret" not in message
        assert "AUTH_SECRET" in message
        assert "ENCRYPTION_KEY" in message

    def test_secrets_are_masked_in_repr(self):
        s = settings(DB_PASSWORD="pa55word", ENCRYPTION_KEY="k" * 20)
        assert "pa55word" not in repr(s)
        assert "k" * 20 not in repr(s)
