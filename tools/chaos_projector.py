"""SIGKILL the projector at random moments during a stream of events; lose nothing.

    python tools/chaos_projector.py [--rounds 20] [--events 200000] [--seed 1]

Starts its own valkey-server, appends ``--events`` events (a realistic crawl mix, eight
events a task, in batches at a steady pace) while ``crawlog project`` runs as a subprocess.
The kills are spread over the log: round n's projector runs until the appends have passed
n/(rounds+1) of the events and it has caught up with them, then it is SIGKILLed after a
random delay (wherever it is then: reading, folding, writing a segment, a snapshot or a
task or key segment, replacing the manifest) and started again, ``--rounds`` times. So a
run of 8,000,000 events kills a projector holding a job of up to a million tasks. Then one
last ``project --once``, and the checks:

  archive          every appended event archived exactly once, in log order
  state            the committed snapshot equals a fold of the appended events
  replay           ``crawlog replay --verify`` says identical
  duckdb           ``crawlog sql``: count(*) and count(DISTINCT stream_id) of ``events``
                   both equal the events appended
  report           ``crawlog report``'s figures over the page fetches, which the
                   projector keeps across restarts (beside each snapshot), equal those SQL
                   computes from the whole archive (p50 and p95 within their bound); one
                   task in ten has a failed fetch before its first page, so the projector
                   keeps those tasks' pages apart

Prints a table, then one JSON object as its last line (``rounds``, ``events``,
``archived_once``, ``state_identical``, ``replay_identical``, ``duckdb_events``,
``duckdb_distinct``, ``report_identical``, ``ok``). Exit 0 only if every check holds. The
suite runs a short version (``tests/projector/test_killed_projector.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_projector import crawl_events

from crawler.cli import crawlog_command
from eventlog import (
    AnyEvent,
    EventLog,
    LogEntry,
    PageFetched,
    connect,
    encode,
    ensure_server,
    new_event_id,
    stop_server,
)
from projector import (
    Report,
    Store,
    build_report,
    canonical,
    fold,
    read_entries,
    wait_for_position,
)

JOB = "chaos-projector"
BATCH = 500
PACE_S = 0.002
"""Pause between two appended batches: a steady stream, not one burst."""
MAX_KILL_DELAY_S = 0.5
CATCH_UP_S = 60.0
CATCH_UP_EVENTS_PER_S = 20_000
"""The slowest catch-up allowed on top of ``CATCH_UP_S``: a projector restarted far behind
(a large run's later rounds) has that many events a second to read."""


FAILED_FETCH_EVERY = 10
"""One task in this many has a failed fetch (a 503) before its first page."""


def with_failed_fetches(events: Sequence[AnyEvent]) -> list[AnyEvent]:
    """``events`` with a 503 before the first page of one task in ``FAILED_FETCH_EVERY``."""
    mixed: list[AnyEvent] = []
    tasks = 0
    for event in events:
        if isinstance(event, PageFetched) and event.page == 1:
            tasks += 1
            if tasks % FAILED_FETCH_EVERY == 0:
                failed = msgspec.structs.replace(
                    event,
                    event_id=new_event_id(),
                    status=503,
                    error="http 503",
                    elapsed_ms=event.elapsed_ms * 3,
                )
                mixed.append(failed)
        mixed.append(event)
    return mixed


def same_report(fast: Report, slow: Report) -> bool:
    """Equal, but p50 and p95 within their bound and the average to the last bits."""
    r, x = fast.response_times, slow.response_times
    close = all(
        (a is None and b is None) or (a is not None and b is not None and abs(a - b) <= bound * b)
        for a, b, bound in (
            (r.p50_ms, x.p50_ms, r.quantiles_error),
            (r.p95_ms, x.p95_ms, r.quantiles_error),
            (r.avg_ms, x.avg_ms, 1e-12),
        )
    )
    return close and msgspec.structs.replace(fast, response_times=x) == slow


def projector_command(data_dir: Path, *extra: str) -> list[str]:
    """``crawlog project`` committing and snapshotting often, trimming everything committed."""
    return crawlog_command(
        "project", "--job", JOB, "--data-dir",
        str(data_dir), "--commit-interval", "0.02", "--snapshot-interval", "0.1",
        "--keep-tail", "0", *extra,
    )  # fmt: skip


async def run(url: str, data_dir: Path, rounds: int, events: int, seed: int) -> dict[str, Any]:
    """The chaos run and its checks, as the figures of the last line."""
    rng = random.Random(seed)
    stream = with_failed_fetches(crawl_events(events))
    env = {**os.environ, "REDIS_URL": url}
    appended: list[LogEntry] = []
    kills: list[float] = []
    # Round n is killed once the appends have passed n/(rounds+1) of the log.
    shares = [len(stream) * (n + 1) // (rounds + 1) for n in range(rounds)]
    reached = [anyio.Event() for _ in shares]
    async with connect(url) as client:
        log = EventLog(client, JOB)

        async def append(start: int) -> None:
            batch = stream[start : start + BATCH]
            ids = await log.append_many(batch)
            appended.extend(
                LogEntry(i, e, encode(e)) for i, e in zip(ids, batch, strict=True) if i is not None
            )
            for share, event in zip(shares, reached, strict=True):
                if len(appended) >= share:
                    event.set()

        async def append_the_rest() -> None:
            for start in range(BATCH, len(stream), BATCH):
                await append(start)
                await anyio.sleep(PACE_S)

        await append(0)
        started = time.monotonic()
        async with anyio.create_task_group() as tg:
            tg.start_soon(append_the_rest)
            for n in range(rounds):
                process = await anyio.open_process(
                    projector_command(data_dir), env=env, stdout=subprocess.DEVNULL
                )
                try:
                    # Once it has caught up with the appends past its share of the log, the
                    # kill lands wherever the projector happens to be.
                    await reached[n].wait()
                    goal = appended[-1].stream_id
                    patience = CATCH_UP_S + len(appended) / CATCH_UP_EVENTS_PER_S
                    if not await wait_for_position(client, JOB, goal, patience):
                        raise SystemExit(f"round {n + 1}: the projector never reached {goal}")
                    delay = rng.uniform(0, MAX_KILL_DELAY_S)
                    await anyio.sleep(delay)
                    kills.append(delay)
                finally:
                    process.send_signal(signal.SIGKILL)
                    await process.wait()
                print(
                    f"  round {n + 1:>2}: killed {delay * 1000:.0f} ms after catching up "
                    f"with {len(appended):,} events"
                )
        await anyio.run_process(projector_command(data_dir, "--once"), env=env)
        seconds = time.monotonic() - started

    store = Store(data_dir, JOB)
    manifest = store.read_manifest()
    archived = [e.stream_id for p in store.segment_paths(manifest) for e in read_entries(p)]
    state_identical = canonical(store.read_snapshot(manifest)) == canonical(fold(appended))
    common = ["--job", JOB, "--data-dir", str(data_dir)]
    replay = await anyio.run_process(
        crawlog_command("replay", *common, "--verify"), env=env, check=False
    )
    query = "SELECT count(*), count(DISTINCT stream_id) FROM events"
    sql = await anyio.run_process(
        crawlog_command("sql", *common, "--format", "json", query), env=env
    )
    [row] = json.loads(sql.stdout)
    now = time.time()
    report = build_report(store, lease_s=30, now=now)
    from_archive = build_report(store, lease_s=30, now=now, from_archive=True)
    fetches = manifest.summary.fetches if manifest.summary is not None else None
    counted, distinct = list(row.values())
    figures = {
        "rounds": rounds,
        "events": len(appended),
        "archived_once": archived == [e.stream_id for e in appended],
        "manifest_events": manifest.events,
        "state_identical": state_identical,
        "replay_identical": replay.returncode == 0 and b"identical" in replay.stdout,
        "duckdb_events": counted,
        "duckdb_distinct": distinct,
        "report_identical": same_report(report, from_archive),
        "pages_retried": report.retries.pages_retried,
        "kept_apart_tasks": fetches.dirty_tasks if fetches is not None else None,
        "seconds": round(seconds, 1),
    }
    figures["ok"] = bool(
        figures["archived_once"]
        and figures["state_identical"]
        and figures["replay_identical"]
        and figures["report_identical"]
        and manifest.events == counted == distinct == len(appended)
    )
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="crawlog-chaos-projector-") as tmp:
        server_dir, data_dir = Path(tmp) / "server", Path(tmp) / "data"
        url = ensure_server(server_dir).url
        try:
            print(f"{args.events:,} events, projector SIGKILLed {args.rounds} times")
            figures = anyio.run(run, url, data_dir, args.rounds, args.events, args.seed)
        finally:
            stop_server(server_dir)
    checks = [
        ("every event archived once, in order", figures["archived_once"]),
        ("manifest counts every event once", figures["manifest_events"] == figures["events"]),
        ("snapshot == fold of the log", figures["state_identical"]),
        ("replay --verify identical", figures["replay_identical"]),
        (
            "DuckDB sees every event once",
            figures["duckdb_events"] == figures["duckdb_distinct"] == figures["events"],
        ),
        (
            f"report == SQL over the archive ({figures['pages_retried']:,} pages retried, "
            f"{figures['kept_apart_tasks']:,} tasks kept apart)",
            figures["report_identical"],
        ),
    ]
    for name, held in checks:
        print(f"  {'ok' if held else 'FAIL':<4} {name}")
    print(json.dumps(figures))
    return 0 if figures["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
