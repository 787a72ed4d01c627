"""``crawlog shell URL --job NAME`` fetches as the job's workers do: with its user agent
and default headers, through its proxy. Witnesses: the test site's ``/echo`` page and the
proxy's log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from crawler._job import JobConfig, save_config
from crawler.testsite import RunningSite
from eventlog import JobKeys
from tests.crawler.forward_proxy import serve_forward_proxy
from tests.crawler.operator_cli import crawlog

pytestmark = pytest.mark.anyio


async def test_the_shell_sends_the_job_s_user_agent_and_headers_through_its_proxy(
    site: RunningSite, redis_client: aioredis.Redis, valkey_url: str, job: str, data_dir: Path
) -> None:
    async with serve_forward_proxy() as proxy:
        config = JobConfig(
            seeds=(site.url + "/",),
            user_agent="shell-agent/1.0",
            headers=(("X-Job", "mine"),),
            proxies=(proxy.url,),
        )
        await save_config(redis_client, JobKeys(job), config)
        url = site.url + "/echo/shell"
        code = "print(response.text)"
        result = await crawlog(valkey_url, data_dir, "shell", url, "--job", job, "-c", code)

    assert result.returncode == 0, result.stderr
    headers = json.loads(result.stdout)["headers"]
    assert headers["user-agent"] == "shell-agent/1.0"
    assert headers["x-job"] == "mine"
    assert proxy.requests == [url]
