"""An item larger than the job's item size cap (``--max-item-bytes``, by default
``DEFAULT_MAX_ITEM_BYTES``) is not taken: its task fails with a reason naming the item's
size, the cap and the option, and no ``ItemScraped`` of it reaches the log."""

from __future__ import annotations

import textwrap
from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import serve_testsite
from eventlog import EventLog, ItemScraped, TaskDone, TaskFailed
from tests.crawler.cli_run import clean_env
from tests.crawler.conftest import ROOT

pytestmark = pytest.mark.anyio
SPIDER = textwrap.dedent(
    """
    from crawler import Spider


    class Big(Spider):
        name = "big"
        size = "0"

        async def parse(self, response):
            yield {"url": response.url, "blob": "x" * int(self.size)}
    """
)
FIFTY_MB = 50 * 1024 * 1024


async def crawl(valkey_url: str, tmp_path: Path, job: str, size: int, *options: str) -> None:
    (tmp_path / "big.py").write_text(SPIDER)
    async with serve_testsite(pages=10, seed=1) as site:
        with anyio.fail_after(100):
            done = await anyio.run_process(
                crawlog_command(
                    "crawl", site.url + "/", "--job", job, "--spider", f"{tmp_path}/big.py:Big",
                    "-a", f"size={size}", "--depth", "0", "--workers", "1", "--fail-on", "never",
                    "--data-dir", str(tmp_path / "data"), *options,
                ),
                cwd=ROOT, env=clean_env(REDIS_URL=valkey_url), check=False,
            )  # fmt: skip
    assert done.returncode == 0, done.stdout.decode() + done.stderr.decode()


async def ended(log: EventLog) -> list[object]:
    return [
        e.event
        for e in await log.read_range()
        if isinstance(e.event, TaskFailed | TaskDone | ItemScraped)
    ]


@pytest.mark.timeout(120)
async def test_a_50_mb_item_fails_its_task_by_default(
    valkey_url: str, tmp_path: Path, job: str, log: EventLog
) -> None:
    await crawl(valkey_url, tmp_path, job, FIFTY_MB)
    [failed] = await ended(log)
    assert isinstance(failed, TaskFailed)
    assert failed.reason.startswith("spider output: spider big on http://127.0.0.1:"), failed
    assert "is 52,428,8" in failed.reason and "over the item size cap of" in failed.reason
    assert "--max-item-bytes" in failed.reason


@pytest.mark.timeout(120)
async def test_the_cap_is_the_job_s_option(
    valkey_url: str, tmp_path: Path, job: str, log: EventLog
) -> None:
    await crawl(valkey_url, tmp_path, job, 200_000, "--max-item-bytes", "100000")
    [failed] = await ended(log)
    assert isinstance(failed, TaskFailed)
    assert "over the item size cap of 100,000 bytes (--max-item-bytes)" in failed.reason, failed


@pytest.mark.timeout(120)
async def test_an_item_under_the_cap_is_taken(
    valkey_url: str, tmp_path: Path, job: str, log: EventLog
) -> None:
    await crawl(valkey_url, tmp_path, job, 50_000, "--max-item-bytes", "100000")
    events = await ended(log)
    assert [type(e) for e in events] == [ItemScraped, TaskDone]
