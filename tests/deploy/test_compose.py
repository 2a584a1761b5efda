"""deploy/compose.yaml as docker compose would read it (no Docker here): the services a user
gets, what each waits for, where data lives, that the secrets come from the env file the
user makes from the shipped example, and that Prometheus and Grafana find what is mounted
for them (promtool checks the config and rules at the paths the container sees)."""

import json
import re
import secrets
import shutil
import subprocess
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from svc_monitor.config import Settings, StorageType
from tests.deploy.image import runtime_stage

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
COMPOSE = DEPLOY / "compose.yaml"
ENV_EXAMPLE = DEPLOY / "compose.env.example"
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None,
    reason="promtool is not installed (CI installs Debian's `prometheus` package)",
)
# ${NAME}, ${NAME:?message}, ${NAME:-default}: compose's interpolation forms.
_VARIABLE = re.compile(r"\$\{(\w+)(?::?([?-])([^}]*))?\}")
SECRETS = ("ENCRYPTION_KEY", "AUTH_SECRET", "POSTGRES_PASSWORD", "GRAFANA_ADMIN_PASSWORD")


def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return loaded


def env_example() -> dict[str, str]:
    lines = ENV_EXAMPLE.read_text().splitlines()
    pairs = (line.split("=", 1) for line in lines if line.strip() and not line.startswith("#"))
    return {name.strip(): value.strip() for name, value in pairs}


def interpolate(value: str, env: dict[str, str]) -> str:
    def one(match: re.Match[str]) -> str:
        name, kind, text = match.groups()
        if env.get(name):
            return env[name]
        if kind == "?":
            raise LookupError(f"{name}: {text}")
        return text or ""

    return _VARIABLE.sub(one, value)


def service_environment(service: str, env: dict[str, str]) -> dict[str, str]:
    raw: dict[str, Any] = compose()["services"][service].get("environment", {})
    return {name: interpolate(str(value), env) for name, value in raw.items()}


def every_environment(env: dict[str, str]) -> dict[str, dict[str, str]]:
    return {service: service_environment(service, env) for service in compose()["services"]}


def bind_mounts(service: str) -> dict[PurePosixPath, Path]:
    """Container path -> file or folder of this checkout, for each `./host:container` mount."""
    mounts = {}
    for volume in compose()["services"][service].get("volumes", []):
        source, target = volume.split(":")[:2]
        if source.startswith("."):
            mounts[PurePosixPath(target)] = (DEPLOY / source).resolve()
    return mounts


def real_env() -> dict[str, str]:
    """What a user writes into deploy/.env: the example with every placeholder replaced."""
    return {name: secrets.token_hex(32) for name in env_example()}


class TestServices:
    def test_it_starts_svc_monitor_with_postgres_valkey_prometheus_and_grafana(self):
        services = compose()["services"]
        assert set(services) == {"svc-monitor", "postgres", "valkey", "prometheus", "grafana"}
        build = services["svc-monitor"]["build"]
        assert (DEPLOY / build["context"] / build["dockerfile"]).resolve() == ROOT / "Dockerfile"

    def test_svc_monitor_starts_once_its_storage_and_instance_answer(self):
        services = compose()["services"]
        waits = services["svc-monitor"]["depends_on"]
        assert waits == {
            "postgres": {"condition": "service_healthy"},
            "valkey": {"condition": "service_healthy"},
        }
        for name in waits:
            check = services[name]["healthcheck"]
            assert check["test"][0] == "CMD", name
        # Prometheus waits on the image's own HEALTHCHECK.
        assert services["prometheus"]["depends_on"]["svc-monitor"] == {
            "condition": "service_healthy"
        }
        assert runtime_stage().healthcheck

    def test_every_named_volume_is_declared_and_svc_monitor_keeps_its_data_dir(self):
        document = compose()
        declared = set(document["volumes"])
        used = {
            volume.split(":")[0]
            for service in document["services"].values()
            for volume in service.get("volumes", [])
            if not volume.startswith(".")
        }
        assert used == declared
        data_dir = runtime_stage().env["SVC_DATA_DIR"]
        assert f"svc-data:{data_dir}" in document["services"]["svc-monitor"]["volumes"]

    def test_bind_mounts_exist_in_the_checkout(self):
        for service in ("prometheus", "grafana"):
            for target, source in bind_mounts(service).items():
                assert source.exists(), f"{service}: {source} (mounted at {target})"

    def test_only_loopback_ports_are_published(self):
        for name, service in compose()["services"].items():
            for port in service.get("ports", []):
                assert port.startswith("127.0.0.1:"), (name, port)


