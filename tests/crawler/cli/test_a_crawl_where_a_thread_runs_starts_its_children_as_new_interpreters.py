"""A crawl forks its children only from its one thread (``crawler.cli._fork.can_fork``):
a fork copies no other thread, and a lock one of them held would stay held in the child.
Where a thread runs already (here one a spider module starts as it is imported), the
crawl starts its workers and projector as new interpreters, and still crawls to the end;
such a worker is as light (no rich, which httpx would import for its own command line)."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from crawler.testsite import serve_testsite
from tests.crawler.cli_run import CLI_TIMEOUT_S, clean_env, crawlog

pytestmark = pytest.mark.anyio
ARGV_ENV = "TEST_WORKER_ARGV_FILE"
SPIDER = f'''
import json, os, sys, threading

from crawler import Item, Spider

threading.Thread(target=threading.Event().wait, daemon=True).start()


class ThreadedSpider(Spider):
    name = "threaded"

    async def parse(self, response):
        with open(os.environ["{ARGV_ENV}"], "w") as out:
            json.dump({{"argv": sys.argv, "modules": sorted(sys.modules)}}, out)
        yield Item(response.url)
'''


async def test_a_crawl_where_a_thread_runs_starts_its_children_as_new_interpreters(
    valkey_url: str, data_dir: Path, job: str, tmp_path: Path
) -> None:
    spider = tmp_path / "threaded_spider.py"
    spider.write_text(SPIDER)
    argv = tmp_path / "worker.json"
    env = clean_env(REDIS_URL=valkey_url, **{ARGV_ENV: str(argv)})
    async with serve_testsite(pages=5, seed=1) as site:
        command = (
            "crawl", site.url + "/", "--depth", "0", "--job", job, "--workers", "1",
            "--spider", f"{spider}:ThreadedSpider", "--data-dir", str(data_dir),
        )  # fmt: skip
        with anyio.fail_after(CLI_TIMEOUT_S):
            result = await anyio.to_thread.run_sync(lambda: crawlog(*command, env=env))
    assert result.returncode == 0, result.stderr
    assert f"finished {job}" in result.stdout and "1 done" in result.stdout, result.stdout
    worker = json.loads(argv.read_text())
    assert worker["argv"][worker["argv"].index("--name") + 1] == "w1"  # `crawlog worker`
    assert "crawl" not in worker["argv"]
    assert "httpx" in worker["modules"]  # the fetcher's
    assert "rich" not in worker["modules"]
