"""The slow log page rendered against real servers: entries the polls stored, the filters,
the COMMANDLOG tabs on Valkey, their requirement on Redis, and states without answers."""

import random
import re
import time
from collections.abc import AsyncIterator, Callable, Iterator

import pytest

from tests.fixtures.app import AppFactory, RunningApp, target_of
from tests.fixtures.servers import RunningServer, ServerFactory
from tests.fixtures.waiting import eventually

FAST = {"SLOWLOG_POLL_INTERVAL_MS": 200}
# Every command is slow, and the ring outlives the polls' own (logged) commands.
LOGS_EVERYTHING = {"slowlog-log-slower-than": "0", "slowlog-max-len": "1024"}
LARGE = {
    "commandlog-request-larger-than": "1000",
    "commandlog-reply-larger-than": "1000",
    "commandlog-large-request-max-len": "1024",
    "commandlog-large-reply-max-len": "1024",
}
REQUIREMENT = "COMMANDLOG needs Valkey 8.1 or newer"
ROW = re.compile(r"<tr data-entry ")


def new_tag() -> str:
    """Letters beyond hex, so a key's pattern keeps the tag verbatim."""
    return "".join(random.choices("ghijklmnopqrstuvwxyz", k=12))


async def page(app: RunningApp, path: str = "/slowlog", **params: str) -> str:
    response = await app.client.get(path, params=params)
    assert response.status_code == 200, response.text
    return response.text


async def shows(app: RunningApp, text: str, **params: str) -> None:
    """Wait until the page (as a user would reload it) shows `text`."""

    async def visible() -> bool:
        return text in await page(app, **params)

    await eventually(visible)


@pytest.fixture(scope="module")
def logging_valkey(server_factory: ServerFactory) -> Iterator[RunningServer]:
    server = server_factory.start("valkey", config={**LOGS_EVERYTHING, **LARGE})
    yield server
    server_factory.stop(server)


@pytest.fixture
async def app(
    memory_app_factory: AppFactory, logging_valkey: RunningServer
) -> AsyncIterator[RunningApp]:
    async with memory_app_factory(**FAST, **target_of(logging_valkey)) as running:
        yield running


class TestSlowTab:
    async def test_a_slow_command_appears_with_its_pattern(
        self, app: RunningApp, logging_valkey: RunningServer
    ):
        tag = new_tag()
        with logging_valkey.client() as conn:
            conn.set(f"{tag}:1001", "v")
            conn.set(f"{tag}:1002", "v")
        await shows(app, f"SET {tag}:1002 v")
        html = await page(app)
        assert f"SET {tag}:1001 v" in html
        assert html.index(f"{tag}:1002") < html.index(f"{tag}:1001")  # newest first
        # Both SETs are one pattern, with the variable part of the key as *.
        assert f'data-pattern="SET {tag}:*"' in html
        assert '<a href="/slowlog" data-nav="slowlog" aria-current="page">' in html
        assert 'data-tab="slow" aria-current="page"' in html

    async def test_the_command_filter_keeps_only_that_command(
        self, app: RunningApp, logging_valkey: RunningServer
    ):
        tag = new_tag()
        with logging_valkey.client() as conn:
            conn.set(f"{tag}:k", "v")
            conn.get(f"{tag}:k")
        await shows(app, f"GET {tag}:k")
        html = await page(app, command="get")
        assert f"GET {tag}:k" in html
        assert f"SET {tag}:k v" not in html
        assert 'data-command="SET"' not in html
        assert 'value="get"' in html  # the filter stays filled in

    async def test_min_duration_and_window_narrow_the_rows(
        self, app: RunningApp, logging_valkey: RunningServer
    ):
        tag = new_tag()
        with logging_valkey.client() as conn:
            conn.set(f"{tag}:k", "v")
        await shows(app, f"SET {tag}:k v")
        assert f"SET {tag}:k v" in await page(app, window="15m")
        # Nothing here takes a minute: a 60 s minimum leaves no row at all.
        narrowed = await page(app, min="60000000")
        assert not ROW.search(narrowed)
        assert "No stored entries match these filters." in narrowed
        assert "Clear filters" in narrowed

    async def test_a_custom_from_to_window_keeps_only_its_rows(
        self, app: RunningApp, logging_valkey: RunningServer
    ):
        tag = new_tag()
        with logging_valkey.client() as conn:
            conn.set(f"{tag}:k", "v")
        await shows(app, f"SET {tag}:k v")
        now = int(time.time() * 1000)
        around = await page(app, **{"from": str(now - 600_000), "to": str(now + 60_000)})
        assert f"SET {tag}:k v" in around
        day_before = now - 86_400_000
        yesterday = await page(app, **{"from": str(day_before), "to": str(day_before + 3_600_000)})
        assert not ROW.search(yesterday)
        assert "No stored entries match these filters." in yesterday
        # The window stays in the form, and in the query the table refreshes with.
        assert f'name="from" value="{day_before}"' in yesterday
        refresh = re.search(r'hx-get="(/ui/slowlog/log\?[^"]*)"', yesterday)
        assert refresh
        assert f"from={day_before}&amp;to={day_before + 3_600_000}" in refresh.group(1)
        # From after To is no window: every stored row again, as with no filter.
        backwards = await page(app, **{"from": str(now), "to": str(day_before)})
        assert f"SET {tag}:k v" in backwards

    async def test_a_full_page_links_to_the_older_one(
        self, app: RunningApp, logging_valkey: RunningServer
    ):
        tag = new_tag()
        # A first read takes the newest 128 entries and never reaches back, and on a loaded
        # machine the other polls' logged commands can push a burst's oldest out of that
        # window before it: so the burst comes once a read has been stored.
        with logging_valkey.client() as conn:
            conn.get(f"{tag}:before")
        await shows(app, f"GET {tag}:before")
        with logging_valkey.client() as conn, conn.pipeline(transaction=False) as pipe:
            for i in range(110):
                pipe.set(f"{tag}:{i}", "v")
            pipe.execute()
        await shows(app, f"SET {tag}:109 v")
        first = await page(app, command="set")
        assert len(ROW.findall(first)) == 100
        assert 'rel="next"' in first
        assert 'rel="prev"' not in first
        assert 'hx-get="/ui/slowlog/log' in first  # the first page follows new entries
        older = await page(app, command="set", page="1")
        assert ROW.search(older)
        assert 'rel="prev"' in older
        assert 'hx-get="/ui/slowlog/log' not in older  # an older page holds still
        shown = re.findall(rf"SET {tag}:(\d+) v", first + older)
        assert sorted(map(int, shown)) == list(range(110))

    async def test_the_refresh_fragment_is_the_table_alone(
        self, app: RunningApp, logging_valkey: RunningServer
    ):
        tag = new_tag()
        with logging_valkey.client() as conn:
            conn.set(f"{tag}:k", "v")
        await shows(app, f"SET {tag}:k v")
        fragment = await page(app, "/ui/slowlog/log", log="slow", command="set")
        assert f"SET {tag}:k v" in fragment
        assert "<html" not in fragment
        assert 'data-section="patterns"' in fragment

    async def test_unusable_parameters_fall_back_to_defaults(self, app: RunningApp):
        html = await page(app, log="huge", min="fast", page="-3", window="forever")
        assert 'data-tab="slow" aria-current="page"' in html
        assert "Clear filters" not in html


