"""A ``--header`` that is not ``Name: value``, a proxy that is not an http(s) URL, a
``--retry-on`` that is not a list of statuses: one line naming the option, exit status 2,
before anything starts; the same from crawlog.toml names the file and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.crawler.cli_run import clean_env, crawlog, free_port

SEED = "http://127.0.0.1:9/"


def one_line(result: object, *needles: str) -> str:
    assert getattr(result, "returncode", None) == 2, result
    lines = str(getattr(result, "stderr", "")).splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("crawlog: error: "), lines[0]
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize(
    ("option", "value", "needle"),
    [
        ("--header", "no colon here", "has no ':'"),
        ("--header", "Bad Name: x", "not a token"),
        ("--header", "User-Agent: x", "--user-agent"),
        ("--header", "Host: example.test", "written by the HTTP client"),
        ("--header", "X-Accent: café", "printable ASCII"),
        ("--proxy", "socks5://127.0.0.1:1080", "not an http(s) URL"),
        ("--proxy", "http://127.0.0.1:notaport", "not a URL"),
        ("--retry-on", "429,5xx", "'5xx' is not an HTTP status"),
        ("--retry-on", "504-500", "'504-500'"),
        ("--user-agent", "bot\x7f", "printable ASCII"),
    ],
)
def test_a_malformed_option_is_one_line_naming_it(
    tmp_path: Path, option: str, value: str, needle: str
) -> None:
    # Nothing listens at REDIS_URL: the option is refused before any server is asked.
    env = clean_env(REDIS_URL=f"redis://127.0.0.1:{free_port()}/0")
    result = crawlog("crawl", SEED, "--job", "j", option, value, cwd=tmp_path, env=env)
    line = one_line(result, needle)
    assert line.startswith(f"crawlog: error: {option}") or option == "--user-agent", line


@pytest.mark.parametrize(
    ("toml", "needle"),
    [
        ('[http]\nproxy = ["ftp://x"]\n', "http.proxy"),
        ('[http.headers]\n"Bad Name" = "x"\n', "http.headers"),
        ("[http.headers]\nX-Number = 3\n", "a table of strings"),
        ('[retry]\nretry_on = "ok"\n', "retry.retry_on"),
    ],
)
def test_a_malformed_value_in_crawlog_toml_names_the_file_and_key(
    tmp_path: Path, toml: str, needle: str
) -> None:
    (tmp_path / "crawlog.toml").write_text(toml)
    result = crawlog("config", cwd=tmp_path, env=clean_env())
    one_line(result, "crawlog.toml", needle)


@pytest.mark.parametrize(
    ("spider", "needle"),
    [
        ("UserAgentAsHeaderSpider", "the User-Agent header is set by --user-agent"),
        ("NumberUserAgentSpider", "user_agent 7 is not a string"),
    ],
)
def test_a_spider_s_malformed_identity_is_one_line(
    tmp_path: Path, spider: str, needle: str
) -> None:
    env = clean_env(REDIS_URL=f"redis://127.0.0.1:{free_port()}/0")
    path = f"tests.crawler.identity_spiders:{spider}"
    result = crawlog("crawl", SEED, "--job", "j", "--spider", path, cwd=tmp_path, env=env)
    one_line(result, needle)
