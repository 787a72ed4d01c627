"""A server whose ``maxmemory-policy`` evicts keys would delete a job's tasks and log when
it runs out of memory: a crawl refuses it at start (one line, exit 2), and one switched to
such a policy mid-crawl is noticed, the crawl stopping cleanly with the same line."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
import redis.asyncio as aioredis

from crawler.cli._argv import crawlog_command
from crawler.testsite import Faults, serve_testsite
from eventlog import LANES, WORKERS_GROUP, JobKeys
from tests.crawler.cli_run import clean_env, crawlog
from tests.crawler.conftest import ROOT
from tests.valkey_process import running_valkey

pytestmark = pytest.mark.anyio

LINE = (
    "crawlog: error: the Redis server at {url} has maxmemory-policy allkeys-lru: when it "
    "runs out of memory it deletes keys"
)


async def test_a_crawl_refuses_a_server_whose_memory_policy_evicts(tmp_path: Path) -> None:
    with running_valkey(tmp_path / "valkey", "--maxmemory-policy", "allkeys-lru") as server:
        async with serve_testsite(pages=5, seed=3) as site:
            done = crawlog(
                "crawl", site.url + "/", "--job", "lru", "--data-dir", str(tmp_path / "data"),
                env=clean_env(REDIS_URL=server.url),
            )  # fmt: skip
            assert site.request_count == 0
        assert done.returncode == 2, done.stdout + done.stderr
        lines = done.stderr.splitlines()
        assert len(lines) == 1, done.stderr
        assert lines[0].startswith(LINE.format(url=server.url)), lines[0]
        assert "Set `maxmemory-policy noeviction`" in lines[0]
        # Nothing was written to the server that would evict it.
        async with aioredis.Redis.from_url(server.url) as client:
            assert await client.keys("crawlog:*") == []


async def test_a_crawl_stops_when_its_server_s_policy_turns_to_evicting(tmp_path: Path) -> None:
    with running_valkey(tmp_path / "valkey", "--save", "") as server:
        faults = Faults(slow_rate=0.5, slow_s=0.3)
        async with serve_testsite(pages=300, seed=5, faults=faults) as site:
            command = crawlog_command(
                "crawl", site.url + "/", "--job", "turned",
                "--workers", "2", "--concurrency", "2", "--data-dir", str(tmp_path / "data"),
            )  # fmt: skip
            stderr = tmp_path / "err"
            with stderr.open("wb") as err:
                crawl = await anyio.open_process(
                    command, env=clean_env(REDIS_URL=server.url), cwd=ROOT,
                    stdout=None, stderr=err,
                )  # fmt: skip
            admin = aioredis.Redis.from_url(server.url)
            async with crawl, admin:
                with anyio.fail_after(60):
                    while site.request_count < 10:
                        await anyio.sleep(0.01)
                    await admin.config_set("maxmemory-policy", "allkeys-lru")
                    code = await crawl.wait()
                # Stopped cleanly: the workers handed their tasks back, none is leased.
                keys = JobKeys("turned")
                for lane in LANES:
                    if await admin.exists(keys.tasks(lane)):
                        leased = await admin.xpending(keys.tasks(lane), WORKERS_GROUP)
                        assert leased["pending"] == 0, (lane, leased)
            left = site.request_count
        assert code == 2, stderr.read_text()
        lines = stderr.read_text().splitlines()
        assert lines == [lines[-1]] and lines[-1].startswith(LINE.format(url=server.url)), lines
        assert left < 300
