"""A job's runs past the first (``crawlog recrawl``): what a revisit asks, what it found.

A run's tasks are the pages an earlier run reached, each with the validators of its last
fetch (`revisit_tasks`); its worker asks for a page with them (`conditional_headers`) and
says what it found (`change_of`). A run's task ids are the first run's fingerprints hashed
with the run number (`run_fingerprint`), so the job's one ``seen`` set dedups within a run
and never across runs, and the fold sees each run's visit of a page as its own task.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from hashlib import blake2b
from typing import Final

from selectolax.lexbor import LexborHTMLParser, SelectolaxError

from crawler._urls import FINGERPRINT_BYTES, request_fingerprint
from eventlog import (
    FIRST_RUN,
    ActionDone,
    ActionResolved,
    AnyEvent,
    Change,
    ConfigError,
    PageFetched,
    Task,
    TaskAborted,
    TaskDone,
    TaskEnqueued,
    TaskEvent,
    TaskFailed,
    TaskRetried,
    Validators,
)

BODY_HASH_BYTES: Final = 16
"""Digest size of a body's hash: 128 bits, no two bodies of a site share one by chance."""
GONE_STATUSES: Final = frozenset({404, 410})
"""What a revisited page answers once it is no more."""
NOT_MODIFIED: Final = 304
UNCHANGED: Final = "unchanged"
"""The reason a revisit's task ends with when the page was as before (not parsed)."""


def body_hash(body: bytes) -> str:
    """The hash of a page's body a fetch records (`PageFetched.body_hash`)."""
    return blake2b(body, digest_size=BODY_HASH_BYTES).hexdigest()


@dataclass(frozen=True, slots=True)
class ChangeRule:
    """What of a page a recrawl compares, as its spider says (``Spider.change_region``,
    ``Spider.change_ignore``): the HTML of the elements a CSS selector matches (the whole
    body where none match), without what the regular expressions match."""

    region: str | None = None
    ignore: tuple[re.Pattern[bytes], ...] = ()

    def content(self, body: bytes) -> bytes:
        """The part of ``body`` that is compared (and hashed)."""
        if self.region is not None:
            nodes = LexborHTMLParser(body).css(self.region)
            if nodes:
                body = "\n".join(node.html or "" for node in nodes).encode()
        for pattern in self.ignore:
            body = pattern.sub(b"", body)
        return body


def spider_change_rule(spider: object) -> ChangeRule | None:
    """The rule of ``spider``'s ``change_region`` and ``change_ignore`` (a spider class
    that is no `Spider` subclass may have neither)."""
    return change_rule(getattr(spider, "change_region", None), getattr(spider, "change_ignore", ()))


def change_rule(region: str | None, ignore: Sequence[str]) -> ChangeRule | None:
    """The rule a spider's ``change_region`` and ``change_ignore`` make (None: the whole
    body); ConfigError, saying which, for a selector or expression that does not compile."""
    if region is None and not ignore:
        return None
    if not (region is None or isinstance(region, str)) or isinstance(ignore, str):
        raise ConfigError(
            "the spider's change_region is a CSS selector (a str) and its change_ignore a "
            "sequence of regular expressions (not one str)"
        )
    patterns = []
    for expression in ignore:
        try:
            patterns.append(re.compile(expression.encode()))
        except re.error as exc:
            raise ConfigError(f"the spider's change_ignore {expression!r}: {exc}") from None
    if region is not None:
        try:
            LexborHTMLParser("<p></p>").css(region)
        except (SelectolaxError, ValueError) as exc:
            raise ConfigError(f"the spider's change_region {region!r}: {exc}") from None
    return ChangeRule(region=region, ignore=tuple(patterns))


def run_fingerprint(fingerprint: str, run: int) -> str:
    """The task id (and ``seen`` key) of a request in ``run``: the first run's own
    fingerprint, else that hashed with the run (the same length, so ``seen`` buckets it
    as exactly)."""
    if run == FIRST_RUN:
        return fingerprint
    keyed = f"{fingerprint} run {run}".encode()
    return blake2b(keyed, digest_size=FINGERPRINT_BYTES).hexdigest()


def conditional_headers(revisit: Validators | None) -> dict[str, str]:
    """The headers that make a revisit conditional: none for a first visit."""
    if revisit is None:
        return {}
    headers: dict[str, str] = {}
    if revisit.etag is not None:
        headers["If-None-Match"] = revisit.etag
    if revisit.last_modified is not None:
        headers["If-Modified-Since"] = revisit.last_modified
    return headers


