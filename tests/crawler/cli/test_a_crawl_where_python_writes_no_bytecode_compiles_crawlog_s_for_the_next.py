"""Where ``PYTHONDONTWRITEBYTECODE`` is set, a source checkout had no bytecode and every
crawlog process compiled each module it imported, in every crawl: a crawl that finds its
packages' bytecode missing or stale compiles them once, in the background, as it exits."""

from __future__ import annotations

import os
import py_compile
import shutil
import time
from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.cli._bytecode import NO_BYTECODE_ENV, PACKAGES, stale_sources
from crawler.testsite import serve_testsite
from tests.crawler.cli_run import clean_env
from tests.crawler.conftest import ROOT

pytestmark = pytest.mark.anyio


def test_a_module_is_stale_without_bytecode_or_edited_after_it(tmp_path: Path) -> None:
    fresh, edited, bare = (tmp_path / f"{name}.py" for name in ("fresh", "edited", "bare"))
    for source in (fresh, edited, bare):
        source.write_text("X = 1\n")
    py_compile.compile(str(fresh))
    py_compile.compile(str(edited))
    later = time.time() + 10
    os.utime(edited, (later, later))
    assert sorted(stale_sources([tmp_path])) == [bare, edited]


async def test_a_crawl_without_bytecode_leaves_every_module_of_crawlog_compiled(
    valkey_url: str, data_dir: Path, job: str, tmp_path: Path
) -> None:
    source = tmp_path / "src"
    for name in PACKAGES:
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    packages = [source / name for name in PACKAGES]
    assert len(stale_sources(packages)) > 100, "the copy has no bytecode"
    env = {
        **clean_env(REDIS_URL=valkey_url),
        "PYTHONPATH": str(source),
        NO_BYTECODE_ENV: "1",
    }
    async with serve_testsite(pages=3, seed=1) as site:
        command = crawlog_command(
            "crawl", site.url + "/", "--job", job, "--depth", "0", "--workers", "1",
            "--data-dir", str(data_dir),
        )  # fmt: skip
        with anyio.fail_after(60):
            crawl = await anyio.run_process(command, env=env, cwd=tmp_path, check=False)
    assert crawl.returncode == 0, crawl.stderr.decode()
    with anyio.fail_after(60):
        while stale := stale_sources(packages):
            await anyio.sleep(0.05)
    assert stale == []
