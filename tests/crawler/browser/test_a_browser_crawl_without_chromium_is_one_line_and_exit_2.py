"""``crawl --browser`` where there is no Chromium to drive says so in one line, exit 2,
before anything starts (crawlog never downloads a browser)."""

from __future__ import annotations

from pathlib import Path

from tests.crawler.cli_run import clean_env, crawlog


def test_a_browser_crawl_without_chromium_is_one_line_and_exit_2(tmp_path: Path) -> None:
    env = clean_env(CRAWLOG_CHROMIUM=str(tmp_path / "no-chromium"))
    ran = crawlog("crawl", "http://127.0.0.1:9/", "--browser", "--data-dir", str(tmp_path), env=env)
    assert ran.returncode == 2
    assert ran.stderr.strip().count("\n") == 0, ran.stderr
    assert "CRAWLOG_CHROMIUM" in ran.stderr and "Traceback" not in ran.stderr
    assert not (tmp_path / "browsers").exists()
