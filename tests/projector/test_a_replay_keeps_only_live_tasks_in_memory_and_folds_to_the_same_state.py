"""Replay takes ended tasks out of its memory (as the projector does) and still folds the
log to exactly the state a plain fold gives; ``verify`` compares the stored tasks too."""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eventlog import EventLog, LogEntry
from projector._archive import write_segment
from projector._fold import fold
from projector._projector import Projector
from projector._replay import Replayed, TaskSpill, archived_entries, fold_archive, verify
from projector._state import TERMINAL, canonical
from projector._store import Manifest, Store
from projector._taskstore import task_from_bytes, task_row
from tests.projector.strategies import logs
from tests.projector.test_projector import task_events


def archived(data_dir: Path, log: list[LogEntry], cuts: list[int]) -> tuple[Store, Manifest]:
    """``log`` written as archive segments split at ``cuts``, and a manifest naming them."""
    store = Store(data_dir, "j")
    store.prepare()
    bounds = sorted({0, len(log), *(c for c in cuts if 0 < c < len(log))})
    segments = tuple(write_segment(store.archive, log[a:b]) for a, b in itertools.pairwise(bounds))
    position = log[-1].stream_id if log else "0-0"
    return store, Manifest(job="j", position=position, segments=segments, events=len(log))


@settings(max_examples=60, deadline=None)
@given(logs, st.integers(1, 12), st.lists(st.integers(0, 80), max_size=3), st.integers(1, 3))
def test_a_replay_evicting_ended_tasks_at_any_interval_folds_to_the_plain_fold(
    log: list[LogEntry], evict_events: int, cuts: list[int], evict_slice: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store, manifest = archived(Path(tmp), log, cuts)
        assert [e.stream_id for e in archived_entries(store, manifest)] == [
            e.stream_id for e in log
        ]
        with TaskSpill(Path(tmp), evict_tasks=0, evict_slice=evict_slice) as spill:
            state = fold_archive(store, manifest, spill, evict_events=evict_events)
            replayed = Replayed(state, spill)
            # Ended tasks left memory (and a retried one came back to be folded again).
            assert canonical(replayed.whole_state()) == canonical(fold(log))
            spill.evict(state)
            assert not any(t.status in TERMINAL for t in state.tasks.values())
            assert canonical(replayed.whole_state()) == canonical(fold(log))
            assert replayed.task_count() == len(fold(log).tasks)
            pointers = dict(replayed.checkpoint_pointers())
            whole = fold(log).tasks
            assert set(pointers) == {
                t for t, task in whole.items() if task.status in TERMINAL or task.checkpoint_id
            }
        assert not spill.directory.exists()


@pytest.mark.anyio
async def test_verify_finds_a_stored_task_that_differs_from_the_replay(
    log: EventLog, make_projector: Callable[..., Projector], data_dir: Path, job: str
) -> None:
    await log.append_many([e for n in range(30) for e in task_events(n)])
    async with make_projector() as projector:
        await projector.catch_up(snapshot=True)
    store = Store(data_dir, job)
    manifest = store.read_manifest()
    assert manifest.task_segments, "ended tasks left the projector's memory"
    for evict_events in (1, 7, 1_000_000):
        found = verify(store, evict_events=evict_events, evict_tasks=0)
        assert found == (manifest.snapshot_position, [])

    # One stored task changed on disk: the comparison of the stored tasks finds it.
    path = store.task_segment_paths(manifest)[-1]
    table = pq.read_table(path)
    states = table.column("state").to_pylist()
    task = task_from_bytes(states[3])
    task.status = "failed"
    states[3] = task_row(task).state
    pq.write_table(table.set_column(7, "state", [states]), path)
    _, found = verify(store, evict_events=7, evict_tasks=0)
    assert found == [f"state.tasks.{task.task_id}.status: live='failed' replay='done'"]
