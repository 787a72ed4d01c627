"""`crawlog server start --replica` runs a primary, a replica and three Sentinels that
`status` lists and `stop` stops; `crawlog crawl --durability replica` in that data
directory goes through the Sentinels, rides out the SIGKILL of the primary (one progress
line says the failover, the promotion raises the job's epoch) and finishes; without a
replica, `--durability replica` is refused in one line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import anyio
import anyio.abc
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import serve_testsite
from eventlog import (
    JobKeys,
    connect,
    primary_facts,
    read_identity,
    replica_set_status,
    replica_set_url,
)
from tests.crawler.conftest import ROOT
from tests.server_helpers import (
    TEST_DOWN_AFTER_MS,
    clean_env,
    replica_set_story,
    server_dir,
    stop_or_kill_replica_set,
)

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(270)]


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    clean_env(monkeypatch)
    directory = tmp_path / "home"
    try:
        yield directory
    finally:
        stop_or_kill_replica_set(directory)


def crawlog(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        crawlog_command(*map(str, args)), capture_output=True, text=True, timeout=60, check=False
    )


async def test_a_crawl_with_replica_durability_finishes_through_a_failover(
    data_dir: Path,
) -> None:
    started = crawlog(
        "server", "start", "--replica", "--data-dir", data_dir,
        "--down-after-ms", str(TEST_DOWN_AFTER_MS),
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    assert "url: redis+sentinel://:***@127.0.0.1:" in started.stdout
    password = (data_dir / "replicas" / "password").read_text().strip()
    assert password not in started.stdout
    status = json.loads(crawlog("server", "status", "--json", "--data-dir", data_dir).stdout)
    roles = sorted(member["role"] for member in status["members"])
    assert roles == ["primary", "replica", "sentinel", "sentinel", "sentinel"]

    async with serve_testsite(pages=400, seed=4) as site:
        command = crawlog_command(
            "crawl", site.url + "/", "--job", "ha", "--data-dir", str(data_dir),
            "--workers", "2", "--concurrency", "4", "--durability", "replica",
        )  # fmt: skip
        (primary,) = [m for m in replica_set_status(data_dir) or [] if m.role == "primary"]
        assert primary.pid is not None
        printed: list[bytes] = []

        async def read(stream: anyio.abc.ByteReceiveStream) -> None:
            async for chunk in stream:
                printed.append(chunk)

        with anyio.fail_after(120):
            async with (
                await anyio.open_process(command, cwd=ROOT, stderr=subprocess.STDOUT) as crawl,
                anyio.create_task_group() as reading,
            ):
                assert crawl.stdout is not None
                reading.start_soon(read, crawl.stdout)
                while len(site.requests) < 60:
                    await anyio.sleep(0.01)
                os.kill(primary.pid, signal.SIGKILL)
                fetched_at_kill = len(site.requests)
                code = await crawl.wait()
        output = b"".join(printed).decode()
        reachable = {u.removeprefix(site.url) for u in site.reachable}
        served = {r.path for r in site.requests}
    # The crawl's output, then what the set's members logged: a failure explains itself.
    told = f"{output}\n{replica_set_story(data_dir)}"
    assert code == 0, told
    assert fetched_at_kill < len(reachable)
    assert reachable <= served, told
    failovers = [line for line in output.splitlines() if line.startswith("failover: ")]
    # One line a promotion; on a busy machine the Sentinels may also fail back.
    assert failovers and len(set(failovers)) == len(failovers), told
    assert "finished ha" in output, told
    # The promotion raised the job's epoch, and only promotions did: everyone followed.
    async with connect(replica_set_url(data_dir) or "") as client:
        identity = await read_identity(client, JobKeys("ha"))
        facts = await primary_facts(client, JobKeys("ha"))
    assert identity is not None and identity.epoch >= 2, told
    assert set(facts.failovers) == set(range(2, identity.epoch + 1)), told

    stopped = crawlog("server", "stop", "--data-dir", data_dir)
    assert stopped.returncode == 0 and "stopped the replica set" in stopped.stdout
    down = crawlog("server", "status", "--data-dir", data_dir)
    assert down.returncode == 1


async def test_replica_durability_without_a_replica_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clean_env(monkeypatch)
    with server_dir(tmp_path / "single") as directory:
        result = crawlog(
            "crawl", "http://127.0.0.1:9/", "--job", "j", "--data-dir", directory,
            "--durability", "replica",
        )  # fmt: skip
    assert result.returncode == 2, result
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "crawlog server start --replica" in lines[0], result.stderr
    assert "Traceback" not in result.stderr


def test_an_unknown_durability_is_refused() -> None:
    result = crawlog("crawl", "http://127.0.0.1:9/", "--durability", "quorum")
    assert result.returncode == 2 and "quorum" in result.stderr
