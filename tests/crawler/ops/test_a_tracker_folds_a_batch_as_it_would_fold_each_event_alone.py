"""``Tracker.fold`` (a refresh's batch, through the projector's batch loop) leaves the
state, the per-site retry and recovery sums and the clock offsets exactly as ``apply``
called once per event does; a subclass that notes more per event still sees each one."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from crawler.ops._progress import Tracker
from eventlog import LogEntry
from projector._state import canonical
from tests.projector.strategies import as_entries, logs


def _with_repeats(log: list[LogEntry], picks: list[int]) -> list[LogEntry]:
    """The log, then some of its events again (repeats the fold must ignore)."""
    events = [entry.event for entry in log]
    return as_entries(events + [events[i % len(events)] for i in picks])


def _one_by_one(log: list[LogEntry]) -> Tracker:
    tracker = Tracker()
    for entry in log:
        tracker.apply(entry)
    return tracker


@given(logs, st.lists(st.integers(0, 200), max_size=8), st.lists(st.integers(0, 80), max_size=4))
def test_a_batch_folds_as_each_event_applied_alone(
    log: list[LogEntry], picks: list[int], cuts: list[int]
) -> None:
    log = _with_repeats(log, picks)
    expected = _one_by_one(log)
    batched = Tracker()
    bounds = [0, *sorted(min(cut, len(log)) for cut in cuts), len(log)]
    for start, stop in itertools.pairwise(bounds):
        batched.fold(log[start:stop])
    assert canonical(batched.state) == canonical(expected.state)
    assert batched.retries == expected.retries
    assert batched.recoveries == expected.recoveries
    assert batched.clock_offsets == expected.clock_offsets
    assert batched.snapshot(0.0) == expected.snapshot(0.0)


class _Noting(Tracker):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def apply(self, entry: LogEntry) -> None:
        super().apply(entry)
        self.seen.append(entry.stream_id)


@given(logs)
def test_a_tracker_that_notes_each_event_is_given_each_one(log: list[LogEntry]) -> None:
    noting = _Noting()
    noting.fold(log)
    assert noting.seen == [entry.stream_id for entry in log]
    assert canonical(noting.state) == canonical(_one_by_one(log).state)
