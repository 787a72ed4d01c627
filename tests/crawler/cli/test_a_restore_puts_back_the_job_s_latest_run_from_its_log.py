"""``crawlog restore`` of a recrawled job puts its run record back from its log: its latest
run, running while a task of it has not ended. ``crawlog status`` then counts that run's
tasks, as before the loss (once the crawl's settings, which the log does not hold, are
given again). Before, the record went with the store and stayed gone until
the next recrawl: status counted every run's tasks, every run's failures with them."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import serve_testsite
from eventlog import FINISHED, JobKeys, RunRecord, connect, read_run
from tests.crawler.cli_run import clean_env
from tests.crawler.conftest import ROOT
from tests.valkey_process import running_valkey

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(150)]
STEP_TIMEOUT_S = 60


async def test_the_latest_run_and_its_end_come_back_with_the_restore(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with running_valkey(tmp_path / "valkey") as server:
        env = clean_env(REDIS_URL=server.url)

        async def crawlog(*args: str) -> str:
            command = crawlog_command(*args, "--job", "j", "--data-dir", str(data_dir))
            with anyio.fail_after(STEP_TIMEOUT_S):
                done = await anyio.run_process(command, cwd=ROOT, env=env, check=False)
            assert done.returncode == 0, (args, done.stdout.decode(), done.stderr.decode())
            return done.stdout.decode()

        async with serve_testsite(pages=20, seed=3) as site:
            await crawlog("crawl", site.url + "/", "--workers", "1")
            await crawlog("recrawl", "--workers", "1")
            await crawlog("recrawl", "--workers", "1")
            before = await crawlog("status")
            server.flushall()
            await crawlog("restore", "--yes")
            async with connect(server.url) as client:
                record = await read_run(client, JobKeys("j"))
            # Its settings, lost with the store, given again: nothing is left to crawl.
            await crawlog("crawl", site.url + "/", "--workers", "1")
            after = await crawlog("status")

    assert record == RunRecord(run=3, state=FINISHED)
    assert "progress j run 3: " in before, before
    assert (
        after.splitlines()[0].split(", 0 worker")[0]
        == before.splitlines()[0].split(", 0 worker")[0]
    ), (before, after)
