"""A private PostgreSQL server a test session starts from Debian's ``postgresql`` package.

``initdb`` and ``pg_ctl`` from ``/usr/lib/postgresql/*/bin`` make a cluster in a fresh
directory under /tmp and serve it on a free port of 127.0.0.1, with its socket in that
directory too (not /var/run/postgresql, which only the postgres user may write). PostgreSQL
refuses to run as root: as root, every step runs as ``nobody`` through ``runuser``, and the
directory is given to that user (pytest's own tmp directories are private to root). Why it
cannot be had, if it cannot, is :class:`PostgresMissing`'s message, for the test to skip with.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from tests.valkey_process import free_port

START_TIMEOUT_S = 30
SUPERUSER = "crawlog"
"""The cluster's superuser, who connects without a password (``--auth=trust``)."""
UNPRIVILEGED = "nobody"
"""Who runs the server when the tests run as root."""
FAST = ("-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
"""A throwaway cluster: what is killed in the tests is the feed, never the server."""


class PostgresMissing(Exception):
    """PostgreSQL cannot be started here; the message says why."""


def postgres_bin() -> Path:
    """The newest ``/usr/lib/postgresql/N/bin`` that has ``initdb`` and ``pg_ctl``."""
    found = [
        directory
        for directory in Path("/usr/lib/postgresql").glob("*/bin")
        if (directory / "initdb").exists() and (directory / "pg_ctl").exists()
    ]
    if not found:
        raise PostgresMissing(
            "no /usr/lib/postgresql/*/bin/initdb: install Debian's postgresql package "
            "(apt-get install postgresql; .ci/run does)"
        )
    return max(found, key=lambda d: int(d.parent.name) if d.parent.name.isdigit() else 0)


class PostgresServer:
    """A cluster in ``directory`` on ``port``; `start` it, `stop` it, `new_database`."""

    def __init__(self) -> None:
        self.bin = postgres_bin()
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            runuser = shutil.which("runuser")
            if runuser is None:
                raise PostgresMissing("running as root and no runuser to run PostgreSQL as nobody")
            self.as_user = [runuser, "-u", UNPRIVILEGED, "--"]
        self.directory = Path(tempfile.mkdtemp(prefix="crawlog-pg-"))
        self.port = free_port()

    def _run(self, *command: str | Path) -> None:
        done = subprocess.run(
            [*self.as_user, *map(str, command)],
            capture_output=True, text=True, timeout=START_TIMEOUT_S, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            said = " ".join((done.stderr or done.stdout).split())
            raise PostgresMissing(f"{Path(str(command[0])).name} failed: {said}")

    def start(self) -> None:
        if self.as_user:
            user = pwd.getpwnam(UNPRIVILEGED)
            os.chown(self.directory, user.pw_uid, user.pw_gid)
        data = self.directory / "data"
        self._run(
            self.bin / "initdb", "-D", data, "-U", SUPERUSER, "--auth=trust", "-E", "UTF8",
            "--no-sync", "--no-instructions",
        )  # fmt: skip
        options = (
            f"-c listen_addresses=127.0.0.1 -p {self.port} "
            f"-c unix_socket_directories={self.directory} " + " ".join(FAST)
        )
        self._run(
            self.bin / "pg_ctl", "-D", data, "-l", self.directory / "server.log", "-w",
            "-t", str(START_TIMEOUT_S), "-o", options, "start",
        )  # fmt: skip

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """A fresh, empty database's URL."""
        import psycopg

        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url(), autocommit=True) as con:
            con.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        """Stop the server (at once: nothing in it is kept) and remove its directory."""
        with contextlib.suppress(PostgresMissing, subprocess.TimeoutExpired):
            self._run(self.bin / "pg_ctl", "-D", self.directory / "data", "-m", "immediate",
                      "-w", "stop")  # fmt: skip
        shutil.rmtree(self.directory, ignore_errors=True)


def write_counts(url: str, table: str, *, inserted: int, timeout_s: float = 20) -> tuple[int, int]:
    """(rows inserted, rows updated) into ``table`` as the server's statistics count them,
    aborted transactions included, once they count at least ``inserted`` insertions: a
    backend reports its counts when its transaction ends or when it exits, a moment after
    its client saw the commit."""
    import psycopg

    deadline = time.monotonic() + timeout_s
    with psycopg.connect(url, autocommit=True) as con:
        while True:
            con.execute("SELECT pg_stat_clear_snapshot()")
            row = con.execute(
                "SELECT n_tup_ins, n_tup_upd FROM pg_stat_user_tables WHERE relname = %s",
                (table,),
            ).fetchone()
            counts = (int(row[0]), int(row[1])) if row else (0, 0)
            if counts[0] >= inserted or time.monotonic() > deadline:
                return counts
            time.sleep(0.05)


HOLD: int = 4040
"""The advisory lock `killed_at_its_position` holds and the positions table's trigger waits
for."""
# The feed's rows are in, its position is being moved: the moment a feed that wrote its
# position in a transaction of its own would have the rows committed and not the position.
GATE = f"""
CREATE FUNCTION wait_for_the_test() RETURNS trigger LANGUAGE plpgsql AS
$$ BEGIN PERFORM pg_advisory_xact_lock_shared({HOLD}); RETURN NEW; END $$;
CREATE TRIGGER gate BEFORE UPDATE ON crawlog_feed_positions
FOR EACH ROW WHEN (NEW.table_name = 'held') EXECUTE FUNCTION wait_for_the_test();
"""


async def killed_at_its_position(
    url: str, command: list[str], *, env: dict[str, str], cwd: Path, timeout_s: float = 60
) -> None:
    """Run the feed ``command`` (into the table ``held`` of the database at ``url``, whose
    positions table exists), and SIGKILL it while a trigger holds it inside a batch's
    transaction: its rows written, its position being moved. The gate is left in place,
    open."""
    import signal

    import anyio
    import psycopg

    with psycopg.connect(url, autocommit=True) as gate:
        gate.execute(GATE)
        gate.execute("SELECT pg_advisory_lock(%s)", (HOLD,))
        feed = await anyio.open_process(command, env=env, cwd=cwd)
        try:
            with anyio.fail_after(timeout_s):
                while not gate.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = "
                    "'crawlog export' AND wait_event = 'advisory'"
                ).fetchall()[0][0]:
                    await anyio.sleep(0.05)
            feed.send_signal(signal.SIGKILL)
            assert await feed.wait() == -signal.SIGKILL
        finally:
            if feed.returncode is None:
                feed.kill()
            await feed.aclose()
            gate.execute("SELECT pg_advisory_unlock(%s)", (HOLD,))
