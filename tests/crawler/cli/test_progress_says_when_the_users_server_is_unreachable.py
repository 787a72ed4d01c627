"""A crawl on a server of the user's (REDIS_URL) does not restart it, but while it does not
answer the progress says so, and for how long, instead of going quiet; the crawl finishes
once it is back."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import Faults, serve_testsite
from tests.crawler.cli_run import clean_env
from tests.crawler.conftest import ROOT
from tests.valkey_process import running_valkey

pytestmark = pytest.mark.anyio


async def test_progress_says_when_the_users_server_is_unreachable(tmp_path: Path) -> None:
    aof = ("--appendonly", "yes", "--appendfsync", "always", "--save", "")
    with running_valkey(tmp_path / "valkey", *aof) as server:
        faults = Faults(slow_rate=0.3, slow_s=0.3)
        async with serve_testsite(pages=200, seed=14, faults=faults) as site:
            command = crawlog_command(
                "crawl", site.url + "/", "--job", "theirs",
                "--workers", "1", "--concurrency", "4", "--data-dir", str(tmp_path / "data"),
            )  # fmt: skip
            output = tmp_path / "out"
            with output.open("wb") as out:
                crawl = await anyio.open_process(
                    command,
                    env=clean_env(REDIS_URL=server.url),
                    cwd=ROOT,
                    stdout=out,
                    stderr=None,
                )
            async with crawl:
                with anyio.fail_after(60):
                    while site.request_count < 20:
                        await anyio.sleep(0.01)
                    server.kill()
                    said = None
                    while said is None:
                        said = re.search(
                            r"progress theirs: server redis://127\.0\.0\.1:\d+/0 unreachable "
                            r"for (\d+) s",
                            output.read_text(),
                        )
                        await anyio.sleep(0.05)
                    server.start()
                    code = await crawl.wait()
            text = output.read_text()
            assert code == 0, text
            assert "finished theirs" in text
            reachable = {u.removeprefix(site.url) for u in site.reachable}
            assert reachable <= {r.path for r in site.requests}
    durations = [int(n) for n in re.findall(r"unreachable for (\d+) s", text)]
    assert durations == sorted(durations), "it counts up while the outage lasts"
