"""The Kubernetes manifests in deploy/kubernetes/ (`make lint` checks them against the API
schemas with kubernetes-validate): the pod runs as the image's user on a read-only root with
a volume wherever the service writes, its probes answer the kubelet (which has no session)
as the health contract says, and the Secret, volume claim and Service line up with the
Deployment that uses them, for SQLite and for PostgreSQL."""

import secrets
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from svc_monitor.config import Settings, StorageType
from tests.deploy.image import runtime_stage
from tests.fixtures.app import AppFactory

KUBERNETES = Path(__file__).resolve().parents[2] / "deploy" / "kubernetes"
SQLITE = KUBERNETES
POSTGRES = KUBERNETES / "postgres"


def manifests(folder: Path) -> dict[str, dict[str, Any]]:
    """Each resource of the folder's files by kind (each file holds one)."""
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(folder.glob("*.yaml")):
        resource: dict[str, Any] = yaml.safe_load(path.read_text())
        assert resource["kind"] not in found, path
        found[resource["kind"]] = resource
    return found


def variant(folder: Path) -> dict[str, dict[str, Any]]:
    """The resources applied together: a folder's own, the top folder's for what it lacks."""
    return {**manifests(SQLITE), **manifests(folder)}


def container(deployment: dict[str, Any]) -> dict[str, Any]:
    (only,) = deployment["spec"]["template"]["spec"]["containers"]
    result: dict[str, Any] = only
    return result


def pod_environment(resources: dict[str, dict[str, Any]], **replaced: str) -> dict[str, str]:
    """The container's environment as the kubelet builds it: the image's, its env list
    (literal values only) and the Secret's keys, each Secret value replaced as asked."""
    env = dict(runtime_stage().env)
    for item in container(resources["Deployment"])["env"]:
        if "value" in item and "$(" not in item["value"]:
            env[item["name"]] = item["value"]
    env |= {key: replaced.get(key, value) for key, value in secret_data(resources).items()}
    return env


def secret_data(resources: dict[str, dict[str, Any]]) -> dict[str, str]:
    data: dict[str, str] = resources["Secret"]["stringData"]
    return data


def settings_of(env: dict[str, str]) -> Settings:
    names = set(Settings.model_fields)
    values = {name: value for name, value in env.items() if name in names}
    return Settings(_env_file=None, **values)  # type: ignore[arg-type]


@pytest.mark.parametrize("folder", [SQLITE, POSTGRES], ids=["sqlite", "postgres"])
class TestDeployment:
    def test_it_runs_as_the_image_user_on_a_read_only_root(self, folder: Path):
        deployment = variant(folder)["Deployment"]
        pod = deployment["spec"]["template"]["spec"]["securityContext"]
        assert pod["runAsNonRoot"] is True
        assert str(pod["runAsUser"]) == runtime_stage().user
        security = container(deployment)["securityContext"]
        assert security["readOnlyRootFilesystem"] is True
        assert security["allowPrivilegeEscalation"] is False
        assert security["capabilities"]["drop"] == ["ALL"]

    def test_every_place_the_service_writes_is_a_volume(self, folder: Path):
        deployment = variant(folder)["Deployment"]
        mounted = {m["mountPath"] for m in container(deployment)["volumeMounts"]}
        assert {runtime_stage().env["SVC_DATA_DIR"], "/tmp"} <= mounted
        volumes = {v["name"] for v in deployment["spec"]["template"]["spec"]["volumes"]}
        assert {m["name"] for m in container(deployment)["volumeMounts"]} == volumes

    def test_the_probes_follow_the_health_contract(self, folder: Path):
        spec = container(variant(folder)["Deployment"])
        port = spec["ports"][0]
        assert str(port["containerPort"]) == runtime_stage().env["PORT"]
        assert spec["livenessProbe"]["httpGet"] == {"path": "/health/live", "port": port["name"]}
        assert spec["startupProbe"]["httpGet"] == spec["livenessProbe"]["httpGet"]
        assert spec["readinessProbe"]["httpGet"] == {"path": "/api/health", "port": port["name"]}

    def test_it_takes_its_secrets_from_the_secret(self, folder: Path):
        resources = variant(folder)
        (source,) = container(resources["Deployment"])["envFrom"]
        assert source["secretRef"]["name"] == resources["Secret"]["metadata"]["name"]
        assert {"ENCRYPTION_KEY", "AUTH_SECRET"} <= set(secret_data(resources))

    def test_left_over_placeholders_stop_it_naming_the_variables(self, folder: Path):
        with pytest.raises(ValidationError) as error:
            settings_of(pod_environment(variant(folder)))
        named = {str(item["loc"][0]) for item in error.value.errors()}
        assert named == {"ENCRYPTION_KEY", "AUTH_SECRET"}

    def test_the_service_reaches_the_pods(self, folder: Path):
        resources = variant(folder)
        service = resources["Service"]["spec"]
        labels = resources["Deployment"]["spec"]["template"]["metadata"]["labels"]
        assert service["selector"].items() <= labels.items()
        names = {p["name"] for p in container(resources["Deployment"])["ports"]}
        assert {p["targetPort"] for p in service["ports"]} <= names


class TestStorage:
    def test_sqlite_keeps_one_replica_on_the_claim(self):
        resources = manifests(SQLITE)
        deployment = resources["Deployment"]
        # Two processes must never open one SQLite file: the old pod stops first.
        assert deployment["spec"]["replicas"] == 1
        assert deployment["spec"]["strategy"] == {"type": "Recreate"}
        (claim,) = [
            v["persistentVolumeClaim"]["claimName"]
            for v in deployment["spec"]["template"]["spec"]["volumes"]
            if "persistentVolumeClaim" in v
        ]
        assert claim == resources["PersistentVolumeClaim"]["metadata"]["name"]
        replaced = {"ENCRYPTION_KEY": secrets.token_hex(32), "AUTH_SECRET": secrets.token_hex(32)}
        settings = settings_of(pod_environment(resources, **replaced))
        assert settings.STORAGE_TYPE is StorageType.SQLITE
        assert settings.STORAGE_SQLITE_FILEPATH.is_relative_to(settings.SVC_DATA_DIR)

    def test_postgres_runs_replicas_that_reach_each_other(self):
        resources = variant(POSTGRES)
        assert "PersistentVolumeClaim" not in manifests(POSTGRES)
        assert resources["Deployment"]["spec"]["replicas"] > 1
        env = {item["name"]: item for item in container(resources["Deployment"])["env"]}
        assert env["POD_IP"]["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP"
        assert env["REPLICA_ADDRESS"]["value"] == f"http://$(POD_IP):{runtime_stage().env['PORT']}"
        replaced = {
            "ENCRYPTION_KEY": secrets.token_hex(32),
            "AUTH_SECRET": secrets.token_hex(32),
        }
        settings = settings_of(pod_environment(resources, **replaced))
        assert settings.STORAGE_TYPE is StorageType.POSTGRES
        assert settings.STORAGE_URL is not None


class TestProbesAnswer:
    async def test_the_kubelet_without_a_session_gets_200_from_both(
        self, memory_app_factory: AppFactory
    ):
        spec = container(manifests(SQLITE)["Deployment"])
        # User control on, as installed: the probes still need no session.
        async with memory_app_factory(WORKSPACE_DISABLED=False) as running:
            for probe in ("livenessProbe", "readinessProbe"):
                response = await running.client.get(spec[probe]["httpGet"]["path"])
                assert response.status_code == 200, (probe, response.text)
