"""The fetcher against the test site over real HTTP on 127.0.0.1: every outcome a result.

What the site was asked for is read from its own request log, so that "not followed"
means not requested at all.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Iterator

import anyio
import anyio.abc
import pytest

from crawler._fetch import (
    DEFAULT_USER_AGENT,
    ERROR_CONNECT_REFUSED,
    ERROR_INVALID_URL,
    ERROR_READ_TIMEOUT,
    ERROR_REDIRECT_LOOP,
    ERROR_REDIRECT_OUT_OF_SCOPE,
    ERROR_TIMEOUT,
    ERROR_TLS,
    ERROR_TOO_MANY_REDIRECTS,
    FetchConfig,
    Fetcher,
    FetchResult,
    too_large,
)
from crawler.testsite import (
    GO_PREFIX,
    ITEM_PREFIX,
    LOOP_PATHS,
    MAX_PAGE_BYTES,
    MOVED_PREFIX,
    Faults,
    RunningSite,
    serve_testsite,
)
from eventlog._exceptions import ConfigError

pytestmark = pytest.mark.anyio

PAGES = 20
ITEM = 7
SHORT_TIMEOUT_S = 0.2
SLOW_S = 30.0
"""How late the slow fault answers: far past SHORT_TIMEOUT_S, never waited for."""
HUGE_BYTES = MAX_PAGE_BYTES
CAP_BYTES = HUGE_BYTES // 2
CONCURRENT_FETCHES = 20


@pytest.fixture
async def fetcher() -> AsyncIterator[Fetcher]:
    async with Fetcher() as opened:
        yield opened


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A loopback port that refuses connections: bound, so that nothing else takes it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


def paths(site: RunningSite) -> list[str]:
    return [request.path for request in site.requests]


def assert_page(result: FetchResult, site: RunningSite, path: str) -> None:
    page = site.sitemap.render(path)
    assert page is not None
    assert result.status == 200
    assert result.error is None
    assert result.body == page.body
    assert result.content_type == page.content_type
    assert result.parseable


async def test_a_page_comes_with_its_body_and_content_type(fetcher: Fetcher) -> None:
    async with serve_testsite(pages=PAGES) as site:
        url = f"{site.url}{ITEM_PREFIX}{ITEM}"
        result = await fetcher.fetch(url)
    assert_page(result, site, f"{ITEM_PREFIX}{ITEM}")
    assert (result.url, result.final_url, result.redirects) == (url, url, ())
    assert result.content_type == "text/html; charset=utf-8"
    assert result.retry_after is None and result.location is None
    assert result.elapsed_ms > 0


async def test_many_fetches_at_once_share_the_client(fetcher: Fetcher) -> None:
    async with serve_testsite(pages=PAGES) as site:
        results: dict[int, FetchResult] = {}

        async def fetch(item: int) -> None:
            results[item] = await fetcher.fetch(f"{site.url}{ITEM_PREFIX}{item}")

        async with anyio.create_task_group() as group:
            for item in range(1, CONCURRENT_FETCHES + 1):
                group.start_soon(fetch, item % PAGES + 1)
    for item, result in results.items():
        assert_page(result, site, f"{ITEM_PREFIX}{item}")


async def test_a_missing_page_is_a_404_result(fetcher: Fetcher) -> None:
    async with serve_testsite(pages=PAGES) as site:
        result = await fetcher.fetch(f"{site.url}/no/such/page")
    assert (result.status, result.error, result.body) == (404, None, b"not found\n")


async def test_a_server_error_is_a_result_and_the_page_comes_back(fetcher: Fetcher) -> None:
    faults = Faults(error_500_rate=1.0, error_500_times=2)
    async with serve_testsite(pages=PAGES, faults=faults) as site:
        url = f"{site.url}{ITEM_PREFIX}{ITEM}"
        first, second, third = [await fetcher.fetch(url) for _ in range(3)]
    assert (first.status, first.error) == (500, None)
    assert (second.status, second.error) == (500, None)
    assert_page(third, site, f"{ITEM_PREFIX}{ITEM}")


async def test_a_429_carries_its_retry_after(fetcher: Fetcher) -> None:
    faults = Faults(throttle_429_rate=1.0, retry_after_s=7)
    async with serve_testsite(pages=PAGES, faults=faults) as site:
        result = await fetcher.fetch(f"{site.url}{ITEM_PREFIX}{ITEM}")
    assert (result.status, result.error) == (429, None)
    assert result.retry_after == "7"
    assert result.headers["retry-after"] == "7"


@pytest.mark.parametrize(
    ("prefix", "status", "absolute"),
    [(MOVED_PREFIX, 301, True), (GO_PREFIX, 302, False)],
    ids=["301-absolute-location", "302-relative-location"],
)
async def test_redirects_are_followed_and_recorded(
    fetcher: Fetcher, prefix: str, status: int, absolute: bool
) -> None:
    async with serve_testsite(pages=PAGES, faults=Faults(redirects=True)) as site:
        redirecting = next(path for path in site.sitemap.redirects if path.startswith(prefix))
        target_path = ITEM_PREFIX + redirecting.removeprefix(prefix)
        location = site.sitemap.redirects[redirecting]
        assert location == (site.url + target_path if absolute else target_path)
        result = await fetcher.fetch(site.url + redirecting)
    target = site.url + target_path
    assert_page(result, site, target_path)
    assert result.url == site.url + redirecting
    assert (result.final_url, result.redirects) == (target, (target,))
    assert paths(site) == [redirecting, target_path]
    assert site.requests[0].status == status


async def test_a_redirect_the_hook_allows_is_followed(fetcher: Fetcher) -> None:
    asked: list[str] = []

    def allowed(url: str) -> bool:
        asked.append(url)
        return True

    async with serve_testsite(pages=PAGES, faults=Faults(redirects=True)) as site:
        result = await fetcher.fetch(f"{site.url}{GO_PREFIX}{ITEM}", redirect_allowed=allowed)
    assert asked == [f"{site.url}{ITEM_PREFIX}{ITEM}"]
    assert_page(result, site, f"{ITEM_PREFIX}{ITEM}")


async def test_a_redirect_the_hook_refuses_is_not_followed(fetcher: Fetcher) -> None:
    async with serve_testsite(pages=PAGES, faults=Faults(redirects=True)) as site:
        url = f"{site.url}{MOVED_PREFIX}{ITEM}"
        result = await fetcher.fetch(url, redirect_allowed=lambda _: False)
    assert result.error == ERROR_REDIRECT_OUT_OF_SCOPE
    assert (result.status, result.final_url, result.redirects) == (301, url, ())
    assert result.location == f"{site.url}{ITEM_PREFIX}{ITEM}"
    assert (result.body, result.parseable) == (b"", False)
    assert paths(site) == [f"{MOVED_PREFIX}{ITEM}"]


async def test_a_redirect_whose_target_another_task_has_is_handed_over(
    fetcher: Fetcher,
) -> None:
    async def taken(url: str) -> bool:
        return False

    async with serve_testsite(pages=PAGES, faults=Faults(redirects=True)) as site:
        url = f"{site.url}{MOVED_PREFIX}{ITEM}"
        result = await fetcher.fetch(url, claim_target=taken)
    assert (result.error, result.handed_over, result.parseable) == (None, True, False)
    assert (result.status, result.redirects) == (301, ())
    assert result.location == f"{site.url}{ITEM_PREFIX}{ITEM}"
    assert paths(site) == [f"{MOVED_PREFIX}{ITEM}"]


async def test_a_redirect_loop_is_detected(fetcher: Fetcher) -> None:
    first, second = LOOP_PATHS
    async with serve_testsite(pages=PAGES, faults=Faults(redirect_loop=True)) as site:
        result = await fetcher.fetch(site.url + first)
    assert result.error == ERROR_REDIRECT_LOOP
    assert (result.status, result.final_url) == (302, site.url + second)
    assert result.redirects == (site.url + second,)
    assert result.location == site.url + first
    assert paths(site) == [first, second]


async def test_too_many_redirects_are_not_followed() -> None:
    async with (
        serve_testsite(pages=PAGES, faults=Faults(redirects=True)) as site,
        Fetcher(FetchConfig(max_redirects=0)) as fetcher,
    ):
        result = await fetcher.fetch(f"{site.url}{MOVED_PREFIX}{ITEM}")
    assert (result.status, result.error) == (301, ERROR_TOO_MANY_REDIRECTS)
    assert result.location == f"{site.url}{ITEM_PREFIX}{ITEM}"
    assert paths(site) == [f"{MOVED_PREFIX}{ITEM}"]


async def test_a_huge_page_is_cut_at_the_cap_and_the_fetcher_goes_on() -> None:
    faults = Faults(huge_page=True, huge_page_bytes=HUGE_BYTES)
    async with (
        serve_testsite(pages=PAGES, faults=faults) as site,
        Fetcher(FetchConfig(max_response_bytes=CAP_BYTES)) as fetcher,
    ):
        result = await fetcher.fetch(f"{site.url}/huge")
        after = await fetcher.fetch(f"{site.url}{ITEM_PREFIX}1")
    assert (result.status, result.error) == (200, too_large(CAP_BYTES))
    assert result.error == f"response larger than {CAP_BYTES} bytes"
    assert (result.body, result.parseable) == (b"", False)
    assert after.status == 200 and after.error is None and len(after.body) <= CAP_BYTES


async def test_a_slow_page_hits_the_read_timeout() -> None:
    config = FetchConfig(read_timeout_s=SHORT_TIMEOUT_S)
    async with (
        serve_testsite(pages=PAGES, faults=Faults(slow_rate=1.0, slow_s=SLOW_S)) as site,
        Fetcher(config) as fetcher,
    ):
        result = await fetcher.fetch(f"{site.url}{ITEM_PREFIX}{ITEM}")
    assert (result.status, result.error, result.body) == (0, ERROR_READ_TIMEOUT, b"")
    assert result.elapsed_ms < SLOW_S * 1000
    assert site.requests == []  # never answered


async def test_a_fetch_past_the_total_timeout_stops() -> None:
    config = FetchConfig(total_timeout_s=SHORT_TIMEOUT_S)
    async with (
        serve_testsite(pages=PAGES, faults=Faults(slow_rate=1.0, slow_s=SLOW_S)) as site,
        Fetcher(config) as fetcher,
    ):
        url = f"{site.url}{ITEM_PREFIX}{ITEM}"
        result = await fetcher.fetch(url)
    assert (result.status, result.error, result.final_url) == (0, ERROR_TIMEOUT, url)
    assert result.elapsed_ms < SLOW_S * 1000


async def test_a_refused_connection_is_a_result(fetcher: Fetcher, closed_port: int) -> None:
    url = f"http://127.0.0.1:{closed_port}/"
    result = await fetcher.fetch(url)
    assert (result.status, result.error, result.final_url) == (0, ERROR_CONNECT_REFUSED, url)


async def test_a_failed_tls_handshake_is_a_result(fetcher: Fetcher) -> None:
    async def answer_in_plain_http(client: anyio.abc.SocketStream) -> None:
        async with client:
            await client.send(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")

    async with await anyio.create_tcp_listener(local_host="127.0.0.1") as listener:
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        async with anyio.create_task_group() as group:
            group.start_soon(listener.serve, answer_in_plain_http)
            result = await fetcher.fetch(f"https://127.0.0.1:{port}/")
            group.cancel_scope.cancel()
    assert (result.status, result.error) == (0, ERROR_TLS)


@pytest.mark.parametrize(
    "url", ["not a url", "/item/1", "ftp://127.0.0.1/file", "http://", "mailto:a@b.example"]
)
async def test_an_invalid_url_is_a_result(fetcher: Fetcher, url: str) -> None:
    result = await fetcher.fetch(url)
    assert (result.url, result.status, result.error) == (url, 0, ERROR_INVALID_URL)


async def test_only_the_configured_content_types_are_parseable() -> None:
    async with serve_testsite(pages=PAGES) as site:
        async with Fetcher() as fetcher:
            robots = await fetcher.fetch(f"{site.url}/robots.txt")
        async with Fetcher(FetchConfig(parse_content_types=frozenset({"text/plain"}))) as fetcher:
            as_text = await fetcher.fetch(f"{site.url}/robots.txt")
            page = await fetcher.fetch(f"{site.url}{ITEM_PREFIX}{ITEM}")
    assert (robots.status, robots.content_type) == (200, "text/plain; charset=utf-8")
    assert robots.body.startswith(b"User-agent:")
    assert not robots.parseable
    assert as_text.parseable and not page.parseable


async def test_fetching_outside_async_with_is_a_programming_error() -> None:
    fetcher = Fetcher()
    with pytest.raises(RuntimeError, match="async with"):
        await fetcher.fetch("http://127.0.0.1/")
    async with fetcher:
        pass
    with pytest.raises(RuntimeError, match="async with"):
        await fetcher.fetch("http://127.0.0.1/")


def test_the_user_agent_names_crawlog_and_its_version() -> None:
    name, _, version = DEFAULT_USER_AGENT.partition("/")
    assert name == "crawlog" and version


@pytest.mark.parametrize(
    "options",
    [
        {"connect_timeout_s": 0},
        {"read_timeout_s": -1.0},
        {"total_timeout_s": float("inf")},
        {"max_response_bytes": 0},
        {"max_redirects": -1},
        {"max_connections": 0},
        {"max_connections_per_host": 0},
        {"user_agent": "crawlog\r\nX-Evil: 1"},
        {"parse_content_types": frozenset({"Text/HTML"})},
        {"parse_content_types": frozenset({"html"})},
    ],
)
def test_a_nonsense_config_is_refused(options: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        FetchConfig(**options)  # type: ignore[arg-type]
