"""The scraper: what a worker makes of a page it fetched.

The spider parses the page (if it takes its content type); each output is checked as it
is yielded, an item through the spider's pipelines first; the URLs it yields are resolved
against the page and admitted as new tasks if in scope and depth and not seen yet (one
admission for a spider's `Follow` and for the default spider's links taken in bulk); the
new tasks are enqueued in one round trip. A spider's once-only actions (``response.once``)
are logged as intended, then done, around the action. Nothing here writes a task's step:
the worker does (`crawler._worker`), as Scrapy keeps its scraper beside its engine.
"""

from __future__ import annotations

import logging
import os
import sysconfig
import traceback
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeAlias

import msgspec
from yarl import URL

from crawler._defaults import PAST_MAX_PAGES
from crawler._fetch_spec import FetchResult
from crawler._job import JobConfig
from crawler._middlewares import Dropped as DroppedByHook
from crawler._middlewares import DropRequest, middlewares_of
from crawler._pipelines import Dropped as DroppedItem
from crawler._pipelines import is_item, pipeline_of
from crawler._recrawl import done_before, pages_before, run_fingerprint
from crawler._scope import Scope
from crawler._spider import (
    ActionMark,
    Item,
    NextPage,
    Response,
    SiteSpider,
    Spider,
    SpiderOutputError,
    accepted_types,
    check_callback,
    check_output,
    parses,
    spider_outputs,
)
from crawler._urls import Dropped, ResolvedUrls, request_fingerprint, site_of
from eventlog import (
    FIRST_RUN,
    ActionDone,
    ActionIntended,
    CheckpointSaved,
    Counts,
    CrawlogError,
    Cursor,
    Evidence,
    ItemScraped,
    Lease,
    RequestSpec,
    Task,
    TaskPaused,
    TaskQueue,
)

if TYPE_CHECKING:
    from crawler._browser import BrowserFetcher

log = logging.getLogger("crawlog.worker")

SPIDER_ERROR_MAX = 300
"""Characters of a spider's exception kept as a failed task's reason."""
SEEN_CACHE_SIZE = 200_000
"""Fingerprints this worker already sent to Redis: most links of a site are seen ones."""

Once = Callable[[str, Callable[[], Awaitable[Any]]], Awaitable[Any]]


class UncertainAction(CrawlogError):
    """An action's intent is in the log but not its completion: it may have run."""


class ActionAborted(CrawlogError):
    """A person decided about an uncertain action (or a flow's step) to stop its task
    (``crawlog resolve --abort``): the task fails."""


class Parsed(msgspec.Struct, kw_only=True):
    """What a page's outputs come to: its items, its new tasks, its next page (resolved),
    and the URLs dropped, by reason."""

    items: list[Item] = msgspec.field(default_factory=list)
    fresh: dict[str, Task] = msgspec.field(default_factory=dict)
    """New tasks by fingerprint: in scope and depth, and not in this worker's seen cache."""
    next_page: NextPage | None = None
    dropped: dict[str, int] = msgspec.field(default_factory=dict)
    items_dropped: dict[str, int] = msgspec.field(default_factory=dict)
    """Items the spider's pipelines dropped, by reason."""
    stop: str | None = None
    """Why the task ends at this page though the spider gave a next page (a loop, a cap)."""
    run: int = FIRST_RUN
    """The run of the job the page's task belongs to: its new tasks are of that run."""
    next_counted: bool = True
    """Whether the next page, if any, is one more page against ``--max-pages``: not for a
    revisit's next page that an earlier run fetched (`Validators.pages`)."""

    def drop(self, reason: str, count: int = 1) -> None:
        self.dropped[reason] = self.dropped.get(reason, 0) + count


