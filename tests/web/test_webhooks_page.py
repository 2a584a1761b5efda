"""The Webhooks page: the editor, the event picker by tier, the test call, delivery history
with Retry, and what a member may do, against real receivers on 127.0.0.1.

The browser tests drive Debian's Chromium against a served svc-monitor with user control
on (NODE_ENV=development, so http://127.0.0.1 receivers are allowed); the form-only
cases talk HTTP to the app in-process, as htmx would.
"""

import contextlib
import re
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlencode

import pytest
from playwright.async_api import Page, expect

from svc_monitor.event_types.access import AclDenied
from svc_monitor.event_types.instance import InstanceDown
from svc_monitor.licensing.models import WEBHOOK_EVENT_TIERS
from svc_monitor.webhooks.schemas import DeliveryRead, RetryPolicy, WebhookCreate, WebhookRead
from svc_monitor.webhooks.service import WebhookService
from tests.fixtures.app import AppFactory, RunningApp, make_settings, target_of
from tests.fixtures.browser import PageFactory
from tests.fixtures.receiver import Answer, Receiver
from tests.fixtures.served_team import ServedTeam, served_team
from tests.fixtures.servers import RunningServer
from tests.fixtures.waiting import eventually

SECRET = "s3cret-for-signing-0123456789"
# What htmx sends with every request from the page (the UI's CSRF guard wants it).
FROM_PAGE = {"HX-Request": "true", "Content-Type": "application/x-www-form-urlencoded"}
# Chromium's line for a refused request, and htmx's for the response it did not swap.
REFUSALS = ("status of 403", "Response Status Error Code 403")


@contextlib.asynccontextmanager
async def team_of(server: RunningServer) -> AsyncIterator[ServedTeam]:
    settings = make_settings(**target_of(server), NODE_ENV="development", WORKSPACE_DISABLED=False)
    async with served_team(settings) as team:
        yield team


def webhooks_of(team: ServedTeam) -> WebhookService:
    service: WebhookService = team.app.state.services.webhooks
    return service


async def connection_id(team: ServedTeam) -> str:
    connections = await team.app.state.services.connections.list()
    return str(connections[0].id)


async def settled(service: WebhookService, hook: WebhookRead, status: str) -> DeliveryRead:
    """The newest delivery of `hook`, once it has reached `status`."""

    async def reached() -> bool:
        rows = await service.deliveries(hook.id, limit=1, offset=0)
        return bool(rows) and rows[0].status == status

    await eventually(reached, within=15)
    return (await service.deliveries(hook.id, limit=1, offset=0))[0]


async def signed_in(team: ServedTeam, page: Page, person: Any, path: str) -> None:
    await team.sign_in_page(page, person)
    await page.goto(team.url + path)


