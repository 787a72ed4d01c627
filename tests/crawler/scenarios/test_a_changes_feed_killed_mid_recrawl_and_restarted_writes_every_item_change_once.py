"""``crawlog export --follow --changes`` while a real recrawl runs after the test site was
edited (pages changed, deleted, and new ones linked): the feed SIGKILLed once it has written
some of the recrawl's changes, then restarted with the same command and ``--until-done``,
holds every item change of both runs exactly once, in the order ``crawlog changes --items``
lists them; the recrawl's are exactly the edited pages' items changed, the deleted pages'
removed and the new pages' added."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import Process

from crawler.cli._argv import crawlog_command
from crawler.testsite import Faults, serve_testsite
from tests.crawler.conftest import ROOT

pytestmark = pytest.mark.anyio
PAGES, CHANGED, DELETED, ADDED = 40, 8, 3, 2
SLOW = Faults(slow_rate=0.5, slow_s=0.3)
"""Pages slow enough that the recrawl is still running when the feed is killed."""


@pytest.fixture
async def spawn(valkey_url: str) -> AsyncIterator[Callable[..., Any]]:
    """``await spawn(*crawlog_args)``: a crawlog process; any left running is killed."""
    started: list[Process] = []

    async def start(*args: str) -> Process:
        env = {**os.environ, "REDIS_URL": valkey_url}
        process = await anyio.open_process(
            crawlog_command(*args), env=env, cwd=ROOT, stdout=None, stderr=None
        )
        started.append(process)
        return process

    yield start
    for process in started:
        if process.returncode is None:
            process.kill()
        await process.aclose()


async def _run(valkey_url: str, *args: str) -> str:
    env = {**os.environ, "REDIS_URL": valkey_url}
    result = await anyio.run_process(crawlog_command(*args), env=env, cwd=ROOT, check=False)
    assert result.returncode == 0, result.stdout.decode() + result.stderr.decode()
    return result.stdout.decode()


def _rows(text: str) -> list[tuple[str, str, int]]:
    return [(r["key"], r["change"], r["run"]) for r in map(json.loads, text.splitlines())]


def _recrawled(path: Path) -> bool:
    """Whether the feed ``path`` holds a change of run 2 (lines written whole)."""
    text = path.read_text() if path.exists() else ""
    return any(json.loads(line)["run"] == 2 for line in text.splitlines(keepends=True)
               if line.endswith("\n"))  # fmt: skip


@pytest.mark.timeout(150)
async def test_a_changes_feed_killed_mid_recrawl_writes_each_change_once(
    valkey_url: str, spawn: Callable[..., Any], data_dir: Path, job: str, tmp_path: Path
) -> None:
    where = ("--job", job, "--data-dir", str(data_dir))
    out = tmp_path / "changes.jsonl"
    feed = ("export", *where, "--what", "items", "--changes", "--follow", "--format", "jsonl")
    feed_args = (*feed, "--interval", "0.1", str(out))
    async with serve_testsite(pages=PAGES, seed=4, faults=SLOW) as site:
        with anyio.fail_after(120):
            await _run(
                valkey_url, "crawl", site.url + "/", *where,
                "--workers", "1", "--concurrency", "4", "--per-host", "2", "--delay", "0",
            )  # fmt: skip
            mutation = site.mutate(CHANGED, DELETED, seed=5, added=ADDED)
            recrawl = await spawn("recrawl", *where, "--workers", "1")
            first = await spawn(*feed_args)
            while not _recrawled(out):  # some of the recrawl's changes written
                await anyio.sleep(0.05)
            assert recrawl.returncode is None, "the recrawl ended before the feed was killed"
            first.send_signal(signal.SIGKILL)
            assert await first.wait() == -signal.SIGKILL
            again = await spawn(*feed_args, "--until-done")
            assert await recrawl.wait() == 0
            assert await again.wait() == 0
            listed = _rows(await _run(valkey_url, "changes", *where, "--items", "--run", "1",
                                      "--format", "jsonl"))  # fmt: skip
            second = _rows(await _run(valkey_url, "changes", *where, "--items", "--format",
                                      "jsonl"))  # fmt: skip
    fed = _rows(out.read_text())
    assert fed == listed + second  # every change once, in log order, across the kill
    assert len(listed) >= PAGES and all(change == "added" for _, change, _ in listed)
    assert sorted((key, change) for key, change, _ in second) == sorted(
        [(site.url + p, "changed") for p in mutation.changed]
        + [(site.url + p, "removed") for p in mutation.deleted]
        + [(site.url + p, "added") for p in mutation.added]
    )
    record = json.loads(out.read_text().splitlines()[-1])
    assert {"key", "change", "run", "url", "data", "previous", "stream_id"} <= set(record)
