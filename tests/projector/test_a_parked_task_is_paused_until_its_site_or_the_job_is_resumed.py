"""The fold of ``TaskParked``: a task a worker set aside for its site's or the job's pause
is paused, held by nobody, and pending again once every pause over it is lifted."""

from __future__ import annotations

from eventlog import JobPaused, JobResumed, SitePaused, SiteResumed, TaskParked, TaskPaused
from projector._fold import fold
from tests.projector.strategies import as_entries
from tests.projector.test_fold import SITE, claimed, done, enqueued

OTHER = "http://other.test"


def parked(reason: str = "site paused", task_id: str = "t1") -> TaskParked:
    return TaskParked(actor="w1", task_id=task_id, reason=reason)


def test_a_claimed_task_parked_for_its_site_is_paused_and_held_by_nobody() -> None:
    state = fold(
        as_entries(
            [enqueued(), SitePaused(actor="bob", site=SITE, reason="asked"), claimed(), parked()]
        )
    )
    task = state.tasks["t1"]
    assert (task.status, task.owner, task.parked, task.last_reason) == (
        "paused",
        None,
        True,
        "site paused",
    )
    assert state.job.tasks == {"pending": 0, "running": 0, "paused": 1}
    assert state.sites[SITE].tasks["paused"] == 1


def test_the_site_s_resume_makes_its_parked_tasks_pending_and_a_claim_then_runs_them() -> None:
    other = enqueued("t2")
    other = type(other)(actor="seed", task_id="t2", url=f"{OTHER}/t2", site=OTHER)
    events = [
        enqueued(),
        other,
        SitePaused(actor="bob", site=SITE, reason="asked"),
        SitePaused(actor="bob", site=OTHER, reason="asked"),
        claimed(),
        parked(),
        claimed(task_id="t2"),
        parked(task_id="t2"),
        SiteResumed(actor="bob", site=SITE, reason="ok"),
    ]
    state = fold(as_entries(events))
    assert (state.tasks["t1"].status, state.tasks["t1"].parked) == ("pending", False)
    assert state.tasks["t1"].last_reason == "ok"
    assert state.tasks["t2"].status == "paused", "its own site is still paused"
    state = fold(as_entries([claimed(), done()]), state)
    assert state.tasks["t1"].status == "done" and not state.job.anomalies


def test_a_task_parked_for_the_job_s_pause_waits_for_the_job_and_its_site() -> None:
    events = [
        enqueued(),
        JobPaused(actor="carol", reason="deploy"),
        claimed(),
        parked("job paused"),
        SitePaused(actor="bob", site=SITE, reason="asked"),
        JobResumed(actor="carol", reason="deployed"),
    ]
    state = fold(as_entries(events))
    assert state.tasks["t1"].status == "paused", "its site is paused still"
    state = fold(as_entries([SiteResumed(actor="bob", site=SITE, reason="ok")]), state)
    assert state.tasks["t1"].status == "pending" and not state.job.anomalies


def test_a_parked_task_claimed_again_runs_without_an_anomaly() -> None:
    # Lifted by a resume whose event a report has not folded yet: the claim is good.
    state = fold(as_entries([enqueued(), claimed(), parked(), claimed(), done()]))
    assert state.tasks["t1"].status == "done" and not state.job.anomalies


def test_an_operator_s_pause_is_not_lifted_by_the_site_s_resume() -> None:
    events = [
        enqueued(),
        TaskPaused(actor="alice", task_id="t1", reason="look at it"),
        SitePaused(actor="bob", site=SITE, reason="asked"),
        parked(),
        SiteResumed(actor="bob", site=SITE, reason="ok"),
    ]
    state = fold(as_entries(events))
    task = state.tasks["t1"]
    assert (task.status, task.parked, task.last_reason) == ("paused", False, "look at it")
    assert not state.job.anomalies
