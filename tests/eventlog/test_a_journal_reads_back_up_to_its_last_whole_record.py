"""The journal's framing: every whole record reads back; a torn or damaged one, and what
follows it, does not (a worker killed mid-write leaves its last record torn)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eventlog import Journal, JournalFull
from eventlog._journal import HEADER_BYTES, frame, read_frames

payloads = st.lists(st.binary(max_size=200), max_size=20)


@given(payloads)
def test_whole_records_read_back_as_written(written: list[bytes]) -> None:
    data = b"".join(map(frame, written))
    assert read_frames(data) == (written, len(data))


@given(payloads, st.data())
def test_a_cut_anywhere_reads_the_records_before_the_cut(
    written: list[bytes], data: st.DataObject
) -> None:
    framed = [frame(payload) for payload in written]
    whole = b"".join(framed)
    cut = data.draw(st.integers(0, len(whole)))
    ends, end = [], 0
    for record in framed:
        end += len(record)
        ends.append(end)
    complete = [p for p, e in zip(written, ends, strict=True) if e <= cut]
    got, length = read_frames(whole[:cut])
    assert got == complete
    assert length == (ends[len(complete) - 1] if complete else 0)


@given(st.lists(st.binary(min_size=1, max_size=50), min_size=1, max_size=10), st.data())
def test_a_flipped_byte_ends_the_read_before_its_record(
    written: list[bytes], data: st.DataObject
) -> None:
    framed = [frame(payload) for payload in written]
    damaged = data.draw(st.integers(0, len(framed) - 1))
    record = bytearray(framed[damaged])
    at = data.draw(st.integers(HEADER_BYTES, len(record) - 1))
    record[at] ^= 0xFF
    framed[damaged] = bytes(record)
    assert read_frames(b"".join(framed))[0] == written[:damaged]


def _write(journal: Journal, n: int) -> None:
    for i in range(n):
        journal.settle(1, 1, ["workers", "w1", f"{i}-0", "note", f"t{i}", b"", 0, "", ""])


def test_a_journal_cut_mid_record_reopens_at_its_last_whole_record(tmp_path: Path) -> None:
    journal = Journal(tmp_path, fsync="never")
    _write(journal, 3)
    journal.close()
    [segment] = [p for p in tmp_path.iterdir() if p.suffix == ".journal"]
    os.truncate(segment, segment.stat().st_size - 5)  # as a kill mid-write leaves it
    reopened = Journal(tmp_path, fsync="never")
    assert [r.entry_id for r in reopened.unsettled()] == ["0-0", "1-0"]
    _write(reopened, 1)  # appended after the last whole record: nothing torn in between
    reopened.close()
    again = Journal(tmp_path)
    assert [r.seq for r in again.unsettled()] == [1, 2, 3]
    assert again.unsettled()[-1].entry_id == "0-0"


def test_one_process_writes_a_journal(tmp_path: Path) -> None:
    Journal(tmp_path)
    with pytest.raises(Exception, match="in use by another live process"):
        Journal(tmp_path)


def test_a_full_disk_is_said_and_named(tmp_path: Path) -> None:
    journal = Journal(tmp_path)
    (tmp_path / "00000001.journal").symlink_to("/dev/full")  # every write: ENOSPC
    with pytest.raises(JournalFull, match=r"No space left on device.*free space"):
        _write(journal, 1)
