"""An action that may have run (a worker SIGKILLed during it) pauses its task for a person;
``crawlog resolve --done`` completes the task without running the action again, ``--redo``
runs it once more, and until then neither a worker told to exit when done nor ``crawlog
crawl`` waits forever: they end and name the task.

Real worker processes (``tests.crawler.spiders:OnceSpider``, which writes one line to a
file per run of its action, the witness) and the real command line.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import serve_testsite
from eventlog import ActionDone, ActionIntended, ActionResolved, EventLog, TaskDone, TaskPaused
from projector._committed import read_committed
from projector._store import Store
from tests.crawler.conftest import ROOT, run_projector
from tests.crawler.operator_cli import crawlog
from tests.crawler.spiders import ONCE_ENV

pytestmark = pytest.mark.anyio
DEADLINE_S = 60


async def paused_for_a_person(
    tmp_path: Path,
    site_url: str,
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    log: EventLog,
) -> tuple[Path, dict[str, str], str]:
    """One task whose worker was SIGKILLed during its action, restarted: the task paused
    for a person. The side-effect file, the workers' environment and the task id."""
    effects = tmp_path / "effects.txt"
    env = {ONCE_ENV: f"{effects}:during"}
    await start_job([site_url + "/item/1"], spider="tests.crawler.spiders:OnceSpider")
    first = await worker_process("w1", "--exit-when-done", env=env)
    assert await first.wait() == -signal.SIGKILL
    again = await worker_process("w1", "--exit-when-done", env=env)
    # Nothing is left that a worker can do: it exits rather than wait for the person.
    assert await again.wait() == 0
    [paused] = [e.event for e in await log.read_range() if isinstance(e.event, TaskPaused)]
    assert paused.reason.startswith("uncertain action notify")
    return effects, env, paused.task_id


async def test_resolve_done_completes_the_task_without_running_the_action_again(
    tmp_path: Path,
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    log: EventLog,
    valkey_url: str,
    job: str,
    data_dir: Path,
) -> None:
    async with serve_testsite(pages=10, seed=2) as site:
        with anyio.fail_after(DEADLINE_S):
            effects, env, task_id = await paused_for_a_person(
                tmp_path, site.url, start_job, worker_process, log
            )
            # Resumed as it is, it would only pause again: resume says what to do instead.
            resumed = await crawlog(
                valkey_url,
                data_dir,
                "resume",
                "--job",
                job,
                "--task",
                task_id,
                "--reason",
                "go on",
            )
            assert resumed.returncode == 2
            assert "crawlog resolve" in resumed.stderr
            ran = await crawlog(
                valkey_url,
                data_dir,
                "resolve",
                "--job",
                job,
                "--task",
                task_id,
                "--done",
                "--reason",
                "the mail went out",
                "--by",
                "alice",
            )
            assert ran.returncode == 0, ran.stderr
            assert f"resolved action notify of task {task_id} as done" in ran.stdout
            finisher = await worker_process("w1", "--exit-when-done", env=env)
            assert await finisher.wait() == 0
            again = await crawlog(
                valkey_url,
                data_dir,
                "resolve",
                "--job",
                job,
                "--task",
                task_id,
                "--redo",
                "--reason",
                "twice",
            )
            await run_projector(valkey_url, job, data_dir)
    assert len(effects.read_text().splitlines()) == 1, "the action ran once"
    events = [e.event for e in await log.read_range()]
    [resolved] = [e for e in events if isinstance(e, ActionResolved)]
    assert (resolved.actor, resolved.decision, resolved.reason) == (
        "alice",
        "done",
        "the mail went out",
    )
    assert sum(isinstance(e, ActionIntended) for e in events) == 1
    assert not any(isinstance(e, ActionDone) for e in events)
    assert any(isinstance(e, TaskDone) for e in events)
    # Nothing uncertain is left: a second decision is refused in one line.
    assert again.returncode == 2
    assert again.stderr.strip().count("\n") == 0
    assert "no uncertain action" in again.stderr
    _, state = read_committed(Store(data_dir, job))
    assert state.job.tasks.get("done") == 1
    assert not state.job.anomalies


async def test_resolve_redo_runs_the_action_once_more(
    tmp_path: Path,
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    log: EventLog,
    valkey_url: str,
    job: str,
    data_dir: Path,
) -> None:
    async with serve_testsite(pages=10, seed=2) as site:
        with anyio.fail_after(DEADLINE_S):
            effects, env, task_id = await paused_for_a_person(
                tmp_path, site.url, start_job, worker_process, log
            )
            ran = await crawlog(
                valkey_url,
                data_dir,
                "resolve",
                "--job",
                job,
                "--task",
                task_id,
                "--redo",
                "--reason",
                "not in the outbox",
            )
            assert ran.returncode == 0, ran.stderr
            finisher = await worker_process("w1", "--exit-when-done", env=env)
            assert await finisher.wait() == 0
            await run_projector(valkey_url, job, data_dir)
    assert len(effects.read_text().splitlines()) == 2, "run once more, and only once"
    events = [e.event for e in await log.read_range()]
    assert sum(isinstance(e, ActionIntended) for e in events) == 2
    assert sum(isinstance(e, ActionDone) for e in events) == 1
    assert any(isinstance(e, TaskDone) for e in events)
    _, state = read_committed(Store(data_dir, job))
    assert state.job.tasks.get("done") == 1
    assert not state.job.anomalies, "the second intent follows the decision"


async def test_resolve_refuses_a_task_with_no_uncertain_action(
    start_job: Callable[..., Any], valkey_url: str, job: str, data_dir: Path
) -> None:
    await start_job(["http://127.0.0.1:9/"])
    ran = await crawlog(
        valkey_url,
        data_dir,
        "resolve",
        "--job",
        job,
        "--task",
        "http://127.0.0.1:9/",
        "--done",
        "--reason",
        "why not",
    )
    assert ran.returncode == 2
    [line] = ran.stderr.strip().splitlines()
    assert "has no uncertain action to resolve" in line


async def test_a_crawl_with_a_task_waiting_for_a_person_ends_and_names_it(
    tmp_path: Path, valkey_url: str, job: str, data_dir: Path, log: EventLog
) -> None:
    effects = tmp_path / "effects.txt"
    env = {**os.environ, "REDIS_URL": valkey_url, ONCE_ENV: f"{effects}:during"}
    async with serve_testsite(pages=10, seed=2) as site:
        command = crawlog_command(
            "crawl", site.url + "/item/1", "--job", job,
            "--workers", "1", "--spider", "tests.crawler.spiders:OnceSpider",
            "--data-dir", str(data_dir),
        )  # fmt: skip
        with anyio.fail_after(DEADLINE_S):
            # Its worker is SIGKILLed during the action: the crawl stops, the action uncertain.
            first = await anyio.run_process(command, env=env, cwd=ROOT, check=False)
            assert first.returncode != 0
            again = await anyio.run_process(command, env=env, cwd=ROOT, check=False)
    out = again.stdout.decode()
    [paused] = [e.event for e in await log.read_range() if isinstance(e.event, TaskPaused)]
    waiting = f"1 task(s) wait for a person to decide about an uncertain action: {paused.task_id}"
    assert waiting in out, out
    assert "crawlog resolve" in out
    assert again.returncode != 0, "a crawl with a task left undecided is not finished"
    assert len(effects.read_text().splitlines()) == 1
