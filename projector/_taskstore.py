"""The task-state store: terminal tasks, out of the projector's memory, in Parquet segments.

A task that reached done, failed or aborted changes again only if an operator retries it
(or a late event names it, to be refused). Keeping every such task in the fold's memory
made the projector grow with the job, so at each snapshot the terminal tasks leave the
in-memory state: their rows go into a new task segment (one row per task, sorted by task
id, written temp + fsync + rename, named by the manifest, as archive segments are), and the
snapshot holds only what is still live. The state a manifest commits is its snapshot's
tasks, then the rows of its task segments for every other task, the latest segment's row
winning; a task in the snapshot is newer than any row.

Each row carries the task's fields a query filters on (status, reason, site, URL, retries,
recoveries) as columns, and the whole ``TaskState`` as msgpack bytes, so a row read back is
exactly the task that was written (``replay --verify`` compares bytes).

Segments pile up one per snapshot; ``plan_merge`` merges the newest ones by size tiers, so
each row is rewritten a logarithmic number of times, in the committer's thread, never on
the fold's.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Collection, Iterable, Iterator, Sequence
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Final

import msgspec

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
else:
    from projector._arrow import pa, pc, pq

from eventlog import CrawlogError, stream_id_key
from projector._arrow import SMALL_TABLE_ROWS
from projector._hashset import HashSet64
from projector._state import ABORTED, FAILED, TaskState

TASKS_DIR: Final = "tasks"
TASK_SEGMENT_SUFFIX: Final = ".parquet"
COMPRESSION: Final = "zstd"
MIN_MERGE_RUN: Final = 4
"""Merge the newest task segments this many at a time (``plan_merge``)."""
MAX_TASK_SEGMENTS: Final = 16
"""Task segments a manifest names at most: readers open each."""
ID_BATCH: Final = 65_536
"""Task ids read at a time when the projector rebuilds its hashes of them."""
TASK_ROW_GROUP: Final = 65_536
"""Rows a row group of a task segment, and rows a merge holds at a time: a merge's memory
is bounded by it, not by the size of the job."""


@functools.cache
def task_schema() -> pa.Schema:
    """The columns of a task segment (a function: Arrow is imported at its first use)."""
    return pa.schema(
        [
            ("task_id", pa.string()),
            ("url", pa.string()),
            ("site", pa.string()),
            ("status", pa.string()),
            ("last_reason", pa.string()),
            ("retries", pa.int64()),
            ("recoveries", pa.int64()),
            ("state", pa.binary()),
        ]
    )


SUMMARY_COLUMNS: Final = ("task_id", "url", "status", "last_reason", "retries", "recoveries")

_encoder: Final = msgspec.msgpack.Encoder(order="deterministic")
_task_decoder: Final = msgspec.msgpack.Decoder(TaskState)


class TaskSegmentInfo(msgspec.Struct, frozen=True, kw_only=True):
    """One committed task segment: its file and how many task rows it holds."""

    name: str
    tasks: int
    position: str
    """The snapshot position its rows are the tasks' state at (the newest, once merged)."""
    replacing: int | None = None
    """How many of its rows may replace a row of an older segment (tasks brought back from
    the store, then stored again: a retry, a late event), at most; None: not known (a
    segment written before this was counted). A merge reads the task ids of the newer
    segments only if some may replace a row."""


