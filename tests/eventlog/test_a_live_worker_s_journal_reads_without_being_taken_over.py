"""A tool reads a live worker's journal without opening it (the worker holds its lock):
every whole record, a record being written left out, and among them the writes whose
reply said the store had them — what the worker was told went through."""

from __future__ import annotations

from pathlib import Path

from eventlog import Journal, JournalSettle, acknowledged_writes, read_journal
from eventlog._journal import frame


def _write(journal: Journal, n: int) -> JournalSettle:
    event_ids: list[str | bytes | int] = [f"e{n}", b"payload"]
    args: list[str | bytes | int] = ["workers", "w1", f"{n}-0", "note", f"t{n}", b"", 0, "", ""]
    return journal.settle(1, 1, args + event_ids)


def test_the_writes_told_through_are_read_while_the_worker_holds_its_journal(
    tmp_path: Path,
) -> None:
    journal = Journal(tmp_path / "journal", fsync="never")
    try:
        applied, unanswered, refused, present, dup = (_write(journal, n) for n in range(5))
        journal.ack(applied.seq, "applied", "1-0")
        journal.ack(refused.seq, "lost")
        journal.ack(present.seq, "present", "2-0")
        journal.ack(dup.seq, "dup")
        # A record being written when the tool looks: a torn tail.
        (segment,) = (tmp_path / "journal").glob("*.journal")
        with segment.open("ab") as file:
            file.write(frame(b"half a record")[:-3])
        size = segment.stat().st_size
        records = read_journal(tmp_path / "journal")
        written = [applied, unanswered, refused, present, dup]
        assert [r.seq for r in records if isinstance(r, JournalSettle)] == [w.seq for w in written]
        assert len(records) == len(written) + 4  # and the four replies, the torn tail left out
        told = acknowledged_writes(records)
        assert [w.event_ids for w in told] == [["e0"], ["e3"], ["e4"]]
        assert unanswered.seq not in {w.seq for w in told}
        assert segment.stat().st_size == size  # nothing cut: the journal is its writer's
    finally:
        journal.close()


def test_an_empty_or_missing_journal_reads_as_nothing(tmp_path: Path) -> None:
    assert read_journal(tmp_path / "never-written") == []
    assert acknowledged_writes([]) == []
