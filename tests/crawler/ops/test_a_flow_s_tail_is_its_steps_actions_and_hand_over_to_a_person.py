"""`flow_tail` folds a task's events into its flow's last moments: the step each flow
checkpoint reached with its cursor, each once-only action's intent and outcome, the
hand-over to a person and the decision, oldest first and only the last few; other tasks'
events and checkpoints of no flow are not moments; a task with neither a flow state nor an
action has no tail."""

from __future__ import annotations

from crawler._flow import FlowState, encode_state
from crawler.ops import flow_tail, flow_tail_lines
from eventlog import (
    ActionDone,
    ActionIntended,
    ActionResolved,
    AnyEvent,
    CheckpointSaved,
    Cursor,
    LogEntry,
    PageFetched,
    TaskPaused,
    encode,
)

TASK = "t1"


def entries(*events: AnyEvent) -> list[LogEntry]:
    return [
        LogEntry(f"{1_700_000_000_000 + i * 1000}-0", event, encode(event))
        for i, event in enumerate(events)
    ]


def checkpoint(step: str, last_key: str | None, task: str = TASK) -> CheckpointSaved:
    state = FlowState(flow="ship-orders", definition="d", step=step, page=1, last_key=last_key)
    return CheckpointSaved(
        task_id=task, actor="w1", attempt=1, cursor=Cursor(page=1, state=encode_state(state))
    )


def test_the_tail_says_where_the_flow_stands_and_what_led_there() -> None:
    log = entries(
        PageFetched(task_id=TASK, actor="w1", attempt=1, url="http://x/orders", status=200),
        checkpoint("filter", None),
        ActionIntended(task_id=TASK, actor="w1", action_id="confirm:O1"),
        ActionDone(task_id=TASK, actor="w1", action_id="confirm:O1", result="verified"),
        checkpoint("ship", "O1"),
        checkpoint("ship", "O9", task="other"),
        ActionIntended(task_id=TASK, actor="w1", action_id="step:ship:O2"),
        TaskPaused(task_id=TASK, actor="w1", reason="flow ship-orders: step ship failed"),
        ActionResolved(
            task_id=TASK, actor="ann", action_id="step:ship:O2", decision="done", reason="skip"
        ),
    )
    tail = flow_tail(log, TASK)
    assert tail is not None
    assert (tail.flow, tail.step, tail.page, tail.last_key) == ("ship-orders", "ship", 1, "O1")
    assert [(m.kind, m.what) for m in tail.moments] == [
        ("step", "step filter reached: page 1 at its start"),
        ("intended", "confirm:O1: intended"),
        ("done", "confirm:O1: done (verified)"),
        ("step", "step ship reached: page 1 after O1"),
        ("intended", "step:ship:O2: intended"),
        ("to a person", "flow ship-orders: step ship failed"),
        ("decided", "step:ship:O2: decided done (skip)"),
    ]
    assert tail.moments[-1].by == "ann" and tail.left_out == 0
    lines = flow_tail_lines(tail)
    assert lines[0] == "flow ship-orders: step ship, page 1 after O1; its last 7 event(s):"
    assert lines[-1].endswith("decided      step:ship:O2: decided done (skip)")

    cut = flow_tail(log, TASK, shown=2)
    assert cut is not None and cut.left_out == 5
    assert [m.kind for m in cut.moments] == ["to a person", "decided"]


def test_a_task_of_no_flow_and_no_action_has_no_tail() -> None:
    plain = CheckpointSaved(task_id=TASK, actor="w1", attempt=1, cursor=Cursor(page=2))
    paused = TaskPaused(task_id=TASK, actor="ann", reason="operator pause")
    assert flow_tail(entries(plain, paused), TASK) is None
