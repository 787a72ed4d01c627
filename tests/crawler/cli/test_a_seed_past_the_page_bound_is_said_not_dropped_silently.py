"""A crawl whose seeds are more than its ``--max-pages`` allows says how many it did not
enqueue, as it says for a sitemap's URLs; before, a refused seed was left out in silence
(the job line counted only the new ones) and nothing said why it was never fetched."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import serve_testsite
from tests.crawler.cli_run import clean_env
from tests.crawler.conftest import ROOT
from tests.server_helpers import stop_or_kill

pytestmark = pytest.mark.anyio
CRAWL_TIMEOUT_S = 60


async def test_seeds_past_the_bound_are_counted_in_one_line(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    async with serve_testsite(pages=5, seed=1) as site:
        seeds = [site.url + "/", site.url + "/item/1", site.url + "/item/2"]
        command = crawlog_command(
            "crawl", *seeds, "--job", "s", "--data-dir", str(data_dir), "--max-pages", "1",
            "--ignore-robots",
        )  # fmt: skip
        try:
            with anyio.fail_after(CRAWL_TIMEOUT_S):
                done = await anyio.run_process(command, cwd=ROOT, env=clean_env(), check=False)
        finally:
            stop_or_kill(data_dir)
        fetched = [r.path for r in site.requests]

    out = done.stdout.decode()
    assert done.returncode == 0, out + done.stderr.decode()
    assert "seeds: 2 past --max-pages, not enqueued" in out.splitlines(), out
    assert "job s: 1 new seed(s)" in out and fetched == ["/"]
