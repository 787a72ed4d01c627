"""A recrawl's progress counts its own run's tasks (`earlier_runs`, `of_run`): it goes from
0 to the run's pages, its percentage and its pages are the run's. Before, it counted every
run's tasks: the fifth run of a job started at 80 % done."""

from __future__ import annotations

from crawler.ops import Tracker
from crawler.ops._progress import earlier_runs, of_run
from eventlog import AnyEvent, PageFetched, TaskDone, TaskEnqueued
from projector import State, fold
from tests.projector.strategies import as_entries

SITE = "http://s.test"


def visit(task_id: str, run: int, *, done: bool = True) -> list[AnyEvent]:
    url = f"{SITE}/{task_id.split('@')[0]}"
    events: list[AnyEvent] = [
        TaskEnqueued(actor="w", task_id=task_id, url=url, site=SITE, run=run),
        PageFetched(actor="w", task_id=task_id, attempt=1, url=url, status=200, page=1, run=run),
    ]
    if done:
        events.append(TaskDone(actor="w", task_id=task_id, attempt=1, run=run))
    return events


def test_the_run_s_tasks_alone_are_counted() -> None:
    state = State()
    fold(as_entries([*visit("a", 1), *visit("b", 1), *visit("c", 1)]), state)
    earlier = earlier_runs(state, 2)
    fold(as_entries([*visit("a@2", 2), *visit("b@2", 2, done=False)]), state)
    total = of_run(Tracker(state).snapshot(0.0), earlier).total
    assert (total.discovered, total.done, total.pending, total.pages) == (2, 1, 1, 2)
    # No earlier run: nothing left out.
    assert of_run(Tracker(state).snapshot(0.0), {}).total.discovered == 5


def test_an_earlier_run_s_task_not_ended_stays_in_the_progress() -> None:
    # ``crawlog retry`` of an earlier run's failed task: work left is never left out.
    state = State()
    fold(as_entries([*visit("a", 1), *visit("b", 1, done=False)]), state)
    fold(as_entries([*visit("a@2", 2)]), state)
    total = of_run(Tracker(state).snapshot(0.0), earlier_runs(state, 2)).total
    assert (total.discovered, total.done, total.running + total.pending) == (2, 1, 1)
