"""Measure the projector's memory and commit cost as a job grows, with the task store.

    python tools/bench_statestore.py [--sizes 100000,1000000] [--no-evict]

For each size, in a fresh process, a crawl-shaped log (per task: enqueued, claimed, a page,
an item, done; about 10,000 tasks live at any time, the rest done) is built in memory and
put through the projector's own steps without Redis: bring back stored tasks a batch
names, fold, summary, and every ``--commit-events`` a commit through ``Committer`` (the
archive segment; every ``--snapshot-every`` commits the snapshot, with the terminal tasks
leaving memory for a task segment, and task-segment merges). ``--no-evict`` keeps every
task in memory and snapshots the whole state, as the projector did before the task store.

Prints per size: projector RSS above its start per task (peak), commit time per event
(whole run, and over the last tenth of it), snapshot bytes, task segments; then one JSON
object as its last line.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from eventlog import (
    ItemScraped,
    LogEntry,
    PageFetched,
    TaskClaimed,
    TaskDone,
    TaskEnqueued,
    encode,
)
from projector._committed import bring_back
from projector._committer import CommitRequest, Committer
from projector._fold import apply_all
from projector._keystore import StoredKeys
from projector._projector import evict_terminal
from projector._state import State, canonical
from projector._store import Store
from projector._summary import SummaryTracker, touched_tasks
from projector._taskstore import StoredTasks

DEFAULT_SIZES = "100000,1000000"
BATCH_TASKS = 1_000
LIVE_BATCHES = 10
"""Tasks are finished this many batches after they were enqueued: ~10,000 live."""
DEFAULT_COMMIT_EVENTS = 50_000
DEFAULT_SNAPSHOT_EVERY = 4
SITES = 100


def rss_kb(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field):
                return int(line.split()[1])
    raise RuntimeError(field)


def entry(seq: int, event: object) -> LogEntry:
    return LogEntry(f"{seq}-0", event, encode(event))  # type: ignore[arg-type]


def batch(number: int, tasks: int, seq: int) -> tuple[list[LogEntry], int]:
    """Enqueue the batch's tasks, and finish those enqueued ``LIVE_BATCHES`` batches ago."""
    out: list[LogEntry] = []
    for i in range(number * BATCH_TASKS, min((number + 1) * BATCH_TASKS, tasks)):
        site = f"site{i % SITES}.test"
        seq += 1
        out.append(
            entry(
                seq,
                TaskEnqueued(
                    task_id=f"t{i:09d}", actor="seed", url=f"http://{site}/p/{i}", site=site
                ),
            )
        )
    done = number - LIVE_BATCHES
    if done >= 0:
        for i in range(done * BATCH_TASKS, min((done + 1) * BATCH_TASKS, tasks)):
            t, url = f"t{i:09d}", f"http://site{i % SITES}.test/p/{i}"
            for event in (
                TaskClaimed(task_id=t, actor="w1", attempt=1),
                PageFetched(task_id=t, actor="w1", attempt=1, url=url, status=200, bytes=5000),
                ItemScraped(task_id=t, actor="w1", key=url),
                TaskDone(task_id=t, actor="w1", attempt=1),
            ):
                seq += 1
                out.append(entry(seq, event))
    return out, seq


def run_one(tasks: int, commit_events: int, snapshot_every: int, evict: bool) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp), "bench")
        store.prepare()
        manifest = store.recover()
        committer = Committer(store, manifest)
        state, stored, summary = State(), StoredTasks(), SummaryTracker()
        keys = StoredKeys()
        start_kb = rss_kb("VmRSS:")
        seq, buffered, commits, touched = 0, [], 0, set()
        commit_s: list[tuple[int, float]] = []
        snapshot_bytes = 0
        batches = (tasks + BATCH_TASKS - 1) // BATCH_TASKS + LIVE_BATCHES
        for number in range(batches):
            entries, seq = batch(number, tasks, seq)
            bring_back(store, committer.manifest, stored, state, entries, keys if evict else None)
            apply_all(state, entries)
            touched |= touched_tasks(entries)
            buffered += entries
            last = number == batches - 1
            if len(buffered) < commit_events and not last:
                continue
            commits += 1
            began = time.perf_counter()
            summary.update(state, touched)
            touched = set()
            rows, item_keys, snapshot = [], [], None
            if last or commits % snapshot_every == 0:
                rows = evict_terminal(state, stored) if evict else []
                item_keys = keys.evict(state.item_keys) if evict else []
                snapshot = canonical(state)
                snapshot_bytes = len(snapshot)
            request = CommitRequest(
                position=state.position,
                entries=buffered,
                snapshot=snapshot,
                snapshot_position=state.position,
                task_rows=rows,
                task_rows_replacing=stored.replacing,
                item_keys=item_keys,
                summary=summary.summary(state),
            )
            committer.commit(request)
            stored.landed()
            keys.landed()
            commit_s.append((len(buffered), time.perf_counter() - began))
            buffered = []
        peak_kb = rss_kb("VmHWM:")
        events = sum(n for n, _ in commit_s)
        tail = commit_s[-max(1, len(commit_s) // 10) :]
        return {
            "tasks": tasks,
            "events": events,
            "rss_bytes_per_task": (peak_kb - start_kb) * 1024 / tasks,
            "live_tasks": len(state.tasks),
            "commit_us_per_event": sum(s for _, s in commit_s) / events * 1e6,
            "commit_us_per_event_last_tenth": sum(s for _, s in tail)
            / sum(n for n, _ in tail)
            * 1e6,
            "snapshot_bytes": snapshot_bytes,
            "task_segments": len(committer.manifest.task_segments),
            "key_segments": len(committer.manifest.key_segments),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=DEFAULT_SIZES)
    parser.add_argument("--commit-events", type=int, default=DEFAULT_COMMIT_EVENTS)
    parser.add_argument("--snapshot-every", type=int, default=DEFAULT_SNAPSHOT_EVERY)
    parser.add_argument("--no-evict", action="store_true")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        figures = run_one(args.one, args.commit_events, args.snapshot_every, not args.no_evict)
        print(json.dumps(figures))
        return
    results = []
    for size in (int(s) for s in args.sizes.split(",")):
        # A process per size: the peak RSS is that size's alone.
        command = [
            sys.executable,
            __file__,
            "--one",
            str(size),
            "--commit-events",
            str(args.commit_events),
            "--snapshot-every",
            str(args.snapshot_every),
        ]
        if args.no_evict:
            command.append("--no-evict")
        out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        results.append(json.loads(out.strip().splitlines()[-1]))
    print(
        f"{'tasks':>10} {'events':>10} {'RSS B/task':>11} {'live':>7} {'commit us/ev':>13} "
        f"{'last tenth':>11} {'snapshot B':>11} {'task segs':>9}"
    )
    for r in results:
        print(
            f"{r['tasks']:>10,} {r['events']:>10,} {r['rss_bytes_per_task']:>11.0f} "
            f"{r['live_tasks']:>7,} {r['commit_us_per_event']:>13.2f} "
            f"{r['commit_us_per_event_last_tenth']:>11.2f} {r['snapshot_bytes']:>11,} "
            f"{r['task_segments']:>9}"
        )
    print(json.dumps({"evict": not args.no_evict, "sizes": results}))


if __name__ == "__main__":
    main()
