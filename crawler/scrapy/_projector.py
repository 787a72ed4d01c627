"""The job's projector, run by the plug-in as ``crawlog crawl`` runs its own: so that
``crawlog report``, ``export`` and ``sql`` read a Scrapy job after a plain ``scrapy crawl``.

Each Scrapy process of the job starts ``crawlog project --job J`` beside itself when its
scheduler opens. One projector runs per job: the first process's holds the job, a later
one's is refused and exits (the first one's projects for both). When the scheduler closes,
its projector is stopped the graceful way (SIGTERM: it reads to the log's end and commits);
one that was refused is replaced by a ``project --once`` then, unless another process's
projector still holds the job (it commits when its own process closes). A killed process's
projector dies with it (``die_with_parent``): a resumed job's new projector goes on from
the last commit.

``CRAWLOG_PROJECT = False`` (or the environment variable ``CRAWLOG_PROJECT=0``) leaves the
projector to the user (``crawlog project --job J``).
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
from typing import Final

from crawler.scrapy._settings import PluginSettings
from eventlog import DATA_DIR_ENV, REDIS_URL_ENV

STOP_WAIT_S: Final = 20.0
"""Seconds a stopped projector is given to read to the log's end and commit (it reads for
at most 10 of them) before it is killed."""
ONCE_WAIT_S: Final = 120.0
"""Seconds a closing process waits for its ``project --once``."""

log = logging.getLogger("crawlog.scrapy")


class JobProjector:
    """The ``crawlog project`` child of one Scrapy process."""

    def __init__(self, settings: PluginSettings) -> None:
        self._settings = settings
        self._process: subprocess.Popen[bytes] | None = None

    def _command(self, *extra: str) -> list[str]:
        from crawler.cli import crawlog_command  # the command line only when it is run

        job, data_dir = self._settings.job, str(self._settings.data_dir)
        return crawlog_command("project", "--job", job, "--data-dir", data_dir, *extra)

    def _env(self) -> dict[str, str]:
        env = {**os.environ, DATA_DIR_ENV: str(self._settings.data_dir)}
        if self._settings.url is not None:
            env[REDIS_URL_ENV] = self._settings.url
        return env

    def start(self) -> None:
        """Start the job's projector beside this process (refused, and gone, if another
        process's holds the job)."""
        self._process = subprocess.Popen(
            self._command(),
            env=self._env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C to Scrapy stops it through close(), in order
        )

    def stop(self) -> None:
        """Stop it so that it commits the log's end; if it was refused, project once now."""
        process = self._process
        if process is None:
            return
        self._process = None
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            if process.returncode == 0:
                return
            # Not stopped the graceful way: a short crawl can end while its projector is
            # still importing, before it listens for SIGTERM (then it dies uncommitted).
        # Refused (another process's projector holds the job, or the job was not yet in
        # Redis when it started), failed or stopped too early: one pass to the log's end,
        # refused in turn while another process's projector runs (it commits at its close).
        try:
            done = subprocess.run(
                self._command("--once"),
                env=self._env(),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=ONCE_WAIT_S,
                check=False,
            )
        except subprocess.TimeoutExpired:
            log.warning("crawlog: the projector did not finish: run `crawlog project --once`")
            return
        if done.returncode != 0:
            log.info(
                "crawlog: not projected by this process (%s)",
                done.stderr.decode(errors="replace").strip().splitlines()[-1:] or "no output",
            )
