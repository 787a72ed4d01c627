"""The segment writer process: the same segments as the projector's own, and no orphan.

A projector behind the log has its segments built and written by a child process
(``projector/_writer.py``); the manifest, the commit point, stays in the projector.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings

from eventlog import EventLog, LogEntry
from projector._archive import read_entries, read_table, to_table
from projector._committed import read_committed
from projector._fold import fold
from projector._projector import Projector
from projector._segment_index import index_name
from projector._state import canonical
from projector._store import Store
from projector._writer import pack, table_of
from tests.projector.strategies import logs
from tests.projector.test_projector import task_events

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parent.parent.parent

# Started as a real process, SIGKILLed by the test: a projector catching up on the whole
# stream, which says on stdout when its writer is busy with the first segment.
PROJECTOR_SCRIPT = """
import sys
from pathlib import Path

import anyio

from eventlog import connect
from projector._projector import Projector
from projector._writer import SegmentWriter

url, job, data_dir = sys.argv[1:]
end_segment = SegmentWriter.end_segment


def say_when_busy(self):
    end_segment(self)
    print(f"writer {self.pid} busy", flush=True)


SegmentWriter.end_segment = say_when_busy


async def main():
    async with connect(url) as client:
        async with Projector(client, job, Path(data_dir), commit_events=2_000) as projector:
            await projector.catch_up()
            await anyio.sleep(60)


anyio.run(main)
"""


@settings(max_examples=200)
@given(logs)
def test_the_writer_builds_the_table_the_projector_would(log: list[LogEntry]) -> None:
    if log:
        assert table_of(len(log), *pack(log)).equals(to_table(log))


def gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")  # dead, unreaped
    except FileNotFoundError:
        return True


@pytest.mark.timeout(120)
@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
async def test_a_projector_killed_while_its_writer_is_busy_leaves_no_writer_and_loses_nothing(
    log: EventLog,
    make_projector: Callable[..., Projector],
    valkey_url: str,
    job: str,
    data_dir: Path,
) -> None:
    events = [e for n in range(6_000) for e in task_events(n)]  # 24,000 events
    for start in range(0, len(events), 2_000):
        await log.append_many(events[start : start + 2_000])
    projector_process = subprocess.Popen(
        [sys.executable, "-c", PROJECTOR_SCRIPT, valkey_url, job, str(data_dir)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert projector_process.stdout is not None
    try:
        line = projector_process.stdout.readline()
        assert line.startswith("writer "), line
        writer_pid = int(line.split()[1])
        projector_process.send_signal(signal.SIGKILL)
        projector_process.wait()
    finally:
        projector_process.kill()
        projector_process.wait()
        projector_process.stdout.close()
    deadline = time.monotonic() + 10
    while not gone(writer_pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert gone(writer_pid), "the writer process outlived its projector"

    async with make_projector() as projector:
        await projector.catch_up()
    store = Store(data_dir, job)
    manifest = store.read_manifest()
    archived = [e for path in store.segment_paths(manifest) for e in read_entries(path)]
    logged = await log.read_range()
    assert [e.stream_id for e in archived] == [e.stream_id for e in logged]
    assert manifest.events == len(logged) == len(events)
    assert canonical(read_committed(store)[1]) == canonical(fold(logged))
    assert sorted(os.listdir(store.archive)) == sorted(
        name for s in manifest.segments for name in (s.name, index_name(s.name))
    )


async def test_a_projector_behind_the_log_writes_the_same_segments_through_its_writer(
    log: EventLog, make_projector: Callable[..., Projector], data_dir: Path, job: str
) -> None:
    events = [e for n in range(3_000) for e in task_events(n)]
    await log.append_many(events)
    async with make_projector(commit_events=5_000, writer_min_events=1) as projector:
        assert projector._writer is not None and projector._writer.running
        await projector.catch_up()
    store = Store(data_dir, job)
    manifest = store.read_manifest()
    assert len(manifest.segments) > 1
    logged = await log.read_range()
    tables = [read_table(path) for path in store.segment_paths(manifest)]
    start = 0
    for table in tables:
        assert table.equals(to_table(logged[start : start + table.num_rows]))
        start += table.num_rows
    assert start == len(logged)
    assert canonical(read_committed(store)[1]) == canonical(fold(logged))
