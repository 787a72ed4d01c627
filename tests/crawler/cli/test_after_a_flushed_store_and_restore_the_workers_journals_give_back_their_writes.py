"""A store flushed mid-crawl (a real FLUSHALL of a real Valkey), `crawlog restore`, and the
same crawl again: before anything is claimed, the crawl flushes its workers' journals, and
what the lost store had acknowledged after the archive's last commit comes back ("local
first"): pages fetched before the loss are in the archive after the restored position,
not fetched again. Nothing is missing, no item twice, the replay identical. The test
site's request log is the witness."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import anyio
import pytest
import redis.asyncio as aioredis

from crawler.cli._argv import crawlog_command
from crawler.testsite import Faults, check_crawl, serve_testsite
from projector import Store
from tests.crawler.cli_run import clean_env
from tests.valkey_process import running_valkey

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(150)]

PAGES = 200
IN_FLIGHT_BOUND = 48
GAVE_BACK = re.compile(r"journals gave back (\d+) write\(s\)")


def crawl_args(url: str, data_dir: Path) -> list[str]:
    return crawlog_command(
        "crawl", url, "--job", "j", "--data-dir", str(data_dir), "--workers", "2",
        "--concurrency", "8", "--delay", "0.01", "--fail-on", "never",
    )  # fmt: skip


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=50, check=False)


async def test_the_journals_give_back_what_the_flushed_store_had(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with running_valkey(tmp_path / "valkey") as server:
        env = clean_env(REDIS_URL=server.url)
        async with serve_testsite(
            pages=PAGES,
            seed=3,
            request_log=tmp_path / "requests.jsonl",
            faults=Faults(redirects=True),
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
            restore_args = crawlog_command("restore", "--job", "j", "--data-dir", str(data_dir))
            restore = await anyio.to_thread.run_sync(lambda: run([*restore_args, "--yes"], env))
            assert restore.returncode == 0, restore.stderr
            restored_at = time.time()
            position = re.search(r"restored job j at (\d+)-\d+", restore.stdout)
            assert position is not None, restore.stdout

            again = await anyio.to_thread.run_sync(lambda: run(crawl_args(site.url, data_dir), env))
            assert again.returncode == 0, (again.stdout, again.stderr)
            assert "finished j" in again.stdout
            gave_back = GAVE_BACK.search(again.stdout)
            assert gave_back is not None and int(gave_back.group(1)) > 0, again.stdout
            check = await anyio.to_thread.run_sync(
                lambda: check_crawl(site, Store(data_dir, "j"), {})
            )
            # Pages fetched before the loss, logged after the restored position: given back.
            query = (
                "SELECT count(*) AS n FROM pages "
                f"WHERE stream_ms > {position.group(1)} AND epoch_s < {restored_at}"
            )
            sql_args = crawlog_command("sql", "--job", "j", "--data-dir", str(data_dir))
            sql = await anyio.to_thread.run_sync(
                lambda: run([*sql_args, "--format", "json", query], env)
            )
            assert sql.returncode == 0, sql.stderr
    assert json.loads(sql.stdout)[0]["n"] > 0
    assert check.lost == []
    assert check.unfinished == []
    assert check.duplicate_items == 0
    assert check.replay_differences == []
    assert len(check.refetched_by_site) <= IN_FLIGHT_BOUND
