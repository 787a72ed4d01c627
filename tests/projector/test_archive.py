"""Archive segments hold the log exactly: what is written replays to the same state."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hypothesis import given

from eventlog import CheckpointSaved, ItemScraped, LogEntry, TaskAborted
from projector._archive import (
    SCHEMA,
    ArchiveCorrupt,
    read_entries,
    segment_name,
    to_table,
    write_segment,
)
from projector._fold import fold
from projector._state import canonical
from tests.projector.strategies import as_entries, logs


@given(logs)
def test_the_fold_of_a_log_is_identical_after_a_round_trip_through_the_archive(
    log: list[LogEntry],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        segment = write_segment(Path(tmp), log)
        back = list(read_entries(Path(tmp) / segment.name))
    assert back == log
    assert canonical(fold(back)) == canonical(fold(log))


@given(logs)
def test_every_event_is_one_row_with_its_fields_in_typed_columns(log: list[LogEntry]) -> None:
    table = to_table(log)
    assert table.schema == SCHEMA
    rows = table.to_pylist()
    for entry, row in zip(log, rows, strict=True):
        event = entry.event
        assert (row["stream_id"], row["event_id"], row["actor"]) == (
            entry.stream_id,
            event.event_id,
            event.actor,
        )
        assert row["task_id"] == getattr(event, "task_id", None)
        assert row["attempt"] == getattr(event, "attempt", None)
        assert row["payload"] == entry.payload
        if isinstance(event, CheckpointSaved):  # its cursor fills the page and key columns
            assert (row["page"], row["key"]) == (event.cursor.page, event.cursor.last_item_key)
        else:
            assert (row["page"], row["key"]) == (
                getattr(event, "page", None),
                getattr(event, "key", None),
            )
        error = (
            event.last_error if isinstance(event, TaskAborted) else getattr(event, "error", None)
        )
        assert row["error"] == error


def test_item_data_is_kept_as_json() -> None:
    item = ItemScraped(actor="w1", task_id="t1", key="k", data={"title": "T", "n": 3})
    [row] = to_table(as_entries([item])).to_pylist()
    assert row["key"] == "k" and row["data"] == '{"title":"T","n":3}'


def test_segment_names_sort_like_the_stream_ids_they_span() -> None:
    names = [segment_name(a, b) for a, b in [("9-5", "9-10"), ("10-0", "10-3"), ("10-4", "11-0")]]
    assert names == sorted(names)


def test_a_truncated_segment_is_reported_with_its_file_name(tmp_path: Path) -> None:
    log = as_entries([ItemScraped(actor="w1", task_id="t1", key=f"k{n}") for n in range(100)])
    segment = write_segment(tmp_path, log)
    path = tmp_path / segment.name
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(ArchiveCorrupt, match=segment.name):
        list(read_entries(path))


def test_segments_are_compressed_parquet(tmp_path: Path) -> None:
    segment = write_segment(tmp_path, as_entries([ItemScraped(actor="w", task_id="t", key="k")]))
    metadata = pq.ParquetFile(tmp_path / segment.name).metadata
    assert metadata.num_rows == 1
    assert metadata.row_group(0).column(0).compression == "ZSTD"
