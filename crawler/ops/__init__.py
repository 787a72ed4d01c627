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

Every name loads on first use (:func:`eventlog.install_lazy_importer`): the command line
imports this package at start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from eventlog import install_lazy_importer as _install_lazy_importer

if TYPE_CHECKING:
    from crawler.ops._control import control_site, pause_or_resume
    from crawler.ops._evidence import (
        BODY_STEM,
        SCREENSHOT_FILE,
        Failure,
        body_extension,
        evidence_summary,
        export_command_line,
        last_failure,
        last_report,
        response_text,
    )
    from crawler.ops._flow_tail import (
        FLOW_TAIL,
        ActionOutcome,
        FlowMoment,
        FlowTail,
        action_outcomes,
        flow_tail,
        flow_tail_lines,
        flow_tails,
    )
    from crawler.ops._format import format_duration, table_lines, twice_phrase, unjudged_phrase
    from crawler.ops._history import detail_of, request_summary
    from crawler.ops._job import (
        OpenJob,
        default_operator,
        open_job,
        open_log,
        require_reason,
        resolve_site,
        task_id_of,
    )
    from crawler.ops._jobs import JobRow, read_job_rows
    from crawler.ops._progress import TOTAL, Progress, Row, Tracker, format_eta
    from crawler.ops._progress_source import LiveProgress
    from crawler.ops._resolve import needs_a_person, needs_a_person_lines, resolve
    from crawler.ops._retry import RETRY_BATCH, retry_tasks
    from crawler.ops._sessions import SessionRow, clear_session_origin, origin_in, session_rows


__all__ = [
    "BODY_STEM",
    "FLOW_TAIL",
    "RETRY_BATCH",
    "SCREENSHOT_FILE",
    "TOTAL",
    "ActionOutcome",
    "Failure",
    "FlowMoment",
    "FlowTail",
    "JobRow",
    "LiveProgress",
    "OpenJob",
    "Progress",
    "Row",
    "SessionRow",
    "Tracker",
    "action_outcomes",
    "body_extension",
    "clear_session_origin",
    "control_site",
    "default_operator",
    "detail_of",
    "evidence_summary",
    "export_command_line",
    "flow_tail",
    "flow_tail_lines",
    "flow_tails",
    "format_duration",
    "format_eta",
    "last_failure",
    "last_report",
    "needs_a_person",
    "needs_a_person_lines",
    "open_job",
    "open_log",
    "origin_in",
    "pause_or_resume",
    "read_job_rows",
    "request_summary",
    "require_reason",
    "resolve",
    "resolve_site",
    "response_text",
    "retry_tasks",
    "session_rows",
    "table_lines",
    "task_id_of",
    "twice_phrase",
    "unjudged_phrase",
]

_install_lazy_importer(globals())