class Scraper:
    """One worker's spider at work: ``spider`` parses the pages of ``config``'s job, whose
    URLs ``scope`` keeps or drops; ``queue`` is the worker's (new tasks, once-only actions).
    """

    def __init__(self, spider: Spider, config: JobConfig, queue: TaskQueue, scope: Scope) -> None:
        self.spider, self.queue, self.scope = spider, queue, scope
        self.name = queue.consumer
        self._max_pages = config.max_pages
        self._max_item_bytes = config.max_item_bytes
        self._rules = config.rules()
        self._accepted = accepted_types(spider)
        self._callbacks: set[str] = set()
        """Callback names a Follow named that `check_callback` found good on this spider."""
        # None without steps: the check per output is then one comparison.
        self._pipeline = pipeline_of(spider) or None
        self.middlewares = middlewares_of(spider)
        """The spider's request hooks (run by the downloader) and response hooks (here)."""
        self.bulk_links = isinstance(spider, SiteSpider) and type(spider).parse is SiteSpider.parse
        """The spider's ``parse`` is the default spider's: its page's item and links are
        taken in bulk (`SiteSpider.page_outputs`), with no `Follow` per link."""
        self._canonical_links = (
            isinstance(spider, SiteSpider)
            and self.bulk_links
            and type(spider).page_outputs is SiteSpider.page_outputs
        )
        """The bulk links are the parser's canonical URLs: no spider code changed them."""
        self.seen: OrderedDict[str, None] = OrderedDict()
        """Fingerprints this worker enqueued (or found enqueued), the latest kept."""
        self._resolved = ResolvedUrls()
        self.browser: BrowserFetcher | None = None
        """A ``--browser`` job's fetcher, once open: the live page of each response."""

    async def parse(
        self,
        lease: Lease,
        result: FetchResult,
        page: int,
        last: CheckpointSaved | None,
        *,
        body_hash: str | None = None,
    ) -> Parsed:
        """Let the spider parse the page (if it takes its content type), each output checked
        as it is yielded, its URLs resolved against the page and kept if in scope and depth.
        ``body_hash``: the body's, if the worker has it (`Response.body_hash`).

        Raises whatever the spider raises, and SpiderOutputError for an output crawlog
        cannot take: either fails the task, never the worker."""
        response = self._response(lease, result, page, last, body_hash)
        parsed = Parsed(run=lease.task.run, next_counted=page >= pages_before(lease.task))
        if result.error is None and self.middlewares.responses:
            hooked = await self.middlewares.response(response)
            if isinstance(hooked, DroppedByHook):
                raise DropRequest(hooked.reason)  # the task fails with it
            response = hooked
        if result.error is not None or not parses(self._accepted, response.content_type):
            return parsed
        callback = None if lease.task.spec is None else lease.task.spec.callback
        links: list[str] = []
        outputs: AsyncIterator[tuple[int, Any]]
        if callback is None and self.bulk_links:
            assert isinstance(self.spider, SiteSpider)
            item, links = self.spider.page_outputs(response)
            outputs = _numbered(item)
        else:
            outputs = spider_outputs(self.spider, response, callback)
        async for index, yielded in outputs:
            await self._take(index, yielded, response, parsed)
        # The default spider's links: what its Follows would come to, one plain GET each.
        if self._canonical_links:
            self._admit_page_links(links, response, parsed)
        else:
            self._admit_links(links, response, parsed)
        for reason, count in response.dropped.items():  # left out by the link rules
            parsed.drop(reason, count)
        return parsed

    def _response(
        self,
        lease: Lease,
        result: FetchResult,
        page: int,
        last: CheckpointSaved | None,
        body_hash: str | None = None,
    ) -> Response:
        """The page as the spider sees it, resumed from ``last``, the task's checkpoint
        before it (None on its first page)."""
        task = lease.task
        resume = last.cursor if last is not None else None
        data = None if task.spec is None else task.spec.data
        if resume is not None and resume.data is not None:
            data = resume.data  # a NextPage's own, from the checkpoint it left
        return Response(
            url=result.final_url or task.url,
            status=result.status,
            headers=result.headers,
            body=result.body,
            elapsed_ms=result.elapsed_ms,
            task_id=task.task_id,
            depth=task.depth,
            page=page,
            resume=resume,
            data=data,
            once=self.once_for(lease),
            link_rules=self._rules,
            browser_page=None if self.browser is None else self.browser.page_for(result),
            spec=task.spec,
            task_url=task.url,
            meta=last.meta if last is not None else None,
            cb_kwargs=last.cb_kwargs if last is not None else None,
            progress=_Progress(self, lease, result.url, page, last),
            body_hash=body_hash,
        )

    async def _take(self, index: int, yielded: Any, response: Response, parsed: Parsed) -> None:
        """One output of the spider: an item kept (or dropped by a pipeline), the next page
        resolved, or a Follow admitted."""
        if self._pipeline is not None and is_item(yielded):
            # Before the check: a step may make loggable what the spider yielded.
            yielded = await self._pipeline.run(yielded, response)
            if isinstance(yielded, DroppedItem):
                drop = yielded.reason
                parsed.items_dropped[drop] = parsed.items_dropped.get(drop, 0) + 1
                return
        output = check_output(
            yielded,
            spider=self.spider.name,
            url=response.url,
            index=index,
            max_item_bytes=self._max_item_bytes,
        )
        if isinstance(output, Item):
            parsed.items.append(output)
        elif isinstance(output, NextPage):
            self._next_page(output, response, parsed)
        else:
            # A plain GET for ``parse`` is passed through as yielded; any other Follow
            # comes back from the check as a new one, in the form its task carries.
            spec = None if output is yielded else output.spec()
            self._admit_links((output.url,), response, parsed, spec, output.priority)

    def _next_page(self, output: NextPage, response: Response, parsed: Parsed) -> None:
        known = self._resolved.resolve(output.url, lambda: response.base_url)
        if isinstance(known, Dropped):
            parsed.drop(known.reason)
            return
        resolved, _ = known
        # The same task's next page: its depth is the task's own.
        if (why := self.scope.refusal(resolved, response.depth)) is not None:
            parsed.drop(why)
        else:
            parsed.next_page = msgspec.structs.replace(output, url=resolved)

    def _admit_links(
        self,
        urls: Iterable[str],
        response: Response,
        parsed: Parsed,
        spec: RequestSpec | None = None,
        priority: int = 0,
    ) -> None:
        """New tasks for ``urls`` found on ``response``'s page, into ``parsed.fresh``: each
        resolved against the page, then kept if it is not seen yet, and in scope and
        depth; the others dropped, by reason. A task is asked for with ``spec`` (None: a
        plain GET parsed by ``parse``), at ``priority``."""
        # Hoisted: for the default spider this runs once per link of every page.
        fresh, seen, refusal = parsed.fresh, self.seen, self.scope.refusal
        resolve, depth, parent = self._resolved.resolve, response.depth + 1, response.task_id
        run = parsed.run

        def base() -> URL:
            return response.base_url

        for url in urls:
            known = resolve(url, base)
            if isinstance(known, Dropped):
                parsed.drop(known.reason)
                continue
            resolved, fp = known
            if spec is not None:
                if (named := spec.callback) is not None and named not in self._callbacks:
                    check_callback(self.spider, named)
                    self._callbacks.add(named)
                fp = request_fingerprint(resolved, spec.method, spec.body)
            if run != FIRST_RUN:
                fp = run_fingerprint(fp, run)
            if fp in seen or fp in fresh:
                continue  # enqueued already: not a drop, the crawl has it
            _add_task(parsed, fp, resolved, refusal, depth, parent, spec=spec, priority=priority)

    def _admit_page_links(self, links: list[str], response: Response, parsed: Parsed) -> None:
        """`_admit_links` of the default spider's links, canonical http(s) URLs already
        (`resolve` gives each back as it is): fingerprinted from what is kept, and the
        seen ones (most of a link-dense page's) left out before any Python runs for them."""
        run = parsed.run
        fps = self._resolved.fingerprints(links)
        if run != FIRST_RUN:
            fps = [run_fingerprint(fp, run) for fp in fps]
        seen, fresh = self.seen, parsed.fresh
        unseen = [i for i, fp in enumerate(fps) if fp not in seen and fp not in fresh]
        refusal, depth, parent = self.scope.refusal, response.depth + 1, response.task_id
        for index in unseen:
            url, fp = links[index], fps[index]
            if fp in fresh:
                continue  # two links of one fingerprint (a collision): the first is the task
            _add_task(parsed, fp, url, refusal, depth, parent)

    async def admit(self, parsed: Parsed) -> int:
        """Enqueue a page's new tasks and take its next page from the job's page bound
        (``--max-pages``); what the bound refuses is counted as dropped, by that reason.
        How many tasks were new to the job."""
        new, past = await self.enqueue(parsed.fresh)
        cap = self._max_pages
        if (
            parsed.next_page is not None
            and cap
            and parsed.next_counted
            and not await self.queue.take_page(cap)
        ):
            parsed.next_page, past = None, past + 1
        if past:
            parsed.drop(PAST_MAX_PAGES, past)
        return new

    async def enqueue(self, fresh: dict[str, Task]) -> tuple[int, int]:
        """New tasks (by fingerprint) for the links a page gave, in one round trip: how many
        were new to the job, and how many of them the job's page bound refused."""
        if not fresh:
            return 0, 0
        new, past = await self.queue.enqueue_within(
            list(fresh.values()), actor=self.name, cap=self._max_pages
        )
        for fp in fresh:
            self.seen[fp] = None
        while len(self.seen) > SEEN_CACHE_SIZE:
            self.seen.popitem(last=False)
        return sum(new), past

    def once_for(self, lease: Lease) -> Once:
        """``response.once`` for the task of ``lease``: an action run at most once for the
        task, whatever kills or retries come, and not again by a recrawl's revisit of its
        page once an earlier run did it; UncertainAction (the task paused for a person) if
        a run of it may have been cut short."""
        task_id = lease.task.task_id

        async def once(action_id: str, action: Callable[[], Awaitable[Any]]) -> Any:
            state = await self.queue.action_state(task_id, action_id)
            if state == "done" or (state is None and done_before(lease.task, action_id)):
                return None  # done by this task, or on this page by an earlier run
            if state == "aborted":
                raise ActionAborted(f"action {action_id!r}: a person decided to stop the task")
            if state == "intended":
                await self._pause_uncertain(lease, action_id)
                raise UncertainAction(f"action {action_id!r} of task {task_id} may have run")
            intent = ActionIntended(actor=self.name, task_id=task_id, action_id=action_id)
            await self.queue.note(lease, [intent], action=(action_id, "intended"))
            value = await action()
            done = ActionDone(actor=self.name, task_id=task_id, action_id=action_id)
            await self.queue.note(lease, [done], action=(action_id, "done"))
            return value

        return once

    async def _pause_uncertain(
        self,
        lease: Lease,
        action_id: str,
        reason: str | None = None,
        evidence: Evidence | None = None,
    ) -> None:
        task = lease.task
        paused = TaskPaused(
            actor=self.name,
            task_id=task.task_id,
            reason=reason
            or f"uncertain action {action_id}: its intent is logged, its completion not",
            evidence=evidence,
        )
        if not await self.queue.pause_for_a_person(lease, action_id, paused):
            # Resolved between the pause and the park: the task runs again, by the decision.
            await self.queue.requeue(lease, [], task, lease.lane)

    def failure(self, exc: Exception, url: str) -> SpiderFailure:
        """Why a task fails when its spider raised ``exc`` on ``url`` (logged): for an
        exception of the spider's, the reason names where it was raised."""
        if isinstance(exc, SpiderOutputError):
            log.error("%s", exc)
            return SpiderFailure(reason=f"spider output: {exc}"[:SPIDER_ERROR_MAX])
        log.exception("spider %s failed on %s", self.spider.name, url)
        return SpiderFailure(
            reason=spider_error_reason(exc, where_raised(exc)),
            traceback="".join(traceback.format_exception(exc)),
        )


