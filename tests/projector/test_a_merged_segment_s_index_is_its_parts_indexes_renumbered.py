"""A merge keeps each old row group as a row group of the new segment, so the new index is
the old ones with their row groups renumbered (no task id or URL hashed again): the same
keys as an index built from the merged rows, for any cut of the log into segments and row
groups. A source without a usable index makes the merge build the index from the rows."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import projector._archive
from eventlog import LogEntry, encode
from projector._archive import merge_segments, to_table, write_table
from projector._segment_index import (
    SegmentIndex,
    index_keys,
    index_name,
    indexed_rows,
    matching_row_groups,
    merged_index,
    read_index,
    row_group_rows,
)
from tests.projector.history_helpers import archived_about, crawl, url_of

TASKS = 120
ENTRIES = [LogEntry(f"{n + 1}-0", event, encode(event)) for n, event in enumerate(crawl(TASKS))]
TABLE = to_table(ENTRIES)


def row_groups_of(rows: int, size: int) -> list[int]:
    return [min(size, rows - at) for at in range(0, rows, size)]


@settings(max_examples=60, deadline=None)
@given(
    cuts=st.lists(st.integers(1, len(ENTRIES) - 1), max_size=6, unique=True).map(sorted),
    group_sizes=st.lists(st.integers(1, 200), min_size=7, max_size=7),
)
def test_renumbered_indexes_are_the_index_of_the_merged_rows(
    cuts: list[int], group_sizes: list[int]
) -> None:
    bounds = [0, *cuts, len(ENTRIES)]
    parts, groups = [], []
    for (start, stop), size in zip(pairwise(bounds), group_sizes, strict=False):
        part, sizes = TABLE.slice(start, stop - start), row_groups_of(stop - start, size)
        keys, untasked = index_keys(part, sizes)
        parts.append(SegmentIndex(keys, untasked, len(sizes)))
        groups += sizes

    keys, untasked = merged_index(parts)
    expected_keys, expected_untasked = index_keys(TABLE, groups)
    assert keys.to_pylist() == expected_keys.to_pylist()
    assert untasked == expected_untasked


@pytest.fixture
def small_row_groups(monkeypatch: pytest.MonkeyPatch) -> int:
    """Segments of many row groups from a small log."""
    monkeypatch.setattr(projector._archive, "ARCHIVE_ROW_GROUP", 50)
    return 50


def write_segments(directory: Path, cuts: list[int]) -> list[projector._archive.SegmentInfo]:
    bounds = [0, *cuts, len(ENTRIES)]
    return [write_table(directory, TABLE.slice(a, b - a)) for a, b in pairwise(bounds)]


def never_hashed(segment: Path, table: pa.Table) -> None:
    raise AssertionError(f"{segment.name}: the merge hashed its rows again")


def test_a_merged_segment_keeps_its_sources_row_groups_and_reads_through_its_index(
    tmp_path: Path, small_row_groups: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    segments = write_segments(tmp_path, [130, 175, 410])
    sources = [pq.ParquetFile(tmp_path / s.name).metadata.num_row_groups for s in segments]
    monkeypatch.setattr(projector._archive, "write_index", never_hashed)

    merged = merge_segments(tmp_path, segments)

    path = tmp_path / merged.name
    assert merged.events == len(ENTRIES)
    assert pq.ParquetFile(path).metadata.num_row_groups == sum(sources)
    assert pq.read_table(path).equals(TABLE)
    index = read_index(path, merged.events)
    assert index is not None
    keys, untasked = index_keys(TABLE, [pq.read_metadata(path).row_group(i).num_rows
                                        for i in range(sum(sources))])  # fmt: skip
    assert index.keys.to_pylist() == keys.to_pylist()
    assert index.untasked == untasked
    for n in (0, 7, TASKS // 2, TASKS - 1):
        task_id, url = f"t{n}", url_of(n)
        read = matching_row_groups(path, merged.events, [task_id], url)
        assert read is not None
        rows = indexed_rows(path, read, [task_id], url)
        assert [r[0] for r in rows] == [e.stream_id for e in archived_about(ENTRIES, task_id, url)]


def test_a_source_without_its_index_makes_the_merge_write_and_index_the_rows_anew(
    tmp_path: Path, small_row_groups: int
) -> None:
    segments = write_segments(tmp_path, [200, 390])
    (tmp_path / index_name(segments[1].name)).unlink()

    merged = merge_segments(tmp_path, segments)

    path = tmp_path / merged.name
    index = read_index(path, merged.events)
    assert index is not None
    groups = row_groups_of(len(ENTRIES), small_row_groups)
    assert row_group_rows(path) == groups  # cut afresh, not the parts' groups
    keys, _ = index_keys(TABLE, groups)
    assert index.keys.to_pylist() == keys.to_pylist()


def test_an_index_that_does_not_match_its_segment_is_not_read(
    tmp_path: Path, small_row_groups: int
) -> None:
    (segment,) = write_segments(tmp_path, [])
    path = tmp_path / segment.name
    assert read_index(path, segment.events) is not None
    assert read_index(path, segment.events + 1) is None
    with open(path, "ab") as grown:
        grown.write(b"\0")
    assert read_index(path, segment.events) is None


def test_keys_are_renumbered_without_touching_their_hash_half() -> None:
    part = SegmentIndex(pa.array([(7 << 32) | 1, (9 << 32) | 0], pa.uint64()), [0], 2)
    keys, untasked = merged_index([part, part])
    assert keys.to_pylist() == [7 << 32 | 1, 7 << 32 | 3, 9 << 32 | 0, 9 << 32 | 2]
    assert untasked == [0, 2]
