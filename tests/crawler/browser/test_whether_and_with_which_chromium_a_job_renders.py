"""Whether a job renders its pages (`browser_wanted`: the option, else the spider's
``browser``) and with which Chromium (`find_chromium`: ``CRAWLOG_CHROMIUM``, else
``chromium`` on PATH, else one line saying what to do) — pure, no browser started."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from crawler._browser import CHROMIUM_ENV, browser_wanted, find_chromium
from crawler._spider import Spider
from eventlog import ConfigError


class Rendering(Spider):
    browser = True


class Misspelt(Spider):
    browser = "yes"  # type: ignore[assignment]


@pytest.mark.parametrize(
    ("option", "spider", "wanted"),
    [
        (None, Spider(), False),
        (None, Rendering(), True),
        (False, Rendering(), False),
        (True, Spider(), True),
    ],
)
def test_the_option_beats_the_spider_s_attribute(
    option: bool | None, spider: Spider, wanted: bool
) -> None:
    assert browser_wanted(option, spider) is wanted


def test_a_browser_attribute_that_is_not_a_bool_is_refused() -> None:
    with pytest.raises(ConfigError, match="browser = 'yes'"):
        browser_wanted(None, Misspelt())


def fake_executable(path: Path) -> str:
    path.write_text("#!/bin/sh\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_the_environment_names_the_executable_else_path_is_searched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    named = fake_executable(tmp_path / "my-chromium")
    on_path = fake_executable(tmp_path / "chromium")
    assert find_chromium({CHROMIUM_ENV: named}) == named
    monkeypatch.setenv("PATH", str(tmp_path))
    assert find_chromium({}) == on_path
    (tmp_path / "chromium").unlink()
    with pytest.raises(ConfigError, match="apt-get install chromium") as missing:
        find_chromium({})
    assert "\n" not in str(missing.value)
    with pytest.raises(ConfigError, match=CHROMIUM_ENV):
        find_chromium({CHROMIUM_ENV: str(tmp_path / "nothing")})
