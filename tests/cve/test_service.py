"""The scanner as an operator meets it: one cve.detected per new CVE to a real receiver,
dataset updates from a real local HTTP server, and the Prometheus families."""

import asyncio
import dataclasses
import json
import time
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from svc_monitor.cve.service import CveService
from svc_monitor.cve.store import CveStore
from tests.cve.expected import affected_ids, raw
from tests.cve.test_api import findings, scanned
from tests.fixtures.app import AppFactory, RunningApp, target_of
from tests.fixtures.licensing import SigningKey
from tests.fixtures.receiver import Answer, Receiver
from tests.fixtures.servers import RunningServer
from tests.fixtures.waiting import eventually

EVENT = "cve.detected"
FAKE = "CVE-2099-0001"


def scanner(app: RunningApp) -> CveService:
    cve: CveService = app.app.state.features.cve
    return cve


def redis_version(server: RunningServer) -> str:
    with server.client() as conn:
        return str(conn.info("server")["redis_version"])


def newer_dataset(**changes: Any) -> dict[str, Any]:
    """The shipped dataset, built later, with one more advisory hitting every Redis."""
    document = raw()
    extra = {
        "id": FAKE,
        "engine": "redis",
        "component": "server",
        "summary": "A test advisory.",
        "severity": "critical",
        "cvss": 9.8,
        "kev": True,
        "affected": [{"introduced": "0", "fixed": None}],
    }
    return {
        **document,
        "generated": "2099-01-01",
        "advisories": [*document["advisories"], extra],
        **changes,
    }


class TestNewCveWebhook:
    async def test_fires_once_per_new_cve_and_not_again_on_rescans(
        self,
        memory_app_factory: AppFactory,
        redis6_server: RunningServer,
        receiver: Receiver,
    ):
        expected = affected_ids("redis", redis_version(redis6_server))
        async with memory_app_factory(
            NODE_ENV="development", DB_HOST="127.0.0.1", DB_PORT=9
        ) as app:
            hook = {"name": "cve", "url": receiver.url(), "events": [EVENT]}
            made = await app.client.post("/api/webhooks", json=hook)
            assert made.status_code == 201, made.text
            # Added after the webhook, so its first scan is seen by it.
            added = await app.client.post(
                "/api/connections",
                json={"name": "r6", "host": redis6_server.host, "port": redis6_server.port},
            )
            assert added.status_code == 201, added.text
            await scanned(app, added.json()["id"])
            await receiver.wait_for(len(expected))
            await scanner(app).rescan_all()
            await scanner(app).rescan_all()
            await asyncio.sleep(0.5)  # room for any (wrong) repeat to arrive
        sent = [r.json for r in receiver.requests if r.event == EVENT]
        assert sorted(e["data"]["cveId"] for e in sent) == sorted(expected)
        first = sent[0]
        assert first["instance"]["port"] == redis6_server.port
        assert set(first["data"]) >= {"cveId", "severity", "kev", "fixedIn", "version", "message"}
        assert first["data"]["engine"] == "redis"

    async def test_is_a_community_event(self, api: RunningApp):
        allowed = (await api.client.get("/api/webhooks/allowed-events")).json()
        assert EVENT in allowed["allowedEvents"]


