"""Pages rendered in Chromium: the worker's fetcher for ``crawl --browser``.

A browser fetch is a fetch: the worker asks `BrowserFetcher.fetch` for a page exactly as it
asks the HTTP `crawler._fetch.Fetcher` (inside the same politeness slot, after the same
lease check, robots.txt read over HTTP), and gets a `FetchResult` whose status, headers
and redirects are the navigation's and whose body is the rendered DOM. While the spider
parses it, the page stays open (`page_for`): a spider may click, fill, scroll and wait.

One Chromium per worker — Debian's, never a downloaded one (`find_chromium`) — started by
this module, not by Playwright, so that it is the worker's own child: it asks the kernel
for a SIGKILL when the worker dies (``PR_SET_PDEATHSIG``), it leads a process group of its
own (closed with ``killpg``, its renderers with it), and its ``--user-data-dir`` under
``DATA_DIR/browsers/`` names the worker (pid and start time). A worker that starts reaps
what dead ones left there (`reap_orphans`). Playwright connects over CDP, and is imported
only here, only when a browser is asked for: an HTTP crawl's worker never loads it.

Per page, a CDP session (never Playwright's routing, which turns the cache off):
``Network.setBlockedURLs`` drops images, fonts and media by extension, and ``Fetch``
interception pauses each request just long enough to check it — its address against the
job's `AddressPolicy` (every request when the job has one), and for a redirect of the
navigation the crawl's scope and whether another task fetches its target — and to drop
the image, font and media requests the extensions missed.
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Self
from urllib.parse import urlsplit

import anyio

from crawler._addresses import AddressRefused
from crawler._browser_session import ERROR_LOGIN, fetched, session_for
from crawler._fetch_spec import (
    CONDITIONAL_HEADERS,
    ERROR_CONNECT,
    ERROR_CONNECT_REFUSED,
    ERROR_CONNECTION_CLOSED,
    ERROR_DNS,
    ERROR_INVALID_URL,
    ERROR_REDIRECT_LOOP,
    ERROR_REDIRECT_OUT_OF_SCOPE,
    ERROR_TIMEOUT,
    ERROR_TLS,
    ERROR_TOO_MANY_REDIRECTS,
    FetchConfig,
    FetchResult,
    too_large,
)
from crawler._recrawl import NOT_MODIFIED
from crawler._urls import HTTP_SCHEMES, url_key
from eventlog import BrowserSessionStore, ConfigError, SessionIdentity

if TYPE_CHECKING:
    from playwright.async_api import Browser, BrowserContext, CDPSession, Page, Playwright

    from crawler._browser_session import BrowserSession
    from crawler._fetch import Fetcher
    from crawler._resolver import GuardedResolver

CHROMIUM_ENV: Final = "CRAWLOG_CHROMIUM"
"""The Chromium executable to drive; without it, ``chromium`` found on PATH."""
BROWSERS_DIR: Final = "browsers"
"""Under the data directory: one ``--user-data-dir`` per running browser, named for its
worker (``PID-STARTTIME-N``) — the mark `reap_orphans` knows crawlog's browsers by."""
DEFAULT_BROWSER_PAGES: Final = 4
"""Pages open at once per worker: each is a renderer process and its memory."""
DEFAULT_PAGES_PER_CONTEXT: Final = 100
"""Pages a browser context serves before a fresh one replaces it (what the site stored,
the renderer's caches, go with the old one)."""
DEFAULT_PAGES_PER_BROWSER: Final = 1_000
"""Pages a browser serves before a fresh one replaces it (sooner if it outgrows
`DEFAULT_BROWSER_MAX_MB`): Chromium's memory only grows."""
DEFAULT_BROWSER_MAX_MB: Final = 1_024
"""Memory of the browser's whole process group (`group_pss_mb`: shared pages counted
once) past which it is replaced."""
MEMORY_CHECK_PAGES: Final = 20
"""Pages between two readings of a browser's memory (each reads /proc)."""
BROWSER_START_TIMEOUT_S: Final = 30.0
BROWSER_CLOSE_TIMEOUT_S: Final = 5.0
BLOCKED_URLS: Final = tuple(
    f"*.{ext}"
    for ext in (
        *("png", "jpg", "jpeg", "gif", "webp", "avif", "bmp", "ico", "svg"),
        *("woff", "woff2", "ttf", "otf", "eot"),
        *("mp4", "webm", "ogg", "ogv", "mp3", "wav", "m4a", "m4v", "mov", "flac"),
    )
)
"""``Network.setBlockedURLs`` patterns: images, fonts and media, never requested."""
BLOCKED_RESOURCE_TYPES: Final = frozenset({"Image", "Font", "Media"})
"""What interception drops when a URL without such an extension turns out to be one."""
HTML_MEDIA_TYPES: Final = frozenset({"text/html", "application/xhtml+xml"})
"""Responses whose rendered DOM is the body; any other keeps the bytes it came with."""
RENDERED_CONTENT_TYPE: Final = "text/html; charset=utf-8"
_PR_SET_PDEATHSIG: Final = 1
_SCRIPTS_OFF: Final = "Emulation.setScriptExecutionDisabled"
NOT_MODIFIED_WAIT_S: Final = 1.0
"""How long a revisit's aborted navigation waits for the 304 that aborted it to be told
(`_Navigation.not_modified`): the event and Playwright's error come apart."""
_DOWNLOAD: Final = "Download is starting"
"""Playwright's message for a navigation that turned into a download."""
_NET_ERRORS: Final = (
    ("ERR_NAME_NOT_RESOLVED", ERROR_DNS),
    ("ERR_NAME_RESOLUTION_FAILED", ERROR_DNS),
    ("ERR_CONNECTION_REFUSED", ERROR_CONNECT_REFUSED),
    ("ERR_CONNECTION_TIMED_OUT", ERROR_TIMEOUT),
    ("ERR_TIMED_OUT", ERROR_TIMEOUT),
    ("ERR_CONNECTION_RESET", ERROR_CONNECTION_CLOSED),
    ("ERR_CONNECTION_CLOSED", ERROR_CONNECTION_CLOSED),
    ("ERR_EMPTY_RESPONSE", ERROR_CONNECTION_CLOSED),
    ("ERR_SSL", ERROR_TLS),
    ("ERR_CERT", ERROR_TLS),
    ("ERR_TOO_MANY_REDIRECTS", ERROR_TOO_MANY_REDIRECTS),
    ("ERR_INVALID_URL", ERROR_INVALID_URL),
    ("ERR_UNSAFE_REDIRECT", ERROR_REDIRECT_OUT_OF_SCOPE),
)
"""Chromium's net errors (in Playwright's message) as the HTTP fetcher's reasons."""


