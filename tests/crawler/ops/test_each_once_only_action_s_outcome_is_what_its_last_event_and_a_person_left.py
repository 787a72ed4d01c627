"""`action_outcomes` gives each once-only action of a task where its events left it, in the
order first intended: done (and how), intended with its outcome unknown, or as a person
decided — ``redo`` leaves it intended, ``abort`` aborted; other tasks' actions are not its."""

from __future__ import annotations

from crawler.ops import action_outcomes
from eventlog import ActionDone, ActionIntended, ActionResolved, AnyEvent, LogEntry, encode

TASK = "t1"


def entries(*events: AnyEvent) -> list[LogEntry]:
    return [LogEntry(f"{i + 1}-0", event, encode(event)) for i, event in enumerate(events)]


def test_each_action_stands_where_its_last_event_left_it() -> None:
    log = entries(
        ActionIntended(task_id=TASK, actor="w1", action_id="confirm:O1"),
        ActionDone(task_id=TASK, actor="w2", action_id="confirm:O1", result="verified"),
        ActionIntended(task_id=TASK, actor="w2", action_id="confirm:O2"),
        ActionIntended(task_id="other", actor="w2", action_id="confirm:O9"),
        ActionIntended(task_id=TASK, actor="w2", action_id="step:ship:O3"),
        ActionResolved(
            task_id=TASK, actor="ann", action_id="step:ship:O3", decision="redo", reason="again"
        ),
        ActionIntended(task_id=TASK, actor="w2", action_id="confirm:O4"),
        ActionResolved(
            task_id=TASK, actor="bob", action_id="confirm:O4", decision="abort", reason="stop"
        ),
    )
    found = {a.action_id: a for a in action_outcomes(log, TASK)}
    assert list(found) == ["confirm:O1", "confirm:O2", "step:ship:O3", "confirm:O4"]
    assert (found["confirm:O1"].phase, found["confirm:O1"].result) == ("done", "verified")
    assert found["confirm:O2"].phase == "intended" and found["confirm:O2"].decision is None
    redo = found["step:ship:O3"]
    assert (redo.phase, redo.decision, redo.by, redo.reason) == ("intended", "redo", "ann", "again")
    assert (found["confirm:O4"].phase, found["confirm:O4"].decision) == ("aborted", "abort")
