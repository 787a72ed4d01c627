"""The disk under the data directory fills up mid-crawl (a real tmpfs of a few MiB): Valkey
can no longer write its append-only file and refuses every write (``MISCONF``). The crawl
says so once, in plain words, with what to do; its summary counts what the log holds (not
"no tasks; 0 pages" from a commit the projector could not make); and the same command,
run again once there is room, finishes the job."""

from __future__ import annotations

import contextlib
import errno
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import serve_testsite
from tests.crawler.cli_run import clean_env
from tests.crawler.conftest import ROOT
from tests.server_helpers import stop_or_kill

pytestmark = pytest.mark.anyio
DISK_MIB = 24
PAGES = 150
PAGES_BEFORE_FULL = 30
CRAWL_TIMEOUT_S = 120
TEST_TIMEOUT_S = 2 * CRAWL_TIMEOUT_S
"""Two crawls and a server start: more than the suite's default on a loaded machine."""
FILL_CHUNK = 64 * 1024


@contextlib.contextmanager
def tiny_disk(mount_point: Path) -> Iterator[Path]:
    """A tmpfs of DISK_MIB at ``mount_point`` (skipped, saying why, where none can be made)."""
    mount_point.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK_MIB}m", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
        check=False,
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs to fill (needs root): {made.stderr.strip()}")
    try:
        yield mount_point
    finally:
        stop_or_kill(mount_point / "data")
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def fill(disk: Path) -> Path:
    """Write a file on ``disk`` until the disk is full; the file."""
    filler = disk / "filler"
    chunk = b"\0" * FILL_CHUNK
    with filler.open("wb", buffering=0) as out:
        try:
            while True:
                out.write(chunk)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
    return filler


async def run_until_exit(process: subprocess.Popen[bytes]) -> int:
    with anyio.fail_after(CRAWL_TIMEOUT_S):
        while process.poll() is None:
            await anyio.sleep(0.05)
    return process.returncode


@pytest.mark.timeout(TEST_TIMEOUT_S)
async def test_a_full_disk_is_said_once_and_the_same_command_finishes_after(
    tmp_path: Path,
) -> None:
    with tiny_disk(tmp_path / "disk") as disk:
        data_dir = disk / "data"
        async with serve_testsite(pages=PAGES, seed=5) as site:
            command = crawlog_command(
                "crawl", site.url + "/", "--job", "full",
                "--workers", "2", "--data-dir", str(data_dir),
            )  # fmt: skip
            out, err = tmp_path / "out", tmp_path / "err"
            with out.open("wb") as stdout, err.open("wb") as stderr:
                first = subprocess.Popen(command, cwd=ROOT, env=clean_env(), stdout=stdout,
                                         stderr=stderr)  # fmt: skip
                with anyio.fail_after(CRAWL_TIMEOUT_S):
                    while site.request_count < PAGES_BEFORE_FULL:
                        await anyio.sleep(0.01)
                filler = fill(disk)
                code = await run_until_exit(first)
            stdout_text, stderr_text = out.read_text(), err.read_text()

            assert code == 2, (stdout_text, stderr_text)
            lines = stderr_text.splitlines()
            said = [line for line in lines if "is full" in line]
            assert len(said) == 1, stderr_text
            assert f"the disk of the data directory {data_dir} is full" in said[0]
            assert "free some space" in said[0] and "run the same command again" in said[0]
            assert not [line for line in lines if "MISCONF" in line], stderr_text
            # A worker whose journal (on the same disk) cannot be written may say so too
            # naming its journal and what to do (seen once, on a loaded machine).
            others = [line for line in lines if line not in said]
            assert all(
                "cannot write the worker's journal" in line and "free space" in line
                for line in others
            ), stderr_text
            summary = next(line for line in stdout_text.splitlines() if line.startswith("stopped"))
            assert "no tasks" not in summary and " 0 pages" not in summary, summary
            # True: at least what the live progress (folded from the log) last showed.
            last = [line for line in stdout_text.splitlines() if line.startswith("progress")][-1]
            shown = re.search(r"(\d+)/(\d+) tasks ended", last)
            assert shown is not None, last
            tasks = summary.split(": ", 1)[1].split(";")[0]  # "38 done, 378 pending"
            counts = {status: int(n) for n, status in re.findall(r"(\d+) (\w+)", tasks)}
            assert sum(counts.values()) >= int(shown[2]), (summary, last)
            assert counts.get("done", 0) >= int(shown[1]), (summary, last)

            filler.unlink()
            again = await anyio.run_process(command, cwd=ROOT, env=clean_env(), check=False)
            counts = site.fetch_counts()
        assert again.returncode == 0, again.stderr.decode()
        assert "finished full" in again.stdout.decode()
        reachable = {u.removeprefix(site.url) for u in site.reachable}
        assert reachable <= set(counts)