def find_chromium(environ: Mapping[str, str] = os.environ) -> str:
    """The Chromium to drive: ``CRAWLOG_CHROMIUM``, else ``chromium`` on PATH (ConfigError,
    one line, if there is none: crawlog never downloads a browser)."""
    given = environ.get(CHROMIUM_ENV, "").strip()
    if given:
        found = shutil.which(given)
        if found is None:
            raise ConfigError(
                f"{CHROMIUM_ENV}={given!r} is not an executable: point it at Chromium"
            )
        return found
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        raise ConfigError(
            "--browser needs Chromium and none is installed: apt-get install chromium, or set "
            f"{CHROMIUM_ENV} to its executable (crawlog never downloads a browser)"
        )
    return found


def check_browser_support(environ: Mapping[str, str] = os.environ) -> str:
    """Chromium's path, once Playwright is known importable (ConfigError, one line, if not)."""
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        raise ConfigError("--browser needs Playwright: pip install 'crawlog[browser]'") from None
    return find_chromium(environ)


def browser_wanted(option: bool | None, spider: object) -> bool:
    """Whether a job renders its pages: ``--browser``/``--no-browser`` if given, else the
    spider's ``browser`` attribute, else not."""
    if option is not None:
        return option
    wanted = getattr(spider, "browser", False)
    if not isinstance(wanted, bool):
        name = getattr(spider, "name", type(spider).__name__)
        raise ConfigError(f"spider {name}: browser = {wanted!r}: expected True or False")
    return wanted


# --- processes: start, mark, reap ----------------------------------------------------------


def process_start_time(pid: int) -> str | None:
    """The start time of process ``pid`` (clock ticks since boot), None if it is gone: with
    the pid, it names a process for good (a pid alone is reused)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: count from its end.
    return stat.rsplit(")", 1)[1].split()[19]


def owner_mark(pid: int | None = None) -> str:
    """The directory name part that says which process owns a browser: ``PID-STARTTIME``."""
    pid = os.getpid() if pid is None else pid
    return f"{pid}-{process_start_time(pid) or 0}"


def _owner_alive(mark: str) -> bool:
    pid, _, start = mark.partition("-")
    if not pid.isdigit():
        return False
    return process_start_time(int(pid)) == start.partition("-")[0]


def marked_processes(root: Path) -> dict[int, str]:
    """Processes started with a ``--user-data-dir`` directly under ``root``: pid → the
    directory's name (the mark of the worker that started it)."""
    mark = f"--user-data-dir={root}/".encode()
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            # Chromium's helpers rewrite their arguments as one string: searched whole.
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        at = cmdline.find(mark)
        if at >= 0:
            rest = cmdline[at + len(mark) :].split(b" ", 1)[0].split(b"/", 1)[0]
            found[int(entry.name)] = rest.decode(errors="replace")
    return found


