"""Prometheus metrics of worker and projector processes (``--metrics-port``).

Every metric is defined here. The worker's are counted from what its queue wrote to the
log: :class:`QueueMetrics` is the observer of the worker's ``TaskQueue`` (a
``QueueObserver``), told of every fenced step with its time and the events it appended, so
a page is counted once its ``PageFetched`` reached the log, as the projector and the
reports count it, never twice for a step that was retried, and never for one refused
because the lease was lost. That also keeps the hot path's code
(``_worker.py``) free of metric calls.

The projector's are read from the projector and the stream every
:data:`PROJECTOR_UPDATE_S` seconds: how far the committed position is behind the log.

Each process serves its own registry on ``http://HOST:PORT/metrics`` from a daemon thread
(``prometheus_client``). The host is 127.0.0.1 unless ``--metrics-host`` says otherwise:
the metrics name the job, the worker and its failures, nothing for the network at large.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Sequence, Set
from typing import TYPE_CHECKING

import anyio
import redis.asyncio as aioredis
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    Info,
    start_http_server,
)
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector

from crawler._defaults import DEFAULT_METRICS_HOST as DEFAULT_METRICS_HOST
from eventlog import (
    ACKING_MODES,
    ConfigError,
    ControlEvent,
    Event,
    EventLog,
    ItemScraped,
    JobKeys,
    Lease,
    PageFetched,
    RetryScheduled,
    SettleMode,
    Task,
    TaskAborted,
    TaskDone,
    TaskFailed,
    TaskReclaimed,
    stream_id_key,
)

if TYPE_CHECKING:
    from projector import Projector

PROJECTOR_UPDATE_S = 0.5
APPEND_BUCKETS = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
)
"""Seconds; a fenced step on a local server takes about a millisecond."""
REASON_MAX = 60
ACKED_RENEWALS = 3
"""Renewal periods an entry acked by this worker is remembered for: a renewal sent before
its ack ran, or one still on its way, reports it gone."""
RECOVERY_LIMIT_REASON = "recovery limit"


def new_registry() -> CollectorRegistry:
    """A registry with the process, platform and GC collectors (what a scrape expects)."""
    registry = CollectorRegistry()
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    return registry


def serve(registry: CollectorRegistry, host: str, port: int) -> None:
    """Serve ``registry`` on http://host:port/metrics from a daemon thread.

    ``ConfigError`` (one line, exit 2) if the address cannot be bound.
    """
    try:
        start_http_server(port, addr=host, registry=registry)
    except OSError as exc:
        raise ConfigError(
            f"cannot serve metrics on {host}:{port} ({exc.strerror or exc}): "
            "pick another --metrics-port"
        ) from None


def _reason(text: str) -> str:
    # Reasons are short fixed strings ("HTTP 503", "read timeout"); the cap keeps a spider's
    # free-form reason from growing the label set without bound.
    return text[:REASON_MAX]


class WorkerMetrics:
    """The metrics of one worker process."""

    def __init__(self, registry: CollectorRegistry, *, job: str, worker: str) -> None:
        info = Info("crawlog_worker", "The job and name of this worker.", registry=registry)
        info.info({"crawl_job": job, "worker": worker})
        self.pages = Counter(
            "crawlog_pages_fetched",
            "Pages fetched (their PageFetched event is in the log).",
            registry=registry,
        )
        self.items = Counter(
            "crawlog_items_scraped",
            "Items scraped (ItemScraped events in the log).",
            registry=registry,
        )
        self.tasks_done = Counter(
            "crawlog_tasks_done", "Tasks this worker finished.", registry=registry
        )
        self.failures = Counter(
            "crawlog_task_failures",
            "Tasks that ended failed or aborted, by reason.",
            ["reason"],
            registry=registry,
        )
        self.retries = Counter(
            "crawlog_retries",
            "Retries scheduled (a failed fetch to try again), by reason.",
            ["reason"],
            registry=registry,
        )
        self.reclaims = Counter(
            "crawlog_reclaims",
            "Tasks taken over from a worker whose lease expired.",
            registry=registry,
        )
        self.enqueued = Counter(
            "crawlog_tasks_enqueued", "New tasks this worker enqueued.", registry=registry
        )
        self.renewals = Counter("crawlog_lease_renewals", "Leases renewed.", registry=registry)
        self.leases_lost = Counter(
            "crawlog_leases_lost",
            "Leases found taken by another worker on renewal.",
            registry=registry,
        )
        self.events = Counter(
            "crawlog_events_appended", "Events this process appended.", registry=registry
        )
        self.append_seconds = Histogram(
            "crawlog_event_append_seconds",
            "Latency of one atomic append step (its events in one script call), by step.",
            ["step"],
            buckets=APPEND_BUCKETS,
            registry=registry,
        )

    def appended(self, step: str, events: Sequence[Event], seconds: float) -> None:
        """Count what one append step wrote, and how long it took."""
        self.append_seconds.labels(step).observe(seconds)
        self.events.inc(len(events))
        for event in events:
            if isinstance(event, PageFetched):
                self.pages.inc()
            elif isinstance(event, ItemScraped):
                self.items.inc()
            elif isinstance(event, TaskDone):
                self.tasks_done.inc()
            elif isinstance(event, TaskFailed):
                self.failures.labels(_reason(event.reason)).inc()
            elif isinstance(event, TaskAborted):
                self.failures.labels(RECOVERY_LIMIT_REASON).inc()
            elif isinstance(event, RetryScheduled):
                self.retries.labels(_reason(event.reason)).inc()
            elif isinstance(event, TaskReclaimed):
                self.reclaims.inc()


class QueueMetrics:
    """The `QueueObserver` of a worker's queue: what it appends, and its renewals, counted
    into ``metrics``."""

    def __init__(self, metrics: WorkerMetrics) -> None:
        self.metrics = metrics
        self._acked: deque[set[str]] = deque(
            [set() for _ in range(ACKED_RENEWALS)], maxlen=ACKED_RENEWALS
        )
        """Entries the queue acked, by renewal period (the last: since the last renewal
        came back): a renewal that finds them gone lost nothing."""

    def settling(self, mode: SettleMode, lease: Lease) -> None:
        """Note an entry the step acks before its script runs: a renewal sent meanwhile
        may find it acked."""
        if mode in ACKING_MODES:
            self._acked[-1].add(lease.entry_id)

    def settled(
        self, mode: SettleMode, lease: Lease, events: Sequence[Event], seconds: float
    ) -> None:
        """Count what a fenced step (checkpoint, finish, requeue, delay, park, note) wrote;
        one that raised (lease lost, site resumed) wrote nothing and is not counted."""
        self.metrics.appended(mode, events, seconds)

    def enqueued(self, tasks: Sequence[Task], new: Sequence[bool], seconds: float) -> None:
        """Count the new tasks and time the step."""
        self.metrics.append_seconds.labels("enqueue").observe(seconds)
        added = sum(new)
        self.metrics.enqueued.inc(added)
        self.metrics.events.inc(added)

    def controlled(self, event: ControlEvent, seconds: float) -> None:
        """Count a control event and time it."""
        self.metrics.appended("control", [event], seconds)

    def recovered(self, events: Sequence[TaskReclaimed | TaskAborted], seconds: float) -> None:
        """Count the events of the leases a recovery pass moved (reclaims, aborts)."""
        self.metrics.appended("recover", events, seconds)

    def renewed(self, leases: Sequence[Lease], lost: Set[str], seconds: float) -> None:
        """Count renewals and losses."""
        # An entry this worker acked itself while the renewal was on its way (its task
        # ended) is reported gone by the script, and is no lease taken by another worker.
        taken = set(lost).difference(*self._acked)
        self._acked.append(set())
        self.metrics.renewals.inc(len(leases) - len(lost))
        self.metrics.leases_lost.inc(len(taken))


class ProjectorMetrics:
    """The metrics of one projector process."""

    def __init__(self, registry: CollectorRegistry, *, job: str) -> None:
        info = Info("crawlog_projector", "The job of this projector.", registry=registry)
        info.info({"crawl_job": job})
        self.keys = JobKeys(job)
        self.lag_events = Gauge(
            "crawlog_projector_lag_events",
            "Events in the log that the projector has not committed yet.",
            registry=registry,
        )
        self.lag_seconds = Gauge(
            "crawlog_projector_lag_seconds",
            "Age of the oldest event not committed yet (0 when caught up).",
            registry=registry,
        )
        self.committed = Gauge(
            "crawlog_projector_committed_events",
            "Events committed (archived) so far.",
            registry=registry,
        )
        self.position = Gauge(
            "crawlog_projector_position_timestamp_seconds",
            "Time of the committed position (its stream ID's milliseconds).",
            registry=registry,
        )

    async def update(self, redis: aioredis.Redis, committed: str, archived: int) -> None:
        """Set the gauges for committed position ``committed`` (``archived`` events)."""
        self.committed.set(archived)
        self.position.set(stream_id_key(committed)[0] / 1000)
        log = EventLog(redis, self.keys)
        info = await log.stream_info()
        added, last = (info.entries_added, info.last_id) if info else (0, None)
        if last is None or stream_id_key(last) <= stream_id_key(committed):
            self.lag_events.set(0)
            self.lag_seconds.set(0)
            return
        # Every entry ever added is archived once committed (trimming never runs ahead of
        # the commit); entries dead-lettered as undecodable are the exception, and count
        # as lag until the projector has committed past the end of the log.
        self.lag_events.set(max(added - archived, 1))
        oldest = await log.first_id(after=committed)
        if oldest is not None:
            entry_ms = stream_id_key(oldest)[0]
            self.lag_seconds.set(max(time.time() - entry_ms / 1000, 0.0))

    async def watch(self, redis: aioredis.Redis, projector: Projector) -> None:
        """Update every :data:`PROJECTOR_UPDATE_S` from the projector's last commit."""
        while True:
            manifest = projector.manifest
            await self.update(redis, manifest.position, manifest.events)
            await anyio.sleep(PROJECTOR_UPDATE_S)
