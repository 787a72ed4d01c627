"""The downloader: how a worker gets a page.

robots.txt first (fetched once for the whole job, `SharedRobots`, and cached for its
lifetime), then a slot of the host's politeness gate, a last check that the lease is still
the worker's, then the request: redirects checked hop by hop against the crawl's scope, a
redirect to another task's page left to that task. The HTTP stack is imported, and the
fetcher built, in a thread (`Downloader.open`). What the worker makes of the result is its
own business (`crawler._worker`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable, Container
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING

import anyio
import redis.asyncio as aioredis

from crawler._fetch_spec import FetchConfig, FetchResult
from crawler._job import JobConfig
from crawler._middlewares import Dropped, Middlewares, OutgoingRequest
from crawler._offline import DEFAULT_OFFLINE_PAGES, OfflineRide
from crawler._politeness import PolitenessGate
from crawler._recrawl import conditional_headers, landed_before, run_fingerprint
from crawler._robots import (
    RobotsCache,
    RobotsRules,
    RobotsVerdict,
    parse_robots,
    robots_lifetime,
    robots_note,
)
from crawler._scope import Scope
from crawler._urls import fingerprint, site_of
from eventlog import (
    FIRST_RUN,
    BrowserSessionStore,
    CookieStore,
    RobotsFile,
    RobotsNotWhole,
    SharedRobots,
    Task,
    TaskQueue,
)

if TYPE_CHECKING:
    from pathlib import Path

    from crawler._browser import BrowserFetcher
    from crawler._fetch import Fetcher
    from crawler._spider import Spider


class Downloader:
    """The fetching side of one worker of a job: ``queue`` is the worker's (its keys, its
    name, the URL claims of redirects), ``config`` the job's, ``fetch_config`` the HTTP
    client's; redirects stay within ``scope``; ``seen`` holds the fingerprints the worker
    enqueued (a redirect to one of them is that task's to fetch)."""

    def __init__(
        self,
        redis: aioredis.Redis,
        queue: TaskQueue,
        config: JobConfig,
        fetch_config: FetchConfig,
        scope: Scope,
        seen: Container[str],
        hooks: Middlewares | None = None,
        *,
        offline_pages: int = DEFAULT_OFFLINE_PAGES,
    ) -> None:
        self.redis, self.queue, self.config = redis, queue, config
        self.fetch_config, self.scope, self._seen = fetch_config, scope, seen
        name, keys = queue.consumer, queue.keys
        self.gate = PolitenessGate(
            redis, keys, config.politeness, holder=name, batcher=queue.batcher
        )
        self.offline = OfflineRide(
            redis, queue, self.gate, delay_s=config.politeness.delay_s, pages=offline_pages
        )
        """The host's slot while the store does not answer (`crawler._offline`)."""
        self.robots = RobotsCache()
        self.shared_robots = SharedRobots(redis, keys, name)
        self._robots_locks: dict[str, anyio.Lock] = {}
        self._robots_noted: dict[str, str] = {}
        """Site -> what this worker last told the log of its robots.txt (`RobotsNotWhole`):
        an unreachable one is asked again every few seconds, and said once."""
        self._fetcher: Fetcher | BrowserFetcher | None = None
        self.browser: BrowserFetcher | None = None
        """The fetcher again when it renders pages (a ``--browser`` job): their live pages."""
        self._hooks = hooks if hooks is not None and hooks.requests else None
        """The spider's request hooks (`crawler._middlewares`), None without any."""

    async def open(
        self, closing: AsyncExitStack, *, data_dir: Path, spider: Spider | None = None
    ) -> None:
        """Open the fetcher, its HTTP stack imported and its TLS context built in a thread;
        ``closing`` closes it. A ``--browser`` job's renders pages in Chromium (its profiles
        under ``data_dir``, its waits ``spider``'s)."""
        # Importing aiohttp and httpx and reading the CA bundle are a large part of a
        # worker's start; in a thread, they overlap the take-back of a restart's pending list, which
        # mostly waits for the server (the CA bundle is read without the GIL).
        # Cookies only for a job that asked for them: by default nothing is kept or sent.
        store = CookieStore(self.redis, self.queue.keys) if self.config.cookies else None
        fetcher = await anyio.to_thread.run_sync(_new_fetcher, self.fetch_config, store)
        if self.config.browser:
            from crawler._browser import browser_fetcher

            sessions = BrowserSessionStore(self.redis, self.queue.keys)
            browser = browser_fetcher(fetcher, self.fetch_config, data_dir, spider, sessions)
            self._fetcher = self.browser = await closing.enter_async_context(browser)
        else:
            self._fetcher = await closing.enter_async_context(fetcher)

    async def fetch(
        self,
        url: str,
        task: Task,
        *,
        first: bool,
        hold: Callable[[], Awaitable[None]],
        started: Callable[[], Awaitable[object]] | None = None,
    ) -> FetchResult | Dropped | None:
        """The page at ``url`` of ``task`` (None if robots.txt disallows it, `Dropped` if
        the spider's request hooks do), fetched politely, once ``hold`` (awaited last thing
        before the request) finds the lease still the worker's: with the task's headers,
        and for its ``first`` page its method and body, as the request hooks leave them.
        ``started`` records the request's start where the store cannot (its slot taken
        while the store is down: `OfflineRide.slot`)."""
        assert self._fetcher is not None
        site = site_of(url)
        if self.config.obey_robots:
            rules = await self._robots_for(site)
            if rules.verdict is RobotsVerdict.UNREACHABLE:
                # RFC 9309: nothing is fetched meanwhile, but this is no "disallowed": the
                # task is retried once the brief verdict has expired and robots.txt is asked again.
                wait = {"retry-after": str(math.ceil(self.robots.unreachable_ttl))}
                error = f"robots.txt unreachable: {rules.reason}"
                return FetchResult(
                    url=url, final_url=url, headers=wait, error=error, requested=False
                )
            if not rules.allowed(url):
                return None
        spec = task.spec
        headers = None if spec is None else spec.headers
        if first and task.revisit is not None:
            headers = {**(headers or {}), **conditional_headers(task.revisit)}
        method = spec.method if spec is not None and first else "GET"
        body = spec.body if spec is not None and first else None
        if self._hooks is not None:
            # Before the host's slot: a dropped request waits for no politeness.
            outgoing = await self._hooks.request(
                OutgoingRequest(
                    url=url, method=method, headers=headers, body=body, task_id=task.task_id
                )
            )
            if isinstance(outgoing, Dropped):
                return outgoing
            method, headers, body = outgoing.method, outgoing.headers, outgoing.body
        host = site.split("://", 1)[1]
        if self.offline.down:
            # A lease not known fresh waits for the store here, not with the host's
            # offline slot held.
            await hold()
        async with self.offline.slot(host, task.task_id, started):
            # Checked last thing before the request, after any politeness wait: a worker
            # SIGSTOPped past its lease ran the tasks of a claim whose reply came in after
            # SIGCONT, refetching pages others had taken over (chaos.py, seed 2).
            await hold()
            result = await self._fetcher.fetch(
                url,
                redirect_allowed=self._in_scope,
                claim_target=self.claimer(task.task_id, task.run, landed=landed_before(task)),
                method=method,
                body=body,
                headers=headers,
                validators_of=landed_before(task) if first else None,
            )
        if self.gate.politeness.autothrottle:
            # After the slot is done with: the next request to the host need not wait for this.
            await self.offline.unless_down(
                lambda: self.gate.observe(host, result.elapsed_ms, result.status)
            )
        return result

    def _in_scope(self, url: str) -> bool:
        return self.scope.allows(url, 0)

    def claimer(
        self, task_id: str, run: int = FIRST_RUN, *, landed: str | None = None
    ) -> Callable[[str], Awaitable[bool]]:
        """Whether the task may follow a redirect to a URL: not if a task of its own
        fetches it (enqueued, or reached by another redirect first). Without this, a page
        linked both directly and through a redirect is fetched twice.

        ``landed``: a revisit's earlier landing (`Validators.landed`), counted against
        ``--max-pages`` by the run that claimed it first. Without it, a site that redirects
        every link (a trailing slash, http to https) counted each page again at every
        recrawl, until the bound refused the new pages."""

        async def claim(url: str) -> bool:
            base = fingerprint(url)
            fp = run_fingerprint(base, run)
            if fp == task_id:
                return True  # the same URL in another spelling: the task's own page
            if fp in self._seen:
                return False
            again = landed is not None and base == fingerprint(landed)
            return await self.queue.claim_url(fp, task_id, counted=not again)

        return claim

    async def _robots_for(self, site: str) -> RobotsRules:
        now = time.time()
        if (rules := self.robots.get(site, now)) is not None:
            return rules
        lock = self._robots_locks.setdefault(site, anyio.Lock())
        async with lock:
            if (rules := self.robots.get(site, time.time())) is not None:
                return rules
            stored = await self.shared_robots.fetch_once(site, lambda: self._fetch_robots(site))
            body = stored.body if not stored.error else None
            # Matched against the job's own user agent: the group for what the crawl says it is.
            agent = self.fetch_config.user_agent
            rules = parse_robots(body, stored.status, user_agent=agent, error=stored.error)
            self.robots.put(site, rules, time.time(), expires=stored.expires_at)
            if (delay := rules.crawl_delay()) is not None:
                await self.gate.set_delay(site.split("://", 1)[1], delay)
            return rules

    async def _fetch_robots(self, site: str) -> RobotsFile:
        """``site``'s robots.txt as the job keeps it: fetched by this worker for all of them."""
        assert self._fetcher is not None
        result = await self._fetcher.fetch_robots(site)
        body = result.body if not result.error else b""
        rules = parse_robots(body, result.status, error=result.error)
        lifetime = robots_lifetime(rules, result.headers, unreachable_s=self.robots.unreachable_ttl)
        note = robots_note(rules, truncated=result.truncated)
        if note is not None and self._robots_noted.get(site) != note and self.queue.record_events:
            self._robots_noted[site] = note
            event = RobotsNotWhole(
                actor=self.queue.consumer, site=site, reason=note, status=result.status
            )
            await self.queue.log.append(event)
        return RobotsFile(
            status=result.status, body=body, error=result.error, expires_at=time.time() + lifetime
        )


def _new_fetcher(config: FetchConfig, cookies: CookieStore | None = None) -> Fetcher:
    """Run in a thread: import the HTTP stack, build a fetcher (its TLS context with it),
    keeping cookies in ``cookies`` if given."""
    from crawler._fetch import Fetcher

    if cookies is None:
        return Fetcher(config)
    from crawler._cookies import SharedCookies

    return Fetcher(config, cookies=SharedCookies(cookies))
