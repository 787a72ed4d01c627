"""``add_new_ids`` (event ids known to be new, added to the dedup windows at once) leaves
the windows ``apply`` leaves one id at a time, turned at the same id, and asks only for
the ids that stay in them: a long run of ids is never made into Python strings whole."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import projector._fold as fold_module
from eventlog import AnyEvent, JobPaused
from projector._fold import add_new_ids, apply
from projector._state import State
from tests.projector.strategies import as_entries


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 40), st.integers(0, 200), st.integers(1, 30))
def test_new_ids_leave_the_windows_the_entry_by_entry_fold_leaves(
    before: int, total: int, window: int
) -> None:
    events: list[AnyEvent] = [
        JobPaused(actor="a", event_id=f"e{n}", reason="r") for n in range(before + total)
    ]
    entries = as_entries(events)
    ids = [e.event_id for e in events]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fold_module, "DEDUP_WINDOW", window)
        expected, marked = State(), State()
        for entry in entries[:before]:
            apply(expected, entry)
            apply(marked, entry)
        for entry in entries[before:]:
            apply(expected, entry)
        asked: list[tuple[int, int]] = []

        def part(start: int, stop: int) -> list[str]:
            asked.append((start, stop))
            return ids[before + start : before + stop]

        add_new_ids(marked, total, part)
    assert marked.recent_event_ids == expected.recent_event_ids
    assert marked.older_event_ids == expected.older_event_ids
    # Only what stays: the ids asked for are at most the two windows' worth.
    assert sum(stop - start for start, stop in asked) <= 2 * window
