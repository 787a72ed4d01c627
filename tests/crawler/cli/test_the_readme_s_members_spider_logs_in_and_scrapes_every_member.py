"""The README's Scrapy-style spider, run as written (its code block, only the seed given on
the command line): it logs in through the test site's form, its session reaches every
members-only page, its callbacks get their data, its pipeline cleans each item, and
``crawlog export`` has one item per member."""

from __future__ import annotations

import json
import re
from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import LOGIN_PATH, MEMBER_PAGES, MEMBERS_PREFIX, serve_testsite
from tests.crawler.cli_run import CLI_TIMEOUT_S, clean_env, crawlog
from tests.crawler.conftest import ROOT

pytestmark = pytest.mark.anyio


def readme_spider() -> str:
    """The README's ``# members.py`` block."""
    text = (ROOT / "README.md").read_text()
    block = re.search(r"```python\n(# members\.py\n.*?)```", text, re.DOTALL)
    assert block is not None, "the README has no members.py block"
    return block.group(1)


async def test_the_readme_members_spider_logs_in_once_and_exports_every_member(
    tmp_path: Path, valkey_url: str, job: str
) -> None:
    (tmp_path / "members.py").write_text(readme_spider())
    data_dir = str(tmp_path / "data")
    env = clean_env(REDIS_URL=valkey_url)
    async with serve_testsite(pages=20, seed=2) as site:
        command = crawlog_command(
            "crawl", site.url + LOGIN_PATH, "--job", job, "--spider", "members.py:Members",
            "--workers", "2", "--delay", "0", "--data-dir", data_dir,
        )  # fmt: skip
        with anyio.fail_after(CLI_TIMEOUT_S):
            crawled = await anyio.run_process(command, cwd=tmp_path, env=env, check=False)
        requests = [(r.method, r.path, r.status) for r in site.requests]
    assert crawled.returncode == 0, crawled.stderr.decode()
    assert requests.count(("POST", LOGIN_PATH, 303)) == 1, requests
    members = [
        (path, status) for method, path, status in requests if path.startswith(MEMBERS_PREFIX)
    ]
    assert members and all(status == 200 for _, status in members), members

    exported = crawlog(
        "export", "--job", job, "--data-dir", data_dir, "--what", "items", "--format", "jsonl",
        "-", env=env,
    )  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    items = [json.loads(line) for line in exported.stdout.splitlines()]
    assert len(items) == MEMBER_PAGES
    for data in items:  # each as the spider wrote it
        n = int(data["url"].rsplit("/", 1)[1])
        assert data["name"] == f"Member {n}"
        assert data["secret"] == f"secret of member {n}"
        assert data["via"] == "index"
