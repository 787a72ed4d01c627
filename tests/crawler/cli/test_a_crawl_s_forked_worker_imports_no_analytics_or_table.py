"""A crawl forks its workers before its event loop (``crawler.cli._fork``): each has what
the crawl had imported by then, and must still be light. A spider run by the worker
writes down the worker's modules: neither Arrow, DuckDB nor rich (the crawl's progress
table), nor the projector's archive; and it is the crawl's own child, not a new
interpreter; also where the crawl imported the workers' HTTP stack for them (two
workers)."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from crawler.testsite import serve_testsite
from tests.crawler.cli.test_cli_startup import ANALYTICS
from tests.crawler.cli_run import CLI_TIMEOUT_S, clean_env, crawlog

pytestmark = pytest.mark.anyio
MODULES_ENV = "TEST_WORKER_MODULES_FILE"
SPIDER = f'''
import json, os, sys

from crawler import Item, Spider


class ModulesSpider(Spider):
    name = "modules"

    async def parse(self, response):
        record = {{"modules": sorted(sys.modules), "argv": sys.argv, "pid": os.getpid()}}
        with open(os.environ["{MODULES_ENV}"], "w") as out:
            json.dump(record, out)
        yield Item(response.url)
'''
TABLE = ("rich", "crawler.cli._progress_view", "crawler.ops._progress_source")


@pytest.mark.parametrize("workers", [1, 2])
async def test_a_crawl_s_forked_worker_imports_no_analytics_or_table(
    valkey_url: str, data_dir: Path, job: str, tmp_path: Path, workers: int
) -> None:
    spider = tmp_path / "modules_spider.py"
    spider.write_text(SPIDER)
    record = tmp_path / "worker.json"
    env = clean_env(REDIS_URL=valkey_url, **{MODULES_ENV: str(record)})
    async with serve_testsite(pages=5, seed=1) as site:
        command = (
            "crawl", site.url + "/", "--depth", "0", "--job", job, "--workers", str(workers),
            "--spider", f"{spider}:ModulesSpider", "--data-dir", str(data_dir),
        )  # fmt: skip
        with anyio.fail_after(CLI_TIMEOUT_S):
            result = await anyio.to_thread.run_sync(lambda: crawlog(*command, env=env))
    assert result.returncode == 0, result.stderr
    worker = json.loads(record.read_text())
    assert "crawler._worker" in worker["modules"]  # the spider did run in the worker
    assert "crawl" in worker["argv"]  # forked from the crawl: its command line
    assert set(worker["modules"]) & {*ANALYTICS, *TABLE} == set()
