"""``crawlog export --follow``: a feed of a job's items (or pages), written as the projector
commits them, each once, resumable after a kill from a position of its own.

The feed reads what the projector committed (the ``items`` or ``pages`` view, as
``crawlog export`` does) after the last stream ID it wrote, and appends it to ``OUT``. Its
position lives beside the output, in ``OUT.position`` (JSON): the last stream ID written,
the rows, and the output's length in bytes at that point. Each batch is written, flushed
and fsynced first, then the position is replaced atomically: a kill between the two leaves
rows after the recorded length, which a restart cuts off (truncating ``OUT`` to the
recorded length) before it writes them again. So after any kill, restarted with the same
command, the output holds every row exactly once.

The ``item_events`` view keeps the first item of each key, so an item's key appears once
in the feed however often pages are redone. A feed of ``changes`` (``--changes``) feeds the
``item_changes`` view instead (`projector._item_changes`): each item added, changed or
removed by a run, once, in the envelope of its change. Items are written as the spider
wrote them, or in their envelope ``with_meta`` (kept in the position: a feed goes on in the
form it started in). Formats:

* ``jsonl``: one JSON object per line, as ``crawlog export`` writes them.
* ``csv``: a header, then a row per item or page. An item's fields are flat, as in the
  export (`projector._export`), but a feed cannot go back to widen its header: the
  columns are the fields of the first batch written, kept in the position, and a field
  first seen later goes into the ``extra_fields`` column (a JSON object; empty when none).
* ``parquet``: ``OUT`` is a directory of part files (``part-000001.parquet``...), one per
  batch, each renamed into place whole; a restart removes parts after the recorded count.
  A part's item columns are its own items' fields (`projector._item_fields`).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final, Literal

import msgspec

from eventlog import ConfigError, CrawlogError, fsync_dir, write_atomic
from projector._defaults import EXPORT_FORMATS, EXPORT_WHAT, ExportFormat
from projector._export import ITEM_LEADING, ITEM_TRAILING, flat_header
from projector._item_changes import ITEM_CHANGES, ItemChangeFold, register_item_changes
from projector._item_fields import column_names, field_columns
from projector._state import TERMINAL
from projector._store import Store
from projector._views import ITEM_EVENTS, Committed, NoProjectedData, run_on_committed, sql_string

POSITION_SUFFIX: Final = ".position"
"""The feed's position file is ``OUT`` with this suffix added."""
FEED_BATCH: Final = 10_000
"""Rows read, written and recorded at once: a position every this many rows at most."""
EXTRA_FIELDS: Final = "extra_fields"
"""The CSV column of an item's fields that the header (the first batch's) has no column for."""
PART_FORMAT: Final = "part-{:06d}.parquet"
CHANGES_FED: Final = "changes"
"""What a feed of item changes (``export --follow --changes``) feeds."""
FeedWhat = Literal["pages", "items", "changes"]
_json: Final = msgspec.json.Encoder()


class FeedPosition(msgspec.Struct, kw_only=True):
    """Where a feed is: what it writes, the last stream ID written, and the output's size."""

    job: str
    what: str
    format: str
    stream_id: str = "0-0"
    rows: int = 0
    bytes: int = 0
    """Length of ``OUT`` (jsonl, csv) once the rows up to ``stream_id`` were in it."""
    parts: int = 0
    """Part files written (parquet)."""
    fields: list[str] | None = None
    """The item fields the CSV header has columns for (None until the header is written)."""
    meta: bool | None = None
    """Items written in their envelope (``--with-meta``); None: by a feed older than the
    choice, which always wrote the envelope."""


def position_path(out: Path) -> Path:
    """Where the feed writing ``out`` keeps its position."""
    return out.with_name(out.name + POSITION_SUFFIX)