def reap_orphans(root: Path) -> int:
    """SIGKILL the browsers (and their helpers) started under ``root`` by workers that are
    dead, and remove their profile directories; how many processes were killed."""
    killed = 0
    for pid, name in marked_processes(root).items():
        if _owner_alive(name):
            continue
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
            killed += 1
    if root.is_dir():
        for directory in root.iterdir():
            if not _owner_alive(directory.name):
                shutil.rmtree(directory, ignore_errors=True)
    return killed


def group_pss_mb(pgid: int) -> float:
    """The memory of the processes of process group ``pgid``, in MiB: their proportional
    set sizes (``Pss`` of ``/proc/PID/smaps_rollup``), where a page shared by n processes
    counts 1/n in each. Chromium's processes are forked from one zygote and share most of
    their pages, so their RSS summed counts those several times over: a bound on it
    would replace a browser that has not grown.
    A process whose ``smaps_rollup`` cannot be read (an older kernel) counts its RSS."""
    page = os.sysconf("SC_PAGE_SIZE")
    total_kb = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) != pgid:
                continue
            total_kb += _pss_kb(entry, page)
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
    return total_kb / 1024


def _pss_kb(entry: Path, page: int) -> float:
    """One process's proportional set size in KiB (its RSS where the kernel has none)."""
    try:
        rollup = (entry / "smaps_rollup").read_text()
    except OSError:
        rollup = ""
    for line in rollup.splitlines():
        if line.startswith("Pss:"):
            return float(line.split()[1])
    return int((entry / "statm").read_text().split()[1]) * page / 1024


def _chromium_args(executable: str, user_data: Path) -> list[str]:
    args = [
        executable,
        "--headless",
        "--remote-debugging-port=0",
        "--remote-debugging-address=127.0.0.1",
        f"--user-data-dir={user_data}",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-extensions",
        "--disable-sync",
        "--mute-audio",
        "--blink-settings=imagesEnabled=false",
        "about:blank",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        args.insert(2, "--no-sandbox")  # Chromium's sandbox refuses to run as root
    return args


def _die_with_parent_hook() -> Callable[[], None] | None:
    """What the browser process runs before it execs: ask for a SIGKILL when its parent
    (this thread) dies, and die now if the parent already has."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        # Resolved before the fork: the child only calls it.
        prctl = ctypes.CDLL(None).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def hook() -> None:
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)

    return hook


def _start_chromium(executable: str, user_data: Path) -> subprocess.Popen[bytes]:
    """Chromium, in a session (process group) of its own, killed when this process dies.

    Called from the event loop's thread: the parent-death signal follows the thread that
    forked, and that one lives as long as the worker."""
    return subprocess.Popen(
        _chromium_args(executable, user_data),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        # One prctl call in the child, resolved before the fork (no import, no lock).
        preexec_fn=_die_with_parent_hook(),
        close_fds=True,
    )


async def _devtools_port(user_data: Path, process: subprocess.Popen[bytes]) -> int:
    """The port Chromium's DevTools listen on, once it has written it."""
    active = user_data / "DevToolsActivePort"
    with anyio.fail_after(BROWSER_START_TIMEOUT_S):
        while True:
            if process.poll() is not None:
                raise ConfigError(
                    f"Chromium exited at start (status {process.returncode}): run it by hand "
                    "to see why"
                )
            with contextlib.suppress(OSError, ValueError, IndexError):
                return int(active.read_text().split()[0])
            await anyio.sleep(0.02)


class _Browser:
    """One Chromium process, Playwright connected to it; retired after enough pages."""

    def __init__(self, process: subprocess.Popen[bytes], browser: Browser, user_data: Path):
        self.process, self.browser, self.user_data = process, browser, user_data
        self.served = 0
        self.open = 0

    async def close(self) -> None:
        """Close it whatever happens around: shielded, bounded, then the group killed."""
        with anyio.CancelScope(shield=True):
            with anyio.move_on_after(BROWSER_CLOSE_TIMEOUT_S), contextlib.suppress(Exception):
                await self.browser.close()
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)
            await anyio.to_thread.run_sync(self.process.wait)
            await anyio.to_thread.run_sync(
                lambda: shutil.rmtree(self.user_data, ignore_errors=True)
            )


class _Context:
    """A browser context (a session: its cookies and storage), the pages it served, and
    its tabs waiting for their next page."""

    def __init__(self, context: BrowserContext, browser: _Browser) -> None:
        self.context, self.browser = context, browser
        self.served = 0
        self.open = 0
        self.idle: list[_Tab] = []


