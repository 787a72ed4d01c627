"""The projector's figures say whether the job has a run past the first
(`FetchFigures.recrawled`: a recrawl's enqueue in the log), the same observed batch by batch
and rebuilt from the archive, kept across a restart from the tracker's dump, and unknown
(None) where a dump from before it is restored. ``crawlog report --json`` reads the whole
archive for the items over runs only where it is not known to be False."""

from __future__ import annotations

from pathlib import Path

import msgspec

from eventlog import RECRAWL_ACTOR, AnyEvent, LogEntry, TaskEnqueued
from projector._archive import write_segment
from projector._fetches import FetchTracker, TrackedFetches, rebuild
from projector._state import State
from tests.projector.recrawl_logs import entries, visit


def _tracked(events: list[AnyEvent]) -> FetchTracker:
    tracker = FetchTracker()
    tracker.observe(State(), entries(events))
    return tracker


def _recrawl_of(events: list[AnyEvent]) -> list[AnyEvent]:
    return [
        msgspec.structs.replace(e, actor=RECRAWL_ACTOR) if isinstance(e, TaskEnqueued) else e
        for e in events
    ]


FIRST = [*visit(1, "/a", {"a": 1}), *visit(1, "/b", {"b": 1})]
SECOND = _recrawl_of(visit(2, "/a", {}, "unchanged", status=304))


def test_a_job_run_once_is_not_recrawled_and_one_run_again_is(tmp_path: Path) -> None:
    assert _tracked(FIRST).figures().recrawled is False
    assert _tracked([*FIRST, *SECOND]).figures().recrawled is True
    for name, log in (("once", FIRST), ("twice", [*FIRST, *SECOND])):
        (tmp_path / name).mkdir()
        segment = write_segment(tmp_path / name, entries(log))
        rebuilt = rebuild([tmp_path / name / segment.name]).figures().recrawled
        assert rebuilt is _tracked(log).figures().recrawled


def test_the_figure_survives_a_restart_and_is_unknown_from_an_older_dump() -> None:
    tracker = _tracked([*FIRST, *SECOND])
    assert FetchTracker.restore(tracker.dump()).figures().recrawled is True
    older = msgspec.msgpack.encode(
        msgspec.structs.replace(
            msgspec.msgpack.decode(tracker.dump(), type=TrackedFetches), recrawled=None
        )
    )
    restored = FetchTracker.restore(older)
    assert restored.figures().recrawled is None
    restored.observe(State(), [LogEntry("9000-0", SECOND[0], b"")])
    assert restored.figures().recrawled is True
