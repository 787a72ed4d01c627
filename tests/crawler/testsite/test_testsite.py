"""The test site: deterministic pages, all reachable, faults as specified, every request logged.

Links are found the way a crawler finds them — an HTML parser, ``<base href>`` honoured,
whitespace stripped, fragments dropped — not by asking the generator, so a link form the
generator gets wrong shows up as an unreachable or missing page here.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import signal
import socket
import subprocess
import sys
from collections import deque
from collections.abc import Awaitable, Callable, Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlsplit

import httpx
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import (
    HUGE_PATH,
    ITEM_PREFIX,
    LOOP_PATHS,
    MAX_LINKS,
    MAX_PAGE_BYTES,
    MIN_LINKS,
    MIN_PAGE_BYTES,
    Faults,
    SiteMap,
    read_request_log,
    serve_testsite,
)
from eventlog._exceptions import ConfigError

ROOT = Path(__file__).resolve().parents[3]
ORIGIN = "http://127.0.0.1:8000"
SMALL_HUGE_PAGE = MAX_PAGE_BYTES  # the least a huge page may be: keeps the walks fast
WALK_FAULTS = Faults(
    redirects=True,
    redirect_loop=True,
    huge_page=True,
    huge_page_bytes=SMALL_HUGE_PAGE,
    robots_disallow="/private/",
)


class _Links(HTMLParser):
    """The ``<a href>`` values of a page and its ``<base href>``, as a crawler reads them."""

    def __init__(self) -> None:
        super().__init__()
        self.base: str | None = None
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        href = dict(attrs).get("href")
        if href is None:
            return
        if tag == "base" and self.base is None:
            self.base = href
        elif tag == "a":
            self.hrefs.append(href)


def links_of(url: str, html: bytes) -> tuple[list[str], list[str]]:
    """(in-scope links as origin-form paths, raw hrefs) of the page at ``url``."""
    parser = _Links()
    parser.feed(html.decode())
    parser.close()
    base = urljoin(url, parser.base.strip()) if parser.base else url
    origin = urlsplit(url).netloc
    found = []
    for href in parser.hrefs:
        absolute, _ = urldefrag(urljoin(base, href.strip()))
        parts = urlsplit(absolute)
        if parts.scheme == "http" and parts.netloc == origin:
            found.append(parts.path + (f"?{parts.query}" if parts.query else ""))
    return found, parser.hrefs


Fetch = Callable[[str], Awaitable[tuple[int, bytes, str | None]]]


async def walk(
    fetch: Fetch, origin: str, disallow: str | None
) -> tuple[set[str], set[str], list[str]]:
    """Crawl from ``/``: (paths requested, disallowed paths seen, every raw href).

    ``fetch(path)`` gives (status, body, Location). Redirects are followed like links;
    paths under ``disallow`` are noted, not requested.
    """
    requested: set[str] = set()
    blocked: set[str] = set()
    hrefs: list[str] = []
    queue = deque(["/"])
    while queue:
        path = queue.popleft()
        if path in requested or path in blocked:
            continue
        if disallow is not None and path.startswith(disallow):
            blocked.add(path)
            continue
        requested.add(path)
        status, body, location = await fetch(path)
        if status in (301, 302):
            assert location is not None
            queue.append(urlsplit(urljoin(origin + path, location)).path)
            continue
        assert status == 200, (path, status)
        found, raw = links_of(origin + path, body)
        hrefs += raw
        queue.extend(found)
    return requested, blocked, hrefs


def render_fetch(sitemap: SiteMap) -> Fetch:
    async def fetch(path: str) -> tuple[int, bytes, str | None]:
        page = sitemap.render(path)
        if page is None:
            return 404, b"", None
        return page.status, page.body, dict(page.headers).get("Location")

    return fetch


def body_of(sitemap: SiteMap, path: str) -> bytes:
    page = sitemap.render(path)
    assert page is not None, path
    return page.body


# --- the generated site -------------------------------------------------------------------------


def test_same_seed_same_bytes_other_seed_other_bytes() -> None:
    paths = ["/", "/robots.txt", "/list/guides?page=1", "/list/reference?page=2", "/item/7"]
    first = SiteMap(300, 5, WALK_FAULTS, origin=ORIGIN)
    again = SiteMap(300, 5, WALK_FAULTS, origin=ORIGIN)
    other = SiteMap(300, 6, WALK_FAULTS, origin=ORIGIN)
    for path in paths:
        assert first.render(path) == again.render(path), path
    assert first.reachable == again.reachable
    for path in ("/item/7", "/item/250", "/list/guides?page=1"):
        assert first.render(path) != other.render(path), path


def _digest(pages: int, seed: int) -> str:
    sitemap = SiteMap(pages, seed, WALK_FAULTS, origin=ORIGIN)
    digest = hashlib.sha256()
    for path in sorted(sitemap.reachable)[:50]:
        page = sitemap.render(path)
        assert page is not None
        digest.update(page.body)
    return digest.hexdigest()


def test_same_bytes_in_another_process() -> None:
    """Nothing depends on str hashing, which differs per process."""
    code = "from tests.crawler.testsite.test_testsite import _digest; print(_digest(300, 5))"
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True, cwd=ROOT
    )
    assert result.stdout.strip() == _digest(300, 5)


@pytest.mark.anyio
async def test_every_page_is_reachable_by_its_links() -> None:
    sitemap = SiteMap(200, 3, WALK_FAULTS, origin=ORIGIN)
    requested, blocked, hrefs = await walk(render_fetch(sitemap), ORIGIN, "/private/")
    assert requested == sitemap.reachable
    assert blocked == sitemap.disallowed
    assert {f"{ITEM_PREFIX}{item}" for item in range(1, 201)} <= requested
    assert {HUGE_PATH, *LOOP_PATHS, *sitemap.redirects} <= requested
    # The link forms a crawler must cope with are all there.
    assert any(href.startswith("mailto:") for href in hrefs)
    assert any(href.startswith("javascript:") for href in hrefs)
    assert any(href.startswith("http://other.invalid/") for href in hrefs)
    assert any("#" in href for href in hrefs)
    assert any(href != href.strip() for href in hrefs)
    assert any(href.startswith("../") for href in hrefs)
    assert any(href.startswith(ORIGIN) for href in hrefs)
    assert any(href.startswith("//") for href in hrefs)


@pytest.mark.anyio
async def test_without_faults_only_pages() -> None:
    sitemap = SiteMap(120, 9, origin=ORIGIN)
    requested, blocked, _ = await walk(render_fetch(sitemap), ORIGIN, None)
    assert requested == sitemap.reachable == sitemap.pages_ok
    assert not blocked
    assert sitemap.render("/robots.txt") is not None
    for path in (HUGE_PATH, *LOOP_PATHS, "/moved/1", "/go/1"):
        assert sitemap.render(path) is None, path


def test_detail_pages_are_documentation_sized() -> None:
    sitemap = SiteMap(2000, 11, origin=ORIGIN)
    sizes = []
    for item in range(1, 2001):
        page = sitemap.render(f"{ITEM_PREFIX}{item}")
        assert page is not None
        body = page.body
        sizes.append(len(body))
        assert MIN_PAGE_BYTES <= len(body) <= MAX_PAGE_BYTES, item
        assert MIN_LINKS <= body.count(b"<a ") - 2 <= MAX_LINKS, item  # 2: the nav links
        assert f"<title>Item {item}: ".encode() in body
    assert min(sizes) < 2 * MIN_PAGE_BYTES and max(sizes) > MAX_PAGE_BYTES // 2
    assert sum(b"<base href" in body_of(sitemap, f"/item/{n}") for n in range(1, 201)) > 5


def test_a_large_site_is_defined_without_rendering_it() -> None:
    sitemap = SiteMap(20_000, 1, origin=ORIGIN)
    listings = sum(sitemap.listing_pages(c) for c in range(len(sitemap.categories)))
    assert len(sitemap.reachable) == 1 + listings + 20_000
    assert "/item/20000" in sitemap.reachable
    assert sitemap.render("/item/20001") is None


@pytest.mark.parametrize(
    "options",
    [
        {"robots_disallow": "/item/"},
        {"robots_disallow": "/"},
        {"robots_disallow": "private"},
        {"robots_disallow": "/private/*"},
        {"error_500_rate": 1.5},
        {"slow_s": -1.0},
        {"error_500_times": 0},
    ],
)
def test_bad_faults_are_config_errors(options: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        Faults(**options)  # type: ignore[arg-type]


# --- served over HTTP ---------------------------------------------------------------------------


@pytest.mark.anyio
async def test_serves_html_robots_and_404() -> None:
    async with serve_testsite(pages=50, seed=2) as site, httpx.AsyncClient() as client:
        assert site.url.startswith("http://127.0.0.1:")
        home = await client.get(site.url + "/")
        assert home.status_code == 200
        assert home.headers["content-type"] == "text/html; charset=utf-8"
        assert int(home.headers["content-length"]) == len(home.content)
        assert home.content == body_of(site.sitemap, "/")
        robots = await client.get(site.url + "/robots.txt")
        assert robots.headers["content-type"] == "text/plain; charset=utf-8"
        sitemap = f"Sitemap: {site.url}/sitemap.xml\n"
        assert robots.text == f"User-agent: *\nDisallow: \n{sitemap}"
        head = await client.head(site.url + "/item/3")
        assert head.content == b""
        assert int(head.headers["content-length"]) == len(body_of(site.sitemap, "/item/3"))
        assert (await client.get(site.url + "/item/51")).status_code == 404
        assert (await client.get(site.url + "/item/03")).status_code == 404
        assert (await client.post(site.url + "/")).status_code == 405


@pytest.mark.anyio
async def test_500s_recover_after_their_count() -> None:
    faults = Faults(error_500_rate=0.5, error_500_times=2)
    async with (
        serve_testsite(pages=40, seed=4, faults=faults) as site,
        httpx.AsyncClient() as client,
    ):
        failing = [p for p in sorted(site.sitemap.reachable) if site.sitemap.fault_plan(p).failures]
        healthy = [p for p in sorted(site.sitemap.reachable) if p not in failing]
        assert failing and healthy
        for path in failing[:5]:
            statuses = [(await client.get(site.url + path)).status_code for _ in range(4)]
            assert statuses == [500, 500, 200, 200], path
        for path in healthy[:5]:
            assert (await client.get(site.url + path)).status_code == 200, path


@pytest.mark.anyio
async def test_429_with_retry_after_then_ok() -> None:
    faults = Faults(throttle_429_rate=1.0)
    async with serve_testsite(pages=10, faults=faults) as site, httpx.AsyncClient() as client:
        throttled = await client.get(site.url + "/item/1")
        assert throttled.status_code == 429
        assert throttled.headers["retry-after"] == "1"
        assert (await client.get(site.url + "/item/1")).status_code == 200
        assert (await client.get(site.url + "/robots.txt")).status_code == 200  # never faulted


@pytest.mark.anyio
async def test_slow_responses_come_late() -> None:
    delay = 0.5  # long beside a loaded machine's overhead of five requests
    faults = Faults(slow_rate=1.0, slow_s=delay)
    async with serve_testsite(pages=10, faults=faults) as site, httpx.AsyncClient() as client:
        loop = asyncio.get_running_loop()
        started = loop.time()
        responses = await asyncio.gather(*(client.get(f"{site.url}/item/{n}") for n in range(1, 6)))
        elapsed = loop.time() - started
        assert [r.status_code for r in responses] == [200] * 5
        # Late, and concurrently so: one slow response does not hold the server up.
        assert delay <= elapsed < 5 * delay


@pytest.mark.anyio
async def test_redirects_to_canonical_pages() -> None:
    faults = Faults(redirects=True)
    async with serve_testsite(pages=60, faults=faults) as site, httpx.AsyncClient() as client:
        moved = next(p for p in site.sitemap.redirects if p.startswith("/moved/"))
        went = next(p for p in site.sitemap.redirects if p.startswith("/go/"))
        permanent = await client.get(site.url + moved)
        assert permanent.status_code == 301
        assert permanent.headers["location"] == site.url + "/item/" + moved.rsplit("/", 1)[1]
        temporary = await client.get(site.url + went)
        assert temporary.status_code == 302
        assert temporary.headers["location"] == "/item/" + went.rsplit("/", 1)[1]
        followed = await client.get(site.url + went, follow_redirects=True)
        assert followed.status_code == 200
        assert followed.url.path == "/item/" + went.rsplit("/", 1)[1]


@pytest.mark.anyio
async def test_redirect_loop() -> None:
    faults = Faults(redirect_loop=True)
    async with serve_testsite(pages=10, faults=faults) as site, httpx.AsyncClient() as client:
        first = await client.get(site.url + LOOP_PATHS[0])
        assert (first.status_code, first.headers["location"]) == (302, LOOP_PATHS[1])
        second = await client.get(site.url + LOOP_PATHS[1])
        assert (second.status_code, second.headers["location"]) == (302, LOOP_PATHS[0])
        with pytest.raises(httpx.TooManyRedirects):
            await client.get(site.url + LOOP_PATHS[0], follow_redirects=True)


@pytest.mark.anyio
async def test_huge_page() -> None:
    faults = Faults(huge_page=True)
    async with serve_testsite(pages=10, faults=faults) as site, httpx.AsyncClient() as client:
        home = await client.get(site.url + "/")
        assert f'href="{HUGE_PATH}"'.encode() in home.content
        received = 0
        async with client.stream("GET", site.url + HUGE_PATH) as response:
            assert int(response.headers["content-length"]) == faults.huge_page_bytes
            async for chunk in response.aiter_bytes():
                received += len(chunk)
        assert received == faults.huge_page_bytes == 20 * 1024 * 1024


@pytest.mark.anyio
async def test_robots_disallows_a_linked_prefix() -> None:
    faults = Faults(robots_disallow="/private/")
    async with serve_testsite(pages=10, faults=faults) as site, httpx.AsyncClient() as client:
        robots = await client.get(site.url + "/robots.txt")
        sitemap = f"Sitemap: {site.url}/sitemap.xml\n"
        assert robots.text == f"User-agent: *\nDisallow: /private/\n{sitemap}"
        home = (await client.get(site.url + "/")).text
        secret = sorted(site.sitemap.disallowed)[0]
        assert secret.startswith("/private/") and f'href="{secret}"' in home
        # Served all the same: a crawler that ignores robots.txt gets it.
        assert (await client.get(site.url + secret)).status_code == 200


@pytest.mark.anyio
async def test_a_crawl_fetches_every_reachable_page_and_the_log_counts_it(tmp_path: Path) -> None:
    """A minimal polite crawler over real HTTP, with every fault on (Retry-After not awaited:
    the site recovers by count, not by time)."""
    log_path = tmp_path / "requests.jsonl"
    faults = Faults(
        error_500_rate=0.2,
        throttle_429_rate=0.2,
        redirects=True,
        redirect_loop=True,
        huge_page=True,
        huge_page_bytes=SMALL_HUGE_PAGE,
        robots_disallow="/private/",
    )
    sent = 0
    async with (
        serve_testsite(pages=60, seed=8, faults=faults, request_log=log_path) as site,
        httpx.AsyncClient() as client,
    ):

        async def fetch(path: str) -> tuple[int, bytes, str | None]:
            nonlocal sent
            while True:
                response = await client.get(site.url + path)
                sent += 1
                if response.status_code not in (429, 500):
                    return response.status_code, response.content, response.headers.get("location")

        requested, blocked, _ = await walk(fetch, site.url, "/private/")
        assert requested == site.sitemap.reachable
        assert blocked == site.sitemap.disallowed
        in_memory = list(site.requests)
        counts = site.fetch_counts()
    assert len(in_memory) == sent
    for path, count in counts.items():
        assert count == 1 + len(site.sitemap.fault_plan(path).failures), path
    assert set(counts) == site.sitemap.reachable
    assert read_request_log(log_path) == in_memory


@pytest.mark.anyio
async def test_request_log_records_every_request(tmp_path: Path) -> None:
    log_path = tmp_path / "requests.jsonl"
    async with serve_testsite(pages=10, request_log=log_path) as site:
        async with httpx.AsyncClient() as client:
            await client.get(site.url + "/")
            await client.head(site.url + "/item/2")
            await client.get(site.url + "/nowhere")
        site.flush_log()
        logged = read_request_log(log_path)
        assert [(r.method, r.path, r.status) for r in logged] == [
            ("GET", "/", 200),
            ("HEAD", "/item/2", 200),
            ("GET", "/nowhere", 404),
        ]
        assert logged[0].size == len(body_of(site.sitemap, "/"))
        assert logged[1].size == 0
        assert logged == site.requests
    async with (
        serve_testsite(pages=10, request_log=log_path) as again,
        httpx.AsyncClient() as client,
    ):
        await client.get(again.url + "/robots.txt")
    assert [r.path for r in read_request_log(log_path)] == [
        "/",
        "/item/2",
        "/nowhere",
        "/robots.txt",
    ]


# --- HTTP/1.1 on the wire -----------------------------------------------------------------------


async def _read_response(reader: asyncio.StreamReader) -> tuple[bytes, dict[str, str], bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    status, *lines = head.decode("latin-1").split("\r\n")[:-2]
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    body = await reader.readexactly(int(headers["content-length"]))
    return status.encode(), headers, body


@pytest.mark.anyio
async def test_keep_alive_pipelining_and_connection_close() -> None:
    async with serve_testsite(pages=10) as site:
        reader, writer = await asyncio.open_connection("127.0.0.1", site.port)
        try:
            writer.write(
                b"GET /robots.txt HTTP/1.1\r\nHost: x\r\n\r\n"
                b"HEAD /item/1 HTTP/1.1\r\nHost: x\r\n\r\n"
                b"GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n"
            )
            first = await _read_response(reader)
            assert first[0] == b"HTTP/1.1 200 OK" and first[2].startswith(b"User-agent")
            head = await reader.readuntil(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200 OK")
            third = await _read_response(reader)
            assert third[0] == b"HTTP/1.1 404 Not Found"
            writer.write(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            last = await _read_response(reader)
            assert last[1]["connection"] == "close"
            assert await reader.read() == b""
        finally:
            writer.close()
            await writer.wait_closed()
    assert [r.path for r in site.requests] == ["/robots.txt", "/item/1", "/nowhere", "/"]


@pytest.mark.anyio
async def test_malformed_requests_get_400_and_close() -> None:
    async with serve_testsite(pages=10) as site:
        for request in (b"NONSENSE\r\n\r\n", b"GET / HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello"):
            reader, writer = await asyncio.open_connection("127.0.0.1", site.port)
            try:
                writer.write(request)
                status, headers, _ = await _read_response(reader)
                assert status.startswith(b"HTTP/1.1 400") and headers["connection"] == "close"
                assert await reader.read() == b""
            finally:
                writer.close()
                await writer.wait_closed()


@pytest.mark.anyio
async def test_shutdown_closes_idle_connections() -> None:
    async with serve_testsite(pages=10) as site:
        reader, writer = await asyncio.open_connection("127.0.0.1", site.port)
        writer.write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        await _read_response(reader)
    try:
        assert await reader.read() == b""
    finally:
        writer.close()
        await writer.wait_closed()


@pytest.mark.anyio
async def test_a_taken_port_is_a_config_error() -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        with pytest.raises(ConfigError, match="in use"):
            async with serve_testsite(port=holder.getsockname()[1]):
                pass


# --- crawlog testsite ---------------------------------------------------------------------------


@pytest.fixture
def testsite_process(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    log_path = tmp_path / "requests.jsonl"
    command = crawlog_command("testsite", "--port", "0", "--pages", "50")
    command += ["--faults", "all", "--no-huge-page", "--fault-500", "0", "--fault-429", "0"]
    command += ["--slow", "0:0", "--request-log", str(log_path)]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:
        try:
            yield process, log_path
        finally:
            if process.poll() is None:
                process.kill()
            process.wait()


def test_cli_prints_its_url_serves_and_stops_on_sigterm(
    testsite_process: tuple[subprocess.Popen[str], Path],
) -> None:
    process, log_path = testsite_process
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.startswith("serving http://127.0.0.1:") and line.endswith(" (50 pages)\n")
    url = line.split()[1]
    with httpx.Client() as client:
        assert client.get(url + "/").status_code == 200
        loop = client.get(url + "/loop/a")
        assert (loop.status_code, loop.headers["location"]) == (302, "/loop/b")
        assert "Disallow: /private/" in client.get(url + "/robots.txt").text
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=10)
    assert process.returncode == 0, err
    assert out == "stopped after 3 requests\n"
    assert [r.path for r in read_request_log(log_path)] == ["/", "/loop/a", "/robots.txt"]


def crawlog(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        crawlog_command(*args),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--robots-disallow", "/item/"], "overlaps"),
        (["--slow", "0.5"], "RATE:SECONDS"),
        (["--fault-500", "often"], "RATE or RATE:TIMES"),
        (["--fault-429", "2"], "between 0 and 1"),
    ],
)
def test_cli_bad_options_are_one_line_errors(args: list[str], fragment: str) -> None:
    result = crawlog("testsite", *args)
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith("crawlog: error: ") and fragment in result.stderr


def test_cli_taken_port_is_a_one_line_error() -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        result = crawlog("testsite", "--port", str(holder.getsockname()[1]))
    assert result.returncode == 2
    assert result.stderr.startswith("crawlog: error: port ") and "in use" in result.stderr


def test_cli_help_has_an_example() -> None:
    result = crawlog("testsite", "--help")
    assert result.returncode == 0
    assert "Example:  crawlog testsite" in result.stdout
