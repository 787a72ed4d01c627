"""A small commit's segment index, task segment and key segment are built in Python, so
that a short crawl's projector never imports ``pyarrow.compute``: the same files Arrow's
compute functions make of the same rows, and a process that writes them imports none."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import projector._keystore
import projector._segment_index
import projector._taskstore
from eventlog import LogEntry
from projector._archive import to_table
from projector._keystore import KeySegmentInfo, write_key_segment
from projector._segment_index import index_keys
from projector._taskstore import TaskRow, TaskSegmentInfo, write_task_segment
from tests.projector.strategies import logs

ROOT = Path(__file__).resolve().parent.parent.parent
texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)


@contextmanager
def through_arrow() -> Iterator[None]:
    """Every writer on its path through Arrow's compute functions, however few the rows."""
    with pytest.MonkeyPatch.context() as patch:
        for module in (projector._keystore, projector._segment_index, projector._taskstore):
            patch.setattr(module, "SMALL_TABLE_ROWS", -1)
        yield


def row_groups_of(rows: int, size: int) -> list[int]:
    return [min(size, rows - at) for at in range(0, rows, size)]


@settings(max_examples=150, deadline=None)
@given(log=logs, size=st.integers(1, 40))
def test_a_small_segment_s_index_has_the_keys_arrow_finds(log: list[LogEntry], size: int) -> None:
    assume(log)
    table, groups = to_table(log), row_groups_of(len(log), size)
    keys, untasked = index_keys(table, groups)
    with through_arrow():
        arrow_keys, arrow_untasked = index_keys(table, groups)
    assert keys.to_pylist() == arrow_keys.to_pylist()
    assert untasked == arrow_untasked


def written(write: Callable[[Path], KeySegmentInfo | TaskSegmentInfo]) -> pa.Table:
    with tempfile.TemporaryDirectory() as tmp:
        return pq.read_table(Path(tmp) / write(Path(tmp)).name)


def written_both_ways(
    write: Callable[[Path], KeySegmentInfo | TaskSegmentInfo],
) -> tuple[pa.Table, pa.Table]:
    """The file ``write`` makes on the path for few rows, then on Arrow's, read back."""
    python = written(write)
    with through_arrow():
        return python, written(write)


@settings(max_examples=100, deadline=None)
@given(st.lists(texts, unique=True, max_size=30))
def test_a_small_key_segment_is_sorted_as_arrow_sorts(keys: list[str]) -> None:
    python, arrow = written_both_ways(lambda directory: write_key_segment(directory, keys, "5-0"))
    assert python.equals(arrow)
    assert python.column("key").to_pylist() == sorted(keys)


task_rows = st.builds(
    TaskRow,
    task_id=texts,
    url=texts,
    site=texts,
    status=st.sampled_from(["done", "failed", "aborted"]),
    last_reason=texts,
    retries=st.integers(0, 3),
    recoveries=st.integers(0, 3),
    state=st.binary(max_size=8),
)


@settings(max_examples=100, deadline=None)
@given(st.lists(task_rows, unique_by=lambda row: row.task_id, max_size=30))
def test_a_small_task_segment_is_sorted_as_arrow_sorts(rows: list[TaskRow]) -> None:
    python, arrow = written_both_ways(lambda directory: write_task_segment(directory, rows, "5-0"))
    assert python.equals(arrow)
    assert python.column("task_id").to_pylist() == sorted(row.task_id for row in rows)


SMALL_COMMIT = """
import sys
import tempfile
from pathlib import Path

from eventlog import LogEntry, encode
from projector._archive import write_segment
from projector._fold import fold
from projector._keystore import write_key_segment
from projector._taskstore import task_row, write_task_segment
from tests.projector.history_helpers import crawl

entries = [LogEntry(f"{n + 1}-0", e, encode(e)) for n, e in enumerate(crawl(20))]
with tempfile.TemporaryDirectory() as tmp:
    write_segment(Path(tmp), entries)
    rows = [task_row(task) for task in fold(entries).tasks.values()]
    write_task_segment(Path(tmp), rows, entries[-1].stream_id)
    write_key_segment(Path(tmp), [f"key{n}" for n in range(20)], entries[-1].stream_id)
    print(sorted(p.suffix for p in Path(tmp).iterdir()))
print("pyarrow.compute" in sys.modules)
"""


def test_a_process_that_writes_a_small_commit_never_imports_arrow_s_compute_functions() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SMALL_COMMIT],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    files, imported = done.stdout.splitlines()
    assert files == "['.idx', '.parquet', '.parquet', '.parquet']"
    assert imported == "False"
