"""`crawlog server start|stop|status`, run as a user would: a separate process per command."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from crawler.cli._argv import crawlog_command
from eventlog._server import ensure_server
from tests.server_helpers import clean_env, server_dir


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    clean_env(monkeypatch)
    with server_dir(tmp_path / "home") as directory:
        yield directory


@pytest.fixture
def dead_redis_url(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A REDIS_URL whose port is bound but not listening: connecting is refused."""
    clean_env(monkeypatch)
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        url = f"redis://127.0.0.1:{holder.getsockname()[1]}/0"
        monkeypatch.setenv("REDIS_URL", url)
        yield url


def crawlog(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        crawlog_command(*map(str, args)),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def assert_one_line_error(result: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert result.returncode == 2, result
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("crawlog: error: ")
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0]


def test_start_status_stop(data_dir: Path) -> None:
    started = crawlog("server", "start", "--data-dir", data_dir, "--fsync", "always")
    assert started.returncode == 0, started.stderr
    assert "started" in started.stdout

    status = crawlog("server", "status", "--data-dir", data_dir, "--json")
    assert status.returncode == 0, status.stderr
    reported = json.loads(status.stdout)
    assert reported["running"] is True
    assert reported["managed"] is True
    assert reported["appendfsync"] == "always"
    assert reported["aof_enabled"] is True
    assert reported["data_dir"] == str(data_dir)
    with redis.Redis.from_url(reported["url"]) as client:
        assert client.ping()
        assert client.info("server")["process_id"] == reported["pid"]

    text = crawlog("server", "status", "--data-dir", data_dir)
    assert text.returncode == 0
    assert f"pid {reported['pid']}" in text.stdout
    assert "appendfsync always" in text.stdout

    again = crawlog("server", "start", "--data-dir", data_dir)
    assert again.returncode == 0
    assert "already running" in again.stdout

    stopped = crawlog("server", "stop", "--data-dir", data_dir)
    assert stopped.returncode == 0, stopped.stderr
    assert "stopped" in stopped.stdout

    gone = crawlog("server", "status", "--data-dir", data_dir)
    assert gone.returncode == 1
    assert "no valkey-server is running" in gone.stdout
    gone_json = crawlog("server", "status", "--data-dir", data_dir, "--json")
    assert gone_json.returncode == 1
    assert json.loads(gone_json.stdout)["running"] is False

    assert crawlog("server", "stop", "--data-dir", data_dir).returncode == 0


def test_crawlog_home_selects_the_data_dir(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRAWLOG_HOME", str(data_dir))
    assert crawlog("server", "start").returncode == 0
    status = crawlog("server", "status", "--json")
    assert json.loads(status.stdout)["data_dir"] == str(data_dir)


def test_status_of_an_unreachable_redis_url(dead_redis_url: str) -> None:
    result = crawlog("server", "status")
    assert_one_line_error(result, "cannot reach Redis", dead_redis_url)


def test_status_of_a_reachable_redis_url(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    external = ensure_server(data_dir)
    monkeypatch.setenv("REDIS_URL", external.url)
    result = crawlog("server", "status", "--json")
    assert result.returncode == 0, result.stderr
    reported = json.loads(result.stdout)
    assert reported["managed"] is False
    assert reported["pid"] == external.pid
    assert reported["data_dir"] is None


@pytest.mark.parametrize("action", ["start", "stop"])
def test_start_and_stop_refuse_an_external_server(
    action: str, dead_redis_url: str, tmp_path: Path
) -> None:
    result = crawlog("server", action, "--data-dir", tmp_path / "home")
    assert_one_line_error(result, "REDIS_URL", f"does not {action}")
    assert not (tmp_path / "home").exists()


def test_redis_url_password_is_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    clean_env(monkeypatch)
    monkeypatch.setenv("REDIS_URL", "redis://user:s3cret@127.0.0.1:1/0")
    result = crawlog("server", "start")
    assert_one_line_error(result, "***")
    assert "s3cret" not in result.stderr


def test_data_dir_that_is_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clean_env(monkeypatch)
    afile = tmp_path / "a-file"
    afile.write_text("")
    for command in ("start", "stop", "status"):
        assert_one_line_error(
            crawlog("server", command, "--data-dir", afile), str(afile), "not a directory"
        )


def test_debug_shows_the_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clean_env(monkeypatch)
    afile = tmp_path / "a-file"
    afile.write_text("")
    result = crawlog("--debug", "server", "start", "--data-dir", afile)
    assert result.returncode == 2
    assert "Traceback" in result.stderr
    assert result.stderr.splitlines()[-1].startswith("crawlog: error: ")


def test_long_data_dir(data_dir: Path) -> None:
    long_dir = data_dir / ("d" * 60) / ("e" * 60)
    with server_dir(long_dir):
        assert crawlog("server", "start", "--data-dir", long_dir).returncode == 0
        status = crawlog("server", "status", "--data-dir", long_dir, "--json")
        assert status.returncode == 0
        with redis.Redis.from_url(json.loads(status.stdout)["url"]) as client:
            assert client.ping()


@pytest.mark.parametrize(
    "command", [[], ["server"], ["server", "start"], ["server", "stop"], ["server", "status"]]
)
def test_help_has_an_example(command: list[str]) -> None:
    result = crawlog(*command, "--help")
    assert result.returncode == 0
    assert "Example:  crawlog" in result.stdout


def test_version() -> None:
    result = crawlog("--version")
    assert result.returncode == 0
    assert result.stdout.startswith("crawlog")


def test_console_script_is_installed() -> None:
    script = Path(sys.executable).with_name("crawlog")
    assert os.access(script, os.X_OK)
    result = subprocess.run(
        [script, "server", "--help"], capture_output=True, text=True, timeout=30, check=False
    )
    assert result.returncode == 0
    assert result.stdout.startswith("Usage: crawlog server")
