"""``crawlog history`` says of a `TaskOrphaned` what was not applied and why."""

from __future__ import annotations

from crawler.ops import detail_of
from eventlog import TaskOrphaned


def test_the_detail_names_the_step_the_events_and_the_new_owner() -> None:
    orphan = TaskOrphaned(
        actor="w1", task_id="t1", entry_id="1-0", step="ckpt", events=2, owner="w2"
    )
    assert detail_of(orphan) == (
        "2 event(s) of w1's ckpt from its journal not applied: the lease was taken over by w2"
    )
    gone = TaskOrphaned(actor="w1", task_id="t1", entry_id="1-0", step="finish", events=1)
    assert detail_of(gone).endswith("the lease was gone")
