"""``crawler.scrapy.Scheduler``: Scrapy's scheduler backed by a crawlog job.

A request Scrapy enqueues becomes a crawlog task carrying the whole request
(``Request.to_dict`` in msgpack, callbacks by name), enqueued once per Scrapy fingerprint
(``dont_filter`` requests every time, start requests once per job). ``next_request``
hands out leased tasks. A task is finished only when Scrapy is done with its request: the
engine removes a request from its slot after the callback's output was processed, every
item through the pipelines and every yielded request enqueued; at that moment the task's
events (claim, fetches, items, retries) and its terminal event go to the log with the ack
of its lease, in one fenced step. Until then the lease is renewed.

The installed Scrapy (2.19) has no ``finish_request`` hook, so the plug-in follows the
engine: the slot's ``remove_request`` (the end of a request), ``scraper.enqueue_scrape``
(the response or failure handed to the callback), and the signals ``response_downloaded``,
``request_left_downloader``, ``spider_error`` and ``item_scraped``. ``open`` checks that
each exists and refuses to run (a ``ConfigError`` naming what is missing) if not.

Retries stay with Scrapy's RetryMiddleware (RETRY_TIMES, RETRY_HTTP_CODES, ``dont_retry``,
``max_retry_times`` keep working as users configured them): its retry has the fingerprint
of the request it replaces and arrives while that request is still downloading, so it is
the same task's next attempt (``RetryScheduled`` with the reason, then ``TaskClaimed``), not
a new task. A redirect has another fingerprint: a task of its own.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Self

import msgspec
from scrapy import Request, Spider, signals
from scrapy.core.scheduler import BaseScheduler
from scrapy.http import Response
from scrapy.utils.misc import build_from_crawler, load_object
from scrapy.utils.request import request_from_dict
from twisted.python.failure import Failure

from crawler._politeness import Politeness
from crawler._urls import site_of
from crawler.scrapy._bridge import Bridge, Enqueue, Finish, Hold, Release
from crawler.scrapy._projector import JobProjector
from crawler.scrapy._settings import PluginSettings, plugin_settings, projects
from eventlog import (
    AnyEvent,
    ConfigError,
    Counts,
    ItemScraped,
    Lease,
    PageFetched,
    RetryScheduled,
    Task,
    TaskClaimed,
    TaskDone,
    TaskFailed,
    new_event_id,
)

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.dupefilters import BaseDupeFilter

log = logging.getLogger("crawlog.scrapy")

HTTP_ERROR = 400
REFUSED_STAT = "crawlog/requests_refused"
ITEMS_REFUSED_STAT = "crawlog/items_refused"
UNATTRIBUTED_STAT = "crawlog/items_without_a_request"
SIGNALS_NEEDED = (
    "response_downloaded",
    "request_reached_downloader",
    "request_left_downloader",
    "spider_error",
    "item_scraped",
)
REDIRECTED = "no response of its own: the downloader replaced it (a redirect)"

_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder()


class RequestRefused(ValueError):
    """A request (or item) the log cannot carry as it is."""


@dataclass(slots=True)
class _Running:
    """A leased task whose request Scrapy is working on."""

    lease: Lease
    request: Request
    fingerprint: bytes
    attempt: int
    events: list[AnyEvent]
    scraping: bool = False
    """The response (or failure) reached the scraper: a same-fingerprint request from now
    on is the callback's output, not a retry."""
    got_response: bool = False
    status: int | None = None
    failure: str | None = None
    spider_error: str | None = None
    refused: str | None = None
    pages: int = 0
    items: int = 0
    bytes: int = 0
    last_error: str | None = None
    keys: set[str] = field(default_factory=set)


def carried(request: Request, spider: Spider | None) -> bytes:
    """The request as a task carries it; ``RequestRefused`` saying why it cannot be."""
    try:
        fields = request.to_dict(spider=spider)
    except ValueError as exc:  # a callback that is not a method of the spider
        raise RequestRefused(f"its callback cannot be named: {exc}") from None
    try:
        payload = _encoder.encode(fields)
    except (TypeError, ValueError, OverflowError) as exc:
        raise RequestRefused(f"its meta or cb_kwargs cannot be encoded: {exc}") from None
    for part in ("meta", "cb_kwargs"):
        if not _same(
            _decoder.decode(_encoder.encode(fields.get(part) or {})), fields.get(part) or {}
        ):
            raise RequestRefused(
                f"its {part} would not come back as it is (a set, or a type msgpack lacks)"
            )
    return payload


