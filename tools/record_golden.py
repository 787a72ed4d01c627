"""Record golden logs for tests/golden/: event logs kept as archive segments, forever.

    python tools/record_golden.py                     # record missing scripted logs
    python tools/record_golden.py --update-expected   # re-fold every golden log
    python tools/record_golden.py --from-job J --data-dir D --name NAME

Each golden log is ``NAME.parquet`` (one archive segment) and ``NAME.state.json`` (the
state its fold gave when recorded). CI folds every golden log after every change and
compares: a change to the events or the fold that alters what an old log means fails
there. When the change is intended, ``--update-expected`` rewrites the expected states
(review the diff); the logs themselves are never rewritten.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import msgspec

from eventlog import (
    ActionDone,
    ActionIntended,
    AnyEvent,
    CheckpointSaved,
    CircuitClosed,
    CircuitOpened,
    Counts,
    Cursor,
    ItemScraped,
    JobPaused,
    JobResumed,
    LogEntry,
    PageFetched,
    RetryScheduled,
    SitePaused,
    SiteResumed,
    TaskAborted,
    TaskClaimed,
    TaskDone,
    TaskEnqueued,
    TaskFailed,
    TaskPaused,
    TaskReclaimed,
    TaskReleased,
    TaskResumed,
    TaskRetried,
    encode,
)
from projector import Store, fold, read_entries, write_segment

GOLDEN = Path(__file__).resolve().parent.parent / "tests" / "golden"
SITE_A, SITE_B = "http://a.test", "http://b.test"


def expected_state_json(entries: list[LogEntry]) -> str:
    """The fold of ``entries`` as stable, reviewable JSON."""
    state = msgspec.to_builtins(fold(entries), order="deterministic")
    return json.dumps(state, indent=1, sort_keys=True) + "\n"


def scripted_crawl() -> list[AnyEvent]:
    """A small crawl that goes through every path of the state machine."""
    clock = iter(range(1_700_000_000, 1_700_001_000))
    ids = iter(range(1, 1000))

    def common(actor: str) -> dict[str, Any]:
        return {"actor": actor, "at": float(next(clock)), "event_id": f"golden-{next(ids):04d}"}

    def enqueue(t: str, site: str) -> TaskEnqueued:
        return TaskEnqueued(**common("seed"), task_id=t, url=f"{site}/{t}", site=site)

    def page(
        actor: str, t: str, n: int, status: int = 200, error: str | None = None
    ) -> PageFetched:
        return PageFetched(
            **common(actor),
            task_id=t,
            attempt=1,
            url=f"{SITE_A}/{t}?page={n}",
            status=status,
            bytes=1000 * n,
            elapsed_ms=10.0 * n,
            page=n,
            error=error,
        )

    def ckpt(actor: str, t: str, n: int, key: str) -> CheckpointSaved:
        return CheckpointSaved(
            **common(actor),
            task_id=t,
            attempt=1,
            cursor=Cursor(page=n, url=f"{SITE_A}/{t}?page={n + 1}", last_item_key=key),
            counts=Counts(pages=n, items=2 * n, bytes=1000 * n),
        )

    c = common
    return [
        *(enqueue(t, SITE_A) for t in ("list-1", "list-2", "item-9")),
        *(enqueue(t, SITE_B) for t in ("b-1", "b-2")),
        TaskClaimed(**c("w1"), task_id="list-1", attempt=1),
        page("w1", "list-1", 1),
        ItemScraped(**c("w1"), task_id="list-1", key="sku-1", data={"p": 1}),
        ckpt("w1", "list-1", 1, "sku-1"),
        # w1 is killed here; w2 takes the lease over and resumes after page 1.
        TaskReclaimed(**c("w2"), task_id="list-1", attempt=1, previous_owner="w1", deliveries=2),
        page("w2", "list-1", 2),
        ItemScraped(**c("w2"), task_id="list-1", key="sku-2"),
        ItemScraped(**c("w2"), task_id="list-1", key="sku-1"),
        ckpt("w2", "list-1", 2, "sku-2"),
        TaskDone(**c("w2"), task_id="list-1", attempt=1, counts=Counts(pages=2, items=2)),
        TaskDone(**c("w1"), task_id="list-1", attempt=1),  # a zombie
        TaskClaimed(**c("w2"), task_id="list-2", attempt=1),
        page("w2", "list-2", 1, status=503, error="HTTP 503"),
        RetryScheduled(**c("w2"), task_id="list-2", attempt=1, delay_s=1.5, reason="HTTP 503"),
        TaskClaimed(**c("w1"), task_id="list-2", attempt=2),
        page("w1", "list-2", 1),
        page("w1", "list-2", 1),
        ActionIntended(**c("w1"), task_id="list-2", action_id="notify"),
        ActionDone(**c("w1"), task_id="list-2", action_id="notify", result="sent"),
        TaskDone(**c("w1"), task_id="list-2", attempt=2),
        TaskPaused(**c("alice"), task_id="item-9", reason="check robots"),
        TaskClaimed(**c("w1"), task_id="item-9", attempt=1),
        TaskResumed(**c("alice"), task_id="item-9", reason="fine"),
        TaskClaimed(**c("w1"), task_id="item-9", attempt=1),
        TaskFailed(**c("w1"), task_id="item-9", attempt=4, reason="HTTP 404"),
        TaskRetried(**c("alice"), task_id="item-9", reason="page is back"),
        CircuitOpened(**c("w2"), site=SITE_B, reason="5 failures", failures=5, cooldown_s=30.0),
        SitePaused(**c("bob"), site=SITE_B, reason="asked by owner"),
        TaskClaimed(**c("w2"), task_id="b-1", attempt=1),
        TaskAborted(
            **c("w3"),
            task_id="b-1",
            attempt=1,
            reason="too many recoveries",
            deliveries=4,
            last_error="worker died",
            owners=("w1", "w2", "w3"),
        ),
        SiteResumed(**c("bob"), site=SITE_B, reason="ok now"),
        CircuitClosed(**c("w2"), site=SITE_B, reason="probe ok"),
        JobPaused(**c("alice"), reason="deploy"),
        JobResumed(**c("alice"), reason="deployed"),
    ]


def scripted_release() -> list[AnyEvent]:
    """Graceful stops, as logs tell them before and after ``TaskReleased`` existed.

    ``old-1`` is handed back the old way (a ``RetryScheduled`` one attempt below the one it
    keeps, counted as a retry); ``new-1`` after a checkpoint, and ``new-2`` from the backlog
    without having run, with ``TaskReleased`` (no retry); then each is claimed again and done.
    """
    clock = iter(range(1_700_100_000, 1_700_101_000))
    ids = iter(range(1, 1000))

    def c(actor: str) -> dict[str, Any]:
        return {"actor": actor, "at": float(next(clock)), "event_id": f"release-{next(ids):04d}"}

    return [
        *(
            TaskEnqueued(**c("seed"), task_id=t, url=f"{SITE_A}/{t}", site=SITE_A)
            for t in ("old-1", "new-1", "new-2")
        ),
        TaskClaimed(**c("w1"), task_id="old-1", attempt=1),
        RetryScheduled(**c("w1"), task_id="old-1", attempt=0, delay_s=0.0, reason="worker stopped"),
        TaskClaimed(**c("w1"), task_id="new-1", attempt=1),
        PageFetched(
            **c("w1"), task_id="new-1", attempt=1, url=f"{SITE_A}/new-1", status=200, page=1
        ),
        CheckpointSaved(
            **c("w1"),
            task_id="new-1",
            attempt=1,
            cursor=Cursor(page=1, url=f"{SITE_A}/new-1?page=2"),
            counts=Counts(pages=1),
        ),
        TaskReleased(**c("w1"), task_id="new-1", attempt=1),
        TaskReleased(**c("w1"), task_id="new-2", attempt=1),  # never claimed: pending
        *(
            event
            for t in ("old-1", "new-1", "new-2")
            for event in (
                TaskClaimed(**c("w2"), task_id=t, attempt=1),
                TaskDone(**c("w2"), task_id=t, attempt=1),
            )
        ),
    ]


def record(name: str, entries: list[LogEntry]) -> None:
    log_path = GOLDEN / f"{name}.parquet"
    if log_path.exists():
        print(f"{name}: kept (golden logs are never rewritten)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        segment = write_segment(Path(tmp), entries)
        (Path(tmp) / segment.name).replace(log_path)
    (GOLDEN / f"{name}.state.json").write_text(expected_state_json(entries))
    print(f"{name}: recorded {len(entries)} events")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--update-expected", action="store_true")
    parser.add_argument("--from-job", help="record a projected job's archive")
    parser.add_argument("--data-dir", type=Path, default=Path(".crawlog"))
    parser.add_argument("--name")
    args = parser.parse_args()
    GOLDEN.mkdir(parents=True, exist_ok=True)
    if args.update_expected:
        for log_path in sorted(GOLDEN.glob("*.parquet")):
            entries = list(read_entries(log_path))
            log_path.with_suffix(".state.json").write_text(expected_state_json(entries))
            print(f"{log_path.stem}: expected state rewritten")
        return 0
    if args.from_job:
        store = Store(args.data_dir, args.from_job)
        manifest = store.read_manifest()
        entries = [e for p in store.segment_paths(manifest) for e in read_entries(p)]
        record(args.name or args.from_job, entries)
        return 0
    for name, events, ms in (
        ("scripted-crawl", scripted_crawl(), 1700000000000),
        ("scripted-release", scripted_release(), 1700100000000),
    ):
        record(name, [LogEntry(f"{ms}-{n}", e, encode(e)) for n, e in enumerate(events)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