def _add_task(
    parsed: Parsed,
    fp: str,
    url: str,
    refusal: Callable[[str, int], str | None],
    depth: int,
    parent: str,
    *,
    spec: RequestSpec | None = None,
    priority: int = 0,
) -> None:
    """``url`` into ``parsed.fresh`` as the task ``fp``, unless the scope's ``refusal``
    gives a reason at ``depth``: then it is counted as dropped, by that reason."""
    if (why := refusal(url, depth)) is not None:
        parsed.drop(why)
        return
    parsed.fresh[fp] = Task(
        task_id=fp,
        url=url,
        site=site_of(url),
        depth=depth,
        priority=priority,
        parent_task_id=parent,
        spec=spec,
        run=parsed.run,
    )


class _Progress:
    """`TaskProgress` for the task of ``lease`` on its page ``page`` (fetched from ``url``),
    resumed from ``last``: a checkpoint saved here resumes at this page again."""

    def __init__(
        self, scraper: Scraper, lease: Lease, url: str, page: int, last: CheckpointSaved | None
    ) -> None:
        self._scraper, self._lease, self._url, self._page = scraper, lease, url, page
        self._counts = last.counts if last is not None else Counts()
        self._recent = last.recent_pages if last is not None else ()

    async def save(self, state: str, items: Sequence[Item]) -> None:
        scraper, task = self._scraper, self._lease.task
        written = [
            ItemScraped(actor=scraper.name, task_id=task.task_id, key=i.key, data=i.data)
            for i in items
        ]
        c = self._counts
        self._counts = Counts(pages=c.pages, items=c.items + len(items), bytes=c.bytes)
        saved = CheckpointSaved(
            actor=scraper.name,
            task_id=task.task_id,
            attempt=task.attempt,
            # The page before this one: a resume fetches this page again, then recovers.
            cursor=Cursor(page=self._page - 1, url=self._url, state=state),
            counts=self._counts,
            recent_pages=self._recent,
        )
        await scraper.queue.checkpoint(self._lease, saved, before=written)

    async def mark(self, action_id: str) -> ActionMark | None:
        task = self._lease.task
        state = await self._scraper.queue.action_state(task.task_id, action_id)
        if state is None and done_before(task, action_id):
            return "done"  # on this page, by an earlier run
        return state

    async def intend(self, action_id: str) -> None:
        scraper, task_id = self._scraper, self._lease.task.task_id
        intent = ActionIntended(actor=scraper.name, task_id=task_id, action_id=action_id)
        await scraper.queue.note(self._lease, [intent], action=(action_id, "intended"))

    async def done(self, action_id: str, result: str | None = None) -> None:
        scraper, task_id = self._scraper, self._lease.task.task_id
        done = ActionDone(actor=scraper.name, task_id=task_id, action_id=action_id, result=result)
        await scraper.queue.note(self._lease, [done], action=(action_id, "done"))

    async def ask(self, action_id: str, reason: str, evidence: Evidence | None = None) -> None:
        await self._scraper._pause_uncertain(self._lease, action_id, reason, evidence)
        raise UncertainAction(f"{reason} (task {self._lease.task.task_id})")