class TestDatasetUpdates:
    async def test_a_newer_dataset_is_adopted_and_rescans(
        self,
        memory_app_factory: AppFactory,
        redis6_server: RunningServer,
        receiver: Receiver,
    ):
        receiver.default = Answer(body=json.dumps(newer_dataset()))
        url = receiver.url("/cve-dataset.json")
        async with memory_app_factory(CVE_DATASET_URL=url, **target_of(redis6_server)) as app:

            async def adopted() -> bool:
                answer = await findings(app)
                return any(f["id"] == FAKE for f in answer["findings"])

            await eventually(adopted)
            answer = await findings(app)
        assert receiver.on("/cve-dataset.json")
        assert answer["dataset"] == {
            "generated": "2099-01-01",
            "ageDays": answer["dataset"]["ageDays"],
            "stale": False,
            "origin": "updated",
        }
        assert answer["findings"][0]["id"] == FAKE  # KEV and critical: first

    async def test_a_malformed_update_keeps_the_last_good_dataset(
        self, memory_app_factory: AppFactory, receiver: Receiver
    ):
        url = receiver.url("/cve-dataset.json")
        async with memory_app_factory(CVE_DATASET_URL=url) as app:
            source = scanner(app).source
            receiver.default = Answer(body=json.dumps(newer_dataset()))
            assert await source.update() == "updated"
            good = source.dataset
            for body in (
                "{not json",
                json.dumps({"advisories": []}),
                json.dumps(newer_dataset(generated="2099-02-01", advisories="many")),
            ):
                receiver.default = Answer(body=body)
                assert await source.update() == "invalid"
                assert source.dataset is good
            receiver.default = Answer(status=500, body="down")
            assert await source.update() == "unreachable"
            receiver.default = Answer(body=json.dumps(raw()))  # older than the one in force
            assert await source.update() == "unchanged"
            assert source.dataset is good

    async def test_air_gapped_never_asks(
        self, memory_app_factory: AppFactory, receiver: Receiver, signing_key: SigningKey
    ):
        url = receiver.url("/cve-dataset.json")
        licence = signing_key.mint()  # an offline token and no key: air-gapped
        async with memory_app_factory(CVE_DATASET_URL=url, SVC_OFFLINE_LICENSE=licence) as app:
            assert await scanner(app).source.update() == "air_gapped"
            assert scanner(app).source.origin == "shipped"
        assert receiver.requests == []


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


class TestPrometheus:
    async def test_findings_by_severity_kev_and_a_fresh_dataset(
        self, memory_app_factory: AppFactory, redis6_server: RunningServer
    ):
        version = redis_version(redis6_server)
        async with memory_app_factory(
            CVE_DATASET_MAX_AGE_DAYS=100_000, **target_of(redis6_server)
        ) as app:
            answer = await scanned(app)
            text = (await app.client.get("/api/prometheus/metrics")).text
        found = samples(text)
        address = f"{redis6_server.host}:{redis6_server.port}"
        counted = [f for f in answer["findings"] if f["kind"] != "end_of_life"]
        for severity in ("critical", "high", "medium", "low"):
            key = ("svc_cve_findings", (("connection", address), ("severity", severity)))
            assert found[key] == sum(f["severity"] == severity for f in counted)
        total = sum(v for (name, labels), v in found.items() if name == "svc_cve_findings")
        assert total == len(affected_ids("redis", version))
        assert found[("svc_cve_kev", (("connection", address),))] == 0
        assert found[("svc_cve_dataset_stale", ())] == 0

    async def test_an_old_dataset_is_stale(self, api: RunningApp, memory_app_factory: AppFactory):
        # The shipped dataset was built 2026-11-22: more than a day old from 2026-11-24 on.
        async with memory_app_factory(CVE_DATASET_MAX_AGE_DAYS=1) as app:
            text = (await app.client.get("/api/prometheus/metrics")).text
        assert samples(text)[("svc_cve_dataset_stale", ())] == 1


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


class TestPolledRescans:
    async def test_a_version_is_scanned_on_arrival_then_every_6_hours(
        self, memory_app_factory: AppFactory, redis6_server: RunningServer
    ):
        async with memory_app_factory(**target_of(redis6_server)) as app:
            await scanned(app)
            [connection] = (await app.client.get("/api/connections")).json()
            real = app.services.live_state.latest(connection["id"])
            assert real is not None
            # A second scanner on a clock of its own, over the app's storage; the app's
            # own scanner has scanned the connection once and waits 6 real hours now.
            observation = real
            clock, store = Clock(), CveStore(app.services.db)
            cve = CveService(
                store,
                scanner(app).source,
                connections=app.services.connections,
                bus=app.services.bus,
                update_interval_ms=86_400_000,
                clock=clock,
            )

            async def scanned_at() -> int | None:
                stored = await store.get(connection["id"])
                return None if stored is None else stored.scanned_at

            for ignored in (
                dataclasses.replace(observation, node="10.0.0.9:7000"),
                dataclasses.replace(observation, pushed=True),
            ):
                cve.observe(ignored)
            before = await scanned_at()
            await cve.scan_due()
            assert await scanned_at() == before
            cve.observe(observation)
            await cve.scan_due()
            first = await scanned_at()
            assert first == int(clock.now * 1000)
            clock.now += 6 * 3600 - 1
            cve.observe(observation)  # same version: nothing to do
            await cve.scan_due()
            assert await scanned_at() == first
            clock.now += 1
            await cve.scan_due()
            assert await scanned_at() == int(clock.now * 1000)
