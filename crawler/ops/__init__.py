"""The operator's model and actions: what ``crawlog``'s commands and the web console share.

A job opened on its server (``OpenJob``, ``open_job``, ``open_log``), tasks and sites from
what the operator types (``task_id_of``, ``resolve_site``), the jobs of a data directory
(``read_job_rows``), a task's history and evidence as the operator reads them
(``detail_of``, ``last_failure``, ``evidence_summary``), the actions (``pause_or_resume``,
``control_site``, ``retry_tasks``, ``resolve``: each an event with who and why), a job's
live progress (``LiveProgress``, ``Tracker``, ``Progress``) and how durations, ETAs and
tables are written. ``crawler/cli/`` and ``crawler/console/`` are two front ends on it; it
imports neither, nor click, nor a web stack (rq keeps its operator actions the same way,
in a library module its command line calls).

Every name loads on first use (``_LAZY``): the command line imports this package at start.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from crawler.ops._control import control_site, pause_or_resume
    from crawler.ops._evidence import (
        BODY_STEM,
        Failure,
        body_extension,
        evidence_summary,
        export_command_line,
        last_failure,
        response_text,
    )
    from crawler.ops._format import format_duration, table_lines
    from crawler.ops._history import detail_of, request_summary
    from crawler.ops._job import (
        OpenJob,
        default_operator,
        open_job,
        open_log,
        resolve_site,
        task_id_of,
    )
    from crawler.ops._jobs import JobRow, read_job_rows
    from crawler.ops._progress import TOTAL, Progress, Row, Tracker, format_eta
    from crawler.ops._progress_source import LiveProgress
    from crawler.ops._resolve import resolve
    from crawler.ops._retry import RETRY_BATCH, retry_of, retry_tasks

_LAZY: dict[str, str] = {
    "BODY_STEM": "crawler.ops._evidence",
    "Failure": "crawler.ops._evidence",
    "JobRow": "crawler.ops._jobs",
    "LiveProgress": "crawler.ops._progress_source",
    "OpenJob": "crawler.ops._job",
    "Progress": "crawler.ops._progress",
    "RETRY_BATCH": "crawler.ops._retry",
    "Row": "crawler.ops._progress",
    "TOTAL": "crawler.ops._progress",
    "Tracker": "crawler.ops._progress",
    "body_extension": "crawler.ops._evidence",
    "control_site": "crawler.ops._control",
    "default_operator": "crawler.ops._job",
    "detail_of": "crawler.ops._history",
    "evidence_summary": "crawler.ops._evidence",
    "export_command_line": "crawler.ops._evidence",
    "format_duration": "crawler.ops._format",
    "format_eta": "crawler.ops._progress",
    "last_failure": "crawler.ops._evidence",
    "open_job": "crawler.ops._job",
    "open_log": "crawler.ops._job",
    "pause_or_resume": "crawler.ops._control",
    "read_job_rows": "crawler.ops._jobs",
    "request_summary": "crawler.ops._history",
    "resolve": "crawler.ops._resolve",
    "resolve_site": "crawler.ops._job",
    "response_text": "crawler.ops._evidence",
    "retry_of": "crawler.ops._retry",
    "retry_tasks": "crawler.ops._retry",
    "table_lines": "crawler.ops._format",
    "task_id_of": "crawler.ops._job",
}
"""Each name loaded on first use → the module that defines it."""

__all__ = [
    "BODY_STEM",
    "RETRY_BATCH",
    "TOTAL",
    "Failure",
    "JobRow",
    "LiveProgress",
    "OpenJob",
    "Progress",
    "Row",
    "Tracker",
    "body_extension",
    "control_site",
    "default_operator",
    "detail_of",
    "evidence_summary",
    "export_command_line",
    "format_duration",
    "format_eta",
    "last_failure",
    "open_job",
    "open_log",
    "pause_or_resume",
    "read_job_rows",
    "request_summary",
    "resolve",
    "resolve_site",
    "response_text",
    "retry_of",
    "retry_tasks",
    "table_lines",
    "task_id_of",
]

if not TYPE_CHECKING:
    # Hidden from mypy, so that a name missing from the imports above is an error there
    # rather than an ``Any``.

    def __getattr__(name: str) -> object:
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *__all__})