class Feed:
    """The feed of ``what`` (items or pages) of ``store``'s job to ``out`` in ``fmt``.

    `open` reads its position (or starts one) and makes the output agree with it; `poll`
    writes what was committed since; `job_ended` says whether every task has ended.
    """

    def __init__(
        self,
        store: Store,
        *,
        what: FeedWhat,
        fmt: ExportFormat,
        out: Path,
        with_meta: bool = False,
    ) -> None:
        if what not in (*EXPORT_WHAT, CHANGES_FED) or fmt not in EXPORT_FORMATS:
            raise CrawlogError(f"cannot feed {what!r} as {fmt!r}")
        self.store, self.what, self.fmt, self.out = store, what, fmt, out
        self.with_meta = with_meta or what != "items"
        """Rows in their envelope: the item_events view's (a page, a change is its
        envelope)."""
        self.position_file = position_path(out)
        self.position = FeedPosition(job=store.job, what=what, format=fmt, meta=with_meta)
        self.folded = ItemChangeFold()
        """A feed of changes: the item changes folded so far (each look folds only the
        archive committed since the last)."""

    def open(self) -> FeedPosition:
        """Resume from the recorded position (the output cut back to it), or start anew.

        ConfigError if ``OUT`` exists without a position (not this feed's file), was fed
        something else, or is shorter than its position says (changed by someone else)."""
        out, where = self.out, self.position_file
        if not where.exists():
            if any(out.iterdir()) if out.is_dir() else out.exists() and out.stat().st_size:
                raise ConfigError(
                    f"{out} exists and has no {where.name}: it is not a feed's output; "
                    "remove it or give another OUT"
                )
            # Recorded before the output exists: a kill after its first rows are written
            # finds them past a position of 0 bytes, not an output without a position.
            self._record(self.position.stream_id, 0)
            return self.position
        try:
            position = msgspec.json.decode(where.read_bytes(), type=FeedPosition)
        except (OSError, msgspec.DecodeError) as exc:
            raise ConfigError(f"{where} cannot be read ({exc}): remove {out} and it") from None
        fed = (position.job, position.what, position.format)
        if fed != (self.store.job, self.what, self.fmt):
            raise ConfigError(
                f"{out} is the feed of {position.what} of job {position.job} as "
                f"{position.format}, not {self.what} of {self.store.job} as {self.fmt}"
            )
        enveloped = position.meta is not False  # None: a feed that always wrote envelopes
        if self.what == "items" and enveloped != self.with_meta:
            raise ConfigError(
                f"{out} is a feed of items "
                + (
                    "with their meta: add --with-meta"
                    if enveloped
                    else "without meta: leave out --with-meta"
                )
                + " to go on with it, or remove it and its position to start again"
            )
        if self.fmt == "parquet":
            self._drop_parts_after(position.parts)
        else:
            size = out.stat().st_size if out.exists() else 0
            if size < position.bytes:
                raise ConfigError(
                    f"{out} holds {size} bytes but {where.name} says {position.bytes}: it was "
                    f"changed; remove both to start the feed again"
                )
            if size > position.bytes:
                # Written after the last recorded position (a kill in between): written again.
                with out.open("r+b") as sink:
                    sink.truncate(position.bytes)
                    os.fsync(sink.fileno())
        self.position = position
        return position

    def poll(self, stop: Callable[[], bool] = lambda: False) -> int:
        """Write everything committed after the position, a batch at a time, each recorded
        once on disk; the rows written (0 while nothing is committed yet). ``stop`` is
        asked between batches."""
        written = 0
        while not stop():
            try:
                count = run_on_committed(
                    self.store, self._batch, read_state=False, doing=f"feeding {self.out}"
                )
            except NoProjectedData:
                return written
            written += count
            if count < FEED_BATCH:
                return written
        return written

    def job_ended(self) -> bool:
        """Every task of the job (as the projector last committed it) has ended."""
        return job_ended(self.store)

    # --- one batch ---------------------------------------------------------------------------

    def _select(self, *, whole: bool = False) -> str:
        """The next batch: the view's rows after the position, in log order (``whole``:
        with ``stream_ms`` and ``stream_seq``)."""
        after = after_position(self.position.stream_id)
        view = {"items": ITEM_EVENTS, CHANGES_FED: ITEM_CHANGES}.get(self.what, self.what)
        return (
            f"SELECT {'*' if whole else '* EXCLUDE (stream_ms, stream_seq)'} FROM {view} "
            f"WHERE {after} "
            f"ORDER BY stream_ms, stream_seq LIMIT {FEED_BATCH}"
        )

    def _batch(self, committed: Committed) -> int:
        if self.what == CHANGES_FED:
            register_item_changes(
                committed.con,
                self.store,
                committed.manifest,
                fold=self.folded,
                after=self.position.stream_id,
            )
        if self.fmt == "parquet":
            return self._parquet_batch(committed)
        cursor = committed.con.execute(self._select())
        columns = [d[0] for d in cursor.description or ()]
        rows = cursor.fetchall()
        if not rows:
            return 0
        records = [dict(zip(columns, row, strict=True)) for row in rows]
        data = self._jsonl(records) if self.fmt == "jsonl" else self._csv(columns, records)
        new = not self.out.exists()
        with self.out.open("ab") as sink:
            sink.write(data)
            sink.flush()
            os.fsync(sink.fileno())
        if new:
            fsync_dir(self.out.parent)
        self._record(records[-1]["stream_id"], len(records), bytes_=len(data))
        return len(records)

    def _parquet_batch(self, committed: Committed) -> int:
        con, select = committed.con, self._select(whole=not self.with_meta)
        # The batch is one table, so that the part and the position it records agree.
        con.execute(f"CREATE OR REPLACE TEMP TABLE feed_batch AS {select}")
        columns = "*" if self.with_meta else ", ".join(field_columns(con, "feed_batch"))
        part_rows = f"SELECT {columns} FROM feed_batch"  # in log order, as inserted
        last = con.execute(
            "SELECT count(*), (SELECT stream_id FROM feed_batch ORDER BY "
            "CAST(split_part(stream_id, '-', 1) AS BIGINT) DESC, "
            "CAST(split_part(stream_id, '-', 2) AS BIGINT) DESC LIMIT 1) FROM feed_batch"
        ).fetchone()
        if last is None or not last[0]:
            return 0
        count, stream_id = int(last[0]), str(last[1])
        self.out.mkdir(parents=True, exist_ok=True)
        part = self.out / PART_FORMAT.format(self.position.parts + 1)
        tmp = part.with_name(f".{part.name}.tmp")
        con.execute(
            f"COPY ({part_rows}) TO {sql_string(str(tmp))} (FORMAT parquet, COMPRESSION zstd)"
        )
        with tmp.open("rb") as written:
            os.fsync(written.fileno())
        os.replace(tmp, part)
        fsync_dir(self.out)
        self._record(stream_id, count, parts=1)
        return count

    def _record(self, stream_id: str, rows: int, *, bytes_: int = 0, parts: int = 0) -> None:
        position = self.position
        position.stream_id = stream_id
        position.rows += rows
        position.bytes += bytes_
        position.parts += parts
        write_atomic(self.position_file, msgspec.json.format(_json.encode(position)))

    def _drop_parts_after(self, parts: int) -> None:
        if not self.out.is_dir():
            return
        for path in self.out.iterdir():
            number = path.name.removeprefix("part-").removesuffix(".parquet")
            stray = path.name.endswith(".tmp") or (number.isdigit() and int(number) > parts)
            if stray:
                path.unlink()

    def _jsonl(self, records: list[dict[str, Any]]) -> bytes:
        if not self.with_meta:  # each item's own object, as the log holds it
            return "".join(f"{record['data']}\n" for record in records).encode()
        lines = []
        for record in records:
            for name in ("data", "previous"):  # JSON text in the view, an object in a line
                if isinstance(record.get(name), str):
                    record[name] = msgspec.json.decode(record[name])
            lines.append(_json.encode({k: _plain(v) for k, v in record.items()}))
        return b"\n".join(lines) + b"\n"

    def _csv(self, columns: Sequence[str], records: list[dict[str, Any]]) -> bytes:
        text = io.StringIO()
        writer = csv.writer(text, lineterminator="\n")
        if self.what != "items":
            if self.position.rows == 0:
                writer.writerow(columns)
            writer.writerows([[_cell(r[c]) for c in columns] for r in records])
            return text.getvalue().encode()
        items = [(r, msgspec.json.decode(r["data"]) if r["data"] else {}) for r in records]
        if self.position.fields is None:
            seen: dict[str, None] = {}
            for _, data in items:
                if isinstance(data, dict):
                    seen.update(dict.fromkeys(data))
            self.position.fields = list(seen)
            if self.with_meta:
                header = flat_header(self.position.fields)
                cut = len(header) - len(ITEM_TRAILING)
                writer.writerow([*header[:cut], EXTRA_FIELDS, *header[cut:]])
            else:
                writer.writerow([*column_names(self.position.fields), EXTRA_FIELDS])
        fields = self.position.fields
        known = set(fields)
        leading, trailing = (ITEM_LEADING, ITEM_TRAILING) if self.with_meta else ((), ())
        for record, data in items:
            data = data if isinstance(data, dict) else {}
            extra = {k: v for k, v in data.items() if k not in known}
            writer.writerow(
                [
                    *(_cell(record[c]) for c in leading),
                    *(_field(data.get(name)) for name in fields),
                    _json.encode(extra).decode() if extra else "",
                    *(_cell(record[c]) for c in trailing),
                ]
            )
        return text.getvalue().encode()


