"""The projector: the fold of the event log into state, its archive, analytics and reports.

Every name here loads on first use: ``import projector`` costs nothing beyond the
``eventlog`` it builds on, and a worker that needs the fold or the state model never loads
Arrow or DuckDB, which only the archive, the reports and the analytics use. The imports under
``TYPE_CHECKING`` say to mypy where each name comes from, and
:func:`eventlog.install_lazy_importer` loads each from there on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from eventlog import install_lazy_importer as _install_lazy_importer

if TYPE_CHECKING:
    from projector._archive import (
        SCHEMA,
        ArchiveCorrupt,
        SegmentInfo,
        read_entries,
        write_segment,
        write_table,
    )
    from projector._changes import (
        CHANGES,
        PageChange,
        RunSummary,
        Unjudged,
        listed,
        page_changes,
        run_summaries,
        unjudged,
    )
    from projector._committed import committed_position, read_committed, wait_for_position
    from projector._continuity import ArchiveBehind
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
    from projector._feed import CHANGES_FED, Feed, FeedPosition, FeedWhat, position_path
    from projector._fetches import (
        CLOCK_SKEW_WARNING_S,
        ClockSkew,
        FetchTracker,
        clock_offset,
        clock_skew,
    )
    from projector._fold import apply, fold
    from projector._history import (
        TaskFilter,
        bring_back_named,
        current_state,
        current_tasks,
        fetch_attempts,
        log_entries,
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
    from projector._integrity import files_warning, stream_gap
    from projector._item_changes import (
        ITEM_CHANGES,
        SUB_SEQ,
        ItemChange,
        ItemTally,
        ItemTallyFold,
        item_changes,
        item_tally,
        live_items,
    )
    from projector._pg_feed import (
        FeedDatabaseError,
        PostgresFeed,
        PostgresPosition,
        postgres_target,
    )
    from projector._projector import Projector, tune_gc
    from projector._query import QueryResult, query
    from projector._reindex import index_archive
    from projector._repair import rebuild_from_redis, repair
    from projector._replay import (
        Replayed,
        TaskSpill,
        archived_entries,
        find_archived,
        rebuild_checkpoint_index,
        replay,
        replay_archive,
        replay_job,
        verify,
    )
    from projector._report import build_report
    from projector._report_model import Report
    from projector._restore import (
        Restored,
        RestorePlan,
        plan_restore,
        redirect_claims,
        restore_job,
    )
    from projector._revisits import (
        DEFAULT_INTERVAL_S,
        DEFAULT_MAX_INTERVAL_S,
        DEFAULT_MIN_INTERVAL_S,
        DueSummary,
        PageSchedule,
        RevisitPolicy,
        due_summary,
        first_interval,
        is_due,
        next_interval,
        request_key,
        schedules,
    )
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


__all__ = [
    "ABORTED",
    "CHANGES",
    "CHANGES_FED",
    "CLOCK_SKEW_WARNING_S",
    "DEDUP_WINDOW",
    "DEFAULT_COMMIT_INTERVAL_S",
    "DEFAULT_INTERVAL_S",
    "DEFAULT_KEEP_TAIL_S",
    "DEFAULT_MAX_INTERVAL_S",
    "DEFAULT_MIN_INTERVAL_S",
    "DEFAULT_SNAPSHOT_INTERVAL_S",
    "DONE",
    "EXPORT_FORMATS",
    "EXPORT_WHAT",
    "FAILED",
    "ITEM_CHANGES",
    "LISTED",
    "MANIFEST",
    "PAUSED",
    "PENDING",
    "RUNNING",
    "SCHEMA",
    "SUB_SEQ",
    "TERMINAL",
    "ArchiveBehind",
    "ArchiveCorrupt",
    "ClockSkew",
    "DueSummary",
    "ExportFormat",
    "ExportWhat",
    "Feed",
    "FeedDatabaseError",
    "FeedPosition",
    "FeedWhat",
    "FetchTracker",
    "ItemChange",
    "ItemTally",
    "ItemTallyFold",
    "JobState",
    "Manifest",
    "NoProjectedData",
    "PageChange",
    "PageSchedule",
    "PostgresFeed",
    "PostgresPosition",
    "Projector",
    "ProjectorBusy",
    "QueryResult",
    "Replayed",
    "Report",
    "RestorePlan",
    "Restored",
    "RevisitPolicy",
    "RunSummary",
    "SegmentInfo",
    "SiteState",
    "State",
    "Store",
    "TaskFilter",
    "TaskSpill",
    "TaskState",
    "Unjudged",
    "WriterFailed",
    "apply",
    "archive_facts",
    "archived_entries",
    "bring_back_named",
    "build_report",
    "canonical",
    "check_store",
    "clock_offset",
    "clock_skew",
    "committed_position",
    "current_state",
    "current_tasks",
    "due_summary",
    "export",
    "fetch_attempts",
    "files_warning",
    "find_archived",
    "first_interval",
    "fold",
    "in_flight_at_loss",
    "in_flight_path",
    "index_archive",
    "is_due",
    "item_changes",
    "item_tally",
    "job_dir",
    "listed",
    "live_items",
    "log_entries",
    "next_interval",
    "page_changes",
    "plan_restore",
    "position_path",
    "postgres_target",
    "projected_jobs",
    "query",
    "read_committed",
    "read_entries",
    "read_live",
    "rebuild_checkpoint_index",
    "rebuild_from_redis",
    "redirect_claims",
    "repair",
    "replay",
    "replay_archive",
    "replay_job",
    "request_key",
    "restore_job",
    "run_summaries",
    "schedules",
    "stream_gap",
    "summarize",
    "task_history",
    "tune_gc",
    "unjudged",
    "verify",
    "wait_for_position",
    "write_segment",
    "write_table",
]

_install_lazy_importer(globals())
