"""A spider's ``start_requests()``: its first tasks, made by code rather than listed.

::

    class Shop(Spider):
        start_urls = ["https://shop.example/"]       # the crawl's scope, as ever

        async def start_requests(self):
            for n in range(1, 1001):
                yield Follow(f"https://shop.example/item/{n}", callback="parse_item")

``crawlog crawl`` runs it once per job, in the crawl process, before it starts the workers,
beside the seeds (``start_urls`` or SEED URLs, which still give the crawl its scope). Each
output must be a `Follow` (a URL string is taken as a plain one), of an absolute http(s)
URL; it becomes a task at depth 0, as a seed, and is enqueued whether or not the scope
takes it, as seeds are. Its position is checkpointed: every `START_BATCH` Follows are
enqueued together, then their count is saved with the job
(`eventlog.save_start_requests_done`). A crawl killed meanwhile and run again skips the
Follows already enqueued (the generator is run from its start and those outputs passed
over, not enqueued again), and a batch enqueued but not yet counted is enqueued again as
no-ops (the job's ``seen`` set): each start request is enqueued, and crawled, once. The
generator must therefore yield the same Follows in the same order when run again.

``crawlog recrawl`` runs it again for each run (`enqueue_run_start_requests`): what no
earlier run had is a task of the run.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Container
from typing import Any, Final

from msgspec.structs import replace

from crawler._job import JobConfig
from crawler._recrawl import run_fingerprint
from crawler._spider import Follow, Spider, SpiderOutputError, check_callback, check_output
from crawler._urls import check_seed_url, fingerprint, request_fingerprint, site_of
from eventlog import Task, TaskQueue, save_start_requests_done, start_requests_done

START_BATCH: Final = 100
"""Start requests enqueued, and their count saved, together."""
START_PRIORITY: Final = 1
"""A start request's priority unless its Follow sets one: a seed's."""
WHERE: Final = "start_requests()"


def start_requests_of(spider: Spider) -> Callable[[], AsyncIterator[Any]] | None:
    """The spider's ``start_requests`` (an async generator function), None without one;
    ``ConfigError``-like `SpiderOutputError` for one that is not async."""
    method = getattr(spider, "start_requests", None)
    if method is None:
        return None
    if not inspect.isasyncgenfunction(method):
        raise SpiderOutputError(
            f"spider {spider.name}: start_requests must be an async generator "
            "(async def start_requests(self): ... yield Follow(url))"
        )
    return method  # type: ignore[no-any-return]


def start_task(spider: Spider, output: object, index: int) -> Task:
    """The task of the ``index``-th output of ``start_requests``: a seed's, with the
    Follow's request (callback, method, body, headers, data) when it has one."""
    if isinstance(output, str):
        output = Follow(output)
    if not isinstance(output, Follow):
        raise SpiderOutputError(
            f"spider {spider.name}: {WHERE} output {index} is {type(output).__name__}: "
            "expected a Follow (or a URL)"
        )
    checked = check_output(output, spider=spider.name, url=WHERE, index=index)
    assert isinstance(checked, Follow)
    url = check_seed_url(checked.url)
    spec = checked.spec()
    if spec is not None and spec.callback is not None:
        check_callback(spider, spec.callback)
    task_id = fingerprint(url) if spec is None else request_fingerprint(url, spec.method, spec.body)
    priority = checked.priority if checked.priority else START_PRIORITY
    return Task(task_id=task_id, url=url, site=site_of(url), priority=priority, spec=spec)


class _Batches:
    """Start requests enqueued `START_BATCH` at a time under the job's ``--max-pages``: how
    many were new, and how many the bound refused."""

    def __init__(self, queue: TaskQueue, config: JobConfig, actor: str) -> None:
        self.queue, self.cap, self.actor = queue, config.max_pages, actor
        self.batch: list[Task] = []
        self.new = self.past = 0

    def full(self) -> bool:
        return len(self.batch) >= START_BATCH

    async def flush(self) -> None:
        if self.batch:
            added, refused = await self.queue.enqueue_within(
                self.batch, actor=self.actor, cap=self.cap
            )
            self.new, self.past, self.batch = self.new + sum(added), self.past + refused, []


async def enqueue_start_requests(
    queue: TaskQueue, config: JobConfig, spider: Spider, *, actor: str
) -> tuple[int, int, int, int]:
    """Run the spider's ``start_requests`` on from the job's saved position, enqueueing
    its Follows in batches and saving the position after each; (new tasks, start requests
    in all, those a crawl of the job enqueued before, those ``--max-pages`` refused).
    (0, 0, 0, 0) for a spider without one."""
    produce = start_requests_of(spider)
    if produce is None:
        return 0, 0, 0, 0
    done = await start_requests_done(queue.redis, queue.keys)
    batches = _Batches(queue, config, actor)
    index = 0

    async def flush() -> None:
        await batches.flush()
        await save_start_requests_done(queue.redis, queue.keys, index)

    async for output in produce():
        index += 1
        if index <= done:
            continue  # enqueued by a crawl of this job before
        batches.batch.append(start_task(spider, output, index - 1))
        if batches.full():
            await flush()
    if index > done:
        await flush()
    return batches.new, index, min(done, index), batches.past


async def enqueue_run_start_requests(
    queue: TaskQueue,
    config: JobConfig,
    spider: Spider,
    *,
    actor: str,
    run: int,
    known: Container[str],
) -> tuple[int, int, int]:
    """Run the spider's ``start_requests`` again for ``run`` (a recrawl's) and enqueue, as
    tasks of that run, the requests no earlier run had (``known``: their keys; those are
    revisited, or were found gone); (new tasks, start requests in all, those
    ``--max-pages`` refused). Not checkpointed: a rerun of the run goes through them again,
    its enqueues no-ops for what is enqueued already (the run's ``seen`` set)."""
    produce = start_requests_of(spider)
    if produce is None:
        return 0, 0, 0
    batches = _Batches(queue, config, actor)
    made = 0
    async for output in produce():
        task = start_task(spider, output, made)
        made += 1
        if task.task_id in known:
            continue
        batches.batch.append(replace(task, task_id=run_fingerprint(task.task_id, run), run=run))
        if batches.full():
            await batches.flush()
    await batches.flush()
    return batches.new, made, batches.past
