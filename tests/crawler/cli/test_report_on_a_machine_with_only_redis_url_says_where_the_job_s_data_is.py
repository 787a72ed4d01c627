"""A second machine with only ``REDIS_URL`` (no data directory of the job) can
``crawlog status`` the job from the server, but ``report``, ``sql`` and ``export`` read the
archive its projector writes elsewhere: each says so in one line, naming the host and data
directory of that archive and ``crawlog status`` for here."""

from __future__ import annotations

import socket
from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import serve_testsite
from tests.crawler.cli_run import clean_env

pytestmark = pytest.mark.anyio


async def run(cwd: Path, valkey_url: str, *args: str) -> tuple[int, str, str]:
    with anyio.fail_after(100):
        done = await anyio.run_process(
            crawlog_command(*args), cwd=cwd, env=clean_env(REDIS_URL=valkey_url), check=False
        )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


EXPORT = ("export", "--what", "items", "--format", "jsonl", "-")
READERS = [("report",), ("sql", "SELECT 1"), EXPORT]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("command", READERS, ids=lambda c: c[0])
async def test_a_reader_without_the_data_says_where_it_is_and_to_use_status_here(
    valkey_url: str, tmp_path: Path, job: str, command: tuple[str, ...]
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    async with serve_testsite(pages=5, seed=1) as site:
        crawl = ("crawl", site.url + "/", "--job", job, "--depth", "0")
        crawled = await run(first, valkey_url, *crawl)
    assert crawled[0] == 0, crawled
    status = await run(second, valkey_url, "status", "--job", job)
    assert status[0] == 0, status

    code, out, err = await run(second, valkey_url, *command, "--job", job)

    assert (code, out) == (2, ""), err
    assert err.count("\n") == 1, err
    assert err.startswith(f"crawlog: error: no data for job '{job}' on this machine"), err
    assert f"host {socket.gethostname()}" in err and str(first / ".crawlog") in err, err
    assert f"crawlog status --job {job}" in err, err