class TestCommandLogTabs:
    async def test_large_requests_and_replies_appear_with_their_size(
        self, app: RunningApp, logging_valkey: RunningServer
    ):
        tag = new_tag()
        with logging_valkey.client() as conn:
            conn.set(f"{tag}:big", "x" * 2000)
            conn.get(f"{tag}:big")
        await shows(app, f"SET {tag}:big", log="large-request")
        request_tab = await page(app, log="large-request")
        assert 'data-tab="large-request" aria-current="page"' in request_tab
        assert re.search(r'data-field="measure">\d[\d.]* (B|KiB)<', request_tab)
        assert f'data-pattern="SET {tag}:big"' in request_tab
        assert "Min size (bytes)" in request_tab
        assert REQUIREMENT not in request_tab
        await shows(app, f"GET {tag}:big", log="large-reply")

    async def test_switching_tabs_keeps_the_command_filter_but_not_the_minimum(
        self, app: RunningApp
    ):
        html = await page(app, command="set", min="5")
        assert 'href="/slowlog?log=large-reply&amp;command=set"' in html


class TestWithoutCommandLog:
    async def test_redis_shows_the_requirement_and_its_slow_log(
        self, memory_app_factory: AppFactory, server_factory: ServerFactory
    ):
        redis = server_factory.start("redis7", config=LOGS_EVERYTHING)
        tag = new_tag()
        try:
            async with memory_app_factory(**FAST, **target_of(redis)) as app:
                for log in ("large-request", "large-reply"):
                    await shows(app, REQUIREMENT, log=log)
                    html = await page(app, log=log)
                    assert 'data-problem="unsupported"' in html
                    assert "This instance is Redis 7." in html
                    assert 'data-section="entries"' not in html
                with redis.client() as conn:
                    conn.set(f"{tag}:k", "v")
                await shows(app, f"SET {tag}:k v")
                assert REQUIREMENT not in await page(app)
        finally:
            server_factory.stop(redis)

    async def test_an_engine_never_seen_is_checking_not_broken(
        self, memory_app_factory: AppFactory, server_factory: ServerFactory
    ):
        gone = server_factory.start("valkey")
        server_factory.stop(gone)
        async with memory_app_factory(**target_of(gone)) as app:
            html = await page(app, log="large-request")
            assert 'data-state="checking"' in html
            assert REQUIREMENT not in html
            slow = await page(app)
            assert "No slow commands stored yet." in slow


class TestWithoutSlowlog:
    @pytest.mark.parametrize(
        ("config", "acl_users", "user", "why"),
        [
            pytest.param(
                {"rename-command": 'SLOWLOG ""'},
                [],
                {},
                "the command is renamed or disabled (managed providers disable it on some plans)",
                id="renamed",
            ),
            pytest.param(
                {},
                ["watcher on >pw ~* &* +@all -slowlog"],
                {"DB_USERNAME": "watcher", "DB_PASSWORD": "pw"},
                "this connection&#39;s user is not allowed to run it (NOPERM",
                id="denied",
            ),
        ],
    )
    async def test_the_slow_tab_explains_the_missing_slowlog_instead_of_history(
        self,
        memory_app_factory: AppFactory,
        fresh: Callable[..., RunningServer],
        config: dict[str, str],
        acl_users: list[str],
        user: dict[str, str],
        why: str,
    ):
        server = fresh("valkey", config={**LOGS_EVERYTHING, **config}, acl_users=acl_users)
        async with memory_app_factory(**FAST, **target_of(server), **user) as app:
            await shows(app, "SLOWLOG is not available on this server")
            html = await page(app)
            fragment = await page(app, "/ui/slowlog/log")
            request_tab = await page(app, log="large-request")
        for shown in (html, fragment):
            assert 'data-problem="unsupported"' in shown
            assert "Not available here." in shown
            assert why in shown
            assert 'data-section="entries"' not in shown
        assert 'data-problem="error"' not in html
        assert 'data-tab="slow"' in html  # the tabs stay: COMMANDLOG still works here
        assert "SLOWLOG is not available" not in request_tab
        assert 'data-section="entries"' in request_tab
