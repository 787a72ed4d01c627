"""A recrawl of a job whose store was lost and rebuilt (a real FLUSHALL of a real Valkey,
then ``crawlog restore``) starts the next run and revisits every page; ``crawlog changes``
lists that run, and a run the job never had is refused. Before, the run's record went with
the store: the log's latest run, which had ended, was taken as still running and
"finished" again with nothing enqueued, so the recrawl asked for never ran, and
``changes`` listed the first run's pages as the latest."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import Request, serve_testsite
from tests.crawler.cli_run import clean_env
from tests.crawler.conftest import ROOT
from tests.valkey_process import running_valkey

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(150)]
STEP_TIMEOUT_S = 60


def pages_of(requests: list[Request]) -> list[str]:
    """The pages requested (robots.txt is no task), sorted."""
    return sorted(r.path for r in requests if r.path != "/robots.txt")


async def test_the_recrawl_after_a_restore_is_a_new_run_that_revisits_every_page(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    with running_valkey(tmp_path / "valkey") as server:
        env = clean_env(REDIS_URL=server.url)

        async def crawlog(*args: str, code: int = 0) -> str:
            command = crawlog_command(*args, "--job", "j", "--data-dir", str(data_dir))
            with anyio.fail_after(STEP_TIMEOUT_S):
                done = await anyio.run_process(command, cwd=ROOT, env=env, check=False)
            assert done.returncode == code, (args, done.stdout.decode(), done.stderr.decode())
            return done.stdout.decode() + done.stderr.decode()

        async with serve_testsite(pages=20, seed=3) as site:
            crawl = ("crawl", site.url + "/", "--workers", "1")
            await crawlog(*crawl)
            first = pages_of(site.requests)
            await crawlog("recrawl", "--workers", "1")
            server.flushall()
            await crawlog("restore", "--yes")
            await crawlog(*crawl)  # its settings, lost with the store, given again
            before = len(site.requests)
            said = await crawlog("recrawl", "--workers", "1")
            revisited = pages_of(site.requests[before:])
            listed = await crawlog("changes", "--all")
            never = await crawlog("changes", "--run", "4", code=2)

    assert "run 3:" in said, said
    assert revisited == first, said
    assert listed.startswith("job j, run 3:"), listed
    assert never.strip() == "crawlog: error: job 'j' has no run 4: its latest is run 3"