class SpiderFailure(msgspec.Struct, frozen=True, kw_only=True):
    """How a task fails on a spider's exception: its reason, and the traceback its
    evidence keeps (None for an output crawlog cannot take: the reason says it all)."""

    reason: str
    traceback: str | None = None


Frame: TypeAlias = tuple[str, int, str]
"""A frame of a traceback: its file, its line, its function."""

_CRAWLOG_DIRS: Final = tuple(
    str(Path(__file__).resolve().parent.parent / package) + os.sep
    for package in ("crawler", "eventlog", "projector")
)
_LIBRARY_DIRS: Final = tuple(
    {
        str(Path(path).resolve()) + os.sep
        for key in ("stdlib", "platstdlib", "purelib", "platlib")
        if (path := sysconfig.get_paths().get(key))
    }
)


def spider_frame(
    frames: Sequence[Frame], crawlog: Sequence[str], libraries: Sequence[str]
) -> Frame | None:
    """Where the spider's own code raised, of a traceback's ``frames`` (outermost first):
    the innermost frame in neither crawlog's files (under ``crawlog``) nor Python's or an
    installed library's (under ``libraries``); failing that, the innermost one that is not
    crawlog's; None if every one is."""
    outside = [f for f in frames if not f[0].startswith(tuple(crawlog))]
    own = [f for f in outside if not f[0].startswith(tuple(libraries))]
    found = own or outside
    return found[-1] if found else None


def where_raised(exc: BaseException) -> str | None:
    """``FILE:LINE in FUNCTION`` of the spider's frame that raised ``exc`` (`spider_frame`),
    the file by its name; None if crawlog itself raised it."""
    frames = [(f.filename, f.lineno or 0, f.name) for f in traceback.extract_tb(exc.__traceback__)]
    found = spider_frame(frames, _CRAWLOG_DIRS, _LIBRARY_DIRS)
    if found is None:
        return None
    file, line, function = found
    return f"{Path(file).name}:{line} in {function}"


def spider_error_reason(exc: BaseException, where: str | None) -> str:
    """A task's failure reason for the spider's exception ``exc`` raised at ``where``:
    ``spider error: KeyError: 'price' at myspider.py:42 in parse``, at most
    `SPIDER_ERROR_MAX` characters, the message cut before the place is."""
    suffix = "" if where is None else f" at {where}"
    reason = f"spider error: {type(exc).__name__}: {exc}"
    return reason[: max(SPIDER_ERROR_MAX - len(suffix), 0)] + suffix[:SPIDER_ERROR_MAX]


async def _numbered(item: Item) -> AsyncIterator[tuple[int, Item]]:
    """``item`` as `spider_outputs` gives a spider's first output."""
    yield 0, item
