"""A recrawl run while the site is down (nothing listens on its port: every revisit gets no
answer) does not drop its pages from the runs after it: the next run, with the site back,
asks for every page again with the validators the first run left (all answered 304) and
finds each unchanged. Before, a page whose latest run got no answer was never revisited
again: the next run revisited nothing and said it finished."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crawler.testsite import serve_testsite
from tests.crawler.cli_run import crawlog_done
from tests.server_helpers import stop_or_kill

pytestmark = pytest.mark.anyio
PAGES = 6
SEED = 3
OPTIONS = ("--retries", "0", "--ignore-robots", "--circuit-cooldown", "0")
"""Each failure final at once, and the circuit the failures open probed at once."""


async def test_the_run_after_an_outage_revisits_every_page_conditionally(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    where = ("--job", "outage", "--data-dir", str(data_dir))
    try:
        async with serve_testsite(pages=PAGES, seed=SEED) as site:
            port = int(site.url.rsplit(":", 1)[1])
            await crawlog_done("crawl", site.url + "/", *where, *OPTIONS)
            first = {r.path for r in site.requests if r.status == 200}
        down = await crawlog_done("recrawl", *where)  # nothing listens on the port
        async with serve_testsite(pages=PAGES, seed=SEED, port=port) as back:
            said = await crawlog_done("recrawl", *where)
            answered = [(r.path, r.status) for r in back.requests]
        listed = await crawlog_done("changes", *where, "--all", "--format", "jsonl")
    finally:
        stop_or_kill(data_dir)

    assert "finished run 2" in down, down
    assert "finished run 3" in said, said
    assert first and sorted(path for path, _ in answered) == sorted(first), answered
    assert {status for _, status in answered} == {304}, answered
    rows = [json.loads(line) for line in listed.splitlines()]
    assert {row["run"] for row in rows} == {3}
    assert [row["change"] for row in rows] == ["unchanged"] * len(first), listed
