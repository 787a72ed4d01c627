"""A server that reaches its ``maxmemory`` (policy ``noeviction``) mid-crawl refuses every
write with ``OOM``: the workers and the projector wait it out as they wait out a lost
server, the crawl says so once with what to do, and once memory is raised back the crawl
finishes with nothing lost."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
import redis.asyncio as aioredis
import redis.exceptions

from crawler.cli._argv import crawlog_command
from crawler.ops import twice_phrase
from crawler.testsite import Faults, serve_testsite
from tests.crawler.cli_run import clean_env, crawlog
from tests.crawler.conftest import ROOT
from tests.valkey_process import running_valkey

pytestmark = pytest.mark.anyio

SAID = "is out of memory (maxmemory reached) and refuses writes: raise its maxmemory"
OUTAGE_S = 4.0


async def test_a_crawl_waits_out_a_server_out_of_memory_and_finishes(tmp_path: Path) -> None:
    with running_valkey(tmp_path / "valkey", "--save", "") as server:
        faults = Faults(slow_rate=0.3, slow_s=0.2)
        async with serve_testsite(pages=150, seed=21, faults=faults) as site:
            data = tmp_path / "data"
            command = crawlog_command(
                "crawl", site.url + "/", "--job", "oom",
                "--workers", "2", "--concurrency", "4", "--data-dir", str(data),
            )  # fmt: skip
            output = tmp_path / "out"
            with output.open("wb") as out:
                crawl = await anyio.open_process(
                    command, env=clean_env(REDIS_URL=server.url), cwd=ROOT,
                    stdout=out, stderr=out,
                )  # fmt: skip
            admin = aioredis.Redis.from_url(server.url)
            async with crawl, admin:
                with anyio.fail_after(90):
                    while site.request_count < 20:
                        await anyio.sleep(0.01)
                    await admin.config_set("maxmemory", "1")  # every write refused from now
                    with pytest.raises(redis.exceptions.OutOfMemoryError):
                        await admin.set("crawlog-test-probe", "x")
                    while SAID not in output.read_text():
                        await anyio.sleep(0.05)
                    requests_during = site.request_count
                    await anyio.sleep(OUTAGE_S)
                    assert crawl.returncode is None, output.read_text()
                    await admin.config_set("maxmemory", "0")
                    code = await crawl.wait()
            text = output.read_text()
            assert code == 0, text
            assert "finished oom" in text
            assert text.count(SAID) == 1, text
            assert "Traceback" not in text and "OutOfMemoryError" not in text, text
            # Nothing lost: every reachable page was asked for, and each task ended.
            reachable = {u.removeprefix(site.url) for u in site.reachable}
            assert reachable <= {r.path for r in site.requests}
            assert site.request_count > requests_during
        verify = crawlog(
            "replay", "--job", "oom", "--data-dir", str(data), "--verify",
            env=clean_env(REDIS_URL=server.url),
        )  # fmt: skip
        assert verify.returncode == 0, verify.stdout + verify.stderr
        status = crawlog(
            "status", "--job", "oom", "--data-dir", str(data), "--json",
            env=clean_env(REDIS_URL=server.url),
        )  # fmt: skip
        assert status.returncode == 0, status.stderr
        total = json.loads(status.stdout)["total"]
        assert total["done"] == total["discovered"] == total["pages"], total
    assert f"({twice_phrase(0)})" in text, text
