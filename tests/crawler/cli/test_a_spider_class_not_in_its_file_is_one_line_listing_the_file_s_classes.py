"""``--spider FILE.py:Nope`` (or ``MODULE:Nope``) names the spider classes the file has, so
that a typo is fixed from the message; a file with no spider class names the classes it
defines, and a file with none says what a spider is. One line, exit 2."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.crawler.cli.test_errors_are_one_line_and_exit_2 import one_line_error
from tests.crawler.cli_run import crawlog

SEED = "http://127.0.0.1:9/"
SPIDERS = textwrap.dedent(
    """
    from crawler import Item, Spider, SiteSpider


    class Books(Spider):
        async def parse(self, response):
            yield Item(response.url)


    class Authors(SiteSpider):
        pass


    class Helper:
        pass
    """
)


@pytest.mark.parametrize(
    ("source", "spider", "needle"),
    [
        (SPIDERS, "shop.py:Book", "has no spider class Book; its spider classes: Authors, Books"),
        (SPIDERS, "shop:Nope", "its spider classes: Authors, Books"),
        (
            "class Row:\n    pass\n",
            "shop.py:Shop",
            "it has no spider class (one with a parse method), only Row",
        ),
        ("X = 1\n", "shop.py:Shop", "it defines no class: a spider is a class with a parse"),
    ],
)
def test_a_missing_class_lists_what_the_file_has(
    tmp_path: Path, source: str, spider: str, needle: str
) -> None:
    (tmp_path / "shop.py").write_text(source)
    result = crawlog("crawl", SEED, "--spider", spider, cwd=tmp_path)
    one_line_error(result, needle)
