"""``crawlog config`` shows the user agent, headers, proxies, timeouts and retry settings,
each with where its value came from: a flag, a CRAWLOG_* variable, crawlog.toml, or the
default."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.crawler.cli_run import clean_env, crawlog

TOML = """
[http]
user_agent = "toml-agent/1.0"
proxy = ["http://user:secret@127.0.0.1:3128", "http://127.0.0.1:3129"]
timeout = 12

[http.headers]
Accept-Language = "en"

[retry]
retry_on = "429,500-504"
"""


def test_every_identity_setting_says_where_its_value_came_from(tmp_path: Path) -> None:
    (tmp_path / "crawlog.toml").write_text(TOML)
    env = clean_env(CRAWLOG_RETRIES="1", CRAWLOG_BACKOFF_CAP="2.5")

    result = crawlog(
        "config", "--json", "--header", "X-One: 1", "--header", "X-Two: 2 2",
        "--read-timeout", "7", cwd=tmp_path, env=env,
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    found: dict[str, Any] = {
        row["key"]: (row["value"], row["source"]) for row in json.loads(result.stdout)["settings"]
    }
    assert found["http.user_agent"] == ("toml-agent/1.0", "crawlog.toml")
    # A flag replaces the file's headers, as any flag replaces the file's value.
    assert found["http.headers"] == (["X-One: 1", "X-Two: 2 2"], "flag --header")
    # The password is not shown.
    assert found["http.proxy"] == (
        ["http://user:***@127.0.0.1:3128", "http://127.0.0.1:3129"],
        "crawlog.toml",
    )
    assert found["http.proxy_rotation"] == ("site", "default")
    assert found["http.timeout"] == (12.0, "crawlog.toml")
    assert found["http.read_timeout"] == (7.0, "flag --read-timeout")
    assert found["http.connect_timeout"] == (10.0, "default")
    assert found["retry.retries"] == (1, "env CRAWLOG_RETRIES")
    assert found["retry.retry_on"] == ("429,500-504", "crawlog.toml")
    assert found["retry.backoff_base"] == (0.5, "default")
    assert found["retry.backoff_cap"] == (2.5, "env CRAWLOG_BACKOFF_CAP")

    text = crawlog("config", cwd=tmp_path, env=clean_env(CRAWLOG_HEADERS="X-A: 1\nX-B: b c"))
    assert text.returncode == 0, text.stderr
    lines = {line.split()[0]: line for line in text.stdout.splitlines()[1:]}
    assert "X-A: 1; X-B: b c" in lines["http.headers"]
    assert lines["http.headers"].endswith("env CRAWLOG_HEADERS")
    assert "secret" not in text.stdout


def test_the_spider_s_user_agent_and_headers_show_where_no_option_beats_them(
    tmp_path: Path,
) -> None:
    spider = "tests.crawler.identity_spiders:EchoSpider"
    result = crawlog(
        "config", "--json", "--spider", spider, "--header", "Accept-Language: en",
        cwd=tmp_path, env=clean_env(),
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    found = {
        row["key"]: (row["value"], row["source"]) for row in json.loads(result.stdout)["settings"]
    }
    assert found["http.user_agent"] == ("spider-agent/1.0", f"spider {spider}")
    assert found["http.headers"] == (
        ["X-From-Spider: spider", "Accept-Language: en"],
        f"flag --header over spider {spider}",
    )
