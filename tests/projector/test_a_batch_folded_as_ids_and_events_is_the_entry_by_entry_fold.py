"""``apply_events`` (replay's fold: a batch as two lists, its event ids checked against the
windows at once) gives the state ``apply`` gives entry by entry: repeats ignored, windows
turned at the same event, anomalies recorded with their stream IDs."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import projector._fold as fold_module
from eventlog import LogEntry
from projector._fold import apply, apply_events
from projector._state import State, canonical
from tests.projector.strategies import as_entries, logs


@st.composite
def logs_with_repeats(draw: st.DrawFn) -> list[LogEntry]:
    """A log in which some events are appended again later (a repeat the append script
    let through): the same event, with its event id, at a later stream ID."""
    events = [e.event for e in draw(logs)]
    for _ in range(draw(st.integers(0, 6))):
        if not events:
            break
        event = events[draw(st.integers(0, len(events) - 1))]
        events.insert(draw(st.integers(0, len(events))), event)
    return as_entries(events)


@settings(max_examples=300, deadline=None)
@given(
    logs_with_repeats(),
    st.lists(st.integers(0, 80), max_size=6),
    st.sampled_from([1, 2, 3, 5, 8, 100_000]),
)
def test_a_log_folded_in_batches_of_ids_and_events_is_the_entry_by_entry_fold(
    log: list[LogEntry], cuts: list[int], window: int
) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fold_module, "DEDUP_WINDOW", window)
        expected = State()
        for entry in log:
            apply(expected, entry)
        batched = State()
        bounds = sorted({0, len(log), *(c for c in cuts if 0 < c < len(log))})
        for a, b in itertools.pairwise(bounds):
            part = log[a:b]
            apply_events(batched, [e.stream_id for e in part], [e.event for e in part])
    assert canonical(batched) == canonical(expected)
    # The same sets, in the same roles: which window an id is in decides when it is forgotten.
    assert batched.recent_event_ids == expected.recent_event_ids
    assert batched.older_event_ids == expected.older_event_ids
