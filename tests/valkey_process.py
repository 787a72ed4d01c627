"""A private valkey-server a test starts, stops and restarts itself (ACLs, outages, TLS)."""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from eventlog._server import valkey_binary

START_TIMEOUT_S = 10.0


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ValkeyProcess:
    """valkey-server on ``port`` with its files in ``directory``; ``start`` again to restart
    it on the same data."""

    def __init__(self, directory: Path, *extra: str, password: str | None = None) -> None:
        self.directory = directory
        self.port = free_port()
        self.extra = extra
        self.password = password
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The URL of the default user (with its password, if it has one)."""
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start the server and return once it answers."""
        self.directory.mkdir(parents=True, exist_ok=True)
        command = [
            valkey_binary(),
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(self.directory),
            "--logfile",
            str(self.directory / "valkey.log"),
            *self.extra,
        ]
        if self.password:
            command += ["--requirepass", self.password]
        self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + START_TIMEOUT_S
        with redis.Redis.from_url(self.url, retry=Retry(NoBackoff(), 0)) as probe:
            while True:
                try:
                    probe.ping()
                    return
                except redis.exceptions.BusyLoadingError:
                    pass  # replaying its append-only file: answering soon
                except redis.ConnectionError:
                    if self.process.poll() is not None or time.monotonic() > deadline:
                        self.kill()
                        log = (self.directory / "valkey.log").read_text(errors="replace")
                        raise RuntimeError(f"valkey-server did not start:\n{log[-2000:]}") from None
                time.sleep(0.02)

    def flushall(self) -> None:
        """Lose every key, as a real ``FLUSHALL`` does: the store a restore rebuilds."""
        client = redis.Redis.from_url(self.url)
        try:
            client.flushall()
        finally:
            client.close()

    def kill(self) -> None:
        """SIGKILL the server (no shutdown save) and reap it."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        """Stop the server politely, or kill it if it does not go."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()


@contextlib.contextmanager
def running_valkey(
    directory: Path, *extra: str, password: str | None = None
) -> Iterator[ValkeyProcess]:
    """A started :class:`ValkeyProcess`, stopped when the block ends."""
    server = ValkeyProcess(directory, *extra, password=password)
    server.start()
    try:
        yield server
    finally:
        server.stop()
