"""When each page of a job is due for a revisit: intervals that learn, folded from the log.

Nothing keeps a next-due time: it is derived, like every state, from the log and the job's
`RevisitPolicy`. A page's first fetch gives it its first interval: the sitemap's
``changefreq`` if one listed it, else a share of the age its ``lastmod`` gives it (the
heuristic freshness of RFC 9111 §4.2.2), else the policy's interval. Each verdict of a later
run moves it: ``unchanged`` doubles it, ``changed`` halves it, within the policy's bounds;
``gone`` takes the page off the schedule. A page is due once its interval has passed since
the fetch that gave the verdict (`PageSchedule.due_at`). ``crawlog recrawl --due`` revisits
only the due pages; ``status`` and ``report`` say how many are due and when the next are.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Final

import msgspec

from eventlog import FIRST_RUN, AnyEvent, Change, PageFetched, RequestSpec, TaskEnqueued

MINUTE: Final = 60.0
HOUR: Final = 60 * MINUTE
DAY: Final = 24 * HOUR
DEFAULT_INTERVAL_S: Final = DAY
"""A page's first interval when no sitemap says how often it changes."""
DEFAULT_MIN_INTERVAL_S: Final = HOUR
DEFAULT_MAX_INTERVAL_S: Final = 30 * DAY
LASTMOD_SHARE: Final = 0.1
"""A page unchanged for a time is taken to stay so for this share of it (RFC 9111 §4.2.2)."""
CHANGEFREQ_S: Final[dict[str, float]] = {
    "always": 0.0,  # the policy's minimum
    "hourly": HOUR,
    "daily": DAY,
    "weekly": 7 * DAY,
    "monthly": 30 * DAY,
    "yearly": 365 * DAY,
    "never": math.inf,  # the policy's maximum
}
"""A sitemap's ``<changefreq>`` as an interval (clamped to the policy's bounds)."""
GONE_STATUSES: Final = frozenset({404, 410})
NEXT_SHOWN: Final = 5
"""Due times `due_summary` gives after ``now``."""

RequestKey = tuple[str, str, bytes | None]
"""A request across runs: its URL, method and body (a run's task ids differ by run)."""


class RevisitPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """How intervals start and the bounds they learn within, in seconds."""

    interval_s: float = DEFAULT_INTERVAL_S
    min_s: float = DEFAULT_MIN_INTERVAL_S
    max_s: float = DEFAULT_MAX_INTERVAL_S

    def clamp(self, interval_s: float) -> float:
        """``interval_s`` within the bounds (the minimum wins over a maximum below it)."""
        return max(self.min_s, min(self.max_s, interval_s))


class PageSchedule(msgspec.Struct, frozen=True, kw_only=True):
    """A page's place on the schedule: its last verdict's fetch and its interval since."""

    url: str
    fetched_at: float
    interval_s: float

    @property
    def due_at(self) -> float:
        """When the page is due for a revisit."""
        return self.fetched_at + self.interval_s


class DueSummary(msgspec.Struct, frozen=True, kw_only=True):
    """What ``status`` and ``report`` say of a job's schedule."""

    pages: int
    """Pages on the schedule (reached and not gone)."""
    due: int
    """Of them, those due now."""
    next_due: tuple[float, ...] = ()
    """The next (up to `NEXT_SHOWN`) due times after now, earliest first."""


def next_interval(policy: RevisitPolicy, interval_s: float, change: Change) -> float:
    """The interval after a revisit found ``change``: doubled if unchanged, halved if
    changed (within the bounds); as it was for any other verdict."""
    if change == "unchanged":
        return policy.clamp(interval_s * 2)
    if change == "changed":
        return policy.clamp(interval_s / 2)
    return policy.clamp(interval_s)