def _same(back: Any, sent: Any) -> bool:
    """Whether a decoded value is what was encoded (a tuple comes back as a list)."""
    if isinstance(sent, tuple | list):
        return (
            isinstance(back, list)
            and len(back) == len(sent)
            and all(_same(b, s) for b, s in zip(back, sent, strict=True))
        )
    if isinstance(sent, dict):
        return (
            isinstance(back, dict)
            and back.keys() == sent.keys()
            and all(_same(back[k], v) for k, v in sent.items())
        )
    return type(back) is type(sent) and back == sent


def _site(url: str) -> str:
    try:
        return site_of(url)
    except ValueError:
        return url.split("/", 3)[2] if url.count("/") >= 2 else url


class Scheduler(BaseScheduler):
    """Scrapy's ``SCHEDULER``: requests as crawlog tasks (see the module docs)."""

    def __init__(self, crawler: Crawler, settings: PluginSettings, dupefilter: BaseDupeFilter):
        self.crawler = crawler
        self.settings = settings
        self.df = dupefilter
        self.spider: Spider | None = None
        self.bridge: Bridge | None = None
        self._fingerprint = crawler.request_fingerprinter.fingerprint
        self._by_request: dict[int, _Running] = {}
        self._by_fingerprint: dict[bytes, _Running] = {}
        self._retries: deque[Request] = deque()
        """Retries of running tasks, handed out before any new lease."""
        self._replacing: tuple[Request, Request] | None = None
        """(request, the request the downloader returned for it) while the engine
        schedules the second: a retry if both have one fingerprint, else a redirect."""
        self._actor = ""
        self._projector: JobProjector | None = None
        self._max_unfinished = crawler.settings.getint("CONCURRENT_REQUESTS", 16)
        """No more requests started and not finished at once: a kill redoes no more."""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        """The scheduler Scrapy builds from ``SCHEDULER``."""
        settings = plugin_settings(crawler.settings)
        dupefilter_class = load_object(crawler.settings["DUPEFILTER_CLASS"])
        dupefilter: BaseDupeFilter = build_from_crawler(dupefilter_class, crawler)
        return cls(crawler, settings, dupefilter)

    # --- Scrapy's scheduler interface -----------------------------------------------------

    def open(self, spider: Spider) -> None:
        """Check the engine has what the plug-in follows, then open the job's queue."""
        self.spider = spider
        self._follow_the_engine()
        prefetch = self.crawler.settings.getint("CONCURRENT_REQUESTS", 16)
        self.bridge = Bridge(
            self.settings,
            prefetch=prefetch,
            seeds=tuple(str(u) for u in getattr(spider, "start_urls", ()) or ()),
            spider_name=spider.name,
            wake_scrapy=self._wake_from_thread,
            politeness=self._shared_politeness(),
        )
        self.bridge.start()
        self._actor = self.bridge.name
        if projects(self.crawler.settings):
            self._projector = JobProjector(self.settings)
            self._projector.start()
        self.df.open()
        log.info(
            "crawlog: job %s, worker %s, lease %.1f s",
            self.settings.job,
            self._actor,
            self.settings.lease_ms / 1000,
        )

    def close(self, reason: str) -> None:
        """Write what is left, hand back what was not started, and stop the queue."""
        bridge = self.bridge
        if bridge is None:
            return
        while self._retries:
            entry = self._by_request.pop(id(self._retries.popleft()), None)
            if entry is not None:
                bridge.submit(Release(entry.lease, entry.events))
        bridge.close()
        stats = self.crawler.stats
        if stats is not None:
            for name, value in dataclasses.asdict(bridge.stats).items():
                stats.set_value(f"crawlog/{name}", value)
        self.df.close(reason)
        if bridge.error is not None:
            log.error("crawlog: the queue failed: %s", bridge.error)
        if self._projector is not None:
            self._projector.stop()  # after the bridge's last events are written

    def has_pending_requests(self) -> bool:
        """Whether the job has work left: here, queued, or leased by any process."""
        if self._retries:
            return True
        return self.bridge is not None and self.bridge.pending()

    def enqueue_request(self, request: Request) -> bool:
        """Enqueue the request as a task unless its fingerprint was seen (see the module)."""
        assert self.bridge is not None
        fp = self._fingerprint(request)
        replaced = self._replacing
        if replaced is not None and replaced[1] is request:
            running = self._entry(replaced[0])
            if running is not None and running.fingerprint == fp:
                self._next_attempt(running, request)
                return True
        start = bool(request.meta.get("is_start_request"))
        once = start or not request.dont_filter
        if once and self.df.request_seen(request):
            self.df.log(request, self.spider)  # type: ignore[arg-type]
            return False
        try:
            payload = carried(request, self.spider)
        except RequestRefused as refused:
            log.error("crawlog: request %s refused, not enqueued: %s", request, refused)
            self._count(REFUSED_STAT)
            return False
        key = fp.hex()
        # Scrapy's fingerprint leaves the fragment out, and so does the task: the page.
        url = request.url.partition("#")[0]
        task = Task(
            task_id=key if once else f"{key}-{new_event_id()}",
            url=url,
            site=_site(url),
            depth=int(request.meta.get("depth", 0) or 0),
            priority=request.priority,
            request=payload,
        )
        self.bridge.submit(Enqueue(task, key if once else task.task_id))
        return True

    def next_request(self) -> Request | None:
        """A retry of a running task, else the next leased task's request; never waits."""
        if self._retries:
            return self._retries.popleft()
        bridge = self.bridge
        if bridge is None:
            return None
        if bridge.started() >= self._max_unfinished:
            # Responses wait in Scrapy's scraper for their callbacks (up to 5 MB of them):
            # each one a kill would fetch again. The engine asks again as each request ends.
            return None
        while bridge.ready:
            lease = bridge.ready.popleft()
            if len(bridge.ready) * 2 < bridge.prefetch:
                bridge.poke()
            if (why := bridge.blocks(lease)) is not None:
                # Claimed before the pause was seen: held back now, not fetched.
                bridge.submit(Hold(lease, why))
                continue
            try:
                request = self._request_of(lease.task)
            except Exception as exc:
                reason = f"its request does not decode: {type(exc).__name__}: {exc}"
                log.error("crawlog: task %s failed: %s", lease.task.task_id, reason)
                failed = self._failed(lease, lease.task.attempt, reason)
                bridge.submit(Finish(lease, (), failed))
                continue
            fp = self._fingerprint(request)
            task = lease.task
            claimed = TaskClaimed(
                actor=self._actor,
                task_id=task.task_id,
                attempt=task.attempt,
                deliveries=lease.deliveries,
            )
            entry = _Running(lease, request, fp, task.attempt, [claimed])
            self._by_request[id(request)] = entry
            self._by_fingerprint[fp] = entry
            return request
        return None

    def __len__(self) -> int:
        return len(self._retries) + (len(self.bridge.ready) if self.bridge else 0)

    # --- following the engine -------------------------------------------------------------

    def _follow_the_engine(self) -> None:
        try:
            engine = self.crawler.engine
        except RuntimeError:  # Scrapy 2.19: not set yet (no crawl started)
            engine = None
        slot = getattr(engine, "_slot", None)
        scraper = getattr(engine, "scraper", None)
        missing = [name for name in SIGNALS_NEEDED if not hasattr(signals, name)]
        if slot is None or not callable(getattr(slot, "remove_request", None)):
            missing.append("ExecutionEngine._slot.remove_request")
        if not isinstance(getattr(slot, "inprogress", None), set):
            missing.append("ExecutionEngine._slot.inprogress")
        if scraper is None or not callable(getattr(scraper, "enqueue_scrape", None)):
            missing.append("ExecutionEngine.scraper.enqueue_scrape")
        if not callable(getattr(getattr(slot, "nextcall", None), "schedule", None)):
            missing.append("ExecutionEngine._slot.nextcall.schedule")
        if not callable(getattr(engine, "_handle_downloader_output", None)):
            missing.append("ExecutionEngine._handle_downloader_output")
        if missing:
            import scrapy

            raise ConfigError(
                f"crawler.scrapy cannot tell when Scrapy {scrapy.__version__} is done with a "
                f"request: it lacks {', '.join(missing)} (the plug-in is tested with Scrapy "
                "2.19); use that version, or another SCHEDULER"
            )
        assert engine is not None and slot is not None and scraper is not None
        removing: Callable[[Request], None] = slot.remove_request
        scraping: Callable[..., Any] = scraper.enqueue_scrape

        def remove_request(request: Request) -> None:
            # Before the engine's own: it may fire the slot's closing, which closes us.
            self._request_done(request)
            removing(request)

        def enqueue_scrape(result: Response | Failure, request: Request) -> Any:
            self._reached_the_scraper(result, request)
            return scraping(result, request)

        handling: Callable[..., Any] = engine._handle_downloader_output

        def handle_downloader_output(result: Any, request: Request) -> Any:
            # A Request from the downloader replaces ``request`` (a retry, a redirect): the
            # engine schedules it from inside this call, so enqueue_request knows it.
            if not isinstance(result, Request):
                return handling(result, request)
            self._replacing = (request, result)
            try:
                return handling(result, request)
            finally:
                self._replacing = None

        engine._handle_downloader_output = handle_downloader_output  # type: ignore[method-assign]
        slot.remove_request = remove_request
        scraper.enqueue_scrape = enqueue_scrape
        self._slot = slot
        connect = self.crawler.signals.connect
        connect(self._downloaded, signal=signals.response_downloaded)
        connect(self._reached_the_downloader, signal=signals.request_reached_downloader)
        connect(self._left_the_downloader, signal=signals.request_left_downloader)
        connect(self._spider_error, signal=signals.spider_error)

    def _shared_politeness(self) -> Politeness | None:
        """The limits of the ``PolitenessMiddleware`` in Scrapy's downloader, if it has one."""
        from crawler.scrapy._politeness import PolitenessMiddleware

        downloader = getattr(self.crawler.engine, "downloader", None)
        manager = getattr(downloader, "middleware", None)
        for middleware in getattr(manager, "middlewares", ()):
            if isinstance(middleware, PolitenessMiddleware):
                return middleware.politeness
        return None

    def _wake_from_thread(self) -> None:
        from twisted.internet import reactor

        reactor.callFromThread(self._wake)

    def _wake(self) -> None:
        slot = getattr(self.crawler.engine, "_slot", None)
        if slot is not None:
            slot.nextcall.schedule()

    def _entry(self, request: Request | None) -> _Running | None:
        if request is None:
            return None
        entry = self._by_request.get(id(request))
        if entry is not None and entry.request is request:
            return entry
        return None

    def _reached_the_downloader(self, request: Request, spider: Spider | None = None) -> None:
        if (entry := self._entry(request)) is not None:
            entry.got_response = False

    def _downloaded(
        self, response: Response, request: Request, spider: Spider | None = None
    ) -> None:
        entry = self._entry(request)
        if entry is None:
            return
        entry.got_response = True
        latency = request.meta.get("download_latency")
        entry.events.append(
            PageFetched(
                actor=self._actor,
                task_id=entry.lease.task.task_id,
                attempt=entry.attempt,
                url=response.url,
                status=response.status,
                bytes=len(response.body),
                elapsed_ms=float(latency) * 1000 if isinstance(latency, int | float) else 0.0,
                page=1,
            )
        )
        entry.pages += 1
        entry.bytes += len(response.body)
        entry.status = response.status

    def _left_the_downloader(self, request: Request, spider: Spider | None = None) -> None:
        entry = self._entry(request)
        if entry is None or entry.got_response:
            return
        entry.last_error = "no response (a download error)"
        entry.events.append(
            PageFetched(
                actor=self._actor,
                task_id=entry.lease.task.task_id,
                attempt=entry.attempt,
                url=request.url,
                status=0,
                page=1,
                error=entry.last_error,
            )
        )

    def _reached_the_scraper(self, result: Response | Failure, request: Request) -> None:
        entry = self._entry(request)
        if entry is None:
            return
        entry.scraping = True
        if isinstance(result, Failure):
            entry.failure = f"{type(result.value).__name__}: {result.value}".rstrip(": ")
        else:
            entry.status = result.status

    def _spider_error(
        self, failure: Failure, response: Response | Failure, spider: Spider | None = None
    ) -> None:
        request = getattr(response, "request", None)
        entry = self._entry(request)
        if entry is not None and entry.spider_error is None:
            entry.spider_error = f"callback raised {type(failure.value).__name__}: {failure.value}"

    def _next_attempt(self, entry: _Running, retry: Request) -> None:
        """The downloader re-issued a running request (a retry): the task's next attempt."""
        if entry.status is not None and entry.status >= HTTP_ERROR:
            reason = f"HTTP {entry.status}"
        else:
            reason = entry.last_error or "download error"
        task_id = entry.lease.task.task_id
        entry.events += [
            RetryScheduled(
                actor=self._actor,
                task_id=task_id,
                attempt=entry.attempt,
                delay_s=0.0,
                reason=f"{reason} (retried by Scrapy)",
            ),
            TaskClaimed(
                actor=self._actor,
                task_id=task_id,
                attempt=entry.attempt + 1,
                deliveries=entry.lease.deliveries,
            ),
        ]
        entry.attempt += 1
        self._by_request.pop(id(entry.request), None)
        entry.request, entry.status, entry.last_error = retry, None, None
        self._by_request[id(retry)] = entry
        self._retries.append(retry)

    def _request_done(self, request: Request) -> None:
        entry = self._entry(request)
        if entry is None:
            return  # not one of ours (robots.txt, a download a middleware asked for)
        del self._by_request[id(request)]
        if self._by_fingerprint.get(entry.fingerprint) is entry:
            del self._by_fingerprint[entry.fingerprint]
        assert self.bridge is not None
        self.bridge.submit(Finish(entry.lease, entry.events, self._terminal(entry)))

    def _terminal(self, entry: _Running) -> TaskDone | TaskFailed:
        reason = entry.refused or entry.failure or entry.spider_error
        if reason is None and entry.scraping and (entry.status or 0) >= HTTP_ERROR:
            reason = f"HTTP {entry.status}"
        if reason is not None:
            return self._failed(entry.lease, entry.attempt, reason)
        return TaskDone(
            actor=self._actor,
            task_id=entry.lease.task.task_id,
            attempt=entry.attempt,
            reason=f"HTTP {entry.status}" if entry.scraping else REDIRECTED,
            counts=Counts(pages=entry.pages, items=entry.items, bytes=entry.bytes),
        )

    def _failed(self, lease: Lease, attempt: int, reason: str) -> TaskFailed:
        return TaskFailed(
            actor=self._actor, task_id=lease.task.task_id, attempt=attempt, reason=reason
        )

    def _request_of(self, task: Task) -> Request:
        if task.request is None:
            # A task enqueued by crawlog itself (`crawlog enqueue`, a retry of one that
            # lost its request): its URL, to the spider's default callback.
            return Request(task.url, dont_filter=True)
        fields = _decoder.decode(task.request)
        return request_from_dict(fields, spider=self.spider)

    def _count(self, stat: str) -> None:
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(stat)

    # --- items (called by crawler.scrapy.ItemPipeline) -------------------------------------

    def item_scraped(
        self, item: Any, response: Response | Failure | None, key_field: str | None
    ) -> None:
        """Record an item that went through every pipeline, as its task's ``ItemScraped``."""
        from itemadapter import ItemAdapter

        entry = self._entry(getattr(response, "request", None))
        if entry is None:
            self._count(UNATTRIBUTED_STAT)
            return
        data = ItemAdapter(item).asdict()
        try:
            _encoder.encode(data)
        except (TypeError, ValueError, OverflowError) as exc:
            reason = f"an item cannot be encoded: {exc}"
            log.error("crawlog: task %s fails: %s", entry.lease.task.task_id, reason)
            self._count(ITEMS_REFUSED_STAT)
            entry.refused = entry.refused or reason
            return
        if key_field is not None and data.get(key_field) not in (None, ""):
            key = str(data[key_field])
        else:
            key = f"{entry.lease.task.url}#{entry.items}"
        entry.items += 1
        entry.events.append(
            ItemScraped(actor=self._actor, task_id=entry.lease.task.task_id, key=key, data=data)
        )
