"""Replay's columnar fast path: the tasks of a segment whose events are the plain sequence,
found from the archive's typed columns with Arrow, and folded without their handlers.

A task is *plain* in a slice of a segment when its events there are exactly
``TaskEnqueued``, ``TaskClaimed``, ``PageFetched``, zero or more ``ItemScraped``, and
``TaskDone``, in that order, each once (items any number), and nothing the fold shares
between tasks can tell it apart from a task folded event by event:

- the task is neither in the state nor among the stored tasks (so its enqueue is no
  anomaly, and no earlier event of it exists);
- its page is not a refetch (page number 0 or more: nothing was fetched before);
- each of its item keys is scraped by no other row of the slice and is not in the state's
  item keys (so each counts, and counts for no other task);
- the caller adds the whole slice's event ids to the dedup windows first (``mark_new``),
  and takes this path only if none is a repeat.

Such a task's handlers read nothing another event writes but the counts they add to (its
site's and the job's, sums that commute) and ``state.position`` (which none of them
reads), and no other event reads what they write, so it may be folded before the rest of
the slice, which the Python fold folds in log order. Its ``TaskEnqueued``, ``PageFetched``
and ``TaskDone`` are decoded (fields the columns lack: the request, the counts, the URLs
dropped); the claim and the items are read from the columns alone.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from eventlog import (
    AnyEvent,
    ItemScraped,
    PageFetched,
    TaskClaimed,
    TaskDone,
    TaskEnqueued,
    tag_of,
)
from projector._archive import ArchiveCorrupt
from projector._fold import HTTP_ERROR
from projector._state import DONE, PENDING, RUNNING, SiteState, State, TaskState

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.compute as pc
else:
    from projector._arrow import pa, pc

_SEQUENCE: Final = (TaskEnqueued, TaskClaimed, PageFetched, ItemScraped, TaskDone)
ENQUEUED, CLAIMED, PAGE, ITEM, DONE_AT = range(len(_SEQUENCE))
COLUMNS: Final = ("stream_id", "type", "event_id", "task_id", "page", "deliveries", "key")
"""The columns the fast path reads, besides the payloads."""


def _null(of: pa.DataType) -> pa.Scalar:
    return pa.scalar(None, of)


class PlainTasks(NamedTuple):
    """The plain tasks of a slice (rows counted from its start), task by task."""

    task_ids: list[str]
    enqueued: list[int]
    pages: list[int]
    done: list[int]
    deliveries: list[int]
    items: list[int]
    keys: list[str]
    """Their item keys, each once."""
    rest: pa.Array
    """The rows of every other event, in log order."""


def plain_tasks(
    table: pa.Table, item_keys: Collection[str], known: Callable[[list[str]], Collection[str]]
) -> PlainTasks | None:
    """The plain tasks of ``table`` (a slice of a segment with ``COLUMNS``), or None if it
    has none. ``known`` gives those of some task ids that may be in the state or the
    stored tasks."""
    n = table.num_rows
    rows = pa.array(range(n), pa.int64())
    tags = pa.array([tag_of(t) for t in _SEQUENCE], pa.string())
    code = pc.index_in(table.column("type"), value_set=tags)
    key = table.column("key")
    is_item = pc.fill_null(pc.equal(code, ITEM), False)
    item_keys_col = pc.filter(key, is_item)
    counted = pa.table({"key": item_keys_col}).group_by("key").aggregate([("key", "count")])
    shared = pc.filter(counted.column("key"), pc.greater(counted.column("key_count"), 1))
    shared = shared.combine_chunks()
    columns: dict[str, pa.Array | pa.ChunkedArray] = {
        "task_id": table.column("task_id"),
        "row": rows,
        "shared": pc.cast(pc.and_(is_item, pc.is_in(key, value_set=shared)), pa.int8()),
        "page_no": pc.if_else(pc.equal(code, PAGE), table.column("page"), _null(pa.int32())),
    }
    for c in range(len(_SEQUENCE)):
        columns[f"r{c}"] = pc.if_else(pc.equal(code, c), rows, _null(pa.int64()))
    aggregates = [("row", "count"), ("shared", "max"), ("page_no", "min"), (f"r{ITEM}", "max")]
    for c in range(len(_SEQUENCE)):
        aggregates += [(f"r{c}", "count"), (f"r{c}", "min")]
    g = pa.table(columns).group_by("task_id").aggregate(aggregates)
    g = g.filter(pc.is_valid(g.column("task_id")))
    once = [pc.equal(g.column(f"r{c}_count"), 1) for c in (ENQUEUED, CLAIMED, PAGE, DONE_AT)]
    items = g.column(f"r{ITEM}_count")
    first = {c: g.column(f"r{c}_min") for c in range(len(_SEQUENCE))}
    conditions = [
        *once,
        pc.equal(g.column("row_count"), pc.add(items, 4)),
        pc.less(first[ENQUEUED], first[CLAIMED]),
        pc.less(first[CLAIMED], first[PAGE]),
        pc.less(first[PAGE], first[DONE_AT]),
        pc.fill_null(pc.less(first[PAGE], first[ITEM]), True),
        pc.fill_null(pc.less(g.column(f"r{ITEM}_max"), first[DONE_AT]), True),
        pc.greater_equal(g.column("page_no_min"), 0),
        pc.equal(pc.fill_null(g.column("shared_max"), 0), 0),
    ]
    plain = conditions[0]
    for condition in conditions[1:]:
        plain = pc.and_(plain, condition)
    g = g.filter(pc.fill_null(plain, False))
    if not g.num_rows:
        return None
    return _chosen(table, g, code, item_keys, known)


def _chosen(
    table: pa.Table,
    g: pa.Table,
    code: pa.ChunkedArray,
    item_keys: Collection[str],
    known: Callable[[list[str]], Collection[str]],
) -> PlainTasks | None:
    """The candidates ``g`` less those the state or its item keys rule out."""
    task_ids = table.column("task_id")
    is_item = pc.fill_null(pc.equal(code, ITEM), False)
    candidates = g.column("task_id").combine_chunks()
    ruled_out = set(known(candidates.to_pylist()))
    if item_keys:
        item_rows = pc.and_(is_item, pc.is_in(task_ids, value_set=candidates))
        for task_id, key in zip(
            pc.filter(task_ids, item_rows).to_pylist(),
            pc.filter(table.column("key"), item_rows).to_pylist(),
            strict=True,
        ):
            if key in item_keys:
                ruled_out.add(task_id)
    if ruled_out:
        g = g.filter(pc.invert(pc.is_in(candidates, value_set=pa.array(ruled_out, pa.string()))))
        if not g.num_rows:
            return None
        candidates = g.column("task_id").combine_chunks()
    in_plain = pc.fill_null(pc.is_in(task_ids, value_set=candidates), False)
    claims = g.column(f"r{CLAIMED}_min")
    return PlainTasks(
        task_ids=candidates.to_pylist(),
        enqueued=g.column(f"r{ENQUEUED}_min").to_pylist(),
        pages=g.column(f"r{PAGE}_min").to_pylist(),
        done=g.column(f"r{DONE_AT}_min").to_pylist(),
        deliveries=pc.take(table.column("deliveries"), claims).to_pylist(),
        items=g.column(f"r{ITEM}_count").to_pylist(),
        keys=pc.filter(table.column("key"), pc.and_(in_plain, is_item)).to_pylist(),
        rest=pc.indices_nonzero(pc.invert(in_plain)),
    )


def taken(column: pa.ChunkedArray, rows: Sequence[int]) -> list[Any]:
    """The values of ``column`` at ``rows`` (ascending) as Python objects, taken chunk by
    chunk: a take from a column of many chunks of variable-width values joins the whole
    column into fresh memory first, and the page faults of that copy cost more (in system
    time) than the take itself."""
    values: list[Any] = []
    start = at = 0
    for chunk in column.chunks:
        stop = start + len(chunk)
        end = bisect_left(rows, stop, at)
        if end > at:
            wanted = pc.subtract(pa.array(rows[at:end], pa.int64()), start)
            values += chunk.take(wanted).to_pylist()
            at = end
        start = stop
    return values


def taken_in_order(column: pa.ChunkedArray, rows: pa.Array) -> list[Any]:
    """``taken`` for rows in any order: taken in ascending order, then put back in
    ``rows``'s."""
    order = pc.sort_indices(rows)
    ascending = taken(column, rows.take(order).to_pylist())
    # Where each row went in the ascending order: the inverse of the permutation ``order``.
    return list(map(ascending.__getitem__, pc.sort_indices(order).to_pylist()))


