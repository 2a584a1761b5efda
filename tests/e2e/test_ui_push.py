"""OTLP push connections in a real Chromium against a live service: the Add Connection
dialog's OTLP push tab, the push badge, discovered pushers in the switcher, and the
message live-only pages show for a connection svc-monitor never dials.

Metrics are pushed as a Collector would: OTLP JSON over real HTTP to /v1/external/metrics.
Every page opened here also fails its test on a console error or a request to a host
other than this machine (tests/fixtures/browser.py).
"""

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from playwright.async_api import Page, expect

from tests.fixtures.app import target_of
from tests.fixtures.browser import LiveService, LiveServiceFactory, PageFactory
from tests.fixtures.servers import RunningServer

pytestmark = pytest.mark.slow

# Addresses a Collector reports; nothing listens there and svc-monitor never dials them.
PUSHED_HOST, PUSHED_PORT = "10.20.30.40", 7002
DISCOVERED_HOST, DISCOVERED_PORT = "127.0.0.1", 7001


@pytest.fixture
async def service(
    live_service_factory: LiveServiceFactory, valkey_server: RunningServer
) -> AsyncIterator[LiveService]:
    async with live_service_factory(**target_of(valkey_server)) as running:
        yield running


def memory_used_payload(host: str, port: str, used_bytes: int) -> dict[str, Any]:
    """What a Collector's redis receiver sends for one gauge, as OTLP JSON."""
    attributes = [
        {"key": "server.address", "value": {"stringValue": host}},
        {"key": "server.port", "value": {"stringValue": port}},  # a string, as the receiver's
    ]
    point = {"timeUnixNano": str(time.time_ns()), "asInt": str(used_bytes)}
    metric = {"name": "redis.memory.used", "unit": "By", "gauge": {"dataPoints": [point]}}
    scope = {
        "name": "github.com/open-telemetry/opentelemetry-collector-contrib/receiver/redisreceiver"
    }
    return {
        "resourceMetrics": [
            {
                "resource": {"attributes": attributes},
                "scopeMetrics": [{"scope": scope, "metrics": [metric]}],
            }
        ]
    }


async def push(service: LiveService, host: str, port: int, used_bytes: int) -> None:
    async with httpx.AsyncClient() as client:
        response = await client.post(
            service.url + "/v1/external/metrics",
            json=memory_used_payload(host, str(port), used_bytes),
        )
    assert response.status_code == 200, response.text


async def wait_for_discovered(service: LiveService, address: str) -> None:
    async with httpx.AsyncClient(base_url=service.url) as client:
        for _ in range(100):  # bounded: 10 s
            listed = (await client.get("/api/connections/discovered")).json()
            if any(f"{d['host']}:{d['port']}" == address for d in listed):
                return
            await asyncio.sleep(0.1)
    raise AssertionError(f"{address} was not discovered within 10 s")


async def open_push_tab(page: Page) -> None:
    await page.get_by_role("button", name="Add connection").first.click()
    dialog = page.locator("#connection-dialog")
    await expect(dialog).to_be_visible()
    await dialog.get_by_role("tab", name="OTLP push").click()
    await expect(dialog.get_by_role("tab", name="OTLP push")).to_have_attribute(
        "aria-selected", "true"
    )


