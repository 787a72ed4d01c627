"""A recrawl's revisit of a changed page does not repeat a ``response.once`` action an
earlier run did on it: once is once per page for the job, not per run (a changed order
page must not be shipped twice). A page new to the run runs it. Before, each run's visit
was a task of its own, and a changed page's actions ran again in every run that found it
changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.crawler.cli_run import clean_env, crawlog_done
from tests.crawler.hostile_site import html_page, serve_hostile
from tests.crawler.recrawl_spiders import EFFECTS_ENV

pytestmark = pytest.mark.anyio
SPIDER = ("--spider", "tests.crawler.recrawl_spiders:NotifyingSpider")


async def test_a_changed_page_s_action_is_not_run_again_and_a_new_page_s_is(
    valkey_url: str, data_dir: Path, job: str, tmp_path: Path
) -> None:
    effects = tmp_path / "effects.txt"
    env = clean_env(REDIS_URL=valkey_url, CRAWLOG_HOME=str(data_dir), **{EFFECTS_ENV: str(effects)})
    where = ("--job", job, "--workers", "1")
    async with serve_hostile(
        {"/": html_page("home", "/a", "/b"), "/a": html_page("a"), "/b": html_page("b")}
    ) as site:
        await crawlog_done("crawl", site.url + "/", *where, *SPIDER, "--delay", "0", env=env)
        first = effects.read_text().splitlines()
        site.routes["/a"] = html_page("a, edited", "/c")
        site.routes["/c"] = html_page("c")
        await crawlog_done("recrawl", *where, env=env)
        second = effects.read_text().splitlines()[len(first) :]
        changes = await crawlog_done("changes", "--job", job, env=env)

    assert sorted(first) == [site.url + p for p in ("/", "/a", "/b")], first
    assert "changed    " in changes and site.url + "/a" in changes, changes
    assert second == [site.url + "/c"], second
