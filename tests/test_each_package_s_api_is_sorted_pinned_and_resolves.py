"""Each package's ``__init__.py`` is its API: ``__all__`` is sorted (as ruff sorts it), is
exactly the list pinned here (a name added or dropped is a decision, made here too), and
every name in it resolves, those loaded on first use included. ``projector`` and the heavy
parts of ``crawler`` load lazily, so importing them loads neither Arrow, DuckDB nor the
HTTP stack. (httpx's tests/test_exported_members.py is the model.)"""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
import types

import pytest

from tests.packages import ROOT

API: dict[str, list[str]] = {
    "eventlog": [
        "ACKING_MODES",
        "CONTROL_POLL_S",
        "DATA_DIR_ENV",
        "DEFAULT_DEDUP_WINDOW_S",
        "DEFAULT_LEASE_MS",
        "DEFAULT_NAME_TTL_MS",
        "DEFAULT_RIDE_OUT_S",
        "EMPTY_JAR_VERSION",
        "EVENT_TYPES",
        "EVIDENCE_BODY_BYTES",
        "FSYNC_POLICIES",
        "LANES",
        "LANE_HIGH",
        "LANE_NORMAL",
        "LANE_RECOVERY",
        "NO_JAR_VERSION",
        "REDIS_URL_ENV",
        "ROBOTS_LOCK_MS",
        "SCHEMA_VERSION",
        "START",
        "TERMINAL_EVENT_TYPES",
        "UPCASTERS",
        "WORKERS_GROUP",
        "WORKER_STOPPED",
        "ActionDone",
        "ActionIntended",
        "ActionResolved",
        "ActionState",
        "AnyEvent",
        "ArchiveFacts",
        "CheckpointSaved",
        "CircuitClosed",
        "CircuitOpened",
        "ConfigError",
        "ControlEvent",
        "Controls",
        "CookieStore",
        "Counts",
        "CrawlogError",
        "Cursor",
        "DeadLetter",
        "Decision",
        "Event",
        "EventDecodeError",
        "EventLog",
        "Evidence",
        "Flags",
        "Fsync",
        "HostDelays",
        "HostSlots",
        "InFlight",
        "ItemScraped",
        "JarCopy",
        "JarWrite",
        "JobIdentity",
        "JobKeys",
        "JobPaused",
        "JobResumed",
        "Lease",
        "LeaseInfo",
        "LeaseLost",
        "LogEntry",
        "OperatorRefused",
        "PageFetched",
        "PoisonEntry",
        "QueueObserver",
        "ReleaseReason",
        "RequestSpec",
        "Retry",
        "RetryScheduled",
        "RobotsFile",
        "ServerCannotPersist",
        "ServerError",
        "ServerInfo",
        "ServerStartError",
        "ServerStatus",
        "ServerUnreachable",
        "SettleMode",
        "SharedRobots",
        "SiteEvent",
        "SitePaused",
        "SiteResumed",
        "SlotAnswer",
        "StoreFacts",
        "StoreLost",
        "StoredCookie",
        "StreamInfo",
        "Task",
        "TaskAborted",
        "TaskClaimed",
        "TaskDone",
        "TaskEnqueued",
        "TaskEvent",
        "TaskFailed",
        "TaskParked",
        "TaskPaused",
        "TaskQueue",
        "TaskReclaimed",
        "TaskReleased",
        "TaskResumed",
        "TaskRetried",
        "UnknownTask",
        "WorkerInfo",
        "WorkerNameTaken",
        "answers",
        "apply_control",
        "cannot_persist",
        "cannot_persist_because",
        "check_identity",
        "check_job_name",
        "clear_job_keys",
        "client_for",
        "connect",
        "cookie_field",
        "copy_log_tail",
        "create_identity",
        "decode",
        "did_you_mean",
        "encode",
        "ensure_server",
        "find_dead_letter",
        "flock_within",
        "fsync_dir",
        "hold_worker_name",
        "is_seen",
        "job_config",
        "job_exists",
        "job_names",
        "lane_for",
        "live_holders",
        "log_continues",
        "max_block_ms",
        "new_event_id",
        "publish_projector_position",
        "read_controls",
        "read_host_delays",
        "read_identity",
        "read_leases",
        "read_projector_position",
        "read_workers",
        "rebuild_checkpoints",
        "redacted",
        "redis_errors",
        "replay_dead_letter",
        "require_data_dir",
        "resolve_action",
        "resolve_data_dir",
        "resolve_url",
        "restart_log",
        "restore_checkpoints",
        "restore_delayed",
        "restore_flags",
        "restore_lanes",
        "restore_parked",
        "restore_seen",
        "server_status",
        "server_status_at",
        "set_identity",
        "stop_server",
        "store_facts",
        "store_job_config",
        "store_verdict",
        "stream_id_key",
        "supervise_server",
        "tag_of",
        "tasks_at",
        "uncertain_action",
        "upcast",
        "wait_for_projector_position",
        "write_atomic",
    ],
    "projector": [
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
    ],
    "crawler": [
        "BASE_PARTS",
        "AiohttpTransport",
        "DropItem",
        "FetchConfig",
        "Fetcher",
        "Follow",
        "Item",
        "JobConfig",
        "LinkResolver",
        "NextPage",
        "Output",
        "Politeness",
        "PolitenessGate",
        "Response",
        "SiteSpider",
        "Spider",
        "SpiderOutputError",
        "UncertainAction",
        "base_key",
        "base_part",
        "clean_href",
        "enqueue_seeds",
        "extract_links",
        "join_href",
        "save_config",
    ],
    "crawler.cli": [
        "LiveProgress",
        "OpenJob",
        "Progress",
        "Row",
        "Tracker",
        "cli",
        "crawlog_command",
        "format_duration",
        "format_eta",
        "main",
        "stop_processes",
        "task_id_of",
    ],
    "crawler.console": [
        "ConsoleSettings",
        "bind_socket",
        "is_loopback_address",
        "new_token",
        "serve",
        "url_of",
    ],
    "crawler.scrapy": [
        "DupeFilter",
        "ItemPipeline",
        "PolitenessMiddleware",
        "Scheduler",
    ],
    "crawler.testsite": [
        "DEFAULT_HUGE_PAGE_BYTES",
        "DEFAULT_PAGES",
        "ECHO_PREFIX",
        "FLUSH_INTERVAL_S",
        "GO_PREFIX",
        "HUGE_PATH",
        "ITEM_PREFIX",
        "JSON_PATH",
        "LAYOUTS",
        "LOGIN_PASSWORD",
        "LOGIN_PATH",
        "LOGIN_USER",
        "LOOP_PATHS",
        "MAX_LINKS",
        "MAX_PAGES",
        "MAX_PAGE_BYTES",
        "MAX_SEED",
        "MEMBERS_PREFIX",
        "MEMBER_PAGES",
        "MIN_LINKS",
        "MIN_PAGE_BYTES",
        "MOVED_PREFIX",
        "NO_FAULTS",
        "OTHER_TYPE_ITEMS",
        "SESSION_COOKIE",
        "SET_COOKIE_PARAM",
        "SITEMAP_PATH",
        "TEXT_PATH",
        "CrawlCheck",
        "Faults",
        "Layout",
        "Request",
        "RunningSite",
        "SiteMap",
        "check_crawl",
        "read_request_log",
        "run_testsite",
        "serve_testsite",
        "sitemap_children",
        "sitemap_lastmod",
        "tasks_held",
    ],
}
"""What each package exports: one name a line, in ``__all__``'s order."""

