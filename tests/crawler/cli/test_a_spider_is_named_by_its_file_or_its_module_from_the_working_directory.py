"""``--spider`` takes ``FILE.py:CLASS`` (imported by path, its siblings importable) as well as
``MODULE:CLASS``, which the ``crawlog`` console script imports from the working directory as
``python -m`` does; a module not found says where crawlog looked and what to do."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import serve_testsite
from tests.crawler.cli.test_errors_are_one_line_and_exit_2 import one_line_error
from tests.crawler.cli_run import CLI_TIMEOUT_S, clean_env, crawlog

pytestmark = pytest.mark.anyio
SEED = "http://127.0.0.1:9/"
PYTHON_M = crawlog_command()
SPIDER = textwrap.dedent(
    """
    from collections.abc import AsyncIterator

    from crawler import Item, Output, Response, Spider
    from naming import item_key  # a module beside this file


    class Docs(Spider):
        name = "docs"

        async def parse(self, response: Response) -> AsyncIterator[Output]:
            yield Item(item_key(response.url), {"status": response.status})
    """
)
NAMING = "def item_key(url: str) -> str:\n    return 'doc:' + url\n"


def write_spider(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "docs.py").write_text(SPIDER)
    (directory / "naming.py").write_text(NAMING)


async def crawl_site(
    crawlog_argv: list[str], spider: str, cwd: Path, valkey_url: str, job: str
) -> tuple[int, str, str]:
    """A one-page crawl of the test site with ``--spider spider``, run from ``cwd``."""
    async with serve_testsite(pages=20, seed=4) as site:
        command = [
            *crawlog_argv,
            "crawl",
            site.url + "/",
            "--spider",
            spider,
            "--depth",
            "0",
            "--workers",
            "1",
            "--data-dir",
            str(cwd / "data"),
            "--job",
            job,
        ]
        with anyio.fail_after(CLI_TIMEOUT_S):
            result = await anyio.run_process(
                command, cwd=cwd, env=clean_env(REDIS_URL=valkey_url), check=False
            )
    return result.returncode, result.stdout.decode(), result.stderr.decode()


@pytest.mark.parametrize("form", ["spiders/docs.py:Docs", "./spiders/../spiders/docs.py:Docs"])
async def test_a_crawl_runs_a_spider_given_by_its_file(
    tmp_path: Path, valkey_url: str, job: str, form: str
) -> None:
    write_spider(tmp_path / "spiders")

    code, out, err = await crawl_site(PYTHON_M, form, tmp_path, valkey_url, job)

    assert code == 0, err
    assert f"finished {job}" in out and "1 items" in out, out


async def test_the_crawlog_script_imports_a_spider_module_from_the_working_directory(
    tmp_path: Path, valkey_url: str, job: str
) -> None:
    script = Path(sys.executable).with_name("crawlog")
    if not script.exists():
        pytest.skip(f"no crawlog console script beside {sys.executable} (not pip-installed)")
    write_spider(tmp_path)

    code, out, err = await crawl_site([str(script)], "docs:Docs", tmp_path, valkey_url, job)

    assert code == 0, err
    assert f"finished {job}" in out and "1 items" in out, out


def test_a_module_not_found_says_where_crawlog_looked(tmp_path: Path) -> None:
    result = crawlog("crawl", SEED, "--spider", "listing:Listing", cwd=tmp_path)
    one_line_error(
        result,
        "No module named 'listing'",
        f"working directory ({tmp_path})",
        "PYTHONPATH",
        "--spider path/to/listing.py:Listing",
    )


def test_a_module_the_spider_imports_is_named_as_not_installed(tmp_path: Path) -> None:
    (tmp_path / "shop.py").write_text("import nosuchdependency\n")
    result = crawlog("crawl", SEED, "--spider", "shop:Shop", cwd=tmp_path)
    one_line_error(result, "shop imports nosuchdependency, which is not installed")


@pytest.mark.parametrize(
    ("spider", "needle"),
    [
        ("missing/docs.py:Docs", "no such file"),
        ("spiders/docs.py:Nope", "has no spider class Nope"),
        ("spiders/broken.py:Docs", "cannot import"),
    ],
)
def test_a_spider_file_that_cannot_be_used_is_one_line(
    tmp_path: Path, spider: str, needle: str
) -> None:
    write_spider(tmp_path / "spiders")
    (tmp_path / "spiders" / "broken.py").write_text("raise RuntimeError('broken spider')\n")
    result = crawlog("crawl", SEED, "--spider", spider, cwd=tmp_path)
    one_line_error(result, needle)
