"""crawlog's private valkey-server: one per data dir, shared, durable, outliving its starter."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from eventlog._exceptions import ConfigError, ServerStartError
from eventlog._server import (
    DEFAULT_DATA_DIR,
    MAX_SOCKET_PATH,
    PID_FILE,
    STATE_FILE,
    _wait_gone,
    ensure_server,
    resolve_data_dir,
    resolve_url,
    server_status,
    stop_server,
    valkey_binary,
)
from tests.server_helpers import clean_env, python, server_dir

# Started from a subprocess: waits for a line on stdin so that all racers start together.
RACER = """
import sys
from eventlog._server import ensure_server
print("ready", flush=True)
sys.stdin.readline()
info = ensure_server(sys.argv[1])
print(info.pid, info.started, flush=True)
"""

# Starts the server, reports its pid, then blocks until it is killed.
STARTER = """
import sys
from eventlog._server import ensure_server
print(ensure_server(sys.argv[1]).pid, flush=True)
sys.stdin.read()
"""


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    clean_env(monkeypatch)
    with server_dir(tmp_path / "home") as directory:
        yield directory


def client_for(socket_path: str) -> redis.Redis:
    return redis.Redis(unix_socket_path=socket_path, socket_timeout=5)


def test_start_status_stop(data_dir: Path) -> None:
    info = ensure_server(data_dir)
    assert info.started
    assert info.url == f"unix://{info.socket_path}"
    assert Path(info.socket_path) == data_dir / "valkey.sock"
    assert stat.S_ISSOCK(os.stat(info.socket_path).st_mode)
    assert (data_dir / STATE_FILE).is_file()

    status = server_status(data_dir)
    assert status is not None
    assert status.pid == info.pid
    assert status.data_dir == data_dir
    assert status.socket_path == info.socket_path
    assert status.aof_enabled
    assert status.appendfsync == "everysec"
    assert status.version.split(".")[0].isdigit()

    again = ensure_server(data_dir)
    assert (again.pid, again.started) == (info.pid, False)

    assert stop_server(data_dir) is True
    assert _wait_gone(info.pid, 0)  # stop returned after the process exited
    assert server_status(data_dir) is None
    assert not (data_dir / STATE_FILE).exists()
    assert stop_server(data_dir) is False


def test_server_listens_only_on_a_private_unix_socket(data_dir: Path) -> None:
    info = ensure_server(data_dir)
    with client_for(info.socket_path) as client:
        config = client.config_get("port")
        assert config == {"port": "0"}
        assert client.config_get("unixsocketperm") == {"unixsocketperm": "700"}
        assert client.config_get("save") == {"save": ""}
    assert stat.S_IMODE(os.stat(info.socket_path).st_mode) == 0o700


def test_racing_processes_start_one_server(data_dir: Path) -> None:
    racers = [
        subprocess.Popen(
            python(RACER, str(data_dir)),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    try:
        for racer in racers:
            assert racer.stdout is not None
            assert racer.stdout.readline().strip() == "ready"
        for racer in racers:
            assert racer.stdin is not None
            racer.stdin.write("go\n")
            racer.stdin.close()
        results = []
        for racer in racers:
            assert racer.stdout is not None
            out = racer.stdout.read()
            assert racer.wait(timeout=20) == 0
            pid, started = out.split()
            results.append((int(pid), started == "True"))
    finally:
        for racer in racers:
            if racer.poll() is None:
                racer.kill()
            racer.wait()
            if racer.stdout is not None:
                racer.stdout.close()
    assert len({pid for pid, _ in results}) == 1
    assert sum(started for _, started in results) == 1
    status = server_status(data_dir)
    assert status is not None
    assert status.pid == results[0][0]


def test_server_survives_its_starter_being_killed(data_dir: Path) -> None:
    with subprocess.Popen(
        python(STARTER, str(data_dir)),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    ) as starter:
        assert starter.stdout is not None
        pid = int(starter.stdout.readline())
        # The starter's whole process group, as a terminal's Ctrl-\ or a supervisor would.
        os.killpg(starter.pid, signal.SIGKILL)
        assert starter.wait(timeout=10) == -signal.SIGKILL
    assert pid != starter.pid
    info = ensure_server(data_dir)
    assert (info.pid, info.started) == (pid, False)
    with client_for(info.socket_path) as client:
        assert client.ping()


def test_data_written_before_stop_is_there_after_the_next_start(data_dir: Path) -> None:
    first = ensure_server(data_dir)
    with client_for(first.socket_path) as client:
        client.set("greeting", "hello")
        client.xadd("events", {"n": "1"})
        client.xadd("events", {"n": "2"})
    assert stop_server(data_dir)

    second = ensure_server(data_dir)
    assert second.started
    assert second.pid != first.pid
    with client_for(second.socket_path) as client:
        assert client.get("greeting") == b"hello"
        assert client.xlen("events") == 2


def test_a_killed_server_is_replaced_and_keeps_its_data(data_dir: Path) -> None:
    first = ensure_server(data_dir, fsync="always")
    with client_for(first.socket_path) as client:
        client.set("k", "v")
    os.kill(first.pid, signal.SIGKILL)
    assert _wait_gone(first.pid, 10)
    # What a crash leaves behind: a pidfile and a socket nobody answers on.
    assert (data_dir / PID_FILE).exists()
    assert os.path.exists(first.socket_path)
    assert server_status(data_dir) is None

    second = ensure_server(data_dir)
    assert second.started
    assert second.pid != first.pid
    with client_for(second.socket_path) as client:
        assert client.get("k") == b"v"


def test_fsync_always_takes_effect(data_dir: Path) -> None:
    info = ensure_server(data_dir, fsync="always")
    with client_for(info.socket_path) as client:
        assert client.config_get("appendfsync") == {"appendfsync": "always"}
    status = server_status(data_dir)
    assert status is not None
    assert status.appendfsync == "always"


def test_fsync_of_a_running_server_is_kept(data_dir: Path) -> None:
    ensure_server(data_dir, fsync="always")
    assert not ensure_server(data_dir, fsync="everysec").started
    status = server_status(data_dir)
    assert status is not None
    assert status.appendfsync == "always"


def test_long_data_dir_gets_a_short_socket(data_dir: Path) -> None:
    long_dir = data_dir / ("d" * 60) / ("e" * 60)
    assert len(str(long_dir / "valkey.sock")) > 110
    with server_dir(long_dir):
        info = ensure_server(long_dir)
        assert len(os.fsencode(info.socket_path)) <= MAX_SOCKET_PATH
        assert not info.socket_path.startswith(str(long_dir))
        assert stat.S_IMODE(os.stat(Path(info.socket_path).parent).st_mode) == 0o700
        with redis.Redis.from_url(info.url) as client:
            assert client.ping()
        assert ensure_server(long_dir).pid == info.pid
        assert stop_server(long_dir)
        assert not os.path.exists(info.socket_path)


def test_data_dir_with_spaces_and_quotes(data_dir: Path) -> None:
    odd = data_dir / 'my "crawls" \\ here'
    with server_dir(odd):
        info = ensure_server(odd)
        with redis.Redis.from_url(info.url) as client:
            assert client.config_get("dir") == {"dir": str(odd)}


def test_data_dir_that_is_a_file(tmp_path: Path) -> None:
    afile = tmp_path / "not-a-dir"
    afile.write_text("")
    with pytest.raises(ConfigError, match="not a directory"):
        ensure_server(afile)
    with pytest.raises(ConfigError, match="not a directory"):
        server_status(afile)
    with pytest.raises(ConfigError, match="cannot create"):
        ensure_server(afile / "below")


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere")
def test_data_dir_that_is_not_writable(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    with pytest.raises(ConfigError, match="not writable"):
        ensure_server(locked)


def test_a_server_that_cannot_start_reports_its_log(data_dir: Path) -> None:
    # A corrupt AOF manifest makes valkey exit after it has daemonized.
    (data_dir / "appendonlydir").mkdir(parents=True)
    (data_dir / "appendonlydir" / "appendonly.aof.manifest").write_text("garbage\n")
    with pytest.raises(ServerStartError, match="manifest") as raised:
        ensure_server(data_dir)
    assert "valkey.log" in str(raised.value)
    assert "\n" not in str(raised.value)
    assert not (data_dir / PID_FILE).exists()


def test_asking_about_a_missing_data_dir_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    assert server_status(missing) is None
    assert stop_server(missing) is False
    assert not missing.exists()


def test_resolve_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clean_env(monkeypatch)
    monkeypatch.chdir(tmp_path)
    assert resolve_data_dir(None) == tmp_path / DEFAULT_DATA_DIR
    monkeypatch.setenv("CRAWLOG_HOME", "from-env")
    assert resolve_data_dir(None) == tmp_path / "from-env"
    assert resolve_data_dir("explicit") == tmp_path / "explicit"
    assert resolve_data_dir(tmp_path / "abs") == tmp_path / "abs"


def test_resolve_url_prefers_redis_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REDIS_URL", "redis://example.invalid:6379/3")
    assert resolve_url(tmp_path / "unused") == "redis://example.invalid:6379/3"
    assert not (tmp_path / "unused").exists()


def test_resolve_url_starts_the_private_server(data_dir: Path) -> None:
    url = resolve_url(data_dir)
    assert url == ensure_server(data_dir).url
    with redis.Redis.from_url(url) as client:
        assert client.ping()


def test_valkey_binary_is_executable() -> None:
    path = valkey_binary()
    assert os.path.isfile(path)
    assert os.access(path, os.X_OK)