class TaskRow(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A terminal task as it leaves memory: its bytes, and the columns queries use."""

    task_id: str
    url: str
    site: str
    status: str
    last_reason: str
    retries: int
    recoveries: int
    state: bytes


def task_row(task: TaskState) -> TaskRow:
    """The row of ``task``, encoded now (the fold may change the struct after)."""
    return TaskRow(
        task_id=task.task_id,
        url=task.url,
        site=task.site,
        status=task.status,
        last_reason=task.last_reason,
        retries=task.retries,
        recoveries=task.recoveries,
        state=_encoder.encode(task),
    )


def task_from_bytes(data: bytes) -> TaskState:
    """A task as ``task_row`` encoded it."""
    return _task_decoder.decode(data)


def write_store_file(directory: Path, name: str, table: pa.Table, *, row_group_size: int) -> None:
    """Write a task or key segment: temp, fsync, rename (committed only once a manifest
    names it); page checksums, so a damaged file is an error naming it, not wrong data."""
    tmp = directory / f".{name}.{os.getpid()}.tmp"
    with open(tmp, "wb") as sink:
        pq.write_table(
            table,
            sink,
            compression=COMPRESSION,
            write_page_checksum=True,
            row_group_size=row_group_size,
        )
        sink.flush()
        os.fsync(sink.fileno())
    os.replace(tmp, directory / name)


def read_store_file(
    path: Path, kind: str, columns: Sequence[str] | None = None, filters: object = None
) -> pa.Table:
    """A task or key segment's rows (``filters`` as ``pq.read_table`` takes them);
    ``CrawlogError`` naming the ``kind`` of segment and its file if it cannot be read."""
    try:
        if filters is None:
            # As the one file it is: ``pq.read_table`` goes through Arrow's datasets, whose
            # import costs a process's first read more than the read (the committed state
            # a recrawl's projector and progress start from).
            with pq.ParquetFile(path) as segment:
                return segment.read(columns=list(columns) if columns is not None else None)
        return pq.read_table(path, columns=columns, filters=filters)
    except (OSError, pa.ArrowException) as exc:
        raise CrawlogError(f"{kind} segment {path} cannot be read ({exc})") from None


def write_task_segment(
    directory: Path,
    rows: Sequence[TaskRow],
    position: str,
    *,
    tag: str = "",
    replacing: int | None = None,
) -> TaskSegmentInfo:
    """Write ``rows`` (one per task) sorted by task id as a new task segment (not committed);
    ``replacing``: how many may replace an older segment's row, if known."""
    # Sorted by Arrow, not by a Python key function over the rows, unless they are few.
    small = len(rows) <= SMALL_TABLE_ROWS
    if small:
        rows = sorted(rows, key=attrgetter("task_id"))
    columns = {field: list(map(attrgetter(field), rows)) for field in task_schema().names}
    table = pa.table(columns, schema=task_schema())
    if not small:
        table = table.sort_by("task_id")
    ms, seq = stream_id_key(position)
    name = f"tasks-{ms:015d}-{seq:08d}{tag}{TASK_SEGMENT_SUFFIX}"
    write_store_file(directory, name, table, row_group_size=TASK_ROW_GROUP)
    return TaskSegmentInfo(name=name, tasks=table.num_rows, position=position, replacing=replacing)


def _read(path: Path, columns: Sequence[str] | None = None, filters: object = None) -> pa.Table:
    return read_store_file(path, "task", columns, filters)


def latest_rows(tables: Sequence[pa.Table]) -> pa.Table:
    """One row per task id out of tables in commit order: the latest table's row wins."""
    if not tables:
        return task_schema().empty_table()
    tagged = [
        t.append_column("_seq", pa.array([n] * t.num_rows, pa.int32()))
        for n, t in enumerate(tables)
    ]
    table = pa.concat_tables(tagged).sort_by([("task_id", "ascending"), ("_seq", "descending")])
    ids = table.column("task_id")
    if table.num_rows > 1:
        first = pc.not_equal(ids.slice(1), ids.slice(0, table.num_rows - 1))
        keep = pa.concat_arrays([pa.array([True]), first.combine_chunks()])
        table = table.filter(keep)
    return table.drop_columns(["_seq"])


def merge_task_segments(directory: Path, segments: Sequence[TaskSegmentInfo]) -> TaskSegmentInfo:
    """The segments as one (latest row per task), named after the newest (not committed).

    Read and written ``TASK_ROW_GROUP`` rows at a time: each segment's rows that no newer
    segment replaces, still sorted by task id within each segment's part. Which rows are
    replaced is known from the task ids of the newer segments that may replace any
    (``TaskSegmentInfo.replacing``): usually none, and then no id is read at all.
    """
    last = segments[-1]
    ms, seq = stream_id_key(last.position)
    first = segments[0].name[len("tasks-") :][:24]  # its position: names stay short
    name = f"tasks-{ms:015d}-{seq:08d}-m{len(segments)}-{first}{TASK_SEGMENT_SUFFIX}"
    ids: list[pa.ChunkedArray | None] = [
        None if info.replacing == 0 else _read(directory / info.name, ["task_id"])["task_id"]
        for info in segments
    ]
    tmp = directory / f".{name}.{os.getpid()}.tmp"
    rows = 0
    with open(tmp, "wb") as sink:
        with pq.ParquetWriter(
            sink, task_schema(), compression=COMPRESSION, write_page_checksum=True
        ) as writer:
            for n, info in enumerate(segments):
                newer = [chunk for later in ids[n + 1 :] if later for chunk in later.chunks]
                keep = None
                if newer:
                    own = _read(directory / info.name, ["task_id"])["task_id"]
                    replaced = pc.is_in(own, value_set=pa.chunked_array(newer, pa.string()))
                    keep = pc.invert(replaced)
                    del own, replaced
                offset = 0
                for batch in _batches(directory / info.name):
                    table = pa.Table.from_batches([batch], schema=task_schema())
                    if keep is not None:
                        table = table.filter(keep.slice(offset, batch.num_rows))
                    offset += batch.num_rows
                    rows += table.num_rows
                    if table.num_rows:
                        writer.write_table(table)
        sink.flush()
        os.fsync(sink.fileno())
    os.replace(tmp, directory / name)
    counts = [info.replacing for info in segments]
    replacing = None if None in counts else sum(c or 0 for c in counts)
    return TaskSegmentInfo(name=name, tasks=rows, position=last.position, replacing=replacing)


def _batches(path: Path) -> Iterator[pa.RecordBatch]:
    try:
        yield from pq.ParquetFile(path).iter_batches(TASK_ROW_GROUP)
    except (OSError, pa.ArrowException) as exc:
        raise CrawlogError(f"task segment {path} cannot be read ({exc})") from None


def plan_merge(segments: Sequence[TaskSegmentInfo]) -> tuple[int, int] | None:
    """The ``[start, end)`` run of task segments worth merging, if any (size tiers).

    The newest ``MIN_MERGE_RUN`` are merged once their sizes are within a tier of each
    other (tiers are powers of 4): merged ones then meet others of their own size, so a row
    is rewritten about once per tier, a number of times logarithmic in the job. Segments of
    sizes that never line up are all merged once there are ``MAX_TASK_SEGMENTS``.
    """
    return plan_merge_sizes([s.tasks for s in segments])


def plan_merge_sizes(sizes: Sequence[int]) -> tuple[int, int] | None:
    """``plan_merge`` for segments of ``sizes`` rows (task or key segments)."""
    if len(sizes) >= MAX_TASK_SEGMENTS:
        return 0, len(sizes)
    if len(sizes) < MIN_MERGE_RUN:
        return None
    tiers = [_tier(n) for n in sizes[-MIN_MERGE_RUN:]]
    if max(tiers) <= min(tiers) + 1:
        return len(sizes) - MIN_MERGE_RUN, len(sizes)
    return None


def _tier(tasks: int) -> int:
    return max(tasks, 1).bit_length() // 2


def read_tasks(
    paths: Sequence[Path], task_ids: Collection[str] | None = None
) -> dict[str, TaskState]:
    """The tasks of the segments at ``paths`` (commit order; latest row wins), all or
    only ``task_ids``."""
    found: dict[str, bytes] = {}
    wanted = None if task_ids is None else list(task_ids)
    if wanted is not None and not wanted:
        return {}
    for path in paths:
        filters = None if wanted is None else [("task_id", "in", wanted)]
        table = _read(path, ["task_id", "state"], filters)
        found.update(
            zip(table.column("task_id").to_pylist(), table.column("state").to_pylist(), strict=True)
        )
    return {task_id: task_from_bytes(data) for task_id, data in found.items()}


def iter_task_ids(paths: Iterable[Path]) -> Iterator[str]:
    """Every task id the segments hold (a task in several segments more than once), read a
    batch at a time: ten million ids as Python strings at once would be a gigabyte."""
    for path in paths:
        try:
            for chunk in pq.ParquetFile(path).iter_batches(ID_BATCH, columns=["task_id"]):
                yield from chunk.column(0).to_pylist()
        except (OSError, pa.ArrowException) as exc:
            raise CrawlogError(f"task segment {path} cannot be read ({exc})") from None


def summary_rows(directory: Path, segments: Sequence[TaskSegmentInfo]) -> list[dict[str, object]]:
    """The latest row of each stored task that counts in a summary (failed or aborted,
    retried, recovered): what the projector's summary tracker starts from."""
    tables = [_read(directory / s.name, list(SUMMARY_COLUMNS)) for s in segments]
    if not tables:
        return []
    if all(s.replacing == 0 for s in segments[1:]):
        # No task is in two segments: each row is its task's latest, and the rows that
        # count are picked from each segment without sorting every stored task by id.
        table = pa.concat_tables([t.filter(_counts(t)) for t in tables])
        return table.to_pylist()  # type: ignore[no-any-return]
    table = latest_rows(tables)
    return table.filter(_counts(table)).to_pylist()  # type: ignore[no-any-return]


def _counts(table: pa.Table) -> pa.ChunkedArray:
    """Which of ``table``'s rows count in a summary."""
    status = table.column("status")
    return pc.or_(
        pc.or_(pc.equal(status, FAILED), pc.equal(status, ABORTED)),
        pc.or_(pc.greater(table.column("retries"), 0), pc.greater(table.column("recoveries"), 0)),
    )


_task_id: Final = attrgetter("task_id")


def named_task_ids(events: Sequence[object]) -> set[str]:
    """The task ids ``events`` name, each once: a batch names each of its tasks about five
    times (a task's events come together), and each id not in memory is looked up among
    the stored ones (``StoredTasks.missing``)."""
    try:
        # Every event of the common batch is a task's: one call into C for all of them.
        return set(map(_task_id, events))
    except AttributeError:  # a site's or the job's event among them
        named = {getattr(event, "task_id", None) for event in events}
        named.discard(None)
        return named  # type: ignore[return-value]  # None was the only other value


class StoredTasks:
    """What the projector knows of the tasks that left its memory.

    ``hashes`` holds the ``hash`` of every stored task id (8 bytes each, ``HashSet64``, not
    a set of ints at 60 to 80): a task id an event names that is neither in memory nor in it
    is a new task (most are: every ``TaskEnqueued``), found with one lookup and no I/O. A
    hash that matches is looked up in the segments, so a collision only costs a read that
    finds nothing. The hashes are this process's own
    (Python's string hash is salted per process) and are rebuilt from the segments' task ids
    when the projector starts. ``in_flight`` holds the rows of a commit not landed yet.
    """

    def __init__(self) -> None:
        self.hashes = HashSet64()
        self.in_flight: dict[str, bytes] = {}
        self.replacing = 0
        """Of the rows last added, how many may replace a stored row (their hash was
        known): ``TaskSegmentInfo.replacing``."""

    def add(self, rows: Iterable[TaskRow]) -> None:
        """Rows that leave memory with the commit being started."""
        self.in_flight = {row.task_id: row.state for row in rows}
        # A hash known already is a task stored before (or a collision, which only costs
        # the merge a read of task ids).
        self.replacing = len(self.in_flight) - self.hashes.update(map(hash, self.in_flight))

    def landed(self) -> None:
        """The commit of the ``in_flight`` rows is in the store now."""
        self.in_flight = {}

    def missing(self, tasks: Collection[str], task_ids: Iterable[str]) -> set[str]:
        """Those of ``task_ids`` not in ``tasks`` (memory) that may be stored."""
        if not len(self.hashes):
            return set()
        return set(self.hashes.matching([t for t in task_ids if t not in tasks]))

    def load(self, task_ids: Collection[str], paths: Sequence[Path]) -> dict[str, TaskState]:
        """The stored state of ``task_ids`` (those the store has)."""
        found = {t: task_from_bytes(self.in_flight[t]) for t in task_ids if t in self.in_flight}
        rest = [t for t in task_ids if t not in found]
        if rest:
            found.update(read_tasks(paths, rest))
        return found
