"""``named_task_ids``, the task ids a batch looks up among the stored ones, names each task
of the batch once, whether the batch holds only tasks' events or sites' and the job's too."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from eventlog import AnyEvent
from projector._taskstore import named_task_ids
from tests.projector.strategies import other_event, task_event


def _by_hand(events: list[AnyEvent]) -> set[str]:
    return {event.task_id for event in events if hasattr(event, "task_id")}


@given(st.lists(task_event(), max_size=40))
def test_a_batch_of_task_events_names_each_task_once(events: list[AnyEvent]) -> None:
    assert named_task_ids(events) == _by_hand(events)


@given(st.lists(st.one_of(task_event(), other_event()), max_size=40))
def test_a_batch_with_site_and_job_events_names_only_tasks(events: list[AnyEvent]) -> None:
    assert named_task_ids(events) == _by_hand(events)
