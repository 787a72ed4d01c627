"""A small commit (a segment built in the projector's own process, its index, the task and
key segments of a snapshot) calls Arrow's compute functions by name (``projector._arrow``):
importing ``pyarrow.compute`` builds a wrapper and a docstring for each of Arrow's ~290
functions, ~0.03 s of a one-page crawl's projector. The calls by name give what the
wrappers gave."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from eventlog import LogEntry
from projector._archive import to_table
from projector._arrow import sorted_by
from projector._segment_index import PAGE_TYPE, index_keys, task_key, url_key
from tests.projector.strategies import logs

ROOT = Path(__file__).resolve().parents[2]
SMALL_COMMIT = """
import json, sys, tempfile
from pathlib import Path
from projector._archive import write_segment
from projector._keystore import write_key_segment
from projector._taskstore import TaskRow, write_task_segment
from tests.projector.strategies import as_entries, enqueue_all

with tempfile.TemporaryDirectory() as tmp:
    segment = write_segment(Path(tmp), as_entries(enqueue_all()))
    row = TaskRow(task_id="t", url="http://a/", site="http://a", status="done",
                  last_reason="", retries=0, recoveries=0, state=b"")
    write_task_segment(Path(tmp), [row], segment.last_id)
    write_key_segment(Path(tmp), ["k2", "k1"], segment.last_id)
print(json.dumps(sorted(m for m in sys.modules if m.startswith("pyarrow"))))
"""


def test_a_small_commit_imports_no_pyarrow_compute() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SMALL_COMMIT],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    modules = json.loads(done.stdout)
    assert "pyarrow.parquet" in modules  # it did write the files
    assert "pyarrow.compute" not in modules


@given(st.lists(st.one_of(st.none(), st.text(max_size=3)), max_size=30))
def test_sorted_by_name_is_arrow_s_own_sort(keys: list[str | None]) -> None:
    table = pa.table({"key": pa.array(keys, pa.string()), "n": list(range(len(keys)))})
    assert sorted_by(table, "key").equals(table.sort_by("key"))


@given(logs, st.integers(1, 7))
def test_a_segment_s_index_holds_the_keys_of_its_rows(log: list[LogEntry], group: int) -> None:
    table = to_table(log)
    groups = [min(group, table.num_rows - start) for start in range(0, table.num_rows, group)]
    keys, untasked = index_keys(table, groups)
    expected, without_task = set(), set()
    for n, row in enumerate(table.to_pylist()):
        g = n // group
        if row["task_id"] is None:
            without_task.add(g)
        else:
            expected.add(task_key(row["task_id"]) << 32 | g)
        if row["type"] == PAGE_TYPE and row["url"] is not None:
            expected.add(url_key(row["url"]) << 32 | g)
    assert keys.to_pylist() == sorted(expected)
    assert untasked == sorted(without_task)
