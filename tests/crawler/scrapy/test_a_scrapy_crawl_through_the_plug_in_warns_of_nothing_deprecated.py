"""The plug-in's components use the installed Scrapy's current interfaces: a crawl through
every one of them (scheduler, duplicate filter, item pipeline, politeness middleware, the
projector beside it) prints no deprecation warning."""

from __future__ import annotations

import sys

import anyio
import pytest

from crawler.testsite import RunningSite
from tests.crawler.scrapy.conftest import ROOT, SPIDER

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(180)]


async def test_no_deprecation_warning_in_a_plug_in_crawl(
    scrapy_site: RunningSite, scrapy_env: dict[str, str]
) -> None:
    env = {
        **scrapy_env,
        "PYTHONWARNINGS": "always",  # each warning printed, however often it comes
        "POLITE": "1",
        "CRAWLOG_PROJECT": "1",
        "SCRAPY_LOG_LEVEL": "WARNING",
    }
    command = [sys.executable, str(SPIDER), scrapy_site.url + "/", "plugin", "4"]
    with anyio.fail_after(150):
        result = await anyio.run_process(command, env=env, cwd=ROOT, check=False)
    stderr = result.stderr.decode(errors="replace")
    assert result.returncode == 0, stderr
    deprecated = [line for line in stderr.splitlines() if "DeprecationWarning" in line]
    assert deprecated == []
