"""A spider file run by ``crawlog crawl --spider FILE.py:CLASS`` POSTs a form (URL-encoded,
its Content-Type set), POSTs a JSON body with its own headers, and GETs with a header of
its own; the test site's echo page says what it was sent, and ``crawlog export`` has the
items the callbacks made of it. Two forms to one URL with different fields are two
requests; the same form twice is one."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import serve_testsite
from tests.crawler.cli_run import CLI_TIMEOUT_S, clean_env, crawlog

pytestmark = pytest.mark.anyio
SPIDER = textwrap.dedent(
    """
    from collections.abc import AsyncIterator

    from crawler import Follow, Item, Output, Response, Spider


    class Forms(Spider):
        name = "forms"

        async def parse(self, response: Response) -> AsyncIterator[Output]:
            yield Follow("/echo/form", callback="echoed", data={"kind": "form"},
                         form={"user": "ann", "tag": ["a", "b"]})
            yield Follow("/echo/form", callback="echoed", data={"kind": "other form"},
                         form={"user": "bob"})
            yield Follow("/echo/form", callback="echoed", data={"kind": "same form"},
                         form={"user": "ann", "tag": ["a", "b"]})
            yield Follow("/echo/json", callback="echoed", data={"kind": "json"},
                         method="POST", body='{"q": "crawl"}',
                         headers={"Content-Type": "application/json", "X-Api-Key": "k1"})
            yield Follow("/echo/get", callback="echoed", data={"kind": "get"},
                         headers={"Accept-Language": "fr"})

        async def echoed(self, response: Response) -> AsyncIterator[Output]:
            echo = response.json()
            yield Item(response.data["kind"], {
                "method": echo["method"], "path": echo["path"], "body": echo["body"],
                "form": echo["form"], "headers": echo["headers"],
            })
    """
)


async def test_forms_bodies_and_headers_reach_the_site_and_the_export(
    tmp_path: Path, valkey_url: str, job: str
) -> None:
    (tmp_path / "forms.py").write_text(SPIDER)
    data_dir = str(tmp_path / "data")
    env = clean_env(REDIS_URL=valkey_url)
    async with serve_testsite(pages=20, seed=4) as site:
        command = crawlog_command(
            "crawl", site.url + "/", "--spider", "forms.py:Forms", "--depth", "1",
            "--workers", "1", "--data-dir", data_dir, "--job", job,
        )  # fmt: skip
        with anyio.fail_after(CLI_TIMEOUT_S):
            crawled = await anyio.run_process(command, cwd=tmp_path, env=env, check=False)
        requests = sorted((r.method, r.path) for r in site.requests)
    assert crawled.returncode == 0, crawled.stderr.decode()
    assert requests == [
        ("GET", "/"),
        ("GET", "/echo/get"),
        ("GET", "/robots.txt"),
        ("POST", "/echo/form"),
        ("POST", "/echo/form"),
        ("POST", "/echo/json"),
    ]

    exported = crawlog(
        "export", "--job", job, "--data-dir", data_dir, "--what", "items", "--format", "jsonl",
        "--with-meta", "-", env=env,
    )  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    items = {row["key"]: row["data"] for row in map(json.loads, exported.stdout.splitlines())}
    assert set(items) == {"form", "other form", "json", "get"}
    form = items["form"]
    assert (form["method"], form["body"]) == ("POST", "user=ann&tag=a&tag=b")
    assert form["form"] == {"user": "ann", "tag": "b"}  # the echo keeps a repeated field's last
    assert form["headers"]["content-type"] == "application/x-www-form-urlencoded"
    assert items["other form"]["body"] == "user=bob"
    posted = items["json"]
    assert (posted["method"], posted["body"]) == ("POST", '{"q": "crawl"}')
    assert posted["headers"]["content-type"] == "application/json"
    assert posted["headers"]["x-api-key"] == "k1"
    assert "user-agent" in posted["headers"]  # the fetcher's own headers are still sent
    got = items["get"]
    assert (got["method"], got["body"], got["headers"]["accept-language"]) == ("GET", "", "fr")
    assert "content-type" not in got["headers"]
