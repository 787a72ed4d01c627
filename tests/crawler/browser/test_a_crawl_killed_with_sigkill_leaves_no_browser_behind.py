"""``kill -9`` of a whole ``crawlog crawl --browser`` leaves no Chromium process behind:
its workers die with it (their parent-death signal), and each worker's browser with its
worker (its own). Processes are found in /proc by the crawl's mark: a ``--user-data-dir``
under its data directory."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from crawler._browser import BROWSERS_DIR, marked_processes
from crawler.cli._argv import crawlog_command
from crawler.testsite import RunningSite
from tests.crawler.cli_run import clean_env
from tests.server_helpers import server_dir

pytestmark = pytest.mark.anyio


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    """The crawl's data directory, its server stopped afterwards."""
    with server_dir(tmp_path / "data") as directory:
        yield directory


async def test_kill_9_of_a_browser_crawl_leaves_no_chromium(
    chromium: str, scripted_site: RunningSite, data_dir: Path
) -> None:
    marked = data_dir / BROWSERS_DIR
    command = crawlog_command(
        "crawl", scripted_site.url + "/", "--browser", "--workers", "2",
        "--data-dir", str(data_dir), "--job", "shop",
    )  # fmt: skip
    with anyio.fail_after(90):
        async with await anyio.open_process(command, env=clean_env()) as crawl:
            try:
                # Both workers' browsers up, and the crawl under way.
                while len(set(marked_processes(marked).values())) < 2 or (
                    len(scripted_site.fetch_counts()) < 5
                ):
                    await anyio.sleep(0.02)
            finally:
                crawl.send_signal(signal.SIGKILL)
            await crawl.wait()
        while left := marked_processes(marked):
            await anyio.sleep(0.05)
        assert not left
