"""`crawlog crawl` progress: plain lines into a pipe, a live table on a terminal."""

from __future__ import annotations

import os
import pty
import re
from pathlib import Path

import anyio
import anyio.to_thread
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import RunningSite
from tests.crawler.conftest import ROOT

pytestmark = pytest.mark.anyio


def _crawl(site: RunningSite, job: str, data_dir: Path) -> list[str]:
    return crawlog_command(
        "crawl", site.url + "/", "--job", job,
        "--workers", "1", "--concurrency", "4", "--data-dir", str(data_dir),
    )  # fmt: skip


async def test_crawl_progress_into_a_pipe_is_plain_periodic_lines(
    valkey_url: str, job: str, data_dir: Path, site: RunningSite
) -> None:
    env = {**os.environ, "REDIS_URL": valkey_url}
    with anyio.fail_after(60):
        result = await anyio.run_process(
            _crawl(site, job, data_dir), env=env, cwd=ROOT, check=False
        )
    out = result.stdout.decode()
    assert result.returncode == 0, result.stderr.decode()
    assert "\x1b" not in out, "no terminal control sequences in a pipe"
    progress = [line for line in out.splitlines() if line.startswith(f"progress {job}: ")]
    assert progress, out
    pages = len(site.reachable)
    pattern = re.compile(
        rf"progress {job}: (\d+)/(\d+) tasks ended \([\d.]+%\), ([\d.]+|-)/s, ETA \S+, "
        r"(\d+) failed, (\d+) retries, (\d+) recovered; (\d+) worker\(s\) alive"
    )
    for line in progress:
        assert pattern.match(line), line
    ended = [int(pattern.match(line).group(1)) for line in progress]  # type: ignore[union-attr]
    assert ended == sorted(ended), "ended tasks only grow"
    assert progress[-1].startswith(f"progress {job}: {pages}/{pages} tasks ended (100.0%)")
    assert f"finished {job}" in out


async def test_crawl_progress_on_a_terminal_is_a_live_table(
    valkey_url: str, job: str, data_dir: Path, site: RunningSite
) -> None:
    env = {**os.environ, "REDIS_URL": valkey_url, "TERM": "xterm", "COLUMNS": "120"}
    main, child = pty.openpty()
    chunks: list[bytes] = []

    def read_all() -> None:
        # Until the last holder of the terminal's child end (the crawl) has exited.
        while True:
            try:
                data = os.read(main, 65536)
            except OSError:
                return
            if not data:
                return
            chunks.append(data)

    try:
        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                tg.start_soon(anyio.to_thread.run_sync, read_all)
                process = await anyio.open_process(
                    _crawl(site, job, data_dir), env=env, cwd=ROOT, stdout=child, stderr=child
                )
                os.close(child)
                child = -1
                await process.wait()
    finally:
        if child != -1:
            os.close(child)
        os.close(main)
    out = b"".join(chunks).decode(errors="replace")
    assert process.returncode == 0, out
    assert "ended/found" in out and "tasks/s" in out and "ETA" in out, out
    assert "\x1b[" in out, "a terminal gets a table redrawn in place"
    pages = len(site.reachable)
    assert f"{pages}/{pages}" in out
    assert f"progress {job}:" not in out, "no plain lines on a terminal"
    assert f"finished {job}" in out
