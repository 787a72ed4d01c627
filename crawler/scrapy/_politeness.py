"""``crawler.scrapy.PolitenessMiddleware``: crawlog's per-host slots, shared by every Scrapy
process of a job (and every native worker of it).

Scrapy's ``CONCURRENT_REQUESTS_PER_DOMAIN`` and ``DOWNLOAD_DELAY`` hold per process: N
processes on one job make N times as many requests to a host. With this downloader
middleware, each download first takes one of the host's slots kept in Redis
(`crawler._politeness`), and gives it back when its response or error comes back through
the middleware: the limit (``CRAWLOG_PER_HOST``, default ``CONCURRENT_REQUESTS_PER_DOMAIN``)
and the spacing of starts (``CRAWLOG_DELAY``, default ``DOWNLOAD_DELAY``) hold for the job's
processes together. Slots are held under the process's worker name, so a process killed
mid-download has its slots freed with its requests: when its restart takes them back, or
when another process recovers them.

A middleware rather than the scheduler: Scrapy calls ``next_request`` synchronously and a
scheduler cannot wait there for a slot without stalling the reactor (or handing requests
out of order to skip a busy host); a middleware's ``process_request`` may wait as a
coroutine while the reactor goes on. It also wraps exactly the download, and covers every
request Scrapy downloads: retries, redirects and robots.txt, not only what the scheduler
hands out. Placed near the downloader (after ``HttpCacheMiddleware``, 900), a response
from the cache takes no slot.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Self

from scrapy import Request
from scrapy.http import Response
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred

from crawler._urls import site_of
from crawler.scrapy._bridge import Bridge, SlotTicket
from crawler.scrapy._scheduler import Scheduler
from crawler.scrapy._settings import politeness_settings
from eventlog import ConfigError

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

ORDER = 950
"""Where docs/scrapy.md places it in ``DOWNLOADER_MIDDLEWARES``."""


def host_of(url: str) -> str:
    """The host a request's slots are counted on: ``host:port``, as crawlog's workers do."""
    try:
        return site_of(url).split("://", 1)[1]
    except ValueError:
        return url.split("/", 3)[2] if url.count("/") >= 2 else url


class PolitenessMiddleware:
    """Scrapy downloader middleware holding a shared host slot per download (module docs)."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.politeness = politeness_settings(crawler.settings)
        self._held: dict[int, tuple[Request, SlotTicket]] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        """The middleware Scrapy builds from ``DOWNLOADER_MIDDLEWARES``."""
        return cls(crawler)

    def _bridge(self) -> Bridge:
        engine = self.crawler.engine
        scheduler = getattr(engine, "scheduler", None) if engine is not None else None
        if not isinstance(scheduler, Scheduler) or scheduler.bridge is None:
            raise ConfigError(
                "crawler.scrapy.PolitenessMiddleware needs SCHEDULER = "
                "'crawler.scrapy.Scheduler': the slots are the job's, held by its worker"
            )
        return scheduler.bridge

    async def process_request(self, request: Request) -> None:
        """Wait (without blocking the reactor) for a slot on the request's host."""
        bridge = self._bridge()
        from twisted.internet import reactor

        taken: Deferred[None] = Deferred()

        def held(error: BaseException | None) -> None:  # on the queue's thread
            if error is None:
                reactor.callFromThread(taken.callback, None)
            else:
                reactor.callFromThread(taken.errback, error)

        ticket = bridge.hold_slot(host_of(request.url), held)
        try:
            await maybe_deferred_to_future(taken)
        except BaseException:
            ticket.release()
            raise
        self._release(request)  # a request sent again while one of its slots was held
        self._held[id(request)] = (request, ticket)

    def process_response(self, request: Request, response: Response) -> Response:
        """Free the request's slot: its response is in."""
        self._release(request)
        return response

    def process_exception(self, request: Request, exception: BaseException) -> None:
        """Free the request's slot: its download failed (let the other middlewares see it)."""
        self._release(request)

    def _release(self, request: Request) -> None:
        entry = self._held.get(id(request))
        if entry is not None and entry[0] is request:
            del self._held[id(request)]
            entry[1].release()
