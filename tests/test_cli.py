"""The `svc-monitor` command as an operator runs it: the installed script in a subprocess,
with an environment built here (nothing inherited that svc-monitor reads)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from pydantic import SecretStr

from svc_monitor.config import Settings
from svc_monitor.kit.settings_report import MASK, is_secret

SVC_MONITOR = Path(sys.executable).parent / "svc-monitor"
EXIT_CONFIG = 2
REFERENCE = "docs/reference/configuration.md"

# A known value for every secret-like setting, each one valid and each one distinct, so a
# leak of any of them in any output is found by a substring search.
SECRETS = {
    "DB_PASSWORD": "leak-db-password-7c1e",
    "STORAGE_URL": "postgresql://svc:leak-storage-url-2b9d@127.0.0.1:5432/svc",
    "STORAGE_AUTH_TOKEN": "leak-storage-token-51aa",
    "ENCRYPTION_KEY": "leak-encryption-key-0f3c",
    "ENCRYPTION_KEK_SALT": "leak-kek-salt-88d2",
    "SVC_LICENSE_KEY": "leak-license-key-e4a0",
    "SVC_OFFLINE_LICENSE": "leak-offline-licence-93b7",
    "LICENSE_SIGNING_PRIVATE_KEY": "leak-signing-key-6d15",
    "AUTH_SECRET": "leak-auth-secret-6a1f0c2b9e8d7a3f4c5b",
    "OTEL_INGEST_TOKEN": "leak-ingest-token-c3f8",
    "OTEL_EXPORTER_OTLP_HEADERS": "api-key=leak-otlp-headers-4e21",
    "OTEL_EXPORTER_OTLP_METRICS_HEADERS": "authorization=Bearer leak-metrics-headers-a7c9",
    "OTEL_EXPORTER_OTLP_LOGS_HEADERS": "x-token=leak-logs-headers-190e",
    "PROMETHEUS_BEARER_TOKEN": "leak-prometheus-token-d0b6",
}


def environment(**variables: str) -> dict[str, str]:
    """Only what a process needs to start, plus `variables`."""
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}
    env.update(variables)
    return env


def run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SVC_MONITOR), *args],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def config_json(env: dict[str, str]) -> dict[str, dict[str, object]]:
    result = run("config", "--json", env=env)
    assert result.returncode == 0, result.stderr
    parsed: dict[str, dict[str, object]] = json.loads(result.stdout)
    return parsed


def text_rows(stdout: str) -> dict[str, tuple[str, str]]:
    """NAME -> (SOURCE, VALUE) from the table `config` prints."""
    rows = {}
    for line in stdout.splitlines()[1:]:
        name, source, value = line.split(maxsplit=2)
        rows[name] = (source, value)
    return rows


class TestHelp:
    def test_top_level_help_describes_every_command_and_names_the_reference(self):
        result = run("--help", env=environment())
        assert result.returncode == 0
        assert "monitoring for Valkey and Redis" in result.stdout
        for command in ("serve", "check-config", "config", "entitlement serve", "license keygen"):
            assert re.search(rf"^  {command}\s+\S", result.stdout, re.MULTILINE), command
        assert REFERENCE in result.stdout

    def test_serve_help_names_the_main_settings_and_points_to_config(self):
        result = run("serve", "--help", env=environment())
        assert result.returncode == 0
        for name in ("PORT", "STORAGE_TYPE", "DB_HOST", "ENCRYPTION_KEY", "AUTH_SECRET"):
            assert re.search(rf"\b{name}\b", result.stdout), name
        assert "LOG_LEVEL" in result.stdout
        assert "svc-monitor config" in result.stdout
        assert REFERENCE in result.stdout

    def test_every_setting_serve_help_names_exists(self):
        # A renamed variable must not live on in the help text.
        result = run("serve", "--help", env=environment())
        named = set(re.findall(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b|\bPORT\b", result.stdout))
        assert len(named) >= 10
        assert named <= set(Settings.model_fields), named - set(Settings.model_fields)

    def test_each_command_has_its_own_help(self):
        for command in (["check-config"], ["config"], ["entitlement", "serve"]):
            result = run(*command, "--help", env=environment())
            assert result.returncode == 0, command
            assert f"usage: svc-monitor {' '.join(command)}" in result.stdout


class TestConfig:
    def test_a_set_variable_reads_environment_and_an_unset_one_default(self):
        env = environment(PORT="4123", LOG_LEVEL="WARNING")
        rows = config_json(env)
        assert rows["PORT"] == {"value": 4123, "source": "environment", "secret": False}
        # The effective value: what validation made of the text.
        assert rows["LOG_LEVEL"]["value"] == "warning"
        assert rows["DB_PORT"] == {"value": 6379, "source": "default", "secret": False}
        assert rows["STORAGE_TYPE"] == {"value": "memory", "source": "default", "secret": False}
        assert rows["REPLICA_ADDRESS"] == {"value": None, "source": "default", "secret": False}

        text = run("config", env=env)
        assert text.returncode == 0, text.stderr
        table = text_rows(text.stdout)
        assert table["PORT"] == ("environment", "4123")
        assert table["DB_PORT"] == ("default", "6379")
        assert table["REPLICA_ADDRESS"] == ("default", "(unset)")

    def test_lists_every_setting(self):
        rows = config_json(environment())
        assert list(rows) == list(Settings.model_fields)
        table = text_rows(run("config", env=environment()).stdout)
        assert list(table) == list(Settings.model_fields)

    @pytest.mark.parametrize("json_flag", [[], ["--json"]], ids=["text", "json"])
    def test_secrets_never_appear(self, json_flag: list[str]):
        result = run("config", *json_flag, env=environment(**SECRETS))
        assert result.returncode == 0, result.stderr
        for name, value in SECRETS.items():
            secret_part = re.search(r"leak-[a-z-]+-[0-9a-f]+", value)
            assert secret_part is not None
            assert secret_part.group() not in result.stdout, name
            assert secret_part.group() not in result.stderr, name
        if json_flag:
            rows = json.loads(result.stdout)
            for name in SECRETS:
                assert rows[name] == {"value": MASK, "source": "environment", "secret": True}
        else:
            table = text_rows(result.stdout)
            for name in SECRETS:
                assert table[name] == ("environment", MASK)

    def test_an_unset_secret_reads_unset_not_masked(self):
        rows = config_json(environment())
        assert rows["DB_PASSWORD"] == {"value": None, "source": "default", "secret": True}

    def test_a_password_inside_a_url_is_masked(self):
        env = environment(OTEL_EXPORTER_OTLP_ENDPOINT="https://svc:url-pass-5e0d@127.0.0.1:4318")
        result = run("config", env=env)
        assert "url-pass-5e0d" not in result.stdout
        assert text_rows(result.stdout)["OTEL_EXPORTER_OTLP_ENDPOINT"] == (
            "environment",
            f"https://svc:{MASK}@127.0.0.1:4318",
        )

    def test_a_public_key_is_shown_on_one_line(self):
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = (
            key.public_key()
            .public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
            .decode()
        )
        result = run("config", env=environment(AUTH_BROKER_PUBLIC_KEY=pem))
        assert result.returncode == 0, result.stderr
        source, value = text_rows(result.stdout)["AUTH_BROKER_PUBLIC_KEY"]
        assert source == "environment"
        assert value == pem.replace("\n", "\\n")

    def test_a_bad_environment_ends_with_one_line_naming_the_variable(self):
        short = "leak-short-auth-9f"
        for args in (["config"], ["config", "--json"]):
            result = run(*args, env=environment(AUTH_SECRET=short))
            assert result.returncode == EXIT_CONFIG
            assert result.stdout == ""
            lines = result.stderr.splitlines()
            assert len(lines) == 1, result.stderr
            assert "AUTH_SECRET" in lines[0]
            assert short not in result.stderr


class TestServeInCloudMode:
    """`svc-monitor serve` refuses a cloud mode it cannot run in, before it listens."""

    @staticmethod
    def refusal(**variables: str) -> str:
        result = run("serve", env=environment(CLOUD_MODE="true", **variables))
        assert result.returncode == EXIT_CONFIG, result.stderr
        assert result.stdout == ""
        assert "Traceback" not in result.stderr
        lines = result.stderr.splitlines()
        assert len(lines) == 1, result.stderr
        return lines[0]

    @pytest.mark.parametrize("token", [None, ""], ids=["unset", "empty"])
    def test_without_an_ingest_token_it_ends_with_one_line_naming_it(self, token: str | None):
        given = {} if token is None else {"OTEL_INGEST_TOKEN": token}
        line = self.refusal(**given)
        assert line == (
            "svc-monitor: configuration error: OTEL_INGEST_TOKEN is required when CLOUD_MODE=true"
        )

    def test_a_db_port_it_does_not_dial_ends_with_one_line_naming_it(self):
        line = self.refusal(OTEL_INGEST_TOKEN="cloud-token-1b2c", DB_PORT="7000")
        assert line.startswith("svc-monitor: configuration error: DB_PORT: 7000 is not a port")
        assert line.endswith("other ports need the agent (outbound 443)")
        assert "cloud-token-1b2c" not in line


class TestWhatCountsAsSecret:
    def test_every_secret_typed_setting_is_in_the_leak_test(self):
        # A new SecretStr setting joins SECRETS above, or the leak test would not cover it.
        typed = {
            name
            for name, field in Settings.model_fields.items()
            if is_secret(name, None, field.annotation)
        }
        assert typed == set(SECRETS)

    @pytest.mark.parametrize(
        ("name", "value", "secret"),
        [
            pytest.param("ANY_NAME", SecretStr("x"), True, id="secret-typed"),
            pytest.param("API_TOKEN", "x", True, id="token"),
            pytest.param("SOME_PASSWORD", "x", True, id="password"),
            pytest.param("EXPORT_HEADERS", "x", True, id="header-list"),
            pytest.param("KEY_ANALYTICS_SAMPLE_SIZE", 10, False, id="key-is-not-last"),
            pytest.param("DB_TLS_KEY_FILE", "/k.pem", False, id="path-to-a-key"),
            pytest.param("AUTH_BROKER_PUBLIC_KEY", "pem", False, id="public-key"),
        ],
    )
    def test_names_and_types(self, name: str, value: object, secret: bool):
        assert is_secret(name, value, type(value)) is secret
