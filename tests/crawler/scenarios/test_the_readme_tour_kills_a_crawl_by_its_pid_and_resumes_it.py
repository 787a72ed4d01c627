"""The README's tour, step 2 and 3, run as written in a shell: `kill -9 $!` of the crawl
kills its workers and projector too (no `pkill -f`), `status` reads the log, and the same
crawl command resumes and finishes, its first request made before the host slots the dead
workers held would have expired (how soon is timed by tools/bench_restart.py)."""

from __future__ import annotations

import os
import re
import shlex
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import Faults, serve_testsite
from eventlog import JobKeys, connect
from eventlog._server import _alive, ensure_server
from tests.crawler.cli_run import clean_env
from tests.crawler.conftest import ROOT
from tests.server_helpers import server_dir

pytestmark = pytest.mark.anyio
README = ROOT / "README.md"
CRAWLOG = ".venv/bin/crawlog"
TOUR_SITE = "http://127.0.0.1:8000/"
SOME_SLOW_PAGES = Faults(slow_rate=0.05, slow_s=1.0)
"""As the tour's `--faults all` has: requests in flight long enough to be killed in."""


def tour_step(number: int) -> list[str]:
    """The shell lines of the tour's step ``number``, comments dropped."""
    text = README.read_text()
    start = text.index(f"**{number}. ")
    block = re.search(r"```sh\n(.*?)```", text[start:], re.DOTALL)
    assert block is not None
    return [line.split("  #", 1)[0].strip() for line in block.group(1).splitlines()]


def children_of(pid: int) -> set[int]:
    """The live children of process ``pid`` (a crawl's: its workers and projector, forked
    from it; ``ps`` shows each by its role and job)."""
    try:
        listed = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except FileNotFoundError:
        return set()
    return {int(child) for child in listed if _alive(int(child))}


@pytest.fixture
def children() -> Iterator[set[int]]:
    """The crawl's children the test saw: a failed test's orphans are killed."""
    seen: set[int] = set()
    try:
        yield seen
    finally:
        for pid in seen:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    with server_dir(tmp_path / ".crawlog") as directory:
        yield directory


@pytest.mark.timeout(120)  # three crawlog commands and two crawls, on a loaded machine
async def test_the_readme_tour_kills_a_crawl_by_its_pid_and_resumes_it(
    tmp_path: Path, home: Path, children: set[int]
) -> None:
    crawl_line, kill_line, status_line = tour_step(2)
    assert "pkill" not in " ".join(tour_step(2))
    [resume_line] = tour_step(3)
    async with serve_testsite(pages=200, seed=3, faults=SOME_SLOW_PAGES) as site:
        slots = JobKeys("tour").host_slots(site.url.removeprefix("http://"))

        def as_here(line: str) -> str:
            # The tour's site and install, here: the test site's port, this interpreter.
            line = line.replace(TOUR_SITE, site.url + "/")
            return line.replace(CRAWLOG, shlex.join(crawlog_command()))

        output = tmp_path / "shell.out"
        with output.open("wb") as out:
            shell = await anyio.open_process(
                ["sh"], cwd=tmp_path, env=clean_env(), stdin=-1, stdout=out, stderr=out
            )
        async with shell:
            assert shell.stdin is not None
            await shell.stdin.send(f"{as_here(crawl_line)}\necho crawl pid $!\n".encode())
            with anyio.fail_after(100):
                # The tour sleeps 5 s; a test waits for the crawl to be under way instead.
                while site.request_count < len(site.reachable) // 4:
                    await anyio.sleep(0.01)
                crawl_pid = int(re.findall(r"crawl pid (\d+)", output.read_text())[0])
                assert _alive(crawl_pid)
                children |= children_of(crawl_pid)
                assert len(children) == 3  # its 2 workers and its projector
                async with connect(ensure_server(home).url) as redis:
                    # Killed while a page is in flight: a slot taken for a slow page is
                    # held for a while.
                    while not await redis.zcard(slots):
                        await anyio.sleep(0.001)
                kill = re.sub(r"^sleep \d+; ", "", kill_line)
                await shell.stdin.send(f"{kill}\n".encode())
                while _alive(crawl_pid) or any(_alive(pid) for pid in children):
                    await anyio.sleep(0.01)
                fetched_at_kill = site.request_count
                async with connect(ensure_server(home).url) as redis:
                    # Slot token -> expiry (server ms), as the dead workers left them.
                    held = cast(
                        "list[tuple[bytes, float]]",
                        await redis.zrange(slots, 0, -1, withscores=True),
                    )
                await shell.stdin.send(f"{as_here(status_line)}\necho status exit $?\n".encode())
                while "status exit" not in output.read_text():
                    await anyio.sleep(0.05)
                resumed_at = time.time()
                await shell.stdin.send(
                    f"{as_here(resume_line)}\necho crawl exit $?\nexit\n".encode()
                )
                await shell.wait()
        text = output.read_text()
        assert "status exit 0" in text, text
        assert "crawl exit 0" in text and "finished tour" in text, text
        assert fetched_at_kill < len(site.reachable), "killed mid-crawl"
        assert {u.removeprefix(site.url) for u in site.reachable} <= set(site.fetch_counts())
        # When each request came (the site logs a slow page once it answers it, even a dead
        # worker's).
        came = [r.time - site.sitemap.fault_plan(r.path).delay_s for r in site.requests]
        first = min(t for t in came if t > resumed_at)
        # A kill between two fetches leaves no slot held (then there is nothing to wait out).
        if held:
            assert first < min(expiry for _, expiry in held) / 1000, "waited for dead slots"
