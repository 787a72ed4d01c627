"""A segment's index names the few row groups that hold a task's events, the fetches of
its URL and the events of no task; reading only those, filtered, gives exactly the rows
the whole segment filtered gives."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from eventlog import LogEntry, encode
from projector._archive import to_table
from projector._segment_index import (
    PAGE_TYPE,
    index_name,
    indexed_rows,
    matching_row_groups,
    write_index,
)
from tests.projector.history_helpers import archived_about, crawl, url_of

TASKS = 400
ROWS_PER_GROUP = 64


def test_history_reads_only_the_row_groups_a_segment_index_names(tmp_path: Path) -> None:
    entries = [LogEntry(f"{n + 1}-0", event, encode(event)) for n, event in enumerate(crawl(TASKS))]
    table = to_table(entries)
    segment = tmp_path / "segment.parquet"
    pq.write_table(table, segment, row_group_size=ROWS_PER_GROUP)
    write_index(segment, table)
    assert (tmp_path / index_name(segment.name)).exists()
    groups = pq.ParquetFile(segment).metadata.num_row_groups
    assert groups > 20

    for n in (0, 5, 6, TASKS // 2, TASKS - 1):
        task_id, url = f"t{n}", url_of(n)
        read = matching_row_groups(segment, len(entries), [task_id], url)
        assert read is not None
        # The enqueue, the claim-fetch-done round (one or two groups), a redirected fetch
        # of the URL, and the one group of the site and job events.
        assert len(read) <= 6, read
        rows = indexed_rows(segment, read, [task_id], url)
        assert [r[0] for r in rows] == [e.stream_id for e in archived_about(entries, task_id, url)]


def test_every_row_group_filtered_gives_what_a_whole_segment_filter_gives(tmp_path: Path) -> None:
    entries = [LogEntry(f"{n + 1}-0", event, encode(event)) for n, event in enumerate(crawl(TASKS))]
    table = to_table(entries)
    segment = tmp_path / "segment.parquet"
    pq.write_table(table, segment, row_group_size=ROWS_PER_GROUP)
    groups = pq.ParquetFile(segment).metadata.num_row_groups
    url = url_of(13)
    rows = indexed_rows(segment, range(groups), ["t13", "t14"], url)
    about = pc.or_kleene(
        pc.or_kleene(
            pc.is_in(table["task_id"], pa.array(["t13", "t14"])), pc.is_null(table["task_id"])
        ),
        pc.and_kleene(pc.equal(table["type"], PAGE_TYPE), pc.equal(table["url"], url)),
    )
    assert [r[0] for r in rows] == table.filter(about)["stream_id"].to_pylist()
