"""`ps` tells a crawl's children apart: each forked worker's command line reads
`crawlog worker wN job J` and the projector's `crawlog projector job J` (not the crawl's own
command line, which they are forked from), and their short names stay `crawlog-wN` and
`crawlog-project`."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import Faults, serve_testsite
from tests.crawler.conftest import ROOT

pytestmark = pytest.mark.anyio
SLOW = Faults(slow_rate=1.0, slow_s=1.0)
"""The crawl lasts while the test reads its children."""


def _children(pid: int) -> list[int]:
    try:
        listed = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except FileNotFoundError:
        return []
    return [int(child) for child in listed]


def _cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()


async def test_ps_shows_each_child_s_role_and_job(
    valkey_url: str, data_dir: Path, job: str
) -> None:
    env = {**os.environ, "REDIS_URL": valkey_url}
    where = ("--job", job, "--data-dir", str(data_dir))
    wanted = {
        f"crawlog worker w1 job {job}": "crawlog-w1",
        f"crawlog worker w2 job {job}": "crawlog-w2",
        f"crawlog projector job {job}": "crawlog-project",
    }
    async with serve_testsite(pages=40, faults=SLOW) as site:
        crawl = crawlog_command("crawl", site.url + "/", *where, "--workers", "2")
        process = await anyio.open_process(crawl, env=env, cwd=ROOT, start_new_session=True)
        try:
            with anyio.fail_after(60):
                while not site.requests:  # every child has started its command by now
                    await anyio.sleep(0.01)
                while len(children := _children(process.pid)) < len(wanted):
                    await anyio.sleep(0.05)
                seen = {
                    _cmdline(child): Path(f"/proc/{child}/comm").read_text().strip()
                    for child in children
                }
        finally:
            os.killpg(process.pid, signal.SIGKILL)
            await process.wait()
            await process.aclose()
    assert seen == wanted