def after_position(stream_id: str) -> str:
    """The SQL condition on a view's ``stream_ms`` and ``stream_seq``: after ``stream_id``."""
    ms, _, seq = stream_id.partition("-")
    return f"stream_ms > {int(ms)} OR (stream_ms = {int(ms)} AND stream_seq > {int(seq or 0)})"


def job_ended(store: Store) -> bool:
    """Every task of ``store``'s job (as the projector last committed it) has ended: what a
    feed run ``--until-done`` waits for."""

    def ended(committed: Committed) -> bool:
        assert committed.state is not None
        tasks = committed.state.job.tasks
        return sum(tasks.values()) > 0 and all(
            status in TERMINAL for status, n in tasks.items() if n
        )

    try:
        return run_on_committed(store, ended, read_state=True, doing="reading the job")
    except NoProjectedData:
        return False


def _plain(value: Any) -> Any:
    """A value as JSON lines carry it: a time as DuckDB writes it as text."""
    return str(value) if isinstance(value, dt.datetime) else value


def _cell(value: Any) -> str:
    """A view column's value in a CSV cell: empty for NULL."""
    return "" if value is None else str(value)


def _field(value: Any) -> str:
    """An item field in a CSV cell, as the flat export writes it: a string as it is,
    anything else as JSON, empty for a missing field or null."""
    if value is None:
        return ""
    return value if isinstance(value, str) else _json.encode(value).decode()