def change_of(
    task: Task,
    status: int,
    new_hash: str | None,
    *,
    moved: bool = False,
    landed: str | None = None,
) -> Change | None:
    """What a run past the first found of a task's page: None in the first run, or for an
    answer that says nothing about the page (a 5xx, no response: the task is retried).

    ``moved``: the URL now redirects to a page another task fetches, or out of the crawl's
    scope. A page that had content of its own (a 2xx last time) is gone from it: its items
    are removed, and the page it redirects to is its own task's. A redirect it already was
    is no verdict, nor is a new one (it is not a page).

    ``landed``: where a redirect took this fetch (None: the task's own URL). A page found
    at another URL than the last time is changed, whatever its body: parsed, its items are
    those of the URL it is at now (`projector.page_changes` lists the move as the old URL
    gone and the new one new)."""
    if task.run == FIRST_RUN:
        return None
    revisit = task.revisit
    if moved:
        return "gone" if revisit is not None and had_content(revisit.status) else None
    if (
        revisit is not None
        and 200 <= status < 300
        and had_content(revisit.status)
        and landed != revisit.landed
    ):
        return "changed"
    if revisit is None:
        return "new" if 200 <= status < 400 and status != NOT_MODIFIED else None
    if status == NOT_MODIFIED:
        return "unchanged"
    if status in GONE_STATUSES:
        return "gone"
    if 200 <= status < 300:
        return "unchanged" if new_hash == revisit.body_hash else "changed"
    return None


def done_before(task: Task, action_id: str) -> bool:
    """Whether an earlier run's visit of a revisit's page did ``response.once``'s
    ``action_id`` (`Validators.actions_done`)."""
    return task.revisit is not None and action_id in task.revisit.actions_done


def pages_before(task: Task) -> int:
    """How many pages of a revisit any earlier run fetched (0: none, a first visit)."""
    return task.revisit.pages if task.revisit is not None else 0


def landed_before(task: Task) -> str | None:
    """Where a revisit's earlier fetch landed, if a redirect took it elsewhere."""
    return task.revisit.landed if task.revisit is not None else None


def had_content(status: int) -> bool:
    """Whether a fetch of ``status`` found a page of its own: a 2xx, or a 304 (its earlier
    content as it was), not a redirect (nor 0: a status not recorded)."""
    return 200 <= status < 300 or status == NOT_MODIFIED


def fetched_validators(
    task: Task,
    status: int,
    headers: dict[str, str],
    body: bytes,
    rule: ChangeRule | None = None,
    *,
    hashed: str | None = None,
) -> Validators:
    """What a fetch records of its page: a 304 keeps the earlier body's hash (and any
    validator the 304 does not repeat); ``rule``: what of the body is hashed; ``hashed``:
    `body_hash` of the whole body, if the caller has it already (used without a rule)."""
    etag, modified = headers.get("etag"), headers.get("last-modified")
    if status == NOT_MODIFIED and task.revisit is not None:
        before = task.revisit
        return Validators(
            etag=etag or before.etag,
            last_modified=modified or before.last_modified,
            body_hash=before.body_hash,
        )
    if rule is None:
        digest = hashed if hashed is not None else body_hash(body)
    else:
        digest = body_hash(rule.content(body))
    return Validators(etag=etag, last_modified=modified, body_hash=digest)


