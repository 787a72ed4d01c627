"""Properties of the fold over generated logs, anomalies and all."""

from __future__ import annotations

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from eventlog import JobPaused, LogEntry, TaskRetried
from projector._fold import apply, apply_all, fold
from projector._state import DEDUP_WINDOW, TERMINAL, State, canonical, state_from_bytes
from tests.projector.strategies import as_entries, logs


@given(logs, st.data())
def test_folding_in_any_split_through_a_snapshot_gives_the_same_state(
    log: list[LogEntry], data: st.DataObject
) -> None:
    cut = data.draw(st.integers(0, len(log)))
    restored = state_from_bytes(canonical(fold(log[:cut])))
    assert canonical(fold(log[cut:], restored)) == canonical(fold(log))


def apply_each(log: list[LogEntry]) -> State:
    state = State()
    for entry in log:
        apply(state, entry)
    return state


@given(logs)
def test_folding_a_batch_at_once_is_applying_each_event_in_turn(log: list[LogEntry]) -> None:
    assert canonical(apply_all(State(), log)) == canonical(apply_each(log))


def test_folding_a_batch_at_once_remembers_event_ids_across_dedup_windows() -> None:
    # Two and a half windows of distinct ids, then repeats: one from the window before
    # (ignored), one from two windows back (forgotten, so folded again).
    ids = [f"e{n}" for n in range(DEDUP_WINDOW * 5 // 2)] + ["e5", f"e{DEDUP_WINDOW + 5}"]
    events = [JobPaused(actor="operator", reason="r", event_id=i) for i in ids]
    log = as_entries(events)
    state = apply_all(State(), log)
    assert canonical(state) == canonical(apply_each(log))
    assert state.job.repeats_ignored == 1


@given(logs)
def test_a_terminal_task_is_only_left_through_an_operator_retry(log: list[LogEntry]) -> None:
    state = State()
    for entry in log:
        before = {t: task.status for t, task in state.tasks.items()}
        apply(state, entry)
        for task_id, status in before.items():
            after = state.tasks[task_id].status
            if status in TERMINAL and after != status:
                assert isinstance(entry.event, TaskRetried)
                assert entry.event.task_id == task_id


@given(logs, st.data())
def test_a_repeated_event_changes_nothing_but_the_repeat_counter(
    log: list[LogEntry], data: st.DataObject
) -> None:
    repeated = data.draw(st.lists(st.sampled_from(log), max_size=5))
    events = [e.event for e in log] + [e.event for e in repeated]
    with_repeats = fold(as_entries(events))
    without = fold(as_entries([e.event for e in log]))
    assert with_repeats.job.repeats_ignored == len(repeated)
    # Only the position and the event counters may differ.
    for state in (with_repeats, without):
        state.position, state.job.events, state.job.repeats_ignored = "", 0, 0
        state.recent_event_ids = {}
    assert canonical(with_repeats) == canonical(without)


@given(logs)
def test_site_and_job_counts_by_status_match_the_tasks(log: list[LogEntry]) -> None:
    state = fold(log)
    by_status: dict[str, int] = {}
    for task in state.tasks.values():
        by_status[task.status] = by_status.get(task.status, 0) + 1
    assert {s: n for s, n in state.job.tasks.items() if n} == by_status
    for site in state.sites.values():
        expected = [t.status for t in state.tasks.values() if t.site == site.site]
        assert sum(site.tasks.values()) == len(expected)
        assert all(n >= 0 for n in site.tasks.values())


@given(logs)
def test_every_refused_event_is_counted_and_kept(log: list[LogEntry]) -> None:
    state = fold(log)
    assert sum(state.job.anomalies.values()) == len(state.anomalies)
    assert msgspec.json.encode(state.anomalies)  # plain data, reportable