LAZY_PACKAGES = ("projector", "crawler", "crawler.cli", "crawler.console", "crawler.testsite")
"""Packages that load some or all of their names on first use (``_LAZY``)."""
HEAVY = ("pyarrow", "duckdb", "aiohttp", "httpx", "prometheus_client", "rich")
"""What no importer of a package's API should pay for until it uses the part that needs it."""


def _isort_key(name: str) -> tuple[int, str]:
    # ruff's RUF022 order: CONSTANTS, then Classes, then everything else.
    kind = 0 if name.isupper() else 1 if name[0].isupper() else 2
    return kind, name


@pytest.mark.parametrize("package", sorted(API))
def test_all_is_sorted_and_is_the_pinned_list(package: str) -> None:
    exported = list(importlib.import_module(package).__all__)
    assert exported == sorted(exported, key=_isort_key)
    assert len(set(exported)) == len(exported)
    assert exported == API[package]


@pytest.mark.parametrize("package", sorted(API))
def test_every_exported_name_resolves(package: str) -> None:
    module = importlib.import_module(package)
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert missing == []


@pytest.mark.parametrize("package", sorted(API))
def test_every_public_name_a_package_binds_is_exported(package: str) -> None:
    module = importlib.import_module(package)
    for name in module.__all__:
        getattr(module, name)  # binds the lazy ones too
    bound = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and name not in {"annotations", "TYPE_CHECKING"}
        and not isinstance(value, types.ModuleType)
    }
    assert bound - set(module.__all__) == set()


def _lazy_map_and_type_checking_imports(package: str) -> tuple[dict[str, str], dict[str, str]]:
    init = ROOT.joinpath(*package.split("."), "__init__.py")
    tree = ast.parse(init.read_text())
    lazy: dict[str, str] = {}
    typed: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and ast.unparse(node.target) == "_LAZY":
            assert isinstance(node.value, ast.Dict)
            lazy = ast.literal_eval(node.value)
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom) and statement.module
                typed.update({alias.name: statement.module for alias in statement.names})
    return lazy, typed


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_the_lazy_map_and_the_imports_mypy_sees_agree(package: str) -> None:
    lazy, typed = _lazy_map_and_type_checking_imports(package)
    assert lazy, f"{package} has no _LAZY map"
    assert lazy == typed
    module = importlib.import_module(package)
    for name, where in lazy.items():
        assert name in module.__all__
        assert getattr(module, name) is getattr(importlib.import_module(where), name)


def test_an_unknown_name_is_an_attribute_error() -> None:
    for package in LAZY_PACKAGES:
        with pytest.raises(AttributeError, match="no attribute 'nothing_of_that_name'"):
            getattr(importlib.import_module(package), "nothing_of_that_name")  # noqa: B009


def test_importing_the_apis_loads_no_arrow_duckdb_or_http_stack() -> None:
    code = "import sys, json, eventlog, projector, crawler; print(json.dumps(sorted(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    loaded = set(json.loads(result.stdout))
    assert {"eventlog", "projector", "crawler"} <= loaded
    assert {m for m in loaded if m.split(".")[0] in HEAVY} == set()
    assert {m for m in loaded if m.startswith("projector.")} == set()