class _Navigation:
    """What the interception saw of one page's navigation."""

    def __init__(
        self,
        url: str,
        conditional: Mapping[str, str] | None = None,
        validators_of: str | None = None,
    ) -> None:
        self.url = url
        self.frame: str | None = None
        """The main frame's id: the frame of the first document requested."""
        self.redirects: list[str] = []
        self.redirect_status: int = 302
        self.error: str | None = None
        """Why the navigation was stopped here (a refused address, a redirect refused)."""
        self.handed_over: str | None = None
        self.conditional: dict[str, str] = dict(conditional or {})
        """A revisit's conditional headers, sent with the page's documents only: on the
        page (``set_extra_http_headers``) they went with its scripts and styles too, which
        a server may answer 304 that Chromium, with no copy of them, cannot use."""
        self.validators_of = validators_of
        self.conditional_key = url_key(validators_of or url)
        """The URL the conditional headers are of: they go with its document only, not a
        redirect's elsewhere (`crawler._fetch_spec.CONDITIONAL_HEADERS`)."""
        self.documents: set[str] = set()
        """The requests (CDP ``requestId``) of documents, while ``conditional``."""
        self.not_modified: dict[str, str] | None = None
        """The headers of a 304 a document got (Chromium, with nothing cached, aborts the
        navigation on it)."""
        self.answered = anyio.Event()
        """Set with ``not_modified``."""


class _Tab:
    """A page of a context, with the CDP session that checks its requests; navigated
    again for page after page (a new page is a new renderer: several times the cost)."""

    def __init__(self, page: Page, cdp: CDPSession, context: _Context) -> None:
        self.page, self.cdp, self.context = page, cdp, context
        self.nav = _Navigation("")
        self.redirect_allowed: Callable[[str], bool] | None = None
        self.claim_target: Callable[[str], Awaitable[bool]] | None = None
        self.headers: dict[str, str] = {}
        """The extra headers set on the page (a task's own), reset for the next task."""
        self.scripts_off = False
        """Its scripts stopped while it waits for its next page (`_done_with`)."""
        self.session_version = 0
        """The version of the login state its documents were given (`BrowserSession`)."""