class TestEditorInTheBrowser:
    async def test_admin_creates_a_webhook_after_a_refused_url_and_sends_a_test(
        self, valkey_server: RunningServer, open_page: PageFactory, receiver: Receiver
    ):
        receiver.default = Answer(201, "thanks from the receiver")
        async with team_of(valkey_server) as team, open_page(team.url + "/login") as page:
            assert team.owner is not None
            await signed_in(team, page, team.owner, "/webhooks")
            await page.click('[data-action="new-webhook"]')
            form = page.locator("#webhook-form")

            # Community tier: the picker shows every event, the paid ones disabled with
            # the tier that unlocks them.
            events = form.locator('input[name="events"]')
            assert await events.count() == len(WEBHOOK_EVENT_TIERS)
            slowlog = form.locator('[data-event="slowlog.threshold"]')
            await expect(slowlog.locator("input")).to_be_disabled()
            await expect(slowlog).to_contain_text("needs Pro")
            acl = form.locator('[data-event="acl.modified"]')
            await expect(acl.locator("input")).to_be_disabled()
            await expect(acl).to_contain_text("needs Enterprise")
            await expect(form.locator('[data-event="instance.down"] input')).to_be_enabled()
            await expect(form).to_contain_text("0 = automatic baseline")

            await form.locator('input[name="name"]').fill("on-call <b>pager</b>")
            await form.locator('input[name="url"]').fill("ftp://127.0.0.1/hook")
            await form.locator('input[name="secret"]').fill(SECRET)
            await form.locator('[data-event="instance.down"] input').check()
            await form.locator('[data-event="memory.critical"] input').check()
            await form.locator('input[name="thresholds.memoryCriticalPercent"]').fill("85")
            await form.locator('input[name="retryPolicy.maxRetries"]').fill("1")
            await form.locator('input[name="header_name"]').first.fill("X-Team")
            await form.locator('input[name="header_value"]').first.fill("ops")
            await form.locator('[data-action="save-webhook"]').click()

            # Refused: the reason beside the URL field, and everything typed still there.
            await expect(form.locator('[data-field-error="url"]')).to_contain_text("url")
            await expect(form.locator('[data-state="invalid"]')).to_contain_text("Nothing")
            await expect(form.locator('input[name="name"]')).to_have_value("on-call <b>pager</b>")
            await expect(form.locator('input[name="secret"]')).to_have_value(SECRET)
            await expect(
                form.locator('input[name="thresholds.memoryCriticalPercent"]')
            ).to_have_value("85")
            await expect(form.locator('[data-event="memory.critical"] input')).to_be_checked()
            await expect(form.locator('input[name="header_value"]').first).to_have_value("ops")
            assert await webhooks_of(team).list_webhooks(None) == []

            await form.locator('input[name="url"]').fill(receiver.url("/in"))
            await form.locator('[data-action="save-webhook"]').click()
            await expect(page.locator('[data-state="created"]')).to_be_visible()
            await expect(page.locator("[data-webhook-title]")).to_have_text("on-call <b>pager</b>")
            (stored,) = await webhooks_of(team).list_webhooks(None)
            assert stored.url == receiver.url("/in")
            assert stored.events == ["instance.down", "memory.critical"]
            assert stored.thresholds.memoryCriticalPercent == 85
            assert stored.retryPolicy.maxRetries == 1
            assert stored.headers == {"X-Team": "ops"}
            assert stored.connectionId is None
            assert stored.secret is not None
            assert SECRET not in stored.secret

            await page.click('[data-action="test-webhook"]')
            result = page.locator("[data-test-result]")
            await expect(result).to_have_attribute("data-success", "true")
            await expect(result.locator("[data-test-status]")).to_have_text("201")
            await expect(result.locator("[data-test-body]")).to_have_text(
                "thanks from the receiver"
            )
            await expect(result.locator("[data-test-duration]")).to_contain_text("ms")
            (sent,) = receiver.requests
            assert sent.path == "/in"
            assert sent.verified(SECRET)
            assert sent.headers["X-Team"] == "ops"

            # Editing: a refusal names the field and keeps the edits; then it saves.
            await form.locator('input[name="url"]').fill("receiver.example/no-scheme")
            await form.locator('input[name="name"]').fill("paused <b>pager</b>")
            await form.locator('input[name="enabled"]').uncheck()
            await form.locator('[data-action="save-webhook"]').click()
            await expect(form.locator('[data-field-error="url"]')).not_to_be_empty()
            await expect(form.locator('input[name="name"]')).to_have_value("paused <b>pager</b>")
            await form.locator('input[name="url"]').fill(receiver.url("/in"))
            await form.locator('[data-action="save-webhook"]').click()
            await expect(page.locator('[data-state="saved"]')).to_have_text("Saved.")
            await expect(form.locator('[data-field-error="url"]')).to_be_empty()
            await expect(form.locator("[data-stored-secret]")).to_have_text(stored.secret)
            edited = await webhooks_of(team).get(stored.id)
            assert (edited.name, edited.enabled) == ("paused <b>pager</b>", False)
            assert edited.thresholds.memoryCriticalPercent == 85

            # The list shows it, its secret masked and the name as text.
            await page.goto(team.url + "/webhooks")
            row = page.locator(f'tr[data-webhook="{stored.id}"]')
            await expect(row.locator("a")).to_have_text("paused <b>pager</b>")
            await expect(row.locator("[data-enabled]")).to_have_text("no")
            await expect(row.locator("[data-scope]")).to_have_text("global")
            await expect(row.locator("[data-secret]")).to_have_text(stored.secret)

    async def test_dead_letter_shows_the_answer_as_text_and_retry_sends_again(
        self, valkey_server: RunningServer, open_page: PageFactory, receiver: Receiver
    ):
        hostile = "<script>document.title='owned'</script><img src=x onerror=alert(1)>boom"
        receiver.default = Answer(500, hostile)
        async with team_of(valkey_server) as team, open_page(team.url + "/login") as page:
            assert team.owner is not None
            service = webhooks_of(team)
            body = WebhookCreate(
                name="ops",
                url=receiver.url(),
                events=["instance.down"],
                retryPolicy=RetryPolicy(maxRetries=0),
            )
            scoped = await connection_id(team)
            hook = await service.create(body, connection_id=scoped)
            team.app.state.services.bus.publish(
                InstanceDown(connection_id=scoped, reason="unreachable", message="x")
            )
            dead = await settled(service, hook, "dead_letter")
            assert dead.attempts == 1
            assert dead.statusCode == 500

            await signed_in(team, page, team.owner, f"/webhooks/{hook.id}")
            row = page.locator(f'tr[data-delivery="{dead.id}"]')
            await expect(row).to_have_attribute("data-status", "dead_letter")
            await expect(row.locator("[data-status-code]")).to_have_text("500")
            await expect(row).to_contain_text("instance.down")
            await row.locator("[data-response] summary").click()
            await expect(row.locator(".response-body")).to_have_text(hostile)
            assert await row.locator("script, img").count() == 0
            assert await page.title() != "owned"
            await expect(page.locator("[data-scope]")).to_contain_text(
                (await team.app.state.services.connections.list())[0].name
            )

            receiver.default = Answer(200, "ok now")
            await row.locator('[data-action="retry-delivery"]').click()
            await expect(page.locator('[data-state="retry-queued"]')).to_have_text("Retry queued")
            await receiver.wait_for(2)
            retried = await settled(service, hook, "success")
            assert retried.id == dead.id
            assert retried.attempts == 2
            await page.click('[data-action="refresh-deliveries"]')
            await expect(row).to_have_attribute("data-status", "success")
            await expect(row.locator('[data-action="retry-delivery"]')).to_have_count(0)

    async def test_a_member_reads_everything_but_gets_no_controls_and_is_refused(
        self, valkey_server: RunningServer, open_page: PageFactory, receiver: Receiver
    ):
        receiver.default = Answer(503, "down")
        async with team_of(valkey_server) as team, open_page(team.url + "/login") as page:
            service = webhooks_of(team)
            body = WebhookCreate(
                name="ops",
                url=receiver.url(),
                events=["instance.down"],
                secret=SECRET,
                retryPolicy=RetryPolicy(maxRetries=0),
            )
            hook = await service.create(body, connection_id=None)
            team.app.state.services.bus.publish(
                InstanceDown(connection_id=await connection_id(team), reason="auth", message="x")
            )
            dead = await settled(service, hook, "dead_letter")
            mia = await team.join("Mia")

            await signed_in(team, page, mia, "/webhooks")
            await expect(page.locator(f'tr[data-webhook="{hook.id}"]')).to_contain_text("ops")
            await expect(page.locator('[data-action="new-webhook"]')).to_have_count(0)
            await page.goto(f"{team.url}/webhooks/{hook.id}")
            await expect(page.locator("[data-webhook-summary]")).to_contain_text(receiver.url())
            await expect(page.locator(f'tr[data-delivery="{dead.id}"]')).to_be_visible()
            main = page.locator("main")
            assert await main.locator("form").count() == 0
            for action in ("save-webhook", "test-webhook", "delete-webhook", "retry-delivery"):
                await expect(main.locator(f'[data-action="{action}"]')).to_have_count(0)
            assert SECRET not in await page.content()

            # The page hides them; the server refuses them anyway.
            form = urlencode({"name": "x", "url": receiver.url(), "events": "instance.down"})
            for path in (
                "/ui/webhooks",
                f"/ui/webhooks/{hook.id}",
                f"/ui/webhooks/{hook.id}/test",
                f"/ui/webhooks/{hook.id}/delete",
                f"/ui/webhooks/{hook.id}/deliveries/{dead.id}/retry",
            ):
                refused = await mia.client.post(path, content=form, headers=FROM_PAGE)
                assert refused.status_code == 403, path
            assert [h.id for h in await service.list_webhooks(None)] == [hook.id]
            assert (await service.get(hook.id)).name == "ops"
            assert len(receiver.requests) == 1  # no test call, no retry
            assert (await service.deliveries(hook.id, limit=5, offset=0))[0].status == "dead_letter"


