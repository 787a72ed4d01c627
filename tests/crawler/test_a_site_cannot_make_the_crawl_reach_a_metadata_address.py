"""SSRF: a site cannot make a crawl connect to 169.254.169.254 (a cloud's metadata service)
through its robots.txt's redirects, the sitemaps its robots.txt and sitemap index name (on
the address, under a name in the crawl's domain, through a redirect), the pages its
sitemap lists, its links or its page redirects — with the default options and
``--sitemaps-from-robots``. Inside a network namespace of the test's own, a witness server
on that address counts every connection: none. The same crawl with ``--allow-private``
reaches it (the witness is reachable: the test can fail)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from crawler.cli._argv import crawlog_command
from tests.crawler.cli_run import clean_env
from tests.crawler.conftest import ROOT
from tests.crawler.ssrf_sites import BLOG, WITNESS_ADDRESS, WWW

CRAWL_TIMEOUT_S = 120


def _crawl_inside(namespace: str, data_dir: Path, *extra: str) -> tuple[str, dict[str, Any]]:
    """The crawl of the two sites inside ``namespace`` (its own server in ``data_dir``):
    its output, and what each server of `tests.crawler.ssrf_sites` saw."""
    inside = ["ip", "netns", "exec", namespace]
    env = clean_env()
    with subprocess.Popen(
        [*inside, *crawlog_command()[:1], "-m", "tests.crawler.ssrf_sites"],
        cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    ) as sites:  # fmt: skip
        assert sites.stdin is not None and sites.stdout is not None
        try:
            assert sites.stdout.readline() == "ready\n"
            crawl = subprocess.run(
                [
                    *inside,
                    *crawlog_command(
                        "crawl", WWW + "/", BLOG + "/", "--scope", "domain",
                        "--sitemaps-from-robots", "--retries", "0", "--workers", "1",
                        "--delay", "0", "--job", "ssrf", "--data-dir", str(data_dir), *extra,
                    ),
                ],
                cwd=ROOT, env=env, capture_output=True, text=True, timeout=CRAWL_TIMEOUT_S,
                check=False,
            )  # fmt: skip
        finally:
            sites.stdin.close()
            seen = sites.stdout.read()
            # The crawl started its own server inside the namespace: stop it there.
            stop = crawlog_command("server", "stop", "--data-dir", str(data_dir))
            subprocess.run([*inside, *stop], env=env, capture_output=True, check=False)
    return crawl.stdout + crawl.stderr, json.loads(seen)


def test_no_request_reaches_the_metadata_address_however_the_site_points_there(
    ssrf_namespace: str, tmp_path: Path
) -> None:
    out, seen = _crawl_inside(ssrf_namespace, tmp_path / "data")
    assert seen["witness"] == {"connections": 0, "requests": []}, out
    # The crawl did run: both robots.txt were asked for, the allowed hop followed, the
    # blog's sitemaps within reach read and its home page fetched.
    assert set(seen["www"]) == {"/robots.txt"}, out
    asked = {"/robots.txt", "/hop", "/moved.xml", "/index.xml", "/urls.xml", "/", "/go"}
    assert set(seen["blog"]) == asked, out
    # Each refusal said, with the right word for what could not be read.
    refused = f"refused address {WITNESS_ADDRESS} (link-local)"
    assert f"robots.txt {WWW}/robots.txt not read: {refused}" in out
    assert f"sitemap http://meta.shop.test/named.xml not read: {refused}" in out
    assert f"sitemap {BLOG}/moved.xml not read: {refused}" in out
    # The report says why the www site was not crawled: its robots.txt could not be read.
    report = subprocess.run(
        crawlog_command("report", "--job", "ssrf", "--data-dir", str(tmp_path / "data")),
        cwd=ROOT, env=clean_env(), capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert report.returncode == 0, report.stderr
    assert f"robots.txt unreachable: {refused}" in report.stdout, report.stdout


def test_with_allow_private_the_same_crawl_reaches_it(ssrf_namespace: str, tmp_path: Path) -> None:
    out, seen = _crawl_inside(ssrf_namespace, tmp_path / "data", "--allow-private")
    assert seen["witness"]["connections"] > 0, out
    assert "/latest/meta-data/iam/security-credentials/" in seen["witness"]["requests"], out
