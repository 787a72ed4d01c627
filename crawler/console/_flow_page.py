"""The part of a task's page about its flow (`crawler.Flow`): the step it reached and its
cursor, the summary of its own data, its once-only actions with their outcomes, and — when
it waits for a person — the report it left (reason, screenshot) with the decisions that act
on it; then its event tail (`crawler.ops.flow_tail`).

Nothing here for a task of no flow and no once-only action.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from html import escape
from typing import Any, Final
from urllib.parse import quote

from crawler.console._pages import hidden, table, when
from crawler.ops import ActionOutcome, FlowTail, action_outcomes, flow_tail, last_report
from eventlog import LogEntry, TaskPaused
from projector import PAUSED, TaskState

DATA_SHOWN: Final = 60
"""Characters of one data value the page shows (its JSON)."""


def screenshot_path(job: str, task_id: str) -> str:
    """Where the console serves the screenshot of a task's last report to a person."""
    return f"/jobs/{quote(job, safe='')}/tasks/{quote(task_id, safe='')}/report/screenshot"


def resolve_path(job: str, task_id: str) -> str:
    return f"/jobs/{quote(job, safe='')}/tasks/{quote(task_id, safe='')}/resolve"


def flow_section(
    job: str, task: TaskState, entries: Sequence[LogEntry], csrf: str, form_id: str
) -> str:
    """The flow's part of ``task``'s page (empty for a task without a flow or an action)."""
    tail = flow_tail(entries, task.task_id)
    actions = action_outcomes(entries, task.task_id)
    if tail is None and not actions:
        return ""
    waiting = task.status == PAUSED and any(a.phase == "intended" for a in actions)
    parts = [
        '<div id="flow" data-live><h2>Flow</h2>',
        _state(tail),
        _person(job, task, list(entries), csrf, form_id) if waiting else "",
        _actions(actions),
        _tail(tail),
        "</div>",
    ]
    return "".join(parts)


def data_summary(data: dict[str, Any]) -> str:
    """A flow's own data in a line: each key with its value's JSON, cut."""
    if not data:
        return "none of its own"
    shown = []
    for key, value in sorted(data.items()):
        text = json.dumps(value, ensure_ascii=False, default=str)
        shown.append(f"{key} = {text if len(text) <= DATA_SHOWN else text[: DATA_SHOWN - 1] + '…'}")
    return "; ".join(shown)


def _state(tail: FlowTail | None) -> str:
    if tail is None or tail.flow is None:
        return '<p id="flow-state">no flow checkpoint yet</p>'
    after = f"after <b>{escape(tail.last_key)}</b>" if tail.last_key else "at its start"
    return (
        f'<p id="flow-state">flow <b>{escape(tail.flow)}</b>: step '
        f'<b id="flow-step">{escape(tail.step or "")}</b>, page {tail.page} {after}<br>'
        f'data: <span id="flow-data">{escape(data_summary(tail.data))}</span></p>'
    )


def _person(job: str, task: TaskState, entries: list[LogEntry], csrf: str, form_id: str) -> str:
    paused = [e.event for e in entries if isinstance(e.event, TaskPaused)]
    paused = [p for p in paused if p.task_id == task.task_id]
    reason = paused[-1].reason if paused else task.last_reason or ""
    report = last_report(task.task_id, entries)
    shot = ""
    if report is not None and isinstance(report[1], TaskPaused):
        evidence = report[1].evidence
        if evidence is not None and evidence.screenshot:
            shot = (
                f"<p>last page: {escape(evidence.url)}</p>"
                f'<img id="flow-screenshot" src="{escape(screenshot_path(job, task.task_id))}" '
                'alt="the page when it was handed over" '
                'style="max-width:100%;border:1px solid #ccc">'
            )
    form = (
        f'<form method="post" id="flow-resolve" action="{escape(resolve_path(job, task.task_id))}">'
        + hidden(csrf=csrf, form_id=form_id, task_id=task.task_id)
        + '<input type="text" name="reason" required placeholder="what you found" '
        'aria-label="reason for the decision">'
        '<button type="submit" name="decision" value="done">Approve (mark done / skip)</button>'
        '<button type="submit" name="decision" value="redo">Retry the step</button>'
        '<button type="submit" name="decision" value="abort">Abort the task</button></form>'
    )
    return (
        '<section id="flow-person"><h3>Needs a person</h3>'
        f'<p id="flow-reason">{escape(reason)}</p>{shot}{form}</section>'
    )


def _outcome(action: ActionOutcome) -> str:
    if action.phase == "intended":
        state = "intended, outcome unknown"
    else:
        state = action.phase + (f" ({action.result})" if action.result else "")
    if action.decision:
        state += f"; decided {action.decision} by {action.by}: {action.reason}"
    return state


def _actions(actions: list[ActionOutcome]) -> str:
    if not actions:
        return ""
    rows = [[f"<code>{escape(a.action_id)}</code>", escape(_outcome(a))] for a in actions]
    return "<h3>Once-only actions</h3>" + table(("action", "outcome"), rows, id_="flow-actions")


def _tail(tail: FlowTail | None) -> str:
    if tail is None:
        return ""
    items = "".join(
        f"<li>{escape(when(m.at_ms / 1000))} <b>{escape(m.kind)}</b> {escape(m.what)}"
        f" <small>({escape(m.by)})</small></li>"
        for m in tail.moments
    )
    earlier = (
        f"<p>{tail.left_out} earlier event(s): see the table below.</p>" if tail.left_out else ""
    )
    return f'<h3>Its last events</h3>{earlier}<ol id="flow-tail">{items}</ol>'
