"""The decision about a dead worker's lease, shared by native workers and Scrapy processes
(`crawler._recovery`): back to the recovery lane with its recoveries and owners counted,
or, taken over more often than the job's limit, aborted naming every owner."""

from __future__ import annotations

from crawler._recovery import aborted_for_recoveries, past_recovery_limit, recovery_of
from eventlog import Lease, Task, TaskAborted, TaskReclaimed

LIMIT = 3


def lease(*, recoveries: int, deliveries: int, owners: tuple[str, ...] = ()) -> Lease:
    task = Task(
        task_id="t1", url="http://a.test/", site="http://a.test", recoveries=recoveries,
        owners=owners, attempt=2,
    )  # fmt: skip
    return Lease(lane=0, entry_id="1-0", task=task, deliveries=deliveries, previous_owner="w1")


def test_an_expired_lease_goes_back_with_its_recoveries_and_owners_counted() -> None:
    expired = lease(recoveries=1, deliveries=2, owners=("w0",))
    same, event, task = recovery_of(expired, "w2", LIMIT)
    assert same is expired
    assert isinstance(event, TaskReclaimed)
    assert (event.actor, event.task_id, event.attempt) == ("w2", "t1", 2)
    assert (event.previous_owner, event.deliveries) == ("w1", 2)
    assert task is not None
    assert (task.recoveries, task.owners, task.attempt) == (2, ("w0", "w1"), 2)


def test_a_lease_taken_over_more_often_than_the_limit_is_aborted_naming_its_owners() -> None:
    expired = lease(recoveries=3, deliveries=2, owners=("w0", "w0b", "w0c"))
    assert expired.recoveries == LIMIT + 1
    _, event, task = recovery_of(expired, "w2", LIMIT)
    assert task is None
    assert isinstance(event, TaskAborted)
    assert event.reason == "recovered 4 times (limit 3)"
    assert event.owners == ("w0", "w0b", "w0c", "w1")
    assert event.deliveries == 2


def test_the_limit_itself_is_still_allowed() -> None:
    assert not past_recovery_limit(lease(recoveries=2, deliveries=2), LIMIT)
    assert past_recovery_limit(lease(recoveries=3, deliveries=2), LIMIT)


def test_a_lease_taken_back_past_the_limit_is_aborted_by_its_taker() -> None:
    taken = lease(recoveries=4, deliveries=1, owners=("w0",))
    aborted = aborted_for_recoveries(taken, "w1", LIMIT, ("w0", "w1"))
    assert (aborted.actor, aborted.owners, aborted.attempt) == ("w1", ("w0", "w1"), 2)
    assert aborted.reason == "recovered 4 times (limit 3)"
