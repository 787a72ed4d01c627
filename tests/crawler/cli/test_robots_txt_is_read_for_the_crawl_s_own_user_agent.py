"""With ``--user-agent shopbot/1.0`` a site's robots.txt group for ``shopbot`` is the one
obeyed, not the group of crawlog's own name: the crawl is polite as what it says it is."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from tests.crawler.cli_run import clean_env
from tests.crawler.hostile_site import Route, serve_hostile

pytestmark = pytest.mark.anyio
ROBOTS = (
    b"User-agent: shopbot\nDisallow: /for-crawlog/\n\n"
    b"User-agent: crawlog\nDisallow: /for-shopbot/\n"
)
HOME = b'<html><body><a href="/for-crawlog/a">a</a> <a href="/for-shopbot/b">b</a></body></html>'


async def test_the_group_of_the_user_agent_given_is_obeyed(
    valkey_url: str, job: str, tmp_path: Path
) -> None:
    routes = {
        "/robots.txt": Route(ROBOTS, content_type="text/plain"),
        "/": Route(HOME),
        "/for-crawlog/a": Route(b"<html>a</html>"),
        "/for-shopbot/b": Route(b"<html>b</html>"),
    }
    async with serve_hostile(routes) as site:
        command = crawlog_command(
            "crawl", site.url + "/", "--job", job, "--workers", "1", "--scope", "host",
            "--user-agent", "shopbot/1.0 (+http://example.test/bot)",
            "--data-dir", str(tmp_path / "data"),
        )  # fmt: skip
        with anyio.fail_after(90):
            ran = await anyio.run_process(
                command, cwd=tmp_path, env=clean_env(REDIS_URL=valkey_url), check=False
            )
        assert ran.returncode == 0, ran.stderr.decode()
        requested = set(site.requests)

    assert "/for-shopbot/b" in requested
    assert "/for-crawlog/a" not in requested
