"""The circuit breaker is set by ``--circuit-failures`` and ``--circuit-cooldown`` (or
``[retry]`` in crawlog.toml, or CRAWLOG_* variables), shown by ``crawlog config``, obeyed
by the workers, and each opening is counted by ``report`` and one-shot ``status``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import Faults, serve_testsite
from eventlog import CircuitOpened, EventLog
from tests.crawler.cli_run import clean_env
from tests.crawler.cli_run import crawlog as crawlog_now
from tests.crawler.conftest import ROOT
from tests.crawler.operator_cli import crawlog

pytestmark = pytest.mark.anyio
FAILS_ONCE = Faults(error_500_rate=1.0, error_500_times=1)
"""Every page answers 500 to its first request: the first two fetches fail in a row."""


async def test_a_crawl_opens_its_circuits_as_its_options_say_and_report_and_status_count_them(
    valkey_url: str, job: str, data_dir: Path, log: EventLog
) -> None:
    env = {**os.environ, "REDIS_URL": valkey_url}
    async with serve_testsite(pages=5, seed=1, faults=FAILS_ONCE) as site:
        command = crawlog_command(
            "crawl", site.url + "/", "--job", job, "--workers", "1", "--concurrency", "2",
            "--circuit-failures", "1", "--circuit-cooldown", "0.2",
            "--backoff-base", "0.01", "--backoff-cap", "0.01", "--fail-on", "never",
            "--data-dir", str(data_dir),
        )  # fmt: skip
        with anyio.fail_after(90):
            crawled = await anyio.run_process(command, env=env, cwd=ROOT, check=False)
            report = await crawlog(valkey_url, data_dir, "report", "--job", job)
            as_json = await crawlog(valkey_url, data_dir, "report", "--job", job, "--json")
            status = await crawlog(valkey_url, data_dir, "status", "--job", job)
    assert crawled.returncode == 0, crawled.stderr.decode()
    opened = [e.event for e in await log.read_range() if isinstance(e.event, CircuitOpened)]
    # One failure opens it (the default would need five), for the cooldown asked.
    assert opened and {(e.failures, e.cooldown_s) for e in opened} == {(1, 0.2)}
    openings = len(opened)
    times = "once" if openings == 1 else f"{openings} times"
    assert report.returncode == 0, report.stderr
    assert f"Circuits opened: {times} on 1 site" in report.stdout, report.stdout
    assert f"circuit opened {times}" in report.stdout, report.stdout
    sites = as_json.json()["sites"]
    assert [s["circuit_openings"] for s in sites] == [openings]
    assert status.returncode == 0, status.stderr
    assert f"circuit opened {times}" in status.stdout, status.stdout


def test_config_shows_the_breaker_s_settings_from_the_file_the_environment_or_a_flag(
    tmp_path: Path,
) -> None:
    (tmp_path / "crawlog.toml").write_text("[retry]\ncircuit_failures = 3\n")

    def found(*args: str, **env: str) -> dict[str, Any]:
        result = crawlog_now("config", "--json", *args, cwd=tmp_path, env=clean_env(**env))
        assert result.returncode == 0, result.stderr
        rows = json.loads(result.stdout)["settings"]
        return {row["key"]: (row["value"], row["source"]) for row in rows}

    settings = found()
    assert settings["retry.circuit_failures"] == (3, "crawlog.toml")
    assert settings["retry.circuit_cooldown"] == (30.0, "default")
    settings = found("--circuit-failures", "8", CRAWLOG_CIRCUIT_COOLDOWN="2.5")
    assert settings["retry.circuit_failures"] == (8, "flag --circuit-failures")
    assert settings["retry.circuit_cooldown"] == (2.5, "env CRAWLOG_CIRCUIT_COOLDOWN")
    refused = crawlog_now("config", "--circuit-failures", "0", cwd=tmp_path, env=clean_env())
    assert refused.returncode == 2 and "--circuit-failures" in refused.stderr
