"""``--retries N`` (fetches after the first), ``--retry-on CODES``, ``--backoff-base`` /
``--backoff-cap`` and ``--timeout`` / ``--read-timeout``, given to ``crawlog crawl``, are
what its workers obey.

Witnesses: the test site's request log (how often the page was asked for) and the job's
events (the backoff each retry waited, why the task failed).
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import Faults, serve_testsite
from eventlog import EventLog, RetryScheduled, TaskDone, TaskFailed
from tests.crawler.cli_run import clean_env

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]
FAILS_TWICE = Faults(error_500_rate=1.0, error_500_times=2)
"""Every page answers 500 to its first two requests, then the page."""
QUICK = ("--backoff-base", "0.01", "--backoff-cap", "0.01")


async def crawl_home(
    seed_site: str, job: str, tmp_path: Path, valkey_url: str, *options: str
) -> None:
    command = crawlog_command(
        "crawl", seed_site + "/", "--job", job, "--workers", "1", "--depth", "0",
        "--fail-on", "never", "--data-dir", str(tmp_path / "data"), *options,
    )  # fmt: skip
    ran = await anyio.run_process(
        command, cwd=tmp_path, env=clean_env(REDIS_URL=valkey_url), check=False
    )
    assert ran.returncode == 0, ran.stderr.decode()


@pytest.mark.parametrize(
    ("options", "fetches", "ending"),
    [
        (("--retries", "1", *QUICK), 2, TaskFailed),  # two 500s: out of attempts
        (("--retries", "2", *QUICK), 3, TaskDone),  # 500, 500, the page
        (("--retry-on", "429,502-504", *QUICK), 1, TaskFailed),  # 500 is not retried
        (("--retry-on", "500", "--retries", "5", *QUICK), 3, TaskDone),
    ],
    ids=["retries 1", "retries 2", "retry-on without 500", "retry-on 500"],
)
async def test_a_page_is_fetched_as_often_as_retries_and_retry_on_allow(
    options: tuple[str, ...],
    fetches: int,
    ending: type,
    valkey_url: str,
    job: str,
    log: EventLog,
    tmp_path: Path,
) -> None:
    async with serve_testsite(pages=5, seed=1, faults=FAILS_TWICE) as site:
        with anyio.fail_after(90):
            await crawl_home(site.url, job, tmp_path, valkey_url, *options)
        counts = site.fetch_counts()

    assert counts["/"] == fetches, counts
    events = [entry.event for entry in await log.read_range()]
    assert [type(e) for e in events if isinstance(e, TaskDone | TaskFailed)] == [ending]


async def test_the_backoff_cap_bounds_every_retry_s_wait(
    valkey_url: str, job: str, log: EventLog, tmp_path: Path
) -> None:
    async with serve_testsite(pages=5, seed=1, faults=FAILS_TWICE) as site:
        with anyio.fail_after(90):
            # A base of 100 s would wait up to 100 s, then 200 s: the cap makes it 0.05 s.
            await crawl_home(
                site.url,
                job,
                tmp_path,
                valkey_url,
                "--backoff-base",
                "100",
                "--backoff-cap",
                "0.05",
            )

    delays = [
        e.event.delay_s for e in await log.read_range() if isinstance(e.event, RetryScheduled)
    ]
    assert len(delays) == 2, delays
    assert all(0 <= delay <= 0.05 for delay in delays), delays


@pytest.mark.parametrize(
    ("option", "reason"), [("--timeout", "timeout"), ("--read-timeout", "read timeout")]
)
async def test_a_page_slower_than_the_timeout_fails_with_the_timeout_s_name(
    option: str, reason: str, valkey_url: str, job: str, log: EventLog, tmp_path: Path
) -> None:
    slow = Faults(slow_rate=1.0, slow_s=20.0)  # longer than the test would wait: no default
    async with serve_testsite(pages=5, seed=1, faults=slow) as site:
        with anyio.fail_after(90):
            await crawl_home(
                site.url, job, tmp_path, valkey_url, option, "0.5", "--retries", "1", *QUICK
            )

    failed = [e.event for e in await log.read_range() if isinstance(e.event, TaskFailed)]
    assert [(e.reason, e.attempt) for e in failed] == [(reason, 2)]
