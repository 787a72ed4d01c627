"""crawlog's own server SIGKILLed mid-crawl with its append-only file deleted: the crawl's
supervisor restarts it and says that the file was gone (not "restarted it on its
append-only file"), the crawl stops with one line naming `crawlog restore` (exit 2, never
"finished"), and `restore` + the same command end the job with every page fetched."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import serve_testsite
from eventlog._server import AOF_DIR, PID_FILE, aof_loss, ensure_server
from tests.crawler.cli_run import clean_env
from tests.crawler.conftest import ROOT
from tests.server_helpers import server_dir

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]
STOP_TIMEOUT_S = 10.0


def last_increment(directory: Path) -> Path:
    """The increment of the append-only file being written (the highest sequence number)."""
    return max(directory.glob("*.incr.aof"), key=lambda p: int(p.name.split(".")[-3]))


@contextlib.contextmanager
def crawl_stopped(pid: int) -> Iterator[None]:
    """The crawl process (its server's supervisor) SIGSTOPped, and seen stopped, for the
    block; its workers, other processes, go on."""
    os.kill(pid, signal.SIGSTOP)
    try:
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "T":
            assert time.monotonic() < deadline, "the crawl process did not stop"
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    with server_dir(tmp_path / "home") as directory:
        yield directory


def test_a_cut_or_missing_append_only_file_is_told_from_a_rewritten_one() -> None:
    known = {"a.base.rdb": 100, "a.incr.aof": 5000, "a.manifest": 90}
    assert aof_loss(known, {}) is not None and "gone" in (aof_loss(known, {}) or "")
    cut = aof_loss(known, {**known, "a.incr.aof": 4600})
    assert cut is not None and "400 bytes shorter" in cut
    assert aof_loss(known, {**known, "a.incr.aof": 6000}) is None
    assert aof_loss(known, {"b.base.rdb": 900, "b.incr.aof": 0, "a.manifest": 90}) is None
    assert aof_loss({}, {}) is None


async def test_a_server_restarted_without_its_aof_is_said_and_the_job_restored(
    home: Path, tmp_path: Path
) -> None:
    ensure_server(home)
    async with serve_testsite(pages=200, seed=14) as site:
        command = crawlog_command(
            "crawl", site.url + "/", "--job", "gone", "--workers", "2", "--concurrency", "4",
            "--delay", "0.01", "--data-dir", str(home),
        )  # fmt: skip
        with (tmp_path / "out").open("wb") as out, (tmp_path / "err").open("wb") as err:
            crawl = await anyio.open_process(
                command, env=clean_env(), cwd=ROOT, stdout=out, stderr=err
            )
        async with crawl:
            with anyio.fail_after(60):
                while site.request_count < len(site.reachable) // 3:
                    await anyio.sleep(0.01)
                pid = int((home / PID_FILE).read_text())
                # Deleted under the live server (it writes on to the unlinked file), then the
                # server killed: the restart finds no append-only file.
                shutil.rmtree(home / AOF_DIR)
                os.kill(pid, signal.SIGKILL)
                code = await crawl.wait()
        output, errors = (tmp_path / "out").read_text(), (tmp_path / "err").read_text()
        assert code == 2, (output, errors)
        assert "append-only file is gone" in output, output
        assert "restarted it on its append-only file" not in output
        assert "finished" not in output
        lines = [line for line in errors.splitlines() if line.startswith("crawlog: error: ")]
        assert len(lines) == 1, errors
        assert "crawlog restore --job gone" in lines[0]

        env = clean_env()
        restore = crawlog_command("restore", "--job", "gone", "--data-dir", str(home), "--yes")
        restored = await anyio.to_thread.run_sync(
            lambda: subprocess.run(restore, env=env, cwd=ROOT, capture_output=True, text=True)
        )
        assert restored.returncode == 0, restored.stderr
        again = await anyio.to_thread.run_sync(
            lambda: subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
        )
        assert again.returncode == 0, (again.stdout, again.stderr)
        assert "finished gone" in again.stdout
        counts = site.fetch_counts()
    reachable = {u.removeprefix(site.url) for u in site.reachable}
    assert reachable <= set(counts)


async def test_a_server_restarted_on_a_cut_aof_marks_the_job_lost_and_restore_mends_it(
    home: Path, tmp_path: Path
) -> None:
    ensure_server(home)
    async with serve_testsite(pages=200, seed=15) as site:
        command = crawlog_command(
            "crawl", site.url + "/", "--job", "cut", "--workers", "2", "--concurrency", "4",
            "--delay", "0.01", "--data-dir", str(home),
        )  # fmt: skip
        with (tmp_path / "out").open("wb") as out, (tmp_path / "err").open("wb") as err:
            crawl = await anyio.open_process(
                command, env=clean_env(), cwd=ROOT, stdout=out, stderr=err
            )
        async with crawl:
            with anyio.fail_after(60):
                while site.request_count < len(site.reachable) // 2:
                    await anyio.sleep(0.01)
                pid = int((home / PID_FILE).read_text())
                increment = last_increment(home / AOF_DIR)
                # The server killed and its last writes cut, as a power loss under
                # `appendfsync everysec` may, with the crawl's supervisor stopped meanwhile:
                # on a loaded machine it once looked between the two and restarted the
                # server on the whole file, which was then cut under the live server.
                with crawl_stopped(crawl.pid):
                    os.kill(pid, signal.SIGKILL)
                    os.truncate(increment, increment.stat().st_size // 2)
                code = await crawl.wait()
        output, errors = (tmp_path / "out").read_text(), (tmp_path / "err").read_text()
        assert "bytes shorter than it was" in output, (output, errors)
        assert code == 2, (output, errors)
        assert "finished" not in output
        lines = [line for line in errors.splitlines() if line.startswith("crawlog: error: ")]
        assert len(lines) == 1, errors
        assert "crawlog restore --job cut" in lines[0]

        env = clean_env()
        restore = crawlog_command("restore", "--job", "cut", "--data-dir", str(home), "--yes")
        restored = await anyio.to_thread.run_sync(
            lambda: subprocess.run(restore, env=env, cwd=ROOT, capture_output=True, text=True)
        )
        assert restored.returncode == 0, restored.stderr
        again = await anyio.to_thread.run_sync(
            lambda: subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
        )
        assert again.returncode == 0, (again.stdout, again.stderr)
        assert "0 anomalies" in again.stdout, again.stdout
        counts = site.fetch_counts()
    reachable = {u.removeprefix(site.url) for u in site.reachable}
    assert reachable <= set(counts)
