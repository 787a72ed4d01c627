"""The metrics endpoint listens on 127.0.0.1 unless --metrics-host says otherwise.

Read from the kernel's own table of listening sockets (/proc/net/tcp), not from what the
process says it did.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from eventlog import EventLog
from tests.crawler.cli_run import free_port
from tests.crawler.conftest import ROOT
from tests.projector.test_projector import task_events

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="needs Linux /proc/net/tcp"),
]
LISTEN = "0A"


def listening_addresses(port: int) -> set[str]:
    """Local IPv4 addresses (dotted) with a socket listening on ``port``."""
    found = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        address, _, hex_port = local.partition(":")
        if state == LISTEN and int(hex_port, 16) == port:
            # /proc shows the address as a little-endian hex word.
            found.add(".".join(str(int(address[i : i + 2], 16)) for i in (6, 4, 2, 0)))
    return found


@pytest.mark.parametrize(
    ("host_args", "expected"), [((), "127.0.0.1"), (("--metrics-host", "0.0.0.0"), "0.0.0.0")]
)
async def test_metrics_endpoint_binds_loopback_unless_told_otherwise(
    valkey_url: str,
    job: str,
    log: EventLog,
    data_dir: Path,
    host_args: tuple[str, ...],
    expected: str,
) -> None:
    await log.append_many(task_events(0))
    port = free_port()
    command = crawlog_command(
        "project", "--job", job, "--data-dir",
        str(data_dir), "--metrics-port", str(port), *host_args,
    )  # fmt: skip
    env = {**os.environ, "REDIS_URL": valkey_url}
    process = await anyio.open_process(command, env=env, cwd=ROOT)
    try:
        with anyio.fail_after(30):
            while not (bound := listening_addresses(port)):
                await anyio.sleep(0.05)  # polling the kernel's table until it listens
        assert bound == {expected}
    finally:
        process.send_signal(signal.SIGTERM)
        await process.wait()
        await process.aclose()
