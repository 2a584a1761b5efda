"""The Clients page against real servers: the live list, and history from real polls."""

import contextlib
import re
import time
import uuid
from collections.abc import Iterator
from html import unescape as html_unescape
from typing import Any, cast

import pytest
import valkey

from tests.fixtures.app import AppFactory, RunningApp, target_of
from tests.fixtures.servers import RunningServer, ServerFactory
from tests.fixtures.waiting import eventually

WEEK_MS = 7 * 24 * 3_600_000


@pytest.fixture
def named(valkey_server: RunningServer) -> Iterator[list[valkey.Valkey]]:
    """Three application connections with unique names, kept open for the test."""
    prefix = f"ui-{uuid.uuid4().hex[:8]}"
    with contextlib.ExitStack() as stack:
        clients = [stack.enter_context(valkey_server.client()) for _ in range(3)]
        for client, suffix in zip(clients, "abc", strict=True):
            client.client_setname(f"{prefix}-{suffix}")
        yield clients


def name_of(client: valkey.Valkey) -> str:
    name = client.client_getname()
    assert isinstance(name, str)
    return name


async def page(app: RunningApp, path: str = "/clients") -> str:
    response = await app.client.get(path)
    assert response.status_code == 200, response.text
    return response.text


def shown_names(html: str) -> list[str]:
    return re.findall(r'data-client-name="([^"]*)"', html)


class TestLiveList:
    async def test_named_clients_appear_with_their_details(
        self, api: RunningApp, named: list[valkey.Valkey]
    ):
        named[0].set(f"{name_of(named[0])}:key", "v")
        html = await page(api)
        names = shown_names(html)
        for client in named:
            assert name_of(client) in names
        assert "svc-monitor" not in names  # the monitor's own connections stay out
        row = re.search(
            rf'<tr data-client-id="\d+" data-client-name="{name_of(named[0])}">.*?</tr>', html, re.S
        )
        assert row is not None
        assert '<td data-field="user">default</td>' in row.group(0)
        assert "<code>set</code>" in row.group(0)

    async def test_sorting_by_name_orders_the_rows(
        self, api: RunningApp, named: list[valkey.Valkey]
    ):
        ascending = shown_names(await page(api, "/clients?sort=name&order=asc"))
        descending = shown_names(await page(api, "/ui/clients/live?sort=name&order=desc"))
        ours = sorted(name_of(c) for c in named)
        assert [n for n in ascending if n in ours] == ours
        assert [n for n in descending if n in ours] == ours[::-1]
        assert 'aria-sort="descending"' in await page(api, "/clients?sort=name&order=desc")

    async def test_the_type_filter_shows_only_that_kind(
        self, api: RunningApp, named: list[valkey.Valkey]
    ):
        subscriber = cast(Any, named[1]).pubsub()  # valkey-py leaves pubsub() untyped
        subscriber.subscribe("ui-clients-channel")
        subscriber.get_message(timeout=1.0)  # the subscribe confirmation: it is subscribed
        try:
            html = await page(api, "/clients?type=pubsub")
        finally:
            subscriber.close()
        names = shown_names(html)
        assert name_of(named[0]) not in names
        assert "of type pubsub" in html

    async def test_an_unknown_sort_falls_back_instead_of_failing(self, api: RunningApp):
        html = await page(api, "/clients?sort=nonsense&order=sideways&type=weird")
        assert 'data-section="live-clients"' in html
        assert "data-problem" not in html


class TestHistory:
    async def test_polls_fill_the_cards_and_the_chart_data(
        self, memory_app_factory: AppFactory, named: list[valkey.Valkey]
    ):
        async with memory_app_factory(CLIENT_ANALYTICS_POLL_INTERVAL_MS=200) as app:

            async def polled() -> bool:
                return 'data-metric="current_connections"' in await page(app)

            await eventually(polled)
            html = await page(app)
            assert 'data-top="name"' in html
            assert f'data-key="{name_of(named[0])}"' in html
            source = re.search(r'data-section="clients-poll-history" data-source="([^"]+)"', html)
            assert source is not None
            now = int(time.time() * 1000)
            window = f"&from={now - 3_600_000}&to={now + 1000}&maxPoints=100"
            response = await app.client.get(html_unescape(source.group(1)) + window)
        assert response.status_code == 200, response.text
        points = response.json()["points"]
        assert points
        assert points[-1]["maxConnections"] >= len(named)
        # The names the page charts are those it lists first, counted per point.
        charted = [k for k in points[-1] if k.startswith("name:")]
        assert charted
        assert all(points[-1][k] >= 1 for k in charted)

    async def test_a_week_of_chart_data_is_cut_not_refused(self, api: RunningApp):
        now = int(time.time() * 1000)
        response = await api.client.get(
            "/ui/clients/timeseries",
            params={"from": now - WEEK_MS, "to": now, "maxPoints": 1000},
        )
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["to"] - body["from"] == 6 * 3_600_000  # read per snapshot: kept short

    async def test_no_polls_yet_says_so(self, api: RunningApp):
        html = await page(api)  # the default poll is every 60 s: none stored yet
        assert "No CLIENT LIST poll stored" in html
        assert "data-charts" in html


class TestUnreachable:
    async def test_a_down_instance_shows_its_status_and_keeps_history(
        self,
        memory_app_factory: AppFactory,
        server_factory: ServerFactory,
    ):
        server = server_factory.start("valkey")
        try:
            with server.client() as app_client:
                app_client.client_setname("soon-gone")  # a client for the polls to store
                html = await self.page_once_down(memory_app_factory, server_factory, server)
        finally:
            server_factory.stop(server)
        live = re.search(r'<div id="clients-live".*?</div>', html, re.S)
        assert live is not None
        assert 'data-problem="unavailable"' in live.group(0)
        assert f"{server.host}:{server.port}" in live.group(0)
        assert 'data-metric="current_connections"' in html  # stored history still shown

    @staticmethod
    async def page_once_down(
        factory: AppFactory, server_factory: ServerFactory, server: RunningServer
    ) -> str:
        """The page once the app has stored polls of `server`, and then seen it go down."""
        async with factory(**target_of(server), CLIENT_ANALYTICS_POLL_INTERVAL_MS=200) as app:

            async def polled() -> bool:
                return 'data-metric="current_connections"' in await page(app)

            await eventually(polled)
            server_factory.stop(server)

            async def down() -> bool:
                return 'data-state="unreachable"' in await page(app)

            await eventually(down)
            return await page(app)
