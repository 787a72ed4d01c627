"""A crawl on crawlog's own server supervises it: the server SIGKILLed mid-crawl (as an OOM
killer would) is restarted at once on its append-only file, the crawl says so in one line
and finishes, every page fetched and done once; a server that keeps dying stops the crawl
with a clear error instead of a restart loop."""

from __future__ import annotations

import os
import signal
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import Faults, serve_testsite
from eventlog import EventLog, ItemScraped, TaskDone, connect
from eventlog._server import MAX_SERVER_RESTARTS, PID_FILE, ensure_server
from tests.crawler.cli_run import clean_env
from tests.crawler.conftest import ROOT
from tests.server_helpers import server_dir

pytestmark = pytest.mark.anyio


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    with server_dir(tmp_path / "home") as directory:
        yield directory


def server_pid(home: Path) -> int | None:
    try:
        return int((home / PID_FILE).read_text())
    except (OSError, ValueError):
        return None


async def test_a_server_killed_mid_crawl_is_restarted_and_the_crawl_finishes(
    home: Path, tmp_path: Path
) -> None:
    # appendfsync always: every write the workers were told about survives the SIGKILL
    # (with everysec, the default, up to a second of them may not).
    ensure_server(home, fsync="always")
    faults = Faults(slow_rate=0.3, slow_s=0.3)
    async with serve_testsite(pages=300, seed=12, faults=faults) as site:
        command = crawlog_command(
            "crawl", site.url + "/", "--job", "oom",
            "--workers", "2", "--concurrency", "4", "--per-host", "8",
            "--data-dir", str(home),
        )  # fmt: skip
        with (tmp_path / "out").open("wb") as out:
            crawl = await anyio.open_process(
                command, env=clean_env(), cwd=ROOT, stdout=out, stderr=None
            )
        async with crawl:
            with anyio.fail_after(60):
                while site.request_count < len(site.reachable) // 3:
                    await anyio.sleep(0.01)
                killed = server_pid(home)
                assert killed is not None
                os.kill(killed, signal.SIGKILL)
                fetched_at_kill = site.request_count
                code = await crawl.wait()
        output = (tmp_path / "out").read_text()
        assert code == 0, output
        assert f"(pid {killed}) died; restarted it" in output, output
        assert "finished oom" in output, output
        assert fetched_at_kill < len(site.reachable), "the kill really was mid-crawl"
        counts = site.fetch_counts()
    reachable = {u.removeprefix(site.url) for u in site.reachable}
    assert {p for p, n in counts.items() if n != 1 and p != "/robots.txt"} == set()
    assert reachable <= set(counts)
    async with connect(ensure_server(home).url) as client:
        events = [e.event for e in await EventLog(client, "oom").read_range()]
    done = Counter(e.task_id for e in events if isinstance(e, TaskDone))
    assert len(done) == len(reachable) and set(done.values()) == {1}
    items = Counter(e.key for e in events if isinstance(e, ItemScraped))
    assert set(items.values()) == {1}


async def test_a_server_that_keeps_dying_stops_the_crawl_with_a_clear_error(
    home: Path, tmp_path: Path
) -> None:
    ensure_server(home)
    faults = Faults(slow_rate=1.0, slow_s=0.5)
    async with serve_testsite(pages=300, seed=13, faults=faults) as site:
        command = crawlog_command(
            "crawl", site.url + "/", "--job", "dying",
            "--workers", "1", "--concurrency", "2", "--data-dir", str(home),
        )  # fmt: skip
        with (tmp_path / "out").open("wb") as out, (tmp_path / "err").open("wb") as err:
            crawl = await anyio.open_process(
                command, env=clean_env(), cwd=ROOT, stdout=out, stderr=err
            )
        async with crawl:
            with anyio.fail_after(90):
                while site.request_count < 2:
                    await anyio.sleep(0.01)
                for restarts in range(MAX_SERVER_RESTARTS + 1):
                    killed = server_pid(home)
                    assert killed is not None, (tmp_path / "err").read_text()
                    os.kill(killed, signal.SIGKILL)
                    # Killed again once the crawl has brought the new one up.
                    while crawl.returncode is None and (
                        (tmp_path / "out").read_text().count("died; restarted it") == restarts
                    ):
                        await anyio.sleep(0.01)
                code = await crawl.wait()
    errors = (tmp_path / "err").read_text()
    assert code == 2, errors
    lines = [line for line in errors.splitlines() if line.startswith("crawlog: error: ")]
    assert len(lines) == 1, errors
    assert f"died {MAX_SERVER_RESTARTS + 1} times within" in lines[0]
    assert "not restarting it again" in lines[0]
