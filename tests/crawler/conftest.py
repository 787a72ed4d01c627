"""Fixtures for crawler tests: the test site, jobs set up through the real API, workers."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import redis.asyncio as aioredis
from anyio.abc import Process

from crawler._job import JobConfig, save_config
from crawler._politeness import Politeness
from crawler._spider import Response
from crawler._worker import enqueue_seeds
from crawler.cli._argv import crawlog_command
from crawler.testsite import RunningSite, serve_testsite
from eventlog import (
    EventLog,
    ItemScraped,
    JobKeys,
    PageFetched,
    TaskClaimed,
    TaskDone,
    TaskEnqueued,
    TaskQueue,
)
from projector import Projector
from tests.server_helpers import clean_env

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
async def site() -> AsyncIterator[RunningSite]:
    """A small generated site on 127.0.0.1, no faults."""
    async with serve_testsite(pages=120, seed=1) as running:
        yield running


LOGGED_SITE_PAGES = 210
"""Pages of `logged_site`: the item pages of tests with up to 200 one-page tasks."""


@pytest.fixture
def request_log(tmp_path: Path) -> Path:
    return tmp_path / "requests.jsonl"


@pytest.fixture
async def logged_site(request_log: Path) -> AsyncIterator[RunningSite]:
    """The test site, every request it serves written to ``request_log``."""
    async with serve_testsite(pages=LOGGED_SITE_PAGES, seed=1, request_log=request_log) as running:
        yield running


@pytest.fixture
async def scripted_site() -> AsyncIterator[RunningSite]:
    """The test site's scripted layout: a shop whose links only scripts write."""
    async with serve_testsite(pages=40, seed=1, layout="scripted") as running:
        yield running


@pytest.fixture
def chromium() -> str:
    """Chromium's path, once Playwright is importable; the test is skipped, saying why, if
    either is missing."""
    from crawler._browser import check_browser_support
    from eventlog import ConfigError

    try:
        return check_browser_support()
    except ConfigError as missing:
        pytest.skip(f"no browser to render with: {missing}")


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def start_job(redis_client: aioredis.Redis, job: str) -> Callable[..., Any]:
    """``await start_job(seeds, **config)``: the job's config saved and its seeds enqueued."""

    async def start(seeds: list[str], **options: Any) -> JobConfig:
        options.setdefault("politeness", Politeness(per_host=8))
        config = JobConfig(seeds=tuple(seeds), **options)
        await save_config(redis_client, JobKeys(job), config)
        await enqueue_seeds(TaskQueue(redis_client, job, "test"), seeds, actor="test")
        return config

    return start


@pytest.fixture
async def worker_process(
    valkey_url: str, job: str, data_dir: Path
) -> AsyncIterator[Callable[..., Any]]:
    """``await worker_process("w1", "--exit-when-done", env={...})``: a real worker process.

    Whatever a test leaves running is killed at teardown.
    """
    started: list[Process] = []

    async def start(name: str, *extra: str, env: dict[str, str] | None = None) -> Process:
        command = crawlog_command(
            "worker", "--job", job, "--name", name,
            "--data-dir", str(data_dir), "--concurrency", "4", *extra,
        )  # fmt: skip
        environment = {**os.environ, "REDIS_URL": valkey_url, **(env or {})}
        process = await anyio.open_process(
            command, env=environment, cwd=ROOT, stdout=None, stderr=None
        )
        started.append(process)
        return process

    yield start
    for process in started:
        if process.returncode is None:
            process.kill()
        await process.aclose()


async def run_projector(valkey_url: str, job: str, data_dir: Path, *extra: str) -> None:
    """Project the job's whole log now (``crawlog project --once``, then ``extra``)."""
    command = crawlog_command("project", "--job", job, "--once", *extra)
    env = {**os.environ, "REDIS_URL": valkey_url}
    await anyio.run_process([*command, "--data-dir", str(data_dir)], env=env, cwd=ROOT)


