"""``crawlog crawl`` of a job another live crawl is running says so in one line, with that
crawl's pid and since when, and how to watch it; it exits 2 having started nothing (no
progress of the other crawl shown as its own). Once that crawl is killed, the same command
resumes the job at once: a dead holder's lock is taken over."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import anyio
import pytest
import redis.asyncio as aioredis

from crawler.cli._argv import crawlog_command
from crawler.testsite import serve_testsite
from eventlog import JobKeys
from tests.crawler.cli_run import clean_env

pytestmark = pytest.mark.anyio


@pytest.mark.timeout(180)  # three crawls' processes on a loaded machine
async def test_a_second_crawl_of_a_running_job_is_one_line_and_exit_2(
    valkey_url: str, redis_client: aioredis.Redis, tmp_path: Path, job: str
) -> None:
    env = clean_env(REDIS_URL=valkey_url)
    async with serve_testsite(pages=20, seed=5) as site:
        command = crawlog_command(
            "crawl", site.url + "/", "--job", job, "--workers", "1", "--delay", "0.5",
            "--data-dir", str(tmp_path / "data"),
        )  # fmt: skip
        first = await anyio.open_process(
            command, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            with anyio.fail_after(60):
                while not await redis_client.exists(JobKeys(job).crawl_lock):
                    assert first.returncode is None, "the first crawl ended before it held the job"
                    await anyio.sleep(0.05)
                second = await anyio.run_process(command, cwd=tmp_path, env=env, check=False)
            assert first.returncode is None, "the first crawl was still running"
        finally:
            first.send_signal(signal.SIGKILL)
            await first.wait()
        with anyio.fail_after(100):
            again = await anyio.run_process(command, cwd=tmp_path, env=env, check=False)
    err = second.stderr.decode()
    assert second.returncode == 2, err
    assert err.strip().count("\n") == 0, err
    assert f"job {job} is already being crawled (pid {first.pid}, since " in err, err
    assert f"`crawlog status --job {job} --watch` to watch it" in err, err
    assert "progress" not in second.stdout.decode(), second.stdout.decode()
    assert again.returncode == 0, again.stdout.decode() + again.stderr.decode()
    assert "already being crawled" not in again.stderr.decode()
