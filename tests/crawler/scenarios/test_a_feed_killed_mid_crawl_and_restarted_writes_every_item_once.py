"""``crawlog export --follow`` while a real crawl runs: the feeds (items as JSON lines, as
the spider wrote them, and as CSV with their meta, pages as Parquet parts) SIGKILLed
mid-crawl and restarted with the same command (and ``--until-done``) hold every row
exactly once, as the export of the finished job does; rows written after the last recorded
position (a kill between the two) are cut off and written again; SIGTERM stops a feed
cleanly."""

from __future__ import annotations

import contextlib
import csv
import json
import os
import signal
from collections import Counter
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import pyarrow.parquet as pq
import pytest
from anyio.abc import Process

from crawler._politeness import Politeness
from crawler.cli._argv import crawlog_command
from crawler.testsite import Faults, serve_testsite
from tests.crawler.conftest import ROOT

pytestmark = pytest.mark.anyio
SLOW = Faults(slow_rate=0.5, slow_s=0.4)
"""Pages slow enough that the crawl is still running when the feeds are killed."""
FEEDS: tuple[tuple[str, ...], ...] = (
    ("items", "jsonl", "items.jsonl"),  # as the spider wrote them
    ("items", "csv", "items.csv", "--with-meta"),  # in their envelope
    ("pages", "parquet", "pages"),
)


@pytest.fixture
async def spawn(valkey_url: str) -> AsyncIterator[Callable[..., Any]]:
    """``await spawn(*crawlog_args)``: a crawlog process; any left running is killed."""
    started: list[Process] = []

    async def start(*args: str) -> Process:
        env = {**os.environ, "REDIS_URL": valkey_url}
        process = await anyio.open_process(
            crawlog_command(*args), env=env, cwd=ROOT, stdout=None, stderr=-1
        )
        started.append(process)
        return process

    yield start
    for process in started:
        if process.returncode is None:
            process.kill()
        await process.aclose()


async def until(condition: Callable[[], bool]) -> None:
    while not condition():
        await anyio.sleep(0.05)


async def said_by(process: Process) -> str:
    """All a process writes to stderr, until it closes it."""
    assert process.stderr is not None
    chunks = []
    with contextlib.suppress(anyio.EndOfStream):
        while True:
            chunks.append(await process.stderr.receive())
    return b"".join(chunks).decode()


def lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def jsonl_keys(path: Path) -> list[str]:
    """The keys of the items of a JSON lines export: the default spider keys an item by
    its ``url``."""
    return [json.loads(line)["url"] for line in path.read_text().splitlines()]


@pytest.mark.timeout(180)
async def test_feeds_killed_mid_crawl_resume_and_hold_every_row_once(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    spawn: Callable[..., Any],
    job: str,
    data_dir: Path,
    tmp_path: Path,
) -> None:
    base = ("export", "--job", job, "--data-dir", str(data_dir))

    def feed(what: str, fmt: str, name: str, *extra: str) -> Any:
        return spawn(
            *base, "--what", what, "--format", fmt, "--follow", *extra, str(tmp_path / name)
        )

    async with serve_testsite(pages=200, seed=3, faults=SLOW) as site:
        await start_job([site.url + "/"], politeness=Politeness(per_host=4))
        with anyio.fail_after(150):
            worker = await worker_process("w1", "--exit-when-done")
            projector = await spawn(
                "project", "--job", job, "--data-dir", str(data_dir), "--commit-interval", "0.2"
            )
            await until(lambda: (data_dir / "jobs" / job).is_dir())
            first = [await feed(*f) for f in FEEDS]
            await until(
                lambda: lines(tmp_path / "items.jsonl") >= 5 and lines(tmp_path / "items.csv") >= 5
            )
            assert worker.returncode is None, "the crawl was still running when the feeds died"
            for process in first:
                process.send_signal(signal.SIGKILL)
                assert await process.wait() == -signal.SIGKILL
            again = [await feed(*f, "--until-done") for f in FEEDS]
            assert await worker.wait() == 0
            for process in again:
                said = await said_by(process)
                assert await process.wait() == 0, said
                assert "the job ended" in said, said
            projector.send_signal(signal.SIGTERM)
            assert await projector.wait() == 0
            export = tmp_path / "export.jsonl"
            done = await anyio.run_process(
                crawlog_command(*base, "--what", "items", "--format", "jsonl", str(export)),
                env={**os.environ}, cwd=ROOT,
            )  # fmt: skip
            assert done.returncode == 0
            pages_export = tmp_path / "pages-export.jsonl"
            await anyio.run_process(
                crawlog_command(*base, "--what", "pages", "--format", "jsonl", str(pages_export)),
                env={**os.environ}, cwd=ROOT,
            )  # fmt: skip

    expected = jsonl_keys(export)
    assert len(expected) == len(set(expected)) == len(site.reachable)
    fed = jsonl_keys(tmp_path / "items.jsonl")
    assert fed == expected  # every item once, in log order, across the kill
    with (tmp_path / "items.csv").open(newline="") as source:
        rows = list(csv.DictReader(source))
    assert [r["key"] for r in rows] == expected
    assert {"url", "status", "title", "extra_fields"} <= set(rows[0])
    parts = sorted((tmp_path / "pages").glob("part-*.parquet"))
    fetched = [row["stream_id"] for p in parts for row in pq.read_table(p).to_pylist()]
    exported = [json.loads(line)["stream_id"] for line in pages_export.read_text().splitlines()]
    assert fetched == exported and Counter(fetched).most_common(1)[0][1] == 1

    # A kill after a batch was written but before its position was: rows past the recorded
    # length, cut off by the restart and written again, once.
    jsonl = tmp_path / "items.jsonl"
    whole = jsonl.read_bytes()
    with jsonl.open("ab") as sink:
        sink.write(whole.splitlines(keepends=True)[-1] + b'{"url": "half a li')
    position = json.loads((tmp_path / "items.jsonl.position").read_text())
    assert position["bytes"] == len(whole) and position["rows"] == len(expected)
    resumed = await spawn(*base, "--what", "items", "--format", "jsonl", "--follow", str(jsonl))
    with anyio.fail_after(60):
        # Once it said it resumed, the output is cut back; then SIGTERM stops it cleanly.
        assert resumed.stderr is not None
        said = (await resumed.stderr.receive()).decode()
        assert "resuming after" in said, said
        resumed.send_signal(signal.SIGTERM)
        assert await resumed.wait() == 0
    assert jsonl.read_bytes() == whole