async def replay_verify(valkey_url: str, job: str, data_dir: Path) -> bytes:
    """``crawlog replay --verify`` output; fails the test unless it exits 0."""
    command = crawlog_command("replay", "--job", job, "--verify")
    env = {**os.environ, "REDIS_URL": valkey_url}
    result = await anyio.run_process(
        [*command, "--data-dir", str(data_dir)], env=env, cwd=ROOT, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


@pytest.fixture
def make_response() -> Callable[..., Response]:
    """``make_response(body, content_type="text/html", url=..., **extra)``: a Response as a
    worker builds it for a spider (no task behind it: ``once`` does nothing)."""

    async def once(action_id: str, action: Any) -> Any:
        return None

    def make(
        body: bytes,
        content_type: str = "text/html",
        url: str = "http://shop.test/list/a",
        **extra: Any,
    ) -> Response:
        return Response(
            url=url, status=200, headers={"content-type": content_type}, body=body,
            elapsed_ms=1.0, task_id="t", depth=0, page=1, resume=None, once=once, **extra,
        )  # fmt: skip

    return make


@pytest.fixture
def ssrf_namespace() -> Iterator[str]:
    """A network namespace of this test's own, its name: ``lo`` up with the addresses of
    `tests.crawler.ssrf_sites` (10.9.9.9 and 169.254.169.254, nowhere but in it) and an
    ``/etc/hosts`` naming them, which ``ip netns exec`` puts in place of the machine's.
    Skipped, saying why, where one cannot be made (not root, no ``ip``)."""
    from tests.crawler.ssrf_sites import HOSTS

    name = f"crawlog-test-{os.getpid()}"
    ip = shutil.which("ip")
    if ip is None:
        pytest.skip("no `ip` command: cannot create a network namespace")
    made = subprocess.run([ip, "netns", "add", name], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot create a network namespace: {made.stderr.strip()}")
    etc = Path("/etc/netns") / name
    try:
        etc.mkdir(parents=True)
        hosts = "".join(f"{address} {host}\n" for host, address in HOSTS.items())
        (etc / "hosts").write_text(f"127.0.0.1 localhost\n::1 localhost\n{hosts}")
        inside = [ip, "netns", "exec", name, ip]
        subprocess.run([*inside, "link", "set", "lo", "up"], check=True)
        for address in sorted(set(HOSTS.values())):
            subprocess.run([*inside, "addr", "add", f"{address}/32", "dev", "lo"], check=True)
        yield name
    finally:
        shutil.rmtree(etc, ignore_errors=True)
        with contextlib.suppress(OSError):
            etc.parent.rmdir()  # unless something else keeps files there
        subprocess.run([ip, "netns", "del", name], check=False)


@pytest.fixture
async def projected_job(
    tmp_path: Path, redis_client: aioredis.Redis, job: str, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """A data directory holding ``job``: three tasks of site.test, each with a page and an
    item, projected and committed (for the commands that read committed data)."""
    clean_env(monkeypatch)
    directory = tmp_path / "projected"
    events: list[Any] = []
    for n in range(3):
        task, url = f"t{n}", f"http://site.test/{n}"
        events += [
            TaskEnqueued(actor="seed", task_id=task, url=url, site="http://site.test"),
            TaskClaimed(actor="w1", task_id=task, attempt=1),
            PageFetched(actor="w1", task_id=task, attempt=1, url=url, status=200, page=1),
            ItemScraped(actor="w1", task_id=task, key=f"item-{n}", data={"n": n}),
            TaskDone(actor="w1", task_id=task, attempt=1),
        ]
    await EventLog(redis_client, job).append_many(events)
    async with Projector(redis_client, job, directory) as projector:
        await projector.catch_up()
    return directory


ITEMS_SITE = "http://site.test"
ITEMS: list[tuple[str, dict[str, Any]]] = [
    ("a", {"title": 'Tea, "green"', "price": 4.5, "tags": ["x", "y"]}),
    ("b", {"price": 3, "stock": {"shop": 2}, "title": "Coffee"}),
    ("a", {"title": "the same key again: not exported"}),
    ("c", {"on_sale": True, "note": None, "key": "its own key field"}),
    ("d", {}),
]
"""The items of `projected_items`, keyed: "a" twice (the second never shown)."""


@pytest.fixture
async def projected_items(
    tmp_path: Path, redis_client: aioredis.Redis, job: str, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """A data directory holding ``job``: one task, done, whose page yielded `ITEMS`,
    projected."""
    clean_env(monkeypatch)
    directory = tmp_path / "data"
    events: list[Any] = [
        TaskEnqueued(actor="seed", task_id="t1", url=f"{ITEMS_SITE}/", site=ITEMS_SITE),
        TaskClaimed(actor="w1", task_id="t1", attempt=1),
    ]
    events += [ItemScraped(actor="w1", task_id="t1", key=k, data=d) for k, d in ITEMS]
    events.append(TaskDone(actor="w1", task_id="t1", attempt=1))
    await EventLog(redis_client, job).append_many(events)
    async with Projector(redis_client, job, directory) as projector:
        await projector.catch_up()
    return directory