class BrowserFetcher:
    """Fetches pages by rendering them in Chromium; use ``async with``.

    ``http``: the worker's HTTP fetcher (robots.txt, and a request that is not a plain GET,
    go through it); ``config``: the job's fetch settings (user agent, headers, timeouts,
    address policy); ``root``: where browsers' profiles are made (``DATA_DIR/browsers``);
    ``wait``: awaited with each page after ``domcontentloaded``, before its DOM is read (the
    spider's `crawler.Spider.wait_for_page`); ``session``: the login kept outside the
    browser, checked on every page and saved at every step that changed it
    (`crawler._browser_session`), for a spider that logs in.
    """

    def __init__(
        self,
        http: Fetcher,
        config: FetchConfig,
        *,
        root: Path,
        executable: str,
        wait: Callable[[Any], Awaitable[None]] | None = None,
        session: BrowserSession | None = None,
        pages: int = DEFAULT_BROWSER_PAGES,
        pages_per_context: int = DEFAULT_PAGES_PER_CONTEXT,
        pages_per_browser: int = DEFAULT_PAGES_PER_BROWSER,
        browser_max_mb: float = DEFAULT_BROWSER_MAX_MB,
        memory_check_pages: int = MEMORY_CHECK_PAGES,
    ) -> None:
        self.http, self.config, self.root, self.executable = http, config, root, executable
        self.wait, self.session = wait, session
        self.pages_per_context = pages_per_context
        self.pages_per_browser = pages_per_browser
        self.browser_max_mb = browser_max_mb
        self.memory_check_pages = memory_check_pages
        self._slots = anyio.Semaphore(pages)
        self._lock = anyio.Lock()
        self._pw: Playwright | None = None
        self._browser: _Browser | None = None
        self._context: _Context | None = None
        self._browsers: set[_Browser] = set()
        self._held: dict[int, tuple[_Tab, int]] = {}
        """The open pages given with results, by result: their tab and the anyio task
        that fetched them (`release_task`)."""
        self._launches = itertools.count()
        self._mark = owner_mark()
        self._guard: GuardedResolver | None = None
        self._too_large = too_large(config.max_response_bytes)

    async def __aenter__(self) -> Self:
        await self.http.__aenter__()
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            await anyio.to_thread.run_sync(reap_orphans, self.root)
            from playwright.async_api import async_playwright

            if self.config.addresses is not None:
                from crawler._resolver import GuardedResolver

                proxies = (urlsplit(p).hostname or "" for p in self.config.proxies)
                self._guard = GuardedResolver(self.config.addresses, trusted_hosts=proxies)
            if self.session is not None:
                await self.session.load()
            self._pw = await async_playwright().start()
            self._browser = await self._launch()
        except BaseException:
            await self.aclose()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close every browser (its contexts and pages with it; shielded: a cancelled worker
        still leaves no browser behind), then the HTTP fetcher."""
        with anyio.CancelScope(shield=True):
            self._held.clear()
            for browser in list(self._browsers):
                await browser.close()
            self._browsers.clear()
            self._browser, self._context = None, None
            if self._pw is not None:
                with anyio.move_on_after(BROWSER_CLOSE_TIMEOUT_S), contextlib.suppress(Exception):
                    await self._pw.stop()
                self._pw = None
            if self._guard is not None:
                await self._guard.close()
                self._guard = None
            await self.http.aclose()

    async def fetch_robots(self, site: str) -> FetchResult:
        """``site``'s robots.txt, over HTTP."""
        return await self.http.fetch_robots(site)

    def page_for(self, result: FetchResult) -> Page | None:
        """The live page ``result`` was read from, until `release` (None for a result
        without one: an error, an HTTP error status, a handed-over redirect)."""
        held = self._held.get(id(result))
        return None if held is None else held[0].page

    async def release(self, result: FetchResult) -> None:
        """Be done with the page of ``result`` (if it has one), even when cancelled."""
        held = self._held.pop(id(result), None)
        if held is not None:
            if self.session is not None:  # what the spider's clicks changed
                with (
                    anyio.CancelScope(shield=True),
                    anyio.move_on_after(BROWSER_CLOSE_TIMEOUT_S),
                    contextlib.suppress(Exception),  # saved again at the next step
                ):
                    await self.session.keep(held[0].page)
            await self._done_with(held[0])

    async def release_task(self) -> None:
        """Be done with every page the current anyio task still holds: what a task that
        ended between a fetch and its parse (a lost lease, a server error) left open would
        otherwise keep its slot for good."""
        me = anyio.get_current_task().id
        for key, (tab, task) in list(self._held.items()):
            if task == me:
                del self._held[key]
                await self._done_with(tab)

    async def fetch(
        self,
        url: str,
        *,
        redirect_allowed: Callable[[str], bool] | None = None,
        claim_target: Callable[[str], Awaitable[bool]] | None = None,
        method: str = "GET",
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        validators_of: str | None = None,
    ) -> FetchResult:
        """Render ``url`` (a request that is not a plain GET goes over HTTP): a result as
        `crawler._fetch.Fetcher.fetch` gives, its page open (`page_for`) when it is a page
        to parse, until `release`."""
        if method.upper() != "GET" or body:
            return await self.http.fetch(
                url,
                redirect_allowed=redirect_allowed,
                claim_target=claim_target,
                method=method,
                body=body,
                headers=headers,
                validators_of=validators_of,
            )
        parts = urlsplit(url)
        if parts.scheme not in HTTP_SCHEMES or not parts.hostname:
            return FetchResult(url=url, final_url=url, error=ERROR_INVALID_URL)
        await self._slots.acquire()
        try:
            context = await self._context_for_page()
        except BaseException:
            self._slots.release()
            raise
        own = {k: v for k, v in (headers or {}).items() if k.lower() not in CONDITIONAL_HEADERS}
        conditional = {k: v for k, v in (headers or {}).items() if k not in own}
        tab: _Tab | None = None
        try:
            tab = context.idle.pop() if context.idle else await self._new_tab(context)
            tab.nav = _Navigation(url, conditional, validators_of)
            tab.redirect_allowed, tab.claim_target = redirect_allowed, claim_target
            result = await self._render(tab, url, own)
            if self.session is not None and fetched(result):
                result = await self._logged_in(tab, url, own, result)
        except BaseException:
            await self._done_with(tab, context, broken=True)
            raise
        if fetched(result):
            self._held[id(result)] = (tab, anyio.get_current_task().id)
        else:
            await self._done_with(tab)
        return result

    async def _render(self, tab: _Tab, url: str, headers: dict[str, str]) -> FetchResult:
        from playwright.async_api import Error as PlaywrightError

        page, nav = tab.page, tab.nav
        started = time.perf_counter()
        if tab.scripts_off:
            await tab.cdp.send(_SCRIPTS_OFF, {"value": False})
            tab.scripts_off = False
        if headers != tab.headers:
            await page.set_extra_http_headers(headers)
            tab.headers = headers
        timeout_ms = self.config.total_timeout_s * 1000
        try:
            response = await page.goto(url, wait_until="domcontentloaded", timeout=timeout_ms)
            if response is not None and response.ok and self.wait is not None:
                await self.wait(page)
        except PlaywrightError as exc:
            if _DOWNLOAD in str(exc) and nav.error is None and nav.handed_over is None:
                # Not a page Chromium shows (an attachment, an archive): its bytes over HTTP.
                return await self.http.fetch(
                    url,
                    redirect_allowed=tab.redirect_allowed,
                    claim_target=tab.claim_target,
                    headers={**headers, **nav.conditional},
                    validators_of=nav.validators_of,
                )
            if nav.conditional and nav.error is None and nav.handed_over is None:
                with anyio.move_on_after(NOT_MODIFIED_WAIT_S):
                    await nav.answered.wait()
            if nav.not_modified is not None:
                return self._not_modified(nav, url, started)
            return self._failed(nav, url, exc, started)
        if response is None:  # an in-page navigation: nothing was requested
            return FetchResult(url=url, final_url=page.url, error=ERROR_CONNECT)
        head = await response.all_headers()
        media = head.get("content-type", "").split(";")[0].strip().lower()
        if media in HTML_MEDIA_TYPES or not media:
            content = (await page.content()).encode()
            head["content-type"] = RENDERED_CONTENT_TYPE
        else:
            content = await response.body()
        elapsed = (time.perf_counter() - started) * 1000
        error = self._too_large if len(content) > self.config.max_response_bytes else None
        raw = [(h["name"].encode(), h["value"].encode()) for h in await response.headers_array()]
        return FetchResult(
            url=url,
            final_url=response.url,
            status=response.status,
            headers=head,
            raw_headers=raw,
            body=b"" if error else content,
            elapsed_ms=elapsed,
            redirects=tuple(nav.redirects),
            error=error,
            parseable=error is None and media in self.config.parse_content_types,
        )

    async def _logged_in(
        self, tab: _Tab, url: str, headers: dict[str, str], result: FetchResult
    ) -> FetchResult:
        """``result``, rendered again logged in if the spider's check found it was not;
        the session saved if the page changed it."""
        session = self.session
        assert session is not None

        async def again() -> FetchResult:
            tab.nav = _Navigation(url)
            return await self._render(tab, url, headers)

        from playwright.async_api import Error as PlaywrightError

        try:
            result, tab.session_version = await session.ensure(
                tab.page, result, tab.session_version, again
            )
        except PlaywrightError as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            error = f"{ERROR_LOGIN}: {first[:200]}"
            return FetchResult(url=url, final_url=tab.page.url, error=error)
        if fetched(result):
            await session.keep(tab.page)
        return result

    def _not_modified(self, nav: _Navigation, url: str, started: float) -> FetchResult:
        """A revisit's page answered 304: unchanged, with nothing to render."""
        assert nav.not_modified is not None
        return FetchResult(
            url=url,
            final_url=nav.redirects[-1] if nav.redirects else url,
            status=NOT_MODIFIED,
            headers=nav.not_modified,
            raw_headers=[(k.encode(), v.encode()) for k, v in nav.not_modified.items()],
            elapsed_ms=(time.perf_counter() - started) * 1000,
            redirects=tuple(nav.redirects),
        )

    def _failed(self, nav: _Navigation, url: str, exc: Exception, started: float) -> FetchResult:
        elapsed = (time.perf_counter() - started) * 1000
        final = nav.redirects[-1] if nav.redirects else url
        redirects = tuple(nav.redirects)
        if nav.handed_over is not None:
            return FetchResult(
                url=url,
                final_url=final,
                status=nav.redirect_status,
                headers={"location": nav.handed_over},
                elapsed_ms=elapsed,
                redirects=redirects,
                handed_over=True,
            )
        error = nav.error or _net_error(str(exc), type(exc).__name__)
        return FetchResult(
            url=url, final_url=final, elapsed_ms=elapsed, redirects=redirects, error=error
        )

    async def _new_tab(self, context: _Context) -> _Tab:
        """A new page of ``context``, its requests checked (all of them when addresses
        are, else the documents: the navigation and its redirects) and images, fonts and
        media blocked."""
        page = await context.context.new_page()
        cdp = await context.context.new_cdp_session(page)
        tab = _Tab(page, cdp, context)
        if self.session is not None:
            tab.session_version = await self.session.prepare_page(page)
        await cdp.send("Network.enable")
        await cdp.send("Network.setBlockedURLs", {"urls": list(BLOCKED_URLS)})
        pattern: dict[str, str] = {"urlPattern": "*", "requestStage": "Request"}
        if self._guard is None:
            pattern["resourceType"] = "Document"

        def redirected(event: dict[str, Any]) -> None:
            if event.get("type") != "Document":
                return
            if answer := event.get("redirectResponse"):
                tab.nav.redirect_status = int(answer.get("status", tab.nav.redirect_status))
            if tab.nav.conditional:
                tab.nav.documents.add(event["requestId"])

        def answered(event: dict[str, Any]) -> None:
            nav = tab.nav
            if event.get("statusCode") == NOT_MODIFIED and event.get("requestId") in nav.documents:
                given = event.get("headers", {})
                nav.not_modified = {str(k).lower(): str(v) for k, v in given.items()}
                nav.answered.set()

        async def paused(event: dict[str, Any]) -> None:
            request_id = event["requestId"]
            nav = tab.nav
            try:
                why = await self._refusal(event, tab)
            except Exception as exc:  # a hook that raised: the request must not hang
                nav.error = nav.error or f"{type(exc).__name__}: {exc}"
                why = "Failed"
            with contextlib.suppress(Exception):  # the page may be closing meanwhile
                if (
                    why is None
                    and nav.conditional
                    and _is_main_document(event, nav)
                    and url_key(event["request"]["url"]) == nav.conditional_key
                ):
                    request = event["request"]["headers"]
                    sent = [{"name": k, "value": v} for k, v in request.items()]
                    sent += [{"name": k, "value": v} for k, v in nav.conditional.items()]
                    await cdp.send(
                        "Fetch.continueRequest", {"requestId": request_id, "headers": sent}
                    )
                elif why is None:
                    await cdp.send("Fetch.continueRequest", {"requestId": request_id})
                else:
                    await cdp.send(
                        "Fetch.failRequest", {"requestId": request_id, "errorReason": why}
                    )

        cdp.on("Network.requestWillBeSent", redirected)
        cdp.on("Network.responseReceivedExtraInfo", answered)
        cdp.on("Fetch.requestPaused", paused)
        await cdp.send("Fetch.enable", {"patterns": [pattern]})
        return tab

    async def _refusal(self, event: dict[str, Any], tab: _Tab) -> str | None:
        """Why a paused request is failed (CDP's ``errorReason``), or None to let it go."""
        kind = event.get("resourceType")
        if kind in BLOCKED_RESOURCE_TYPES:
            return "BlockedByClient"
        nav = tab.nav
        target = event["request"]["url"]
        is_document = kind == "Document"
        if is_document and nav.frame is None:
            nav.frame = event.get("frameId")
        main = is_document and event.get("frameId") == nav.frame
        hop = main and "redirectedRequestId" in event
        if hop:
            if target in nav.redirects or target == nav.url:
                nav.error = ERROR_REDIRECT_LOOP
                return "Aborted"
            if len(nav.redirects) >= self.config.max_redirects:
                nav.error = ERROR_TOO_MANY_REDIRECTS
                return "Aborted"
            if tab.redirect_allowed is not None and not tab.redirect_allowed(target):
                nav.error = ERROR_REDIRECT_OUT_OF_SCOPE
                return "BlockedByClient"
        if self._guard is not None:
            parts = urlsplit(target)
            if parts.scheme in HTTP_SCHEMES and parts.hostname:
                port = parts.port or (443 if parts.scheme == "https" else 80)
                try:
                    await self._guard.check_host(parts.hostname, port, resolve=True)
                except AddressRefused as refused:
                    if main:
                        nav.error = refused.reason
                    return "AddressUnreachable"
        if hop:
            if tab.claim_target is not None and not await tab.claim_target(target):
                nav.handed_over = target
                return "BlockedByClient"
            nav.redirects.append(target)
        return None

    async def _context_for_page(self) -> _Context:
        """The context the next page opens in: a fresh one (in a fresh browser) once the
        current has served its share; the old closes when its last page is done."""
        async with self._lock:
            browser = self._browser
            if browser is None:
                raise RuntimeError("BrowserFetcher.fetch called outside `async with`")
            if browser.served >= self.pages_per_browser or await self._too_big(browser):
                # Retired: closed with its last page (now, if none is open).
                self._browser, old = None, self._context
                if old is not None:
                    await self._retire_context(old)
                elif browser.open == 0:
                    self._browsers.discard(browser)
                    await browser.close()
                browser = self._browser = await self._launch()
            context = self._context
            if context is None or context.served >= self.pages_per_context:
                if context is not None:
                    await self._retire_context(context)
                context = self._context = await self._new_context(browser)
            context.served += 1
            context.open += 1
            browser.served += 1
            browser.open += 1
            return context

    async def _too_big(self, browser: _Browser) -> bool:
        """Whether ``browser`` has grown past ``browser_max_mb`` (read every
        ``memory_check_pages`` pages)."""
        if not browser.served or browser.served % self.memory_check_pages:
            return False
        used = await anyio.to_thread.run_sync(group_pss_mb, browser.process.pid)
        return used > self.browser_max_mb

    async def _new_context(self, browser: _Browser) -> _Context:
        config = self.config
        context = await browser.browser.new_context(
            user_agent=config.user_agent,
            extra_http_headers=dict(config.headers),
            service_workers="block",
        )
        if self.session is not None:
            await self.session.prepare_context(context)
        return _Context(context, browser)

    async def _retire_context(self, context: _Context) -> None:
        if context is self._context:
            self._context = None
        if context.open == 0:
            await self._close_context(context)

    async def _close_context(self, context: _Context) -> None:
        """Close a retired context (its pages with it), and its browser if that is retired
        and this was its last page."""
        context.idle.clear()
        with anyio.CancelScope(shield=True):
            with anyio.move_on_after(BROWSER_CLOSE_TIMEOUT_S), contextlib.suppress(Exception):
                await context.context.close()
            browser = context.browser
            if browser is not self._browser and browser.open == 0:
                self._browsers.discard(browser)
                await browser.close()

    async def _done_with(
        self, tab: _Tab | None, context: _Context | None = None, *, broken: bool = False
    ) -> None:
        """Give the page's slot back (shielded) and its tab to its context for the next
        page — its loading stopped and its scripts off, so that nothing of the last page
        runs on meanwhile (a poll would reach the site past its politeness gate);
        closed instead if it is ``broken`` or its context retired, and the context (and
        browser) with it once retired and this was their last page."""
        context = tab.context if tab is not None else context
        assert context is not None
        with anyio.CancelScope(shield=True):
            keep = tab is not None and not broken and context is self._context
            if tab is not None and keep:
                with anyio.move_on_after(BROWSER_CLOSE_TIMEOUT_S) as late:
                    try:
                        # Cheaper than a navigation to about:blank, several times over.
                        await tab.cdp.send("Page.stopLoading")
                        await tab.cdp.send(_SCRIPTS_OFF, {"value": True})
                        tab.scripts_off = True
                    except Exception:
                        keep = False
                keep = keep and not late.cancelled_caught
            if tab is not None and not keep:
                with anyio.move_on_after(BROWSER_CLOSE_TIMEOUT_S), contextlib.suppress(Exception):
                    await tab.page.close()
            context.open -= 1
            context.browser.open -= 1
            self._slots.release()
            if tab is not None and keep and context is self._context:
                context.idle.append(tab)
            elif context is not self._context and context.open == 0:
                await self._close_context(context)

    async def _launch(self) -> _Browser:
        assert self._pw is not None
        user_data = self.root / f"{self._mark}-{next(self._launches)}"
        user_data.mkdir(parents=True, exist_ok=True)
        process = _start_chromium(self.executable, user_data)
        try:
            port = await _devtools_port(user_data, process)
            connected = await self._pw.chromium.connect_over_cdp(f"http://127.0.0.1:{port}")
        except BaseException:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(process.wait)
            raise
        browser = _Browser(process, connected, user_data)
        self._browsers.add(browser)
        return browser


