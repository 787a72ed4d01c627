"""``crawlog crawl --console``: the job's console answers while the crawl runs (once logged
in through the URL it printed; a request without that login is refused), and the console
process goes with the crawl: when the crawl is stopped (SIGTERM), and when it is SIGKILLed.
The real command line, the real test site, the real console process."""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx
import pytest
from anyio.abc import Process

from crawler.cli._argv import crawlog_command
from crawler.testsite import Faults, serve_testsite
from tests.crawler.conftest import ROOT

pytestmark = pytest.mark.anyio
DEADLINE_S = 60


def _console_child(crawl_pid: int) -> int | None:
    """The pid of the ``crawlog console`` the crawl started, if it runs."""
    children = Path(f"/proc/{crawl_pid}/task/{crawl_pid}/children").read_text().split()
    for pid in children:
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except FileNotFoundError:
            continue
        if b"console" in argv:
            return int(pid)
    return None


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie is gone but not yet reaped


@asynccontextmanager
async def crawl_with_console(
    valkey_url: str, data_dir: Path, job: str
) -> AsyncIterator[tuple[Process, str, int]]:
    """A crawl of a slow site with ``--console --console-port 0``: the process, the URL it
    printed for its console, the console's pid."""
    faults = Faults(slow_rate=1.0, slow_s=0.3)
    async with serve_testsite(pages=300, seed=5, faults=faults) as site:
        command = crawlog_command(
            "crawl", site.url + "/", "--job", job, "--per-host", "1", "--workers", "1",
            "--console", "--console-port", "0", "--data-dir", str(data_dir),
        )  # fmt: skip
        env = {**os.environ, "REDIS_URL": valkey_url}
        crawl = await anyio.open_process(command, env=env, cwd=ROOT, stderr=None)
        try:
            assert crawl.stdout is not None
            said = ""
            with anyio.fail_after(DEADLINE_S):
                while "\nconsole: " not in "\n" + said or not said.endswith("\n"):
                    said += (await crawl.stdout.receive()).decode()
            line = next(x for x in said.splitlines() if x.startswith("console: "))
            url = line.removeprefix("console: ")
            pid = _console_child(crawl.pid)
            assert pid is not None, "the console runs as the crawl's child"
            yield crawl, url, pid
        finally:
            if crawl.returncode is None:
                crawl.kill()
            await crawl.aclose()


async def _pages_answer_by_token_only(url: str, job: str) -> None:
    base, _, token = url.partition("/login?token=")
    assert base.startswith("http://127.0.0.1:") and token
    async with httpx.AsyncClient(base_url=base, timeout=DEADLINE_S) as http:
        without = await http.get(f"/jobs/{job}")
        assert without.status_code == 401 and "/login?token=" in without.text
        login = await http.get(url)
        assert login.status_code == 303 and login.headers["location"] == "/"
        panel = await http.get(f"/jobs/{job}")
        assert panel.status_code == 200
        assert f"Job {job}" in panel.text and 'id="f-done"' in panel.text


async def _gone(pid: int) -> None:
    with anyio.fail_after(DEADLINE_S):
        while _alive(pid):
            await anyio.sleep(0.05)


async def test_the_console_answers_during_the_crawl_and_stops_with_it(
    valkey_url: str, data_dir: Path, job: str
) -> None:
    async with crawl_with_console(valkey_url, data_dir, job) as (crawl, url, pid):
        await _pages_answer_by_token_only(url, job)
        crawl.send_signal(signal.SIGTERM)
        with anyio.fail_after(DEADLINE_S):
            await crawl.wait()
        assert not _alive(pid)


async def test_a_killed_crawl_takes_its_console_along(
    valkey_url: str, data_dir: Path, job: str
) -> None:
    async with crawl_with_console(valkey_url, data_dir, job) as (crawl, url, pid):
        await _pages_answer_by_token_only(url, job)
        crawl.kill()
        await crawl.wait()
        await _gone(pid)
