"""A crawl started on a server already out of memory (``maxmemory`` reached, policy
``noeviction``) says so before its first write, with what to do, and starts once memory is
raised. Before, it waited in silence: the crawl says a full server only once its workers
run, and its first writes (the crawl lock, the seeds) came before them."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
import redis.asyncio as aioredis

from crawler.cli._argv import crawlog_command
from tests.crawler.cli_run import clean_env
from tests.crawler.conftest import ROOT
from tests.crawler.hostile_site import html_page, serve_hostile
from tests.valkey_process import running_valkey

pytestmark = pytest.mark.anyio
SAID = "is out of memory (maxmemory reached) and refuses writes: raise its maxmemory"


async def test_the_crawl_says_the_server_is_full_then_starts_once_it_has_room(
    tmp_path: Path,
) -> None:
    with running_valkey(tmp_path / "valkey", "--save", "") as server:
        async with serve_hostile({"/": html_page("home", "/a"), "/a": html_page("a")}) as site:
            admin = aioredis.Redis.from_url(server.url)
            await admin.config_set("maxmemory", "1")  # every write refused from now
            command = crawlog_command(
                "crawl", site.url + "/", "--job", "full", "--workers", "1",
                "--data-dir", str(tmp_path / "data"),
            )  # fmt: skip
            output = tmp_path / "out"
            with output.open("wb") as out:
                crawl = await anyio.open_process(
                    command, env=clean_env(REDIS_URL=server.url), cwd=ROOT, stdout=out,
                    stderr=out,
                )  # fmt: skip
            async with crawl, admin:
                with anyio.fail_after(50):
                    while SAID not in output.read_text():
                        await anyio.sleep(0.05)
                    assert crawl.returncode is None and not site.requests, output.read_text()
                    await admin.config_set("maxmemory", "0")
                    code = await crawl.wait()
            text = output.read_text()
    assert code == 0, text
    assert text.count(SAID) == 1, text
    assert "finished full" in text and "Traceback" not in text, text
