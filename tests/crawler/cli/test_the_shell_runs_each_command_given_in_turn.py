"""``crawlog shell URL -c A -c B`` runs A, then B, in one namespace (as lines typed at the
prompt), each expression's value printed; ``repr(response)`` is Scrapy's ``<200 URL>`` and
``response.urljoin`` resolves against the page. Against the test site."""

from __future__ import annotations

from pathlib import Path

import pytest

from crawler.testsite import RunningSite
from tests.crawler.operator_cli import crawlog

pytestmark = pytest.mark.anyio


async def test_every_command_runs_in_turn_on_the_fetched_page(
    site: RunningSite, valkey_url: str, data_dir: Path
) -> None:
    result = await crawlog(
        valkey_url, data_dir, "shell", site.url + "/",
        "-c", "status = response.status",
        "-c", "for n in range(2):\n    n",
        "-c", "status\nresponse\nresponse.urljoin('item/3?x=1')",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "0",
        "1",
        "200",
        f"<200 {site.url}/>",
        repr(f"{site.url}/item/3?x=1"),
    ]