def _is_main_document(event: dict[str, Any], nav: _Navigation) -> bool:
    """Whether a paused request is the page's own document (or a redirect of it)."""
    return event.get("resourceType") == "Document" and event.get("frameId") == nav.frame


def _net_error(message: str, kind: str) -> str:
    """The fetch error for a navigation Playwright failed with ``message``."""
    if kind == "TimeoutError":
        return ERROR_TIMEOUT
    for code, reason in _NET_ERRORS:
        if code in message:
            return reason
    first = message.strip().splitlines()[0] if message.strip() else kind
    return f"{ERROR_CONNECT}: {first[:200]}"


__all__ = [
    "BLOCKED_RESOURCE_TYPES",
    "BLOCKED_URLS",
    "BROWSERS_DIR",
    "CHROMIUM_ENV",
    "DEFAULT_BROWSER_MAX_MB",
    "DEFAULT_BROWSER_PAGES",
    "DEFAULT_PAGES_PER_BROWSER",
    "DEFAULT_PAGES_PER_CONTEXT",
    "BrowserFetcher",
    "browser_fetcher",
    "browser_wanted",
    "check_browser_support",
    "find_chromium",
    "group_pss_mb",
    "marked_processes",
    "owner_mark",
    "reap_orphans",
]


def browser_fetcher(
    http: Fetcher,
    config: FetchConfig,
    data_dir: Path,
    spider: object,
    sessions: BrowserSessionStore | None = None,
) -> BrowserFetcher:
    """The fetcher of a worker of a ``--browser`` job: ``http`` under it, its browsers'
    profiles under ``data_dir``, ``spider``'s `wait_for_page` awaited on every page, and
    its login kept in ``sessions`` if it declares one (`session_for`)."""
    wait = getattr(spider, "wait_for_page", None)
    session = None
    if sessions is not None:
        # Chromium is started without a proxy: the identity is its user agent alone.
        identity = SessionIdentity(user_agent=config.user_agent)
        session = session_for(spider, sessions, identity)
    return BrowserFetcher(
        http,
        config,
        root=data_dir / BROWSERS_DIR,
        executable=find_chromium(),
        wait=wait,
        session=session,
    )


def tasks_at_once(browser: bool, concurrency: int) -> int:
    """How many tasks a worker runs at once: a task waiting for one of the browser's pages
    would hold its host's politeness slot (and its lease check would go stale) meanwhile,
    so a ``--browser`` worker runs no more tasks than it has pages."""
    return min(concurrency, DEFAULT_BROWSER_PAGES) if browser else concurrency
