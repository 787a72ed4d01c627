"""A store that loses the job mid-crawl (a real FLUSHALL of a real Valkey): the crawl stops
with one line naming `crawlog restore`, never "finished"; `restore` and the same crawl
command then end the job with no page missing, few fetched twice, no item twice, and a
replay of the archive identical to its state. The test site's request log is the witness."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import anyio
import pytest
import redis.asyncio as aioredis

from crawler.cli._argv import crawlog_command
from crawler.ops import twice_phrase
from crawler.testsite import check_crawl, serve_testsite
from projector import Store
from tests.crawler.cli_run import clean_env
from tests.valkey_process import running_valkey

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(150)]

PAGES = 200
IN_FLIGHT_BOUND = 48
"""2 workers x 8, with robots.txt and redirects: what a loss may fetch twice at most."""


def crawl_args(url: str, data_dir: Path) -> list[str]:
    return crawlog_command(
        "crawl", url, "--job", "j", "--data-dir", str(data_dir), "--workers", "2",
        "--concurrency", "8", "--delay", "0.01", "--fail-on", "never",
    )  # fmt: skip


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=50, check=False)


async def test_a_flushed_store_stops_the_crawl_and_restore_resumes_it(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with running_valkey(tmp_path / "valkey") as server:
        env = clean_env(REDIS_URL=server.url)
        async with serve_testsite(
            pages=PAGES, seed=3, request_log=tmp_path / "requests.jsonl"
        ) as site:
            crawl = subprocess.Popen(
                crawl_args(site.url, data_dir), env=env, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, text=True,
            )  # fmt: skip
            client = aioredis.Redis.from_url(server.url)
            try:
                with anyio.fail_after(60):
                    while len(site.requests) < PAGES // 3:
                        await anyio.sleep(0.05)
                await client.flushall()
            finally:
                await client.aclose()
            out, err = await anyio.to_thread.run_sync(lambda: crawl.communicate(timeout=40))
            assert crawl.returncode == 2, (out, err)
            assert "finished" not in out
            lines = [line for line in err.splitlines() if "store lost" in line]
            assert len(lines) == 1, err
            assert "crawlog restore --job j" in lines[0]
            # The same crawl before a restore: refused, never a new job seeded again.
            refused = await anyio.to_thread.run_sync(
                lambda: run(crawl_args(site.url, data_dir), env)
            )
            assert refused.returncode == 2, refused.stderr
            assert "new seed" not in refused.stdout
            assert "crawlog restore --job j" in refused.stderr
            status_args = crawlog_command("status", "--job", "j", "--data-dir", str(data_dir))
            status = await anyio.to_thread.run_sync(lambda: run(status_args, env))
            assert status.returncode == 2, status.stderr
            assert "crawlog restore --job j" in status.stderr

            started = time.monotonic()
            restore = await anyio.to_thread.run_sync(
                lambda: subprocess.run(
                    crawlog_command("restore", "--job", "j", "--data-dir", str(data_dir), "--yes"),
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=40,
                    check=False,
                )
            )
            assert restore.returncode == 0, restore.stderr
            assert "restored job j" in restore.stdout
            assert time.monotonic() - started < 30

            again = await anyio.to_thread.run_sync(
                lambda: subprocess.run(
                    crawl_args(site.url, data_dir),
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=50,
                    check=False,
                )
            )
            assert again.returncode == 0, (again.stdout, again.stderr)
            assert "0 new seed(s)" in again.stdout
            assert "finished j" in again.stdout
            check = await anyio.to_thread.run_sync(
                lambda: check_crawl(site, Store(data_dir, "j"), {})
            )
    assert check.lost == []
    assert check.unfinished == []
    assert check.duplicate_items == 0
    assert check.replay_differences == []
    assert len(check.refetched_by_site) <= IN_FLIGHT_BOUND
    if check.refetched_by_site:
        # What the workers had requested and could not log is counted as fetched again.
        assert f"({twice_phrase(0)})" not in again.stdout, again.stdout
