"""A worker that journals one checkpoint of a lease it holds and sends it to a store that
never answers, run as a subprocess that a test kills while it waits for the reply.

    python -m tests.eventlog.journalling_process STALLED_URL JOB NAME JOURNAL_DIR LEASE_JSON

It prints ``SENDING`` just before the checkpoint (the journal has it once that call has
written to the socket); it never returns on its own. `kill_after_journalling` runs it
from a test.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import msgspec
import redis.asyncio as aioredis

from eventlog import CheckpointSaved, Cursor, Journal, Lease, PageFetched, TaskQueue
from eventlog._journal import JournalSettle, decode_records

ROOT = Path(__file__).resolve().parents[2]
DEADLINE_S = 60


def _journalled(directory: Path) -> list[JournalSettle]:
    """The writes on disk, read without opening the journal (its writer is alive)."""
    found: list[JournalSettle] = []
    for segment in sorted(directory.glob("*.journal")):
        records, _ = decode_records(segment.read_bytes())
        found += [r for r in records if isinstance(r, JournalSettle)]
    return found


def kill_after_journalling(
    url: str, job: str, directory: Path, lease: Lease, *, worker: str = "w1"
) -> JournalSettle:
    """Run the journalling worker ``worker`` against ``url`` (a store that never answers),
    wait for its write to be journalled, SIGKILL it; the journalled write."""
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.eventlog.journalling_process", url, job, worker,
         str(directory), msgspec.json.encode(lease).decode()],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + DEADLINE_S
        while not (written := _journalled(directory)):
            assert child.poll() is None, "the worker exited before it journalled"
            assert time.monotonic() < deadline, "nothing journalled in time"
            time.sleep(0.02)
        assert child.poll() is None  # still waiting for the store's reply
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
    [record] = written
    return record


async def main(url: str, job: str, name: str, directory: str, lease_json: str) -> None:
    lease = msgspec.json.decode(lease_json, type=Lease)
    # A bare client (no timeouts, no retries): the call waits for a reply that never comes.
    client = aioredis.Redis.from_url(url)
    queue = TaskQueue(client, job, name, journal=Journal(Path(directory)))
    task_id = lease.task.task_id
    fetched = PageFetched(
        actor=name, task_id=task_id, attempt=1, page=1, url=lease.task.url, status=200
    )
    saved = CheckpointSaved(actor=name, task_id=task_id, attempt=1, cursor=Cursor(page=1))
    print("SENDING", flush=True)
    await queue.checkpoint(lease, saved, before=[fetched])


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:6])