def revisit_tasks(events: Iterable[AnyEvent], run: int) -> list[Task]:
    """The tasks of ``run``: every request an earlier run enqueued whose first page was
    answered and not gone (a 404 or 410, or a verdict ``gone``: moved away) the last time
    it was, once, as its latest run left it, with the validators of the latest content the
    crawl took in (a 2xx or 3xx, 304 included, fetched by a task that ended done), the URL
    that fetch landed on if a redirect took it elsewhere, the furthest of its pages any
    earlier run fetched, and the ``once`` actions any earlier run did on it (events in log
    order).

    A run in which a page got no answer (the site down, a timeout) or an error (a 5xx)
    neither drops it from the runs after nor gives them that error's validators: before,
    a page a run could not fetch was never revisited again, and one it got a 500 for was
    fetched in full next time and said changed. A page whose task failed after its fetch
    (its spider raised, a pipeline refused it) was not taken in: the revisit asks for it
    without validators, and parses it. Before, it was unchanged to every later run, so a
    page a spider's bug failed never had its items, the spider fixed or not."""
    enqueued: dict[str, TaskEnqueued] = {}
    latest: dict[str, str] = {}  # a request's key -> the task id of its latest run
    answered: dict[str, PageFetched] = {}  # a request's key -> its latest first-page answer
    fetched: dict[str, PageFetched] = {}  # a task id -> its latest first page with content
    taken: dict[str, PageFetched] = {}  # a request's key -> the latest one taken in
    key_of: dict[str, str] = {}  # a task id -> its request's key
    pages: dict[str, int] = {}  # a request's key -> the furthest page any run fetched
    done: dict[str, set[str]] = {}  # a request's key -> the once actions done on it
    for event in events:
        if isinstance(event, TaskEnqueued) and event.run < run:
            enqueued[event.task_id] = event
            key = request_key(event)
            latest[key] = event.task_id
            key_of[event.task_id] = key
        elif (
            isinstance(event, PageFetched)
            and event.run < run
            and event.status  # a response, not a network error
            and (fetched_key := key_of.get(event.task_id)) is not None
        ):
            if event.page <= 1:
                answered[fetched_key] = event
                if 200 <= event.status < 400:
                    fetched[event.task_id] = event
            pages[fetched_key] = max(pages.get(fetched_key, 1), event.page)
        elif (
            isinstance(event, TaskDone)
            and event.run < run
            and (page := fetched.get(event.task_id)) is not None
        ):
            key = key_of[event.task_id]
            # A page found as it was is taken in only if what it was is.
            if key in taken or (page.status != NOT_MODIFIED and page.change != UNCHANGED):
                taken[key] = page
        elif (
            isinstance(event, ActionDone | ActionResolved)
            and event.run < run
            and (action_key := key_of.get(event.task_id)) is not None
            and (isinstance(event, ActionDone) or event.decision == "done")
        ):
            done.setdefault(action_key, set()).add(event.action_id)
    tasks: list[Task] = []
    for key, task_id in latest.items():
        last = answered.get(key)
        if last is None or last.status in GONE_STATUSES or last.change == "gone":
            continue  # gone: a 404 or 410, or moved away (`change_of`)
        page = taken.get(key, _NOT_TAKEN_IN)
        event = enqueued[task_id]
        tasks.append(
            Task(
                task_id=run_fingerprint(key, run),
                url=event.url,
                site=event.site,
                depth=event.depth,
                priority=event.priority,
                spec=event.spec,
                request=event.request,
                run=run,
                revisit=Validators(
                    etag=page.etag,
                    last_modified=page.last_modified,
                    body_hash=page.body_hash,
                    status=page.status,
                    landed=page.url if page.url and page.url != event.url else None,
                    pages=pages.get(key, 1),
                    actions_done=tuple(sorted(done.get(key, ()))),
                ),
            )
        )
    return tasks


_NOT_TAKEN_IN: Final = PageFetched(actor="", task_id="", attempt=0, url="", status=0)
"""What a revisit of a page no task took in is asked with: no validators, no status."""


def known_requests(events: Iterable[AnyEvent], run: int) -> set[str]:
    """The keys of the requests the runs before ``run`` enqueued (their first run's task
    ids): what a recrawl revisits or found gone, not new to it."""
    known: set[str] = set()
    for event in events:
        if isinstance(event, TaskEnqueued) and event.run < run:
            known.add(request_key(event))
    return known


def request_key(event: TaskEnqueued) -> str:
    """The key of the request a task was enqueued for: its first run's task id, the same in
    every run (a run's task id is made from it, `run_fingerprint`)."""
    spec = event.spec
    method, body = ("GET", None) if spec is None else (spec.method, spec.body)
    return request_fingerprint(event.url, method, body)


def latest_run(events: Iterable[AnyEvent], *, recorded: int = FIRST_RUN) -> int:
    """The highest run the log has a task of, or ``recorded`` (the job's run record's) if
    higher: the record is lost with a store, and a run it started may have no task yet."""
    logged = max((e.run for e in events if isinstance(e, TaskEnqueued)), default=FIRST_RUN)
    return max(recorded, logged)


def run_ended(events: Sequence[AnyEvent], run: int) -> bool:
    """Whether the log shows ``run`` over: every page it revisits (`revisit_tasks`)
    enqueued in it, and every task of it ended (done, failed or aborted, and not retried
    since). What a run whose record the store lost (a flush, an evicted key) is judged
    by: taken as running whatever it was, a run that had ended was "finished" again with
    nothing to do, and the recrawl asked for never ran."""
    enqueued: set[str] = set()
    ended: dict[str, bool] = {}
    for event in events:
        if not isinstance(event, TaskEvent) or event.run != run:
            continue
        if isinstance(event, TaskEnqueued):
            enqueued.add(event.task_id)
            ended.setdefault(event.task_id, False)
        elif isinstance(event, TaskDone | TaskFailed | TaskAborted):
            ended[event.task_id] = True
        elif isinstance(event, TaskRetried):
            ended[event.task_id] = False
    if not all(ended.values()):
        return False
    return all(task.task_id in enqueued for task in revisit_tasks(events, run))
