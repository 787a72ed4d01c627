"""A worker that journals one checkpoint of a lease it holds and sends it to a store that
never answers, run as a subprocess that a test kills while it waits for the reply.

    python -m tests.eventlog.journalling_process STALLED_URL JOB NAME JOURNAL_DIR LEASE_JSON

It prints ``SENDING`` just before the checkpoint (the journal has it once that call has
written to the socket); it never returns on its own.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import msgspec
import redis.asyncio as aioredis

from eventlog import CheckpointSaved, Cursor, Journal, Lease, PageFetched, TaskQueue


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
