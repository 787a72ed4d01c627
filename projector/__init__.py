"""The projector: the fold of the event log into state, its archive, analytics and reports.

Every name here loads on first use (a module-level ``__getattr__``): ``import projector``
costs nothing, and a worker that needs the fold or the state model never loads Arrow or
DuckDB, which only the archive, the reports and the analytics use. ``_LAZY`` maps each name
to the module that defines it; the imports under ``TYPE_CHECKING`` say the same to mypy
(tests/test_each_package_s_api_is_sorted_pinned_and_resolves.py checks that both agree).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from projector._archive import (
        SCHEMA,
        ArchiveCorrupt,
        SegmentInfo,
        read_entries,
        write_segment,
        write_table,
    )
    from projector._defaults import (
        DEFAULT_COMMIT_INTERVAL_S,
        DEFAULT_KEEP_TAIL_S,
        DEFAULT_SNAPSHOT_INTERVAL_S,
        EXPORT_FORMATS,
        EXPORT_WHAT,
        ExportFormat,
        ExportWhat,
    )
    from projector._export import export
    from projector._feed import Feed, FeedPosition, position_path
    from projector._fold import apply, fold
    from projector._history import (
        TaskFilter,
        bring_back_named,
        current_state,
        current_tasks,
        fetch_attempts,
        read_live,
        task_history,
    )
    from projector._identity import (
        MANIFEST,
        archive_facts,
        check_store,
        in_flight_at_loss,
        in_flight_path,
    )
    from projector._projector import (
        Projector,
        committed_position,
        read_committed,
        tune_gc,
        wait_for_position,
    )
    from projector._query import QueryResult, query
    from projector._reindex import index_archive
    from projector._repair import rebuild_from_redis
    from projector._replay import (
        Replayed,
        TaskSpill,
        find_archived,
        rebuild_checkpoint_index,
        replay,
        replay_archive,
        replay_job,
        verify,
    )
    from projector._report import Report, build_report
    from projector._restore import NOT_RESTORED, Restored, RestorePlan, plan_restore, restore_job
    from projector._state import (
        ABORTED,
        DEDUP_WINDOW,
        DONE,
        FAILED,
        PAUSED,
        PENDING,
        RUNNING,
        TERMINAL,
        JobState,
        SiteState,
        State,
        TaskState,
        canonical,
    )
    from projector._store import Manifest, ProjectorBusy, Store, job_dir, projected_jobs
    from projector._summary import LISTED, summarize
    from projector._views import NoProjectedData
    from projector._writer import WriterFailed

_LAZY: dict[str, str] = {
    "ABORTED": "projector._state",
    "ArchiveCorrupt": "projector._archive",
    "DEDUP_WINDOW": "projector._state",
    "DEFAULT_COMMIT_INTERVAL_S": "projector._defaults",
    "DEFAULT_KEEP_TAIL_S": "projector._defaults",
    "DEFAULT_SNAPSHOT_INTERVAL_S": "projector._defaults",
    "DONE": "projector._state",
    "EXPORT_FORMATS": "projector._defaults",
    "EXPORT_WHAT": "projector._defaults",
    "ExportFormat": "projector._defaults",
    "ExportWhat": "projector._defaults",
    "FAILED": "projector._state",
    "Feed": "projector._feed",
    "FeedPosition": "projector._feed",
    "JobState": "projector._state",
    "LISTED": "projector._summary",
    "MANIFEST": "projector._identity",
    "Manifest": "projector._store",
    "NOT_RESTORED": "projector._restore",
    "NoProjectedData": "projector._views",
    "PAUSED": "projector._state",
    "PENDING": "projector._state",
    "Projector": "projector._projector",
    "ProjectorBusy": "projector._store",
    "QueryResult": "projector._query",
    "RUNNING": "projector._state",
    "Replayed": "projector._replay",
    "Report": "projector._report",
    "RestorePlan": "projector._restore",
    "Restored": "projector._restore",
    "SCHEMA": "projector._archive",
    "SegmentInfo": "projector._archive",
    "SiteState": "projector._state",
    "State": "projector._state",
    "Store": "projector._store",
    "TERMINAL": "projector._state",
    "TaskFilter": "projector._history",
    "TaskSpill": "projector._replay",
    "TaskState": "projector._state",
    "WriterFailed": "projector._writer",
    "apply": "projector._fold",
    "archive_facts": "projector._identity",
    "bring_back_named": "projector._history",
    "build_report": "projector._report",
    "canonical": "projector._state",
    "check_store": "projector._identity",
    "committed_position": "projector._projector",
    "current_state": "projector._history",
    "current_tasks": "projector._history",
    "export": "projector._export",
    "fetch_attempts": "projector._history",
    "find_archived": "projector._replay",
    "fold": "projector._fold",
    "in_flight_at_loss": "projector._identity",
    "in_flight_path": "projector._identity",
    "index_archive": "projector._reindex",
    "job_dir": "projector._store",
    "plan_restore": "projector._restore",
    "position_path": "projector._feed",
    "projected_jobs": "projector._store",
    "query": "projector._query",
    "read_committed": "projector._projector",
    "read_entries": "projector._archive",
    "read_live": "projector._history",
    "rebuild_checkpoint_index": "projector._replay",
    "rebuild_from_redis": "projector._repair",
    "replay": "projector._replay",
    "replay_archive": "projector._replay",
    "replay_job": "projector._replay",
    "restore_job": "projector._restore",
    "summarize": "projector._summary",
    "task_history": "projector._history",
    "tune_gc": "projector._projector",
    "verify": "projector._replay",
    "wait_for_position": "projector._projector",
    "write_segment": "projector._archive",
    "write_table": "projector._archive",
}
"""Each exported name → the module that defines it."""

__all__ = [
    "ABORTED",
    "DEDUP_WINDOW",
    "DEFAULT_COMMIT_INTERVAL_S",
    "DEFAULT_KEEP_TAIL_S",
    "DEFAULT_SNAPSHOT_INTERVAL_S",
    "DONE",
    "EXPORT_FORMATS",
    "EXPORT_WHAT",
    "FAILED",
    "LISTED",
    "MANIFEST",
    "NOT_RESTORED",
    "PAUSED",
    "PENDING",
    "RUNNING",
    "SCHEMA",
    "TERMINAL",
    "ArchiveCorrupt",
    "ExportFormat",
    "ExportWhat",
    "Feed",
    "FeedPosition",
    "JobState",
    "Manifest",
    "NoProjectedData",
    "Projector",
    "ProjectorBusy",
    "QueryResult",
    "Replayed",
    "Report",
    "RestorePlan",
    "Restored",
    "SegmentInfo",
    "SiteState",
    "State",
    "Store",
    "TaskFilter",
    "TaskSpill",
    "TaskState",
    "WriterFailed",
    "apply",
    "archive_facts",
    "bring_back_named",
    "build_report",
    "canonical",
    "check_store",
    "committed_position",
    "current_state",
    "current_tasks",
    "export",
    "fetch_attempts",
    "find_archived",
    "fold",
    "in_flight_at_loss",
    "in_flight_path",
    "index_archive",
    "job_dir",
    "plan_restore",
    "position_path",
    "projected_jobs",
    "query",
    "read_committed",
    "read_entries",
    "read_live",
    "rebuild_checkpoint_index",
    "rebuild_from_redis",
    "replay",
    "replay_archive",
    "replay_job",
    "restore_job",
    "summarize",
    "task_history",
    "tune_gc",
    "verify",
    "wait_for_position",
    "write_segment",
    "write_table",
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
