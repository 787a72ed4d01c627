"""``crawlog crawl --allow REGEX --deny REGEX`` (repeatable, or ``links.allow``/``links.deny``
in crawlog.toml): the default spider follows only the links the rules pass, each page is
requested once, what they leave out is counted as "denied by rule" in the report, and a
pattern that is no regular expression is one line and exit 2."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import anyio
import pytest

from crawler import extract_links
from crawler._rules import LinkRules
from crawler.cli._argv import crawlog_command
from crawler.testsite import RunningSite, serve_testsite
from tests.crawler.cli_run import clean_env, crawlog
from tests.crawler.conftest import ROOT
from tests.crawler.operator_cli import crawlog as crawlog_async

pytestmark = pytest.mark.anyio
ALLOW = ("/item/", "/list/")
DENY = (r"/item/\d*[05]$", "page=[3-9]")


def _followed(site: RunningSite, rules: LinkRules) -> set[str]:
    """The paths a crawl from the home page reaches through links the rules pass."""
    seen, todo = {"/"}, ["/"]
    while todo:
        path = todo.pop()
        page = site.sitemap.render(path)
        if page is None or not page.content_type.startswith("text/html"):
            continue
        for url in extract_links(page.body, site.url + path):
            found = url.removeprefix(site.url)
            if url.startswith(site.url + "/") and rules.allows(url) and found not in seen:
                seen.add(found)
                todo.append(found)
    return seen


async def test_the_default_spider_follows_only_what_the_rules_pass(
    valkey_url: str, data_dir: Path, job: str
) -> None:
    env = {**os.environ, "REDIS_URL": valkey_url}
    async with serve_testsite(pages=150, seed=6) as site:
        rules = [*(f"--allow={p}" for p in ALLOW), *(f"--deny={p}" for p in DENY)]
        command = crawlog_command(
            "crawl", site.url + "/", "--job", job, *rules,
            "--workers", "1", "--concurrency", "4", "--data-dir", str(data_dir),
        )  # fmt: skip
        with anyio.fail_after(90):
            result = await anyio.run_process(command, env=env, cwd=ROOT, check=False)
            report = await crawlog_async(valkey_url, data_dir, "report", "--job", job)
        counts = site.fetch_counts()
        expected = _followed(site, LinkRules(ALLOW, DENY))
    assert result.returncode == 0, result.stderr.decode()
    assert counts == {"/robots.txt": 1, **dict.fromkeys(expected, 1)}
    assert not [p for p in counts if any(re.search(d, p) for d in DENY)]
    assert any(p.startswith("/item/") for p in counts)
    assert report.returncode == 0, report.stderr
    assert re.search(r"denied by rule \d+", report.stdout), report.stdout


def test_the_rules_come_from_crawlog_toml_and_config_says_so(tmp_path: Path) -> None:
    (tmp_path / "crawlog.toml").write_text('[links]\nallow = ["/item/", "/list/"]\n')
    result = crawlog("config", "--json", "--deny", "x$", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    found = {row["key"]: row for row in json.loads(result.stdout)["settings"]}
    assert found["links.allow"]["value"] == ["/item/", "/list/"]
    assert found["links.allow"]["source"] == "crawlog.toml"
    assert found["links.deny"]["value"] == ["x$"]
    assert found["links.deny"]["source"] == "flag --deny"


@pytest.mark.parametrize(
    ("args", "toml"),
    [
        (
            (
                "--deny",
                "item[",
            ),
            "",
        ),
        ((), '[links]\nallow = ["("]\n'),
        ((), "[links]\ndeny = 3\n"),
    ],
)
def test_a_bad_pattern_is_one_line_and_exit_2(
    tmp_path: Path, args: tuple[str, ...], toml: str
) -> None:
    (tmp_path / "crawlog.toml").write_text(toml)
    env = clean_env(REDIS_URL="redis://127.0.0.1:9")  # never reached: refused before
    result = crawlog("crawl", "http://127.0.0.1:9/", *args, cwd=tmp_path, env=env)
    assert result.returncode == 2, result.stdout + result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "Traceback" not in result.stderr
