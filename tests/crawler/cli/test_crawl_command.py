"""`crawlog crawl`: the whole process tree killed with SIGKILL, the same command resumes,
and its summary counts the requests that may have reached the site twice: never fewer than
the site served twice, more by at most the requests in flight at the kill."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import serve_testsite
from tests.crawler.conftest import ROOT, replay_verify

pytestmark = pytest.mark.anyio
WORKERS, CONCURRENCY = 2, 4


async def test_a_crawl_killed_with_its_whole_process_tree_resumes_when_run_again(
    valkey_url: str, data_dir: Path
) -> None:
    env = {**os.environ, "REDIS_URL": valkey_url}
    async with serve_testsite(pages=200, seed=9) as site:
        command = crawlog_command(
            "crawl", site.url + "/", "--job", "tree",
            "--workers", str(WORKERS), "--concurrency", str(CONCURRENCY),
            "--data-dir", str(data_dir),
        )  # fmt: skip
        with anyio.fail_after(90):
            first = await anyio.open_process(command, env=env, cwd=ROOT, start_new_session=True)
            while site.request_count < len(site.reachable) // 3:
                await anyio.sleep(0.01)
            os.killpg(first.pid, signal.SIGKILL)  # the crawl, its workers, its projector
            await first.wait()
            await first.aclose()
            again = await anyio.run_process(command, env=env, cwd=ROOT, check=False)
        assert again.returncode == 0, again.stderr.decode()
        out = again.stdout.decode()
        assert "finished tree" in out, out
        counts = site.fetch_counts()
    reachable = {u.removeprefix(site.url) for u in site.reachable}
    assert reachable <= set(counts)
    twice = [p for p, n in counts.items() if n > 1 and p != "/robots.txt"]
    assert len(twice) <= WORKERS * CONCURRENCY, "only pages in flight at the kill again"
    served_again = sum(counts[p] - 1 for p in twice)
    said = re.search(r"pages \((\d+) requests? may have reached the site twice\)", out)
    assert said, out
    assert served_again <= int(said.group(1)) <= served_again + WORKERS * CONCURRENCY, out
    assert b"identical" in await replay_verify(valkey_url, "tree", data_dir)
