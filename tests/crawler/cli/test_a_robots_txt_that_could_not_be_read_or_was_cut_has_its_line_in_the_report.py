"""A site whose robots.txt could not be read (a 503, a body that broke off) or was longer
than RFC 9309's 500 KiB gets a line in ``crawlog report`` naming the robots.txt and why:
before, one cut at 500 KiB left no trace at all, and one that could not be read only the
failures of its tasks (none, once a retry got through)."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from crawler._robots import MAX_ROBOTS_BYTES
from crawler.cli._argv import crawlog_command
from tests.crawler.cli_run import clean_env
from tests.crawler.hostile_site import Route, serve_hostile

pytestmark = pytest.mark.anyio
RULES = b"User-agent: *\nDisallow: /private\n"
HOME = b'<html><body><a href="/a">a</a></body></html>'
PADDING = b"# " + b"x" * 1000 + b"\n"
TOO_LONG = RULES + PADDING * (MAX_ROBOTS_BYTES // len(PADDING) + 2)
CUT_OFF = RULES + b"Allow: /\n" * 1000


async def test_each_robots_txt_not_taken_whole_is_named_in_the_report_with_why(
    valkey_url: str, job: str, tmp_path: Path
) -> None:
    unreachable = {"/robots.txt": Route(b"down", status=503), "/": Route(HOME)}
    long = {
        "/robots.txt": Route(TOO_LONG, content_type="text/plain"),
        "/": Route(HOME),
        "/a": Route(b"<html>a</html>"),
    }
    broken = {
        "/robots.txt": Route(CUT_OFF, content_type="text/plain", cut_after=len(RULES)),
        "/": Route(HOME),
    }
    plain = {"/robots.txt": Route(RULES, content_type="text/plain"), "/": Route(b"<html></html>")}
    env = clean_env(REDIS_URL=valkey_url)
    data = str(tmp_path / "data")
    async with (
        serve_hostile(unreachable) as a,
        serve_hostile(long) as b,
        serve_hostile(broken) as c,
        serve_hostile(plain) as d,
    ):
        seeds = [site.url + "/" for site in (a, b, c, d)]
        crawl = crawlog_command(
            "crawl", *seeds, "--job", job, "--workers", "1", "--retries", "0",
            "--fail-on", "never", "--data-dir", data,
        )  # fmt: skip
        with anyio.fail_after(90):
            ran = await anyio.run_process(crawl, cwd=tmp_path, env=env, check=False)
            assert ran.returncode == 0, ran.stderr.decode()
            report = await anyio.run_process(
                crawlog_command("report", "--job", job, "--data-dir", data),
                cwd=tmp_path, env=env, check=False,
            )  # fmt: skip
            as_json = await anyio.run_process(
                crawlog_command("report", "--job", job, "--json", "--data-dir", data),
                cwd=tmp_path, env=env, check=False,
            )  # fmt: skip
    text = report.stdout.decode()
    assert report.returncode == 0, report.stderr.decode()
    assert (
        f"robots.txt of {a.url}: could not be read (HTTP 503): nothing of the site fetched "
        "until it can be" in text
    ), text
    assert (
        f"robots.txt of {b.url}: longer than 500 KiB: only its first 500 KiB read, as RFC "
        "9309 allows" in text
    ), text
    assert f"robots.txt of {c.url}: could not be read (" in text, text
    assert f"robots.txt of {d.url}" not in text, text  # read whole: nothing to say
    assert "sitemap" not in text, text
    notes = {note["site"]: note["reason"] for note in json.loads(as_json.stdout)["robots"]}
    assert set(notes) == {a.url, b.url, c.url}
