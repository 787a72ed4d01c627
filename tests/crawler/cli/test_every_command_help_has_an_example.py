"""Every `crawlog ... --help` ends with an example; every setting reaches a real option."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

import pytest

from crawler.cli import cli
from crawler.cli._settings import CONFIG_COMMAND, SETTINGS, commands, targets
from tests.crawler.cli_run import crawlog


# One process a command, and the commands keep coming: a minute is not enough on a loaded
# machine, whatever pyproject's default says.
@pytest.mark.timeout(300)
def test_every_command_help_shows_an_example() -> None:
    paths = [path.split() for path, _ in commands(cli)]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda path: crawlog(*path, "--help"), paths))
    for path, result in zip(paths, results, strict=True):
        assert result.returncode == 0, (path, result.stderr)
        assert re.search(r"Examples?:\s+crawlog ", result.stdout), (path, result.stdout)


def test_every_setting_fills_an_option_of_a_command_that_is_not_config() -> None:
    for setting in SETTINGS:
        if setting.param is None:
            continue
        found = [path for path, _ in targets(cli, setting) if path != CONFIG_COMMAND]
        assert found, f"{setting.key} fills no option (--{setting.param} was renamed?)"