def first_interval(
    policy: RevisitPolicy, fetched_at: float, *, changefreq: str | None, lastmod: str | None
) -> float:
    """A page's interval after its first fetch: from its sitemap's ``changefreq``, else its
    ``lastmod`` (a share of its age then), else the policy's own."""
    if changefreq is not None and changefreq.strip().lower() in CHANGEFREQ_S:
        return policy.clamp(CHANGEFREQ_S[changefreq.strip().lower()])
    modified = _epoch(lastmod) if lastmod is not None else None
    if modified is not None and modified <= fetched_at:
        return policy.clamp((fetched_at - modified) * LASTMOD_SHARE)
    return policy.clamp(policy.interval_s)


def _epoch(lastmod: str) -> float | None:
    """A W3C datetime (a date, or a date and time; UTC if no zone) in Unix seconds."""
    try:
        at = datetime.fromisoformat(lastmod.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return (at if at.tzinfo is not None else at.replace(tzinfo=UTC)).timestamp()


def request_key(url: str, spec: RequestSpec | None) -> RequestKey:
    """The request a task is of, the same in every run."""
    return (url, "GET" if spec is None else spec.method, None if spec is None else spec.body)


class _Page(msgspec.Struct, kw_only=True):
    """A page as the fold has it: the interval before the run its latest verdict is of (a
    later verdict of that run replaces the earlier, not adds to it)."""

    url: str
    changefreq: str | None
    lastmod: str | None
    run: int = 0
    before_s: float | None = None
    schedule: PageSchedule | None = None


def schedules(
    events: Iterable[AnyEvent], policy: RevisitPolicy, *, before_run: int | None = None
) -> dict[RequestKey, PageSchedule]:
    """Every page's schedule from the log (events in log order; of runs before
    ``before_run`` only, if given): pure."""
    keys: dict[str, RequestKey] = {}
    pages: dict[RequestKey, _Page] = {}
    for event in events:
        if before_run is not None and getattr(event, "run", FIRST_RUN) >= before_run:
            continue
        if isinstance(event, TaskEnqueued):
            key = keys[event.task_id] = request_key(event.url, event.spec)
            if key not in pages:
                pages[key] = _Page(
                    url=event.url, changefreq=event.changefreq, lastmod=event.lastmod
                )
        elif isinstance(event, PageFetched) and event.page <= 1 and event.status:
            key_of = keys.get(event.task_id)
            if key_of is not None:
                _apply(pages[key_of], event, policy)
    return {key: page.schedule for key, page in pages.items() if page.schedule is not None}


def _apply(page: _Page, event: PageFetched, policy: RevisitPolicy) -> None:
    """Fold one first-page fetch into ``page``'s schedule."""
    if event.run != page.run:  # the first verdict of a run: what came before is settled
        page.before_s = None if page.schedule is None else page.schedule.interval_s
        page.run = event.run
    change = event.change
    if event.status in GONE_STATUSES and (change == "gone" or event.run == FIRST_RUN):
        page.schedule = None
        page.before_s = None
        return
    if change is None and event.run != FIRST_RUN:
        return  # a 5xx or no answer of a revisit: it says nothing of the page
    before = page.before_s
    if before is None or change == "new" or change is None:
        interval = first_interval(
            policy, event.at, changefreq=page.changefreq, lastmod=page.lastmod
        )
    else:
        interval = next_interval(policy, before, change)
    page.schedule = PageSchedule(url=page.url, fetched_at=event.at, interval_s=interval)


def is_due(schedule: PageSchedule | None, now: float) -> bool:
    """Whether a page is due at ``now`` (a page the schedule does not know is: it was never
    answered, and is tried again)."""
    return schedule is None or schedule.due_at <= now


def due_summary(pages: Iterable[PageSchedule], now: float) -> DueSummary:
    """How many of ``pages`` are due at ``now``, and the next due times after it."""
    count = due = 0
    later: list[float] = []
    for page in pages:
        count += 1
        if page.due_at <= now:
            due += 1
        else:
            later.append(page.due_at)
    return DueSummary(pages=count, due=due, next_due=tuple(sorted(later)[:NEXT_SHOWN]))
