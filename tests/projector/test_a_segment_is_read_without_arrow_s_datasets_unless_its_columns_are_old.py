"""A segment of today's columns is read as the one Parquet file it is, without importing
Arrow's datasets (and compute functions, whose import cost a recrawl's seeding more than
its read of the log); a segment written with fewer columns is still read, through them,
the columns it lacks null."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from eventlog import AnyEvent, TaskEnqueued
from projector._archive import SCHEMA, read_table, to_table, write_segment
from tests.projector.strategies import as_entries

ROOT = Path(__file__).resolve().parents[2]
EVENTS: list[AnyEvent] = [
    TaskEnqueued(actor="crawl", task_id=f"t{n}", url=f"http://x/{n}", site="http://x")
    for n in range(3)
]

READ_IN_A_FRESH_PROCESS = """
import sys
from pathlib import Path
from projector._archive import read_table
table = read_table(Path(sys.argv[1]), ["stream_id", "payload"])
print(table.num_rows, "pyarrow.dataset" in sys.modules, "pyarrow.compute" in sys.modules)
"""


def test_a_segment_of_today_s_columns_is_read_without_importing_datasets(tmp_path: Path) -> None:
    segment = write_segment(tmp_path, as_entries(EVENTS))
    read = subprocess.run(
        [sys.executable, "-c", READ_IN_A_FRESH_PROCESS, str(tmp_path / segment.name)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert read.stdout.split() == ["3", "False", "False"]
    whole = read_table(tmp_path / segment.name)
    assert whole.schema == SCHEMA
    assert whole.equals(to_table(as_entries(EVENTS)))


def test_a_segment_of_older_columns_is_read_with_the_missing_ones_null(tmp_path: Path) -> None:
    table = to_table(as_entries(EVENTS)).drop_columns(["data", "action_id"])
    path = tmp_path / "old.parquet"
    pq.write_table(table, path)
    read = read_table(path)
    assert read.schema == SCHEMA
    assert read.column("stream_id").equals(table.column("stream_id"))
    assert read.column("data").null_count == read.num_rows == len(EVENTS)
    assert read.column("action_id").type == pa.string()
