"""`crawl --fail-on`: a finished crawl where no task ended done (or one was aborted, or more
than 10 % of its tasks failed through spider errors) exits 1 with a one-line reason by
default; `aborted` lets spider errors by, `failed` is strict (any failed task), `never`
exits 0."""

from __future__ import annotations

import subprocess
from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.cli._processes import CrawlSummary, failure
from crawler.testsite import serve_testsite
from tests.crawler.cli_run import clean_env
from tests.crawler.conftest import ROOT

pytestmark = pytest.mark.anyio
FLAKY = "tests.crawler.spiders:FlakySpider"  # raises on /item/ pages


async def crawl(valkey_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``crawlog crawl ARGS``, awaited: the test site runs in this event loop."""
    done = await anyio.run_process(
        crawlog_command("crawl", *args),
        cwd=ROOT, env=clean_env(REDIS_URL=valkey_url), check=False,
    )  # fmt: skip
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode(), done.stderr.decode()
    )


def reason_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("crawlog: crawl failed: ")]


@pytest.mark.parametrize(
    ("fail_on", "code"), [(None, 1), ("none-done", 1), ("failed", 1), ("never", 0)]
)
async def test_a_crawl_whose_only_task_failed(
    valkey_url: str, tmp_path: Path, job: str, fail_on: str | None, code: int
) -> None:
    async with serve_testsite(pages=20, seed=1) as site:
        flag = ["--fail-on", fail_on] if fail_on else []
        result = await crawl(
            valkey_url,
            site.url + "/item/1",
            "--job",
            job,
            "--spider",
            FLAKY,
            "--depth",
            "0",
            "--workers",
            "1",
            "--data-dir",
            str(tmp_path / "data"),
            *flag,
        )
    assert result.returncode == code, result
    assert f"finished {job}" in result.stdout and "1 failed" in result.stdout
    if code:
        [line] = reason_lines(result.stderr)
        assert "no task ended done (1 failed)" in line
    else:
        assert reason_lines(result.stderr) == []


@pytest.mark.parametrize(("fail_on", "code"), [(None, 1), ("aborted", 0), ("failed", 1)])
async def test_a_crawl_with_some_failed_tasks(
    valkey_url: str, tmp_path: Path, job: str, fail_on: str | None, code: int
) -> None:
    async with serve_testsite(pages=20, seed=1) as site:
        flag = ["--fail-on", fail_on] if fail_on else []
        result = await crawl(
            valkey_url,
            site.url + "/",
            site.url + "/item/1",
            "--job",
            job,
            "--spider",
            FLAKY,
            "--depth",
            "0",
            "--workers",
            "1",
            "--data-dir",
            str(tmp_path / "data"),
            *flag,
        )
    assert result.returncode == code, result
    assert f"finished {job}" in result.stdout and "1 done, 1 failed" in result.stdout
    if fail_on == "failed":
        [line] = reason_lines(result.stderr)
        assert "task(s) failed" in line and "(--fail-on failed)" in line
    elif code:
        [line] = reason_lines(result.stderr)
        assert "1 of 2 task(s) (50%) failed through spider errors, more than 10%" in line
        assert line.endswith("(--fail-on spider-errors)"), line


def test_an_aborted_task_fails_the_crawl_unless_told_otherwise() -> None:
    summary = CrawlSummary(
        job="j",
        complete=True,
        tasks={"done": 9, "aborted": 1},
        pages=10,
        refetches=3,
        items=9,
        duplicate_items=0,
        anomalies=0,
        seconds=1.0,
    )
    assert failure(summary, "aborted") == (
        "1 task(s) aborted: recovered too often (each killed its workers)"
    )
    assert failure(summary, "failed") is not None
    assert failure(summary, "none-done") is None
    assert failure(summary, "never") is None