@pytest.fixture
async def dev(memory_app_factory: AppFactory) -> AsyncIterator[RunningApp]:
    async with memory_app_factory(NODE_ENV="development") as running:
        yield running


def form(**fields: Any) -> str:
    """A urlencoded editor form; list values repeat their field (events, header rows)."""
    pairs: list[tuple[str, str]] = []
    for name, value in fields.items():
        for one in value if isinstance(value, list) else [value]:
            pairs.append((name, str(one)))
    return urlencode(pairs)


class TestEditorOverHttp:
    async def test_a_forged_locked_event_is_refused_naming_it(
        self, dev: RunningApp, receiver: Receiver
    ):
        body = form(name="x", url=receiver.url(), events=["instance.down", "config.changed"])
        answer = await dev.client.post("/ui/webhooks", content=body, headers=FROM_PAGE)
        assert answer.status_code == 200
        assert 'data-error-for="events"' in answer.text
        assert "config.changed (requires enterprise)" in answer.text
        assert await dev.services.webhooks.list_webhooks(None) == []

    async def test_a_number_out_of_range_is_named_and_nothing_is_stored(
        self, dev: RunningApp, receiver: Receiver
    ):
        body = form(
            name="x",
            url=receiver.url(),
            events="instance.down",
            **{"alertConfig.hysteresisFactor": "1.5", "deliveryConfig.timeoutMs": "50"},
        )
        answer = await dev.client.post("/ui/webhooks", content=body, headers=FROM_PAGE)
        problems = re.findall(r'data-error-for="([^"]+)"', answer.text)
        assert problems == ["deliveryConfig.timeoutMs", "alertConfig.hysteresisFactor"]
        assert "Hysteresis factor: Input should be less than or equal to 0.99" in answer.text
        assert await dev.services.webhooks.list_webhooks(None) == []

    async def test_saving_without_typing_a_secret_keeps_it_and_removing_it_works(
        self, dev: RunningApp, receiver: Receiver
    ):
        service = dev.services.webhooks
        hook = await service.create(
            WebhookCreate(name="x", url=receiver.url(), events=["instance.down"], secret=SECRET),
            connection_id=None,
        )
        edited = form(
            name="renamed",
            url=receiver.url(),
            events=["instance.down", "client.blocked"],
            secret="",
            header_name=["Authorization", ""],
            header_value=["Bearer abc123def456", ""],
        )
        answer = await dev.client.post(f"/ui/webhooks/{hook.id}", content=edited, headers=FROM_PAGE)
        assert answer.headers["hx-retarget"] == "#webhook-editor"
        assert 'data-state="saved"' in answer.text
        assert "Bearer abc123def456" not in answer.text  # a credential-like header, masked
        assert SECRET not in answer.text
        await service.test(hook.id)
        assert receiver.requests[-1].verified(SECRET)
        assert receiver.requests[-1].headers["Authorization"] == "Bearer abc123def456"
        assert (await service.get(hook.id)).events == ["instance.down", "client.blocked"]

        removed = form(
            name="renamed", url=receiver.url(), events="instance.down", clear_secret="on"
        )
        await dev.client.post(f"/ui/webhooks/{hook.id}", content=removed, headers=FROM_PAGE)
        assert (await service.get(hook.id)).secret is None

    async def test_an_unknown_webhook_is_a_404_page(self, dev: RunningApp):
        page = await dev.client.get("/webhooks/no-such-thing")
        assert page.status_code == 404
        assert 'data-state="missing"' in page.text

    async def test_a_connection_scope_is_stored_and_an_unknown_one_is_named(
        self, dev: RunningApp, receiver: Receiver
    ):
        (connection,) = await dev.services.connections.list()
        fields = {"name": "scoped", "url": receiver.url(), "events": "instance.down"}
        unknown = form(**fields, scope="no-such-connection")
        refused = await dev.client.post("/ui/webhooks", content=unknown, headers=FROM_PAGE)
        assert 'data-error-for="scope"' in refused.text
        chosen = form(**fields, scope=connection.id)
        created = await dev.client.post("/ui/webhooks", content=chosen, headers=FROM_PAGE)
        (hook,) = await dev.services.webhooks.list_webhooks(None)
        assert created.headers["hx-redirect"] == f"/webhooks/{hook.id}?created=true"
        assert hook.connectionId == connection.id
        page = await dev.client.get("/webhooks")
        assert f"<td data-scope>{connection.name}</td>" in page.text

    async def test_history_pages_fifty_deliveries_newest_first(
        self, dev: RunningApp, receiver: Receiver
    ):
        service = dev.services.webhooks
        # An occurrence (client.blocked), each one delivered: of a state (instance.down),
        # a newer one would supersede those still waiting on a loaded machine.
        hook = await service.create(
            WebhookCreate(name="x", url=receiver.url(), events=["client.blocked"]),
            connection_id=None,
        )
        (connection,) = await dev.services.connections.list()
        for n in range(51):
            dev.services.bus.publish(
                AclDenied(
                    connection_id=connection.id,
                    reason="auth",
                    username=f"#{n}",
                    client_info="addr=127.0.0.1:50000",
                    context="toplevel",
                    object="AUTH",
                    count=1,
                    timestamp_s=1_700_000_000,
                )
            )
        await receiver.wait_for(51, within=20)
        await settled(service, hook, "success")

        async def all_delivered() -> bool:
            rows = await service.deliveries(hook.id, limit=100, offset=0)
            return [r.status for r in rows] == ["success"] * 51

        await eventually(all_delivered, within=15)
        newest_first = [r.id for r in await service.deliveries(hook.id, limit=100, offset=0)]
        first = (await dev.client.get(f"/webhooks/{hook.id}")).text
        assert re.findall(r'data-delivery="([^"]+)"', first) == newest_first[:50]
        assert 'data-action="older-deliveries"' in first
        older = await dev.client.get(f"/ui/webhooks/{hook.id}/deliveries?page=1")
        assert re.findall(r'data-delivery="([^"]+)"', older.text) == newest_first[50:]
        assert 'data-action="newer-deliveries"' in older.text
        assert 'data-action="older-deliveries"' not in older.text
