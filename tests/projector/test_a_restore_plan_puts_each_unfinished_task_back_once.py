"""`plan_restore`: what a store must hold to go on from the fold of a job's log (pure)."""

from __future__ import annotations

from eventlog import LANE_NORMAL, LANE_RECOVERY, Cursor, RetryScheduled, Validators
from projector import JobState, SiteState, State, TaskState, plan_restore


def task(task_id: str, status: str, **fields: object) -> TaskState:
    return TaskState(task_id=task_id, url=f"http://s/{task_id}", site="s", status=status, **fields)  # type: ignore[arg-type]


def test_each_unfinished_task_goes_back_once_and_every_task_is_seen() -> None:
    state = State(
        tasks={
            "done": task("done", "done"),
            "pending": task("pending", "pending", attempt=2),
            "running": task(
                "running", "running", owner="w1", checkpoint=Cursor(page=3), checkpoint_id="5-0"
            ),
            "parked": task("parked", "paused", parked=True),
            "own": task("own", "paused"),
            "person": task("person", "paused", actions={"pay": "intended"}),
        },
        sites={"s": SiteState(site="s", paused=True, circuit="open")},
        job=JobState(paused=True),
    )
    plan = plan_restore(state, now=1000.0)
    assert sorted(plan.seen) == sorted(state.tasks)
    lanes = {t.task_id: lane for lane, t in plan.lanes}
    assert lanes == {"pending": LANE_NORMAL, "running": LANE_RECOVERY, "parked": LANE_NORMAL}
    assert [t.attempt for _, t in plan.lanes if t.task_id == "pending"] == [2]
    assert sorted(t.task_id for _, t in plan.parked) == ["own", "person"]
    assert [e.task_id for e in plan.reclaimed] == ["running"]
    assert plan.checkpoints["running"][0] == "5-0"
    assert plan.checkpoints["running"][1].cursor == Cursor(page=3)
    assert plan.uncertain == ["person"]
    assert plan.flags.awaiting == {"person": ("s", "pay")}
    assert plan.flags.paused_tasks == {"own": "s"}
    assert plan.flags.actions == {("person", "pay"): "intended"}
    assert plan.flags.job_paused and plan.flags.paused_sites == ("s",)
    assert plan.flags.open_circuits == {"s": 1000.0}


def test_a_retry_not_due_yet_waits_until_due_and_one_due_goes_to_its_lane() -> None:
    waiting = task("waiting", "pending", retries=1, updated_at=100.0)
    due = task("due", "pending", retries=1, updated_at=100.0)
    moved_on = task("moved", "pending", retries=1, updated_at=130.0)
    state = State(tasks={t.task_id: t for t in (waiting, due, moved_on)})
    retries = {
        "waiting": RetryScheduled(
            actor="w1", task_id="waiting", attempt=1, delay_s=50.0, reason="503", at=100.0
        ),
        "due": RetryScheduled(
            actor="w1", task_id="due", attempt=1, delay_s=5.0, reason="503", at=100.0
        ),
        "moved": RetryScheduled(
            actor="w1", task_id="moved", attempt=1, delay_s=50.0, reason="503", at=100.0
        ),
    }
    plan = plan_restore(state, now=120.0, retries=retries)
    assert [(ms, t.task_id, t.not_before) for ms, _, t in plan.delayed] == [
        (150_000, "waiting", 150.0)
    ]
    assert sorted(t.task_id for _, t in plan.lanes) == ["due", "moved"]


def test_a_recrawl_s_task_goes_back_in_its_run_with_the_validators_it_revisits_with() -> None:
    validators = Validators(etag='"e1"', body_hash="h1", status=200, landed="http://a/x/", pages=2)
    state = State(tasks={"r": task("r", "pending", run=3, revisit=validators)})
    [(_, again)] = plan_restore(state, now=1000.0).lanes
    assert (again.run, again.revisit) == (3, validators)