class TestSecrets:
    def test_the_example_env_file_names_every_variable_the_compose_file_needs(self):
        needed = {match[0] for match in _VARIABLE.findall(COMPOSE.read_text())}
        example = env_example()
        assert set(example) == needed
        assert set(SECRETS) <= needed
        assert all(value == "CHANGE-ME" for value in example.values())

    def test_a_missing_secret_stops_compose_naming_it(self):
        for name in SECRETS:
            env = real_env()
            del env[name]
            with pytest.raises(LookupError, match=name):
                every_environment(env)

    def test_no_secret_is_written_into_the_compose_file(self):
        environment = compose()["services"]["svc-monitor"]["environment"]
        for name in ("ENCRYPTION_KEY", "AUTH_SECRET", "STORAGE_URL"):
            assert "${" in environment[name], name

    def test_svc_monitor_accepts_the_environment_compose_gives_it(self):
        env = real_env()
        settings = Settings(_env_file=None, **service_environment("svc-monitor", env))  # type: ignore[arg-type]
        assert settings.STORAGE_TYPE is StorageType.POSTGRES
        assert settings.STORAGE_URL is not None
        url = settings.STORAGE_URL.get_secret_value()
        assert url == f"postgresql://svc:{env['POSTGRES_PASSWORD']}@postgres:5432/svc"
        postgres = service_environment("postgres", env)
        assert (postgres["POSTGRES_USER"], postgres["POSTGRES_DB"]) == ("svc", "svc")
        assert settings.DB_HOST == "valkey"

    def test_left_over_placeholders_stop_svc_monitor_naming_the_variables(self):
        values = service_environment("svc-monitor", env_example())
        with pytest.raises(ValidationError) as error:
            Settings(_env_file=None, **values)  # type: ignore[arg-type]
        named = {str(item["loc"][0]) for item in error.value.errors()}
        assert named == {"ENCRYPTION_KEY", "AUTH_SECRET"}


@pytest.fixture
def prometheus_dir(tmp_path: Path) -> Path:
    """/etc/prometheus as the Prometheus container sees it, from the compose mounts."""
    etc = PurePosixPath("/etc/prometheus")
    for target, source in bind_mounts("prometheus").items():
        assert target.is_relative_to(etc), target
        placed = tmp_path / target.relative_to(etc)
        placed.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, placed)
    return tmp_path


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL is not None
    return subprocess.run(
        [PROMTOOL, *args], capture_output=True, text=True, timeout=60, check=False
    )


class TestPrometheus:
    @needs_promtool
    def test_its_config_is_valid_and_loads_the_shipped_rules(self, prometheus_dir: Path):
        result = promtool("check", "config", str(prometheus_dir / "prometheus.yml"))
        assert result.returncode == 0, result.stdout + result.stderr
        assert "SUCCESS: 1 rule files found" in result.stdout
        rules = sorted((prometheus_dir / "rules").glob("*.yml"))
        assert [r.name for r in rules] == ["svc-monitor-alerts.yml"]
        result = promtool("check", "rules", *map(str, rules))
        assert result.returncode == 0, result.stdout + result.stderr

    def test_it_scrapes_svc_monitor_under_the_job_the_rules_expect(self):
        config = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())
        (job,) = config["scrape_configs"]
        assert job["job_name"] == "svc-monitor"
        assert 'up{job="svc-monitor"}' in (DEPLOY / "prometheus/svc-monitor-alerts.yml").read_text()
        assert job["metrics_path"] == "/api/prometheus/metrics"
        port = runtime_stage().env["PORT"]
        assert job["static_configs"] == [{"targets": [f"svc-monitor:{port}"]}]


class TestGrafana:
    def test_the_provisioned_dashboard_is_the_shipped_one(self):
        mounts = bind_mounts("grafana")
        provisioning = mounts[PurePosixPath("/etc/grafana/provisioning")]
        providers = yaml.safe_load((provisioning / "dashboards" / "svc-monitor.yaml").read_text())
        (provider,) = providers["providers"]
        folder = PurePosixPath(provider["options"]["path"])
        dashboards = [source for target, source in mounts.items() if target.parent == folder]
        assert dashboards == [DEPLOY / "grafana" / "svc-monitor.json"]

    def test_every_panel_finds_the_provisioned_prometheus(self):
        mounts = bind_mounts("grafana")
        provisioning = mounts[PurePosixPath("/etc/grafana/provisioning")]
        sources = yaml.safe_load((provisioning / "datasources" / "prometheus.yaml").read_text())
        (source,) = sources["datasources"]
        assert source["type"] == "prometheus"
        assert source["isDefault"] is True
        assert source["url"] == "http://prometheus:9090"
        # Without the import dialog nothing fills in ${DS_PROMETHEUS}: a datasource variable
        # of that name must, or every panel says "datasource not found".
        dashboard = json.loads((DEPLOY / "grafana" / "svc-monitor.json").read_text())
        references = set(re.findall(r"\$\{(\w+)\}", json.dumps(dashboard["panels"])))
        variables = {v["name"]: v for v in dashboard["templating"]["list"]}
        assert references == {"DS_PROMETHEUS"}
        assert variables["DS_PROMETHEUS"]["type"] == "datasource"
        assert variables["DS_PROMETHEUS"]["query"] == source["type"]
