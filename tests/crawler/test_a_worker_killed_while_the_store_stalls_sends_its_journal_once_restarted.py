"""A real worker SIGKILLed while the store stalls (SIGSTOPped mid-crawl), with writes
journalled that the store never answered: restarted under its name, it flushes its
journal before it claims, and every event of the job is in the log once."""

from __future__ import annotations

import signal
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler._job import JobConfig, save_config
from crawler._politeness import Politeness
from crawler.testsite import RunningSite
from eventlog import EventLog, JobKeys, TaskDone, TaskQueue, connect, journal_directory
from eventlog._journal import JournalAck, JournalSettle, decode_records
from tests.crawler.conftest import run_projector
from tests.crawler.left_behind import item_task
from tests.valkey_process import running_valkey

pytestmark = pytest.mark.anyio
TASKS = 40
DEADLINE_S = 45


def journalled(directory: Path) -> tuple[list[JournalSettle], set[int]]:
    """The writes on disk and the seqs acknowledged, read beside the live writer."""
    writes: list[JournalSettle] = []
    acked: set[int] = set()
    for segment in sorted(directory.glob("*.journal")):
        for record in decode_records(segment.read_bytes())[0]:
            if isinstance(record, JournalSettle):
                writes.append(record)
            elif isinstance(record, JournalAck):
                acked.add(record.seq)
    return writes, acked


def acknowledgements(directory: Path) -> dict[int, str]:
    return {
        record.seq: record.outcome
        for segment in sorted(directory.glob("*.journal"))
        for record in decode_records(segment.read_bytes())[0]
        if isinstance(record, JournalAck)
    }


def not_acknowledged(directory: Path) -> list[JournalSettle]:
    writes, acked = journalled(directory)
    return [write for write in writes if write.seq not in acked]


async def stall_with_a_write_unanswered(
    server: subprocess.Popen[bytes], journal: Path
) -> list[JournalSettle]:
    """SIGSTOP the server at a moment the worker has a write journalled and not answered
    (a write takes a few ms between its record and its answer: caught when it is there
    still once the server is stopped); the writes left unanswered."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if not_acknowledged(journal):
            server.send_signal(signal.SIGSTOP)
            if unanswered := not_acknowledged(journal):
                return unanswered
            server.send_signal(signal.SIGCONT)  # answered meanwhile: again
        await anyio.sleep(0.001)
    raise AssertionError("never caught a write unanswered")


async def test_the_journal_s_unanswered_writes_reach_the_log_once(
    site: RunningSite,
    worker_process: Callable[..., Any],
    job: str,
    data_dir: Path,
    tmp_path: Path,
) -> None:
    with running_valkey(tmp_path / "valkey") as server:
        assert server.process is not None
        async with connect(server.url) as client:
            config = JobConfig(
                seeds=(site.url + "/",),
                obey_robots=False,
                max_depth=0,
                politeness=Politeness(per_host=4, delay_s=0.02),
            )
            await save_config(client, JobKeys(job), config)
            await TaskQueue(client, job, "seed").enqueue(
                [item_task(site.url, n) for n in range(TASKS)], actor="test"
            )
            journal = journal_directory(data_dir, "w1", job)
            env = {"REDIS_URL": server.url}
            with anyio.fail_after(DEADLINE_S):
                first = await worker_process("w1", "--exit-when-done", env=env)
                while len(journalled(journal)[1]) < 8:  # under way
                    await anyio.sleep(0.01)
                unanswered = await stall_with_a_write_unanswered(server.process, journal)
                first.kill()
                await first.wait()
                server.process.send_signal(signal.SIGCONT)

                restarted = await worker_process("w1", "--exit-when-done", env=env)
                assert await restarted.wait() == 0
            # The restarted worker settled each from its journal (found in the log, or
            # sent now); no projector ran, so its segments are all there still.
            outcomes = acknowledgements(journal)
            assert {outcomes.get(w.seq) for w in unanswered} <= {"present", "applied"}

            # Once the projector has committed the whole log, the worker's next start
            # deletes its journal's segments: not before.
            assert list(journal.glob("*.journal"))
            await run_projector(server.url, job, data_dir)
            with anyio.fail_after(DEADLINE_S):
                again = await worker_process("w1", "--exit-when-done", env=env)
                assert await again.wait() == 0
            assert list(journal.glob("*.journal")) == []

            events = [entry.event for entry in await EventLog(client, job).read_range()]
    repeated = [i for i, n in Counter(e.event_id for e in events).items() if n > 1]
    assert repeated == []
    ids = {e.event_id for e in events}
    assert {i for w in unanswered for i in w.event_ids} <= ids  # each there, once
    done = Counter(e.task_id for e in events if isinstance(e, TaskDone))
    assert sorted(done.values()) == [1] * TASKS
