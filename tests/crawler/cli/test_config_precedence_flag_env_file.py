"""crawlog.toml < CRAWLOG_* environment < flags, shown by `crawlog config` and obeyed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.crawler.cli_run import clean_env, crawlog

TOML = """
data_dir = "from-file"

[job]
workers = 3
concurrency = 8
spider = "tests.crawler.spiders:ListingSpider"

[scope]
mode = "host"

[politeness]
delay = 1.5
per_host = 6
"""


def settings(result_stdout: str) -> dict[str, Any]:
    return {row["key"]: row for row in json.loads(result_stdout)["settings"]}


def test_each_value_comes_from_the_strongest_source_and_config_says_which(
    tmp_path: Path,
) -> None:
    (tmp_path / "crawlog.toml").write_text(TOML)
    env = clean_env(CRAWLOG_DELAY="0.75", CRAWLOG_CONCURRENCY="16")

    result = crawlog("config", "--json", "--concurrency", "4", cwd=tmp_path, env=env)

    assert result.returncode == 0, result.stderr
    found = settings(result.stdout)
    assert (found["job.workers"]["value"], found["job.workers"]["source"]) == (3, "crawlog.toml")
    assert found["scope.mode"]["value"] == "host"
    assert found["scope.mode"]["source"] == "crawlog.toml"
    assert (found["politeness.delay"]["value"], found["politeness.delay"]["source"]) == (
        0.75,
        "env CRAWLOG_DELAY",
    )
    assert found["job.concurrency"]["value"] == 4
    assert found["job.concurrency"]["source"] == "flag --concurrency"
    assert found["politeness.per_host"]["source"] == "crawlog.toml"
    assert found["job.max_pages"]["source"] == "default"
    assert found["data_dir"]["value"] == str(tmp_path / "from-file")
    assert found["data_dir"]["source"] == "crawlog.toml"
    assert found["log_format"]["source"] == "default"
    assert found["redis_url"]["source"] == "default"

    text = crawlog("--log-format", "json", "config", cwd=tmp_path, env=env)
    assert text.returncode == 0, text.stderr
    lines = {line.split()[0]: line for line in text.stdout.splitlines()[1:]}
    assert lines["politeness.delay"].split()[1:] == ["0.75", "env", "CRAWLOG_DELAY"]
    assert lines["log_format"].split()[1:] == ["json", "flag", "--log-format"]


def test_commands_obey_the_file_the_environment_and_the_flags(
    tmp_path: Path, valkey_url: str
) -> None:
    # `server status` reports the data directory it looked at: the file's, then the
    # environment's over it, then the flag's over both.
    (tmp_path / "crawlog.toml").write_text('data_dir = "from-file"\n')
    status = crawlog("server", "status", "--json", cwd=tmp_path)
    assert status.returncode == 1, status.stderr  # nothing runs there
    assert json.loads(status.stdout)["data_dir"] == str(tmp_path / "from-file")

    env = clean_env(CRAWLOG_HOME=str(tmp_path / "from-env"))
    status = crawlog("server", "status", "--json", cwd=tmp_path, env=env)
    assert json.loads(status.stdout)["data_dir"] == str(tmp_path / "from-env")

    flag = str(tmp_path / "from-flag")
    status = crawlog("server", "status", "--json", "--data-dir", flag, cwd=tmp_path, env=env)
    assert json.loads(status.stdout)["data_dir"] == flag

    # redis_url in the file is used like REDIS_URL (which, set, wins over it).
    (tmp_path / "crawlog.toml").write_text(f'redis_url = "{valkey_url}"\n')
    status = crawlog("server", "status", "--json", cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["managed"] is False
    shown = settings(crawlog("config", "--json", cwd=tmp_path).stdout)["redis_url"]
    assert shown["source"] == "crawlog.toml"
    closed = "redis://127.0.0.1:1/0"
    env = clean_env(REDIS_URL=closed)
    shown = settings(crawlog("config", "--json", cwd=tmp_path, env=env).stdout)["redis_url"]
    assert (shown["value"], shown["source"]) == (closed, "env REDIS_URL")


def test_a_job_name_from_the_file_serves_every_command_that_needs_one(tmp_path: Path) -> None:
    (tmp_path / "crawlog.toml").write_text('[job]\nname = "from-file"\n')
    env = clean_env(CRAWLOG_HOME=str(tmp_path / "data"))
    result = crawlog("report", cwd=tmp_path, env=env)  # no --job: the file's is used
    assert result.returncode == 2
    assert "'from-file'" in result.stderr, result.stderr
