"""A failed or aborted task's evidence: the last response it got, as the operator reads it.

The worker keeps that response with the task's terminal event (`eventlog.Evidence`): its
status, headers and the start of its body, compressed. It is read back from the
projector's archive and the stream's tail (`projector.task_history`), so it is there
after the stream is trimmed. A flow that hands its task to a person (`crawler.Flow`)
pauses it with a report of the same kind, a screenshot beside the page (`last_report`).
``crawlog evidence`` writes either to files, ``crawlog history``
and the console's "Needs a person" page show it (`last_failure`, `evidence_summary`).
"""

from __future__ import annotations

from typing import TypeAlias

from eventlog import Evidence, LogEntry, TaskAborted, TaskFailed, TaskPaused

Failure: TypeAlias = TaskFailed | TaskAborted
"""A task's end that may carry evidence."""
BODY_STEM = "body"
SCREENSHOT_FILE = "screenshot.jpg"
UNKNOWN_EXTENSION = ".bin"
"""The body file's extension when its content type names none."""


def last_failure(task_id: str, entries: list[LogEntry]) -> tuple[LogEntry, Failure] | None:
    """The task's last failed or aborted end among ``entries`` (its history), if any."""
    for entry in reversed(entries):
        event = entry.event
        if isinstance(event, TaskFailed | TaskAborted) and event.task_id == task_id:
            return entry, event
    return None


def last_report(
    task_id: str, entries: list[LogEntry]
) -> tuple[LogEntry, Failure | TaskPaused] | None:
    """The task's last end with evidence or hand-over to a person with a report (a flow's
    `TaskPaused` carrying evidence: its page, a screenshot), whichever came last."""
    for entry in reversed(entries):
        event = entry.event
        if getattr(event, "task_id", None) != task_id:
            continue
        if isinstance(event, TaskFailed | TaskAborted):
            return entry, event
        if isinstance(event, TaskPaused) and event.evidence is not None:
            return entry, event
    return None


def evidence_summary(evidence: Evidence) -> str:
    """One line: the response's status, content type and body size."""
    kept = f"{evidence.body_bytes} B body"
    if evidence.truncated:
        kept += f", its first {len(evidence.body)} B kept"
    return f"HTTP {evidence.status}, {evidence.content_type or 'no content type'}, {kept}"


def export_command_line(job: str, task_id: str) -> str:
    """The command that writes a task's evidence to files."""
    return f"crawlog evidence --job {job} {task_id} --out evidence-{task_id}"


def body_extension(evidence: Evidence) -> str:
    """The body file's extension, from the content type (``.html``, ``.json``...)."""
    import mimetypes  # here: its import is a share of every command's start

    media = (evidence.content_type or "").partition(";")[0].strip().lower()
    return (mimetypes.guess_extension(media) if media else None) or UNKNOWN_EXTENSION


def response_text(evidence: Evidence) -> str:
    """The response's status line and headers, as they came (repeated ones each on a line)."""
    import http

    try:
        phrase = http.HTTPStatus(evidence.status).phrase
    except ValueError:
        phrase = ""
    lines = [f"HTTP {evidence.status} {phrase}".rstrip()]
    lines += [f"{name}: {value}" for name, value in evidence.headers]
    if evidence.headers_truncated:
        lines.append("# (more headers were left out: past the size evidence keeps)")
    return "\n".join(lines) + "\n"
