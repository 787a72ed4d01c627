"""Which segment files make up the archive when the manifest is gone (``chain``), and which
files on disk a manifest has lost (``unnamed_segments``): a merge's replaced parts and a
merge or commit in flight are not lost; a segment inside the committed range is."""

from __future__ import annotations

from pathlib import Path

import pytest

from projector._archive import ArchiveCorrupt, SegmentInfo, segment_name, span_of
from projector._integrity import unnamed_segments
from projector._repair import chain
from projector._store import Manifest, Store


def segment(first: str, last: str, events: int = 1) -> SegmentInfo:
    return SegmentInfo(name=segment_name(first, last), first_id=first, last_id=last, events=events)


def test_a_segment_name_gives_back_the_ids_it_spans() -> None:
    assert span_of(segment_name("17-0", "1700-12")) == ("17-0", "1700-12")
    assert span_of("manifest.json") is None
    assert span_of(f".{segment_name('1-0', '2-0')}.123.tmp") is None


def test_segments_are_chained_in_log_order_without_a_merge_s_parts() -> None:
    a, b, c = segment("1-0", "1-9"), segment("2-0", "2-9"), segment("3-0", "3-9")
    merged = segment("1-0", "2-9", 2)
    assert chain([c, b, a]) == [a, b, c]
    assert chain([a, c, merged, b]) == [merged, c]  # the parts a crash left behind


def test_two_segments_that_overlap_otherwise_are_refused() -> None:
    with pytest.raises(ArchiveCorrupt, match="overlap"):
        chain([segment("1-0", "2-5"), segment("2-0", "3-0")])


def test_a_manifest_loses_only_a_segment_inside_its_committed_range(tmp_path: Path) -> None:
    store = Store(tmp_path, "j")
    store.prepare()
    a, b = segment("1-0", "1-9"), segment("2-0", "2-9")
    manifest = Manifest(job="j", position="2-9", segments=(a, b), events=2)
    lost = segment("1-10", "1-20")  # between the two: in the range, named by nobody
    files = [a, b, segment("1-0", "2-9"), segment("1-2", "1-5"), segment("3-0", "3-9"), lost]
    for info in files:  # named, merge in flight, a merge's part, a commit in flight, lost
        (store.archive / info.name).touch()
    assert unnamed_segments(store, manifest) == [store.archive / lost.name]
