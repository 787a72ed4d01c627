"""``crawlog history`` says of a retake (a take-back, a reclaim) whose lost lease had no
request of the task on its way: its page was not requested twice."""

from __future__ import annotations

from crawler.ops import detail_of
from eventlog import TaskClaimed, TaskReclaimed


def test_a_retake_without_a_request_on_its_way_says_so_and_one_with_says_nothing() -> None:
    quiet = TaskReclaimed(
        actor="w2", task_id="t1", attempt=1, previous_owner="w1", deliveries=2,
        unrecorded_fetch=False,
    )  # fmt: skip
    assert detail_of(quiet) == (
        "lease expired: taken from w1 (delivery 2); no request of it was on its way"
    )
    sent = TaskReclaimed(actor="w2", task_id="t1", attempt=1, previous_owner="w1", deliveries=2)
    assert detail_of(sent) == "lease expired: taken from w1 (delivery 2)"
    back = TaskClaimed(actor="w1", task_id="t1", attempt=1, deliveries=2, unrecorded_fetch=False)
    assert detail_of(back) == "attempt 1, delivery 2; no request of it was on its way"
    first = TaskClaimed(actor="w1", task_id="t1", attempt=1, unrecorded_fetch=False)
    assert detail_of(first) == "attempt 1"
