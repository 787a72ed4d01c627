"""In a real browser, a console opened after the crawl ended: the panel shows the finished
job's figures (every task ended, the dead links failed, nothing remaining, an ETA of
zero) and its four charts (pages, failures by reason, the queue, the ETA), each with a
time axis labelled every five minutes and a labelled value axis, every label drawn inside
its chart; the pages chart's bars add up to the pages the site served, and the queue's
line starts from the archive's time, before the console did."""

from __future__ import annotations

import os
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.console._live import QUEUE_SQL
from crawler.testsite import serve_testsite
from projector import Store, query
from tests.crawler.conftest import ROOT
from tests.crawler.console.conftest import RunningConsole

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(180)]
DEAD = 4
CHARTS = ("chart-pages", "chart-failures", "chart-queue", "chart-eta")
# Each axis's labels, and whether each lies inside its svg as the browser laid it out.
AXES_JS = """svg => {
  const box = svg.getBoundingClientRect();
  const inside = t => { const r = t.getBoundingClientRect();
    return r.width > 0 && r.left >= box.left && r.right <= box.right
      && r.top >= box.top && r.bottom <= box.bottom; };
  const of = cls => [...svg.querySelectorAll(`g.${cls} text`)].map(
    t => ({text: t.textContent, cls: t.getAttribute('class'), inside: inside(t)}));
  return {x: of('x-axis'), y: of('y-axis')};
}"""


async def _crawl(job: str, valkey_url: str, data_dir: Path, seeds: list[str]) -> None:
    command = crawlog_command(
        "crawl", *seeds, "--job", job, "--depth", "1", "--data-dir", str(data_dir),
        "--fail-on", "never",
    )  # fmt: skip
    done = await anyio.run_process(
        command, env={**os.environ, "REDIS_URL": valkey_url}, cwd=ROOT, check=False
    )
    assert done.returncode == 0, done.stderr.decode()


async def test_a_finished_job_s_panel_shows_its_figures_and_labelled_charts(
    console: Callable[..., Awaitable[RunningConsole]],
    browser: Any,
    screenshot: Callable[[Any, str], Awaitable[Any]],
    job: str,
    valkey_url: str,
    data_dir: Path,
) -> None:
    async with serve_testsite(pages=20, seed=1) as site:
        seeds = [site.url + "/", *(f"{site.url}/gone/{n}" for n in range(DEAD))]
        with anyio.fail_after(90):
            await _crawl(job, valkey_url, data_dir, seeds)
        fetched = len(site.requests) - 1  # robots.txt is no page of the job
    with anyio.fail_after(60):
        running = await console()
        page = await browser.new_page()
        await page.goto(running.url)
        await page.goto(f"{running.base}/jobs/{job}")
        # Drawn from the last commit first, maybe, then live: either way, the same figures.
        while await page.locator("#committed-only").count():
            await page.reload()
        assert await page.inner_text("#f-failed") == str(DEAD)
        assert await page.inner_text("#f-remaining") == "0"
        assert int((await page.inner_text("#f-done")).replace(",", "")) > 0
        assert await page.inner_text("#f-eta") == "0s"
        # Response times of every fetch the job's figures count, not only the console's own.
        for figure in ("#f-avg-ms", "#f-p95-ms"):
            assert re.fullmatch(r"[\d,]+ ms", await page.inner_text(figure)), figure
        for chart in CHARTS:
            svg = page.locator(f"#{chart} svg")
            axes = await svg.evaluate(AXES_JS)
            x_ticks = [t for t in axes["x"] if t["cls"] == "tick"]
            y_ticks = [t for t in axes["y"] if t["cls"] == "tick"]
            assert len(x_ticks) >= 6 and all(re.fullmatch(r"\d\d:\d\d", t["text"]) for t in x_ticks)
            assert len(y_ticks) >= 2, (chart, axes)
            assert [t["text"] for t in axes["x"] if t["cls"] == "axis-title"] == ["time (UTC)"]
            assert [t for t in axes["y"] if t["cls"] == "axis-title"], (chart, axes)
            assert all(t["inside"] for t in axes["x"] + axes["y"]), (chart, axes)
        bars = await page.locator("#chart-pages rect title").all_text_contents()
        assert sum(int(b.split()[0]) for b in bars) == fetched
        failures = await page.locator("#chart-failures rect title").all_text_contents()
        assert sum(int(b.split()[0]) for b in failures) == DEAD
        # The queue before the console started, from the archive (read in the background):
        # a line from the crawl's minutes to now, not only the one sample since.
        while not await page.locator("#chart-queue polyline").count():
            await page.reload()
        history = [queue for _, queue in query(Store(data_dir, job), QUEUE_SQL).rows]
        assert history[-1] == 0 and all(0 <= q <= len(seeds) + fetched for q in history)
        await screenshot(page, "finished-job-panel")
