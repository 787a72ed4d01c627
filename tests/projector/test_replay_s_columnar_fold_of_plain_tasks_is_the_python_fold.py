"""Replay's columnar fast path (``_columnar``: the tasks of a segment whose events are the
plain sequence, folded from its columns) gives the state the Python fold gives: tasks, the
dedup windows and their turns, item keys counted once across tasks, site and job totals,
anomalies in log order, whatever the segments, the eviction and the window size."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import projector._fold as fold_module
from eventlog import (
    AnyEvent,
    ItemScraped,
    LogEntry,
    PageFetched,
    TaskClaimed,
    TaskDone,
    TaskEnqueued,
)
from projector._archive import read_table
from projector._columnar import COLUMNS, plain_tasks
from projector._fold import fold
from projector._replay import Replayed, TaskSpill, fold_archive
from projector._state import State, canonical
from tests.projector.strategies import as_entries, logs_with_plain_tasks
from tests.projector.test_a_replay_keeps_only_live_tasks_in_memory_and_folds_to_the_same_state import (  # noqa: E501
    archived,
)


def folded(log: list[LogEntry], window: int) -> State:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fold_module, "DEDUP_WINDOW", window)
        return fold(log)


@settings(max_examples=40, deadline=None)
@given(
    logs_with_plain_tasks(),
    st.lists(st.integers(0, 120), max_size=3),
    st.sampled_from([1, 3, 8, 100_000]),
    st.sampled_from([(1, 0), (7, 0), (500_000, 1_000_000)]),
)
def test_columnar_equals_the_python_fold(
    log: list[LogEntry], cuts: list[int], window: int, evict: tuple[int, int]
) -> None:
    expected = folded(log, window)
    evict_events, evict_tasks = evict
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as patch:
        patch.setattr(fold_module, "DEDUP_WINDOW", window)
        store, manifest = archived(Path(tmp), log, cuts)
        for columnar in (True, False):
            with TaskSpill(Path(tmp), evict_tasks=evict_tasks) as spill:
                state = fold_archive(
                    store, manifest, spill, evict_events=evict_events, columnar=columnar
                )
                replayed = Replayed(state, spill).whole_state()
            assert canonical(replayed) == canonical(expected)
            # The same sets in the same roles: which window an id is in decides when it goes.
            assert replayed.recent_event_ids == expected.recent_event_ids
            assert replayed.older_event_ids == expected.older_event_ids
            assert replayed.anomalies == expected.anomalies


def test_the_plain_tasks_of_a_segment_are_found_and_folded_as_the_python_fold_does(
    tmp_path: Path,
) -> None:
    def task(n: int, *, page: int = 1, done: bool = True) -> list[AnyEvent]:
        common = {"actor": "w", "task_id": f"p{n}"}
        site = "http://c" if done and page >= 0 else "http://a"  # c: only plain tasks
        return [
            TaskEnqueued(**common, url=f"{site}/{n}", site=site),
            TaskClaimed(**common, attempt=1),
            PageFetched(**common, attempt=1, url=f"http://a/{n}", status=200, page=page),
            ItemScraped(**common, key=f"k{n}"),
            *([TaskDone(**common, attempt=1)] if done else []),
        ]

    # p0 and p3 are plain; p1 never ends, p2's page is a refetch (page -1).
    log = as_entries([*task(0), *task(1, done=False), *task(2, page=-1), *task(3)])
    store, manifest = archived(tmp_path, log, [])
    table = read_table(store.segment_paths(manifest)[0], COLUMNS)
    found = plain_tasks(table, set(), lambda _: [])
    assert found is not None
    assert sorted(found.task_ids) == ["p0", "p3"]
    assert sorted(found.keys) == ["k0", "k3"]
    assert len(found.rest) == 4 + 5
    with TaskSpill(tmp_path) as spill:
        state = Replayed(fold_archive(store, manifest, spill), spill).whole_state()
    assert canonical(state) == canonical(fold(log))
    # Known to the state already, or one of its keys counted before: not plain.
    found = plain_tasks(table, {"k3"}, lambda ids: [t for t in ids if t == "p0"])
    assert found is None
