"""Unreachable Redis, a bad URL, an unknown job, a spider that does not import: for every
command they apply to, one line on stderr and exit status 2; a traceback only with --debug."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.crawler.cli_run import clean_env, crawlog, free_port

SEED = "http://127.0.0.1:9/"
REDIS_COMMANDS = [
    ["worker", "--job", "j"],
    ["project", "--job", "j"],
    ["project", "--job", "j", "--once"],
    ["project", "--job", "j", "--wait-for", "last"],
    ["enqueue", "--job", "j", SEED],
    ["replay", "--job", "j"],
    ["crawl", SEED, "--job", "j"],
    ["server", "status"],
]
UNKNOWN_JOB_COMMANDS = [
    ["worker", "--job", "nojob"],
    ["project", "--job", "nojob"],
    ["project", "--job", "nojob", "--once"],
    ["project", "--job", "nojob", "--wait-for", "last"],
    ["enqueue", "--job", "nojob", SEED],
    ["replay", "--job", "nojob"],
    ["replay", "--job", "nojob", "--verify"],
    ["report", "--job", "nojob"],
    ["sql", "--job", "nojob", "SELECT 1"],
    ["export", "--job", "nojob", "--what", "pages", "--format", "csv", "-"],
    ["recrawl", "--job", "nojob"],
    ["changes", "--job", "nojob"],
]


def one_line_error(result: Any, *needles: str) -> str:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("crawlog: error: "), lines[0]
    for needle in needles:
        assert needle in lines[0], lines[0]
    return str(lines[0])


@pytest.mark.parametrize("command", REDIS_COMMANDS, ids=" ".join)
def test_unreachable_redis(tmp_path: Path, command: list[str]) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"  # closed: nothing listens there
    result = crawlog(*command, cwd=tmp_path, env=clean_env(REDIS_URL=url))
    one_line_error(result, "cannot reach Redis", url)


@pytest.mark.parametrize("url", ["foo://x", "redis://127.0.0.1:notaport/0"])
@pytest.mark.parametrize("command", REDIS_COMMANDS, ids=" ".join)
def test_bad_redis_url(tmp_path: Path, command: list[str], url: str) -> None:
    result = crawlog(*command, cwd=tmp_path, env=clean_env(REDIS_URL=url))
    one_line_error(result, url)


@pytest.mark.parametrize("seed", ["notaurl", "ftp://x/", "http://"])
@pytest.mark.parametrize("command", [["crawl"], ["enqueue", "--job", "j"]], ids=" ".join)
def test_bad_seed_url(tmp_path: Path, valkey_url: str, command: list[str], seed: str) -> None:
    result = crawlog(*command, seed, cwd=tmp_path, env=clean_env(REDIS_URL=valkey_url))
    one_line_error(result, repr(seed))


@pytest.mark.parametrize("command", UNKNOWN_JOB_COMMANDS, ids=" ".join)
def test_unknown_job(tmp_path: Path, valkey_url: str, command: list[str]) -> None:
    env = clean_env(REDIS_URL=valkey_url, CRAWLOG_HOME=str(tmp_path / "data"))
    result = crawlog(*command, cwd=tmp_path, env=env)
    one_line_error(result, "'nojob'")


@pytest.mark.parametrize(
    ("spider", "needle"),
    [
        ("nosuchmodule:Spider", "cannot import nosuchmodule"),
        ("broken_spider:Spider", "cannot import broken_spider"),
        ("json:NoSuchClass", "no spider class NoSuchClass"),
        ("nocolon", "expected MODULE:CLASS"),
    ],
)
def test_spider_that_does_not_import_stops_crawl(
    tmp_path: Path, valkey_url: str, spider: str, needle: str
) -> None:
    (tmp_path / "broken_spider.py").write_text("raise RuntimeError('spider module is broken')\n")
    env = clean_env(REDIS_URL=valkey_url, PYTHONPATH=str(tmp_path))
    result = crawlog("crawl", SEED, "--job", "j", "--spider", spider, cwd=tmp_path, env=env)
    one_line_error(result, needle)


@pytest.mark.anyio
async def test_spider_that_no_longer_imports_stops_the_worker(
    tmp_path: Path, valkey_url: str, job: str, start_job: Callable[..., Any]
) -> None:
    await start_job([SEED], spider="gone_module:Spider")
    result = crawlog("worker", "--job", job, cwd=tmp_path, env=clean_env(REDIS_URL=valkey_url))
    one_line_error(result, "cannot import gone_module")


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    result = crawlog("--debug", "worker", "--job", "j", cwd=tmp_path, env=clean_env(REDIS_URL=url))
    assert result.returncode == 2
    assert "Traceback (most recent call last)" in result.stderr
    assert result.stderr.splitlines()[-1].startswith("crawlog: error: cannot reach Redis")