def fold_plain(
    state: State,
    plain: PlainTasks,
    enqueued: Sequence[AnyEvent],
    pages: Sequence[AnyEvent],
    done: Sequence[AnyEvent],
    where: str,
) -> None:
    """Fold the plain tasks (their decoded enqueue, page and done, in ``plain``'s order)
    into ``state``, as their handlers would; ``ArchiveCorrupt`` (naming ``where``) if a
    payload is not the event its columns say."""
    tasks, sites, job = state.tasks, state.sites, state.job
    job_counts = job.tasks
    for task_id, enq, page, end, deliveries, items in zip(
        plain.task_ids, enqueued, pages, done, plain.deliveries, plain.items, strict=True
    ):
        if not (
            isinstance(enq, TaskEnqueued)
            and isinstance(page, PageFetched)
            and isinstance(end, TaskDone)
            and enq.task_id == page.task_id == end.task_id == task_id
        ):
            raise ArchiveCorrupt(f"archive segment {where}: task {task_id}'s columns and "
                                 "payloads name different events")  # fmt: skip
        site = sites.get(enq.site)
        if site is None:
            site = sites[enq.site] = SiteState(site=enq.site)
        good = page.error is None and 0 < page.status < HTTP_ERROR
        dropped = 0
        for reason, count in page.dropped.items():
            dropped += count
            site.dropped[reason] = site.dropped.get(reason, 0) + count
            job.dropped[reason] = job.dropped.get(reason, 0) + count
        for reason, count in page.items_dropped.items():
            job.items_dropped[reason] = job.items_dropped.get(reason, 0) + count
        tasks[task_id] = TaskState(
            task_id=task_id,
            url=enq.url,
            site=enq.site,
            depth=enq.depth,
            parent_task_id=enq.parent_task_id,
            status=DONE,
            attempt=end.attempt,
            last_actor=end.actor,
            last_reason=end.reason,
            last_error=page.error,
            counts=end.counts,
            pages_fetched=1,
            bytes=page.bytes,
            items=items,
            deliveries=deliveries,
            enqueued_at=enq.at,
            updated_at=end.at,
            furthest_page=page.page if good else -1,
            dropped=dropped,
            spec=enq.spec,
            request=enq.request,
            run=enq.run,
            revisit=enq.revisit,
        )
        for counts in (site.tasks, job_counts):
            # Through pending and running to done: both stay, at the count they had.
            counts[PENDING] = counts.get(PENDING, 0)
            counts[RUNNING] = counts.get(RUNNING, 0)
            counts[DONE] = counts.get(DONE, 0) + 1
        site.pages += 1
        job.pages += 1
        job.bytes += page.bytes
        job.items += items
    state.item_keys.update(plain.keys)