class TestRegisterPushConnection:
    async def test_the_otlp_tab_shows_the_config_and_registers_the_connection(
        self, service: LiveService, open_page: PageFactory
    ):
        async with open_page(service.url) as page:
            await open_push_tab(page)
            dialog = page.locator("#connection-dialog")
            await dialog.get_by_label("Name", exact=True).fill("Edge cache")
            await dialog.get_by_label("Host", exact=True).fill(PUSHED_HOST)
            await dialog.get_by_label("Port", exact=True).fill(str(PUSHED_PORT))

            # The configuration follows what is typed, in its place under the fields.
            config = dialog.locator("#collector-config [data-config]")
            await expect(config).to_be_visible()
            await expect(dialog.locator("[data-config]")).to_have_count(1)
            await expect(dialog.locator("[data-state=no-config]")).to_have_count(0)
            await expect(config).to_contain_text(f'endpoint: "{PUSHED_HOST}:{PUSHED_PORT}"')
            await expect(config).to_contain_text(
                f'metrics_endpoint: "{service.url}/v1/external/metrics"'
            )
            await expect(config).not_to_contain_text("valkey.version")
            await expect(dialog.get_by_label("Valkey version")).to_be_hidden()
            await dialog.get_by_label("Engine").select_option("valkey")
            await dialog.get_by_label("Valkey version").fill("8.1.4")
            await expect(config).to_contain_text('value: "8.1.4"')
            await expect(config).to_contain_text("db.system.name")

            await page.context.grant_permissions(["clipboard-read", "clipboard-write"])
            copy = dialog.locator("[data-action=copy-config]")
            await copy.click()
            await expect(copy).to_have_text("Copied")
            copied = await page.evaluate("navigator.clipboard.readText()")
            assert copied.strip() == (await config.text_content() or "").strip()
            assert "key: valkey.version" in copied

            await dialog.get_by_role("button", name="Register").click()
            await page.wait_for_load_state("load")
            chosen = page.locator("#connection-select option:checked")
            await expect(chosen).to_contain_text("Edge cache")
            await expect(chosen).to_contain_text("push")
            await expect(page.locator(".switcher [data-badge=push]")).to_be_visible()
            # Nothing pushed yet: not live, and it says why rather than "unreachable".
            await expect(page.locator("[data-connection-status]")).to_have_text("no fresh push")
            await expect(page.locator("[data-state=push-stale]")).to_be_visible()

            # The Manage dialog badges it too.
            await page.get_by_role("button", name="Manage").click()
            row = page.locator("#manage-dialog tr", has_text="Edge cache")
            await expect(row.locator("[data-badge=push]")).to_be_visible()
            await expect(row).to_contain_text("no push yet")

    async def test_pushed_memory_reaches_the_dashboard_and_memory_pages(
        self, service: LiveService, open_page: PageFactory
    ):
        await register_push(service, "Edge cache")
        await push(service, PUSHED_HOST, PUSHED_PORT, 3 * 1024 * 1024)
        async with open_page(service.url) as page:
            await choose(page, "Edge cache")
            used = page.locator('[data-metric="used_memory"] .card-value')
            await expect(used).to_have_text("3.0 MiB")
            await expect(page.locator("[data-connection-status]")).to_have_text("receiving · redis")
            await page.goto(service.url + "/memory")
            await expect(page.locator("[data-state=pushed]")).to_be_visible()
            await expect(page.locator('[data-metric="used_memory"] .card-value')).to_have_text(
                "3.0 MiB"
            )
            doctor = page.locator('[data-section="memory-doctor"]')
            await expect(doctor).to_contain_text("This view needs a live connection")


class TestLiveOnlyPages:
    @pytest.mark.parametrize("path", ["/slowlog", "/clients", "/latency", "/cli", "/monitor"])
    async def test_say_they_need_a_live_connection(
        self, path: str, service: LiveService, open_page: PageFactory
    ):
        await register_push(service, "Edge cache")
        async with open_page(service.url) as page:
            await choose(page, "Edge cache")
            await page.goto(service.url + path)
            message = page.locator('[data-problem="needs-live-connection"]')
            await expect(message).to_contain_text("This view needs a live connection")
            await expect(message).to_contain_text(f"Edge cache ({PUSHED_HOST}:{PUSHED_PORT})")
            await expect(message).to_contain_text("sends its metrics over OTLP")


class TestDiscovered:
    async def test_register_opens_the_dialog_filled_and_dismiss_hides_it(
        self, service: LiveService, open_page: PageFactory
    ):
        await push(service, DISCOVERED_HOST, DISCOVERED_PORT, 1024)
        address = f"{DISCOVERED_HOST}:{DISCOVERED_PORT}"
        await wait_for_discovered(service, address)
        async with open_page(service.url) as page:
            summary = page.locator("[data-discovered-count]")
            await expect(summary).to_have_text("1 discovered via OTLP")
            await summary.click()
            entry = page.locator(f'[data-discovered-address="{address}"]')
            await expect(entry).to_be_visible()

            await entry.get_by_role("button", name="Register").click()
            dialog = page.locator("#connection-dialog")
            await expect(dialog.get_by_role("tab", name="OTLP push")).to_have_attribute(
                "aria-selected", "true"
            )
            await expect(dialog.get_by_label("Host", exact=True)).to_have_value(DISCOVERED_HOST)
            await expect(dialog.get_by_label("Port", exact=True)).to_have_value(
                str(DISCOVERED_PORT)
            )
            await expect(dialog.locator("[data-config]")).to_contain_text(f'endpoint: "{address}"')
            await dialog.get_by_role("button", name="Close").click()
            await expect(dialog).to_have_count(0)

            await expect(entry).to_be_visible()  # the list stays open behind the dialog
            await entry.get_by_role("button", name="Dismiss").click()
            await expect(page.locator("[data-discovered-count]")).to_have_count(0)
            await page.reload()
            await expect(page.locator("[data-discovered-count]")).to_have_count(0)


async def register_push(service: LiveService, name: str) -> None:
    async with httpx.AsyncClient(base_url=service.url) as client:
        response = await client.post(
            "/api/connections",
            json={"source": "push", "name": name, "host": PUSHED_HOST, "port": PUSHED_PORT},
        )
    assert response.status_code in (200, 201), response.text


async def choose(page: Page, name: str) -> None:
    select = page.locator("#connection-select")
    value = await select.locator("option", has_text=name).get_attribute("value")
    assert value is not None
    async with page.expect_navigation():
        await select.select_option(value)
