"""``crawlog crawl SEEDS --depth 0`` with the default spider follows no link: it starts at
most one worker per seed, whatever ``--workers`` says (a worker with nothing to do costs a
core its start-up and delays the crawl's end), and still fetches every seed once."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import serve_testsite
from tests.crawler.cli_run import clean_env

pytestmark = pytest.mark.anyio
SEEDS = ("/", "/item/1")


@pytest.mark.timeout(120)  # a crawl's processes on a loaded machine
async def test_a_depth_0_crawl_of_two_seeds_starts_two_workers_of_the_four_asked_for(
    valkey_url: str, tmp_path: Path, job: str
) -> None:
    async with serve_testsite(pages=5, seed=4) as site:
        command = crawlog_command(
            "crawl", *(site.url + path for path in SEEDS), "--depth", "0", "--workers", "4",
            "--job", job, "--data-dir", str(tmp_path / "data"),
        )  # fmt: skip
        with anyio.fail_after(100):
            ran = await anyio.run_process(
                command, cwd=tmp_path, env=clean_env(REDIS_URL=valkey_url), check=False
            )
        counts = site.fetch_counts()
    out = ran.stdout.decode()
    assert ran.returncode == 0, ran.stderr.decode()
    assert re.search(rf"job {job}: 2 new seed\(s\), 2 worker\(s\) x \d+", out), out
    assert {path: n for path, n in counts.items() if path != "/robots.txt"} == {
        path: 1 for path in SEEDS
    }
