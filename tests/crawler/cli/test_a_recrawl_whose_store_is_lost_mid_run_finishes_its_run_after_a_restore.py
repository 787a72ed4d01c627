"""A ``crawlog recrawl`` SIGKILLed part way through its run, its store then lost (a real
FLUSHALL of a real Valkey) and rebuilt by ``crawlog restore``: the crawl command run again
finishes the same run. The tasks the restore puts back are still the run's revisits: each
asks the site conditionally with what the earlier run's fetch left, so no page is sent in
full that did not change, and ``crawlog changes`` lists each edited and deleted page once.
Before, a restored task came back as a first run's task without its validators: every
unchanged page left was fetched in full and its verdict was missing from the run."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import serve_testsite
from projector import archive_facts
from tests.crawler.cli_run import clean_env
from tests.crawler.conftest import ROOT
from tests.valkey_process import running_valkey

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(180)]
PAGES, CHANGED, DELETED = 60, 5, 2
STEP_TIMEOUT_S = 60


async def test_the_restored_tasks_of_a_recrawl_are_revisits_of_its_run(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with running_valkey(tmp_path / "valkey") as server:
        env = clean_env(REDIS_URL=server.url)
        where = ("--job", "j", "--data-dir", str(data_dir))

        async def crawlog(*args: str) -> str:
            with anyio.fail_after(STEP_TIMEOUT_S):
                done = await anyio.run_process(
                    crawlog_command(*args, *where), cwd=ROOT, env=env, check=False
                )
            out = done.stdout.decode() + done.stderr.decode()
            assert done.returncode == 0, (args, out)
            return done.stdout.decode()

        # One request at a time, spaced: the kill lands with the run part done, its first
        # commits made (the projector's interval is a second) on a loaded machine too.
        polite = ("--workers", "1", "--concurrency", "4", "--per-host", "1", "--delay", "0.1")
        async with serve_testsite(pages=PAGES, seed=4) as site:
            crawl = ("crawl", site.url + "/", *polite)
            await crawlog(*crawl)
            first = len(site.requests)
            pages = first - 1  # all but robots.txt
            archived = archive_facts(data_dir, "j").events
            mutation = site.mutate(CHANGED, DELETED, seed=2)
            # The job's stored politeness applies to its recrawl.
            recrawl = crawlog_command("recrawl", *where, "--workers", "1")
            with anyio.fail_after(STEP_TIMEOUT_S):
                killed = await anyio.open_process(
                    recrawl, env=env, cwd=ROOT, start_new_session=True
                )
                # Past a third of the run, and its tasks in the archive: events the store
                # lost before they were archived (the recrawl's enqueues are not in any
                # worker's journal) are gone, and with them the run.
                while (
                    len(site.requests) < first + pages // 3
                    or archive_facts(data_dir, "j").events < archived + pages + pages // 3
                ):
                    await anyio.sleep(0.01)
                os.killpg(killed.pid, signal.SIGKILL)  # the recrawl, its worker, its projector
                await killed.wait()
                await killed.aclose()
            at_kill = len(site.requests)
            server.flushall()
            await crawlog("restore", "--yes")
            await crawlog(*crawl)  # its settings, lost with the store, given again
            listed = await crawlog("changes", "--format", "jsonl")
            verified = await crawlog("replay", "--verify")
            after_first = site.requests[first:]

    assert at_kill < first + pages, "the kill came before the run's end"
    rows = [json.loads(line) for line in listed.splitlines()]
    assert sorted((row["url"], row["change"]) for row in rows) == sorted(
        [(site.url + p, "changed") for p in mutation.changed]
        + [(site.url + p, "gone") for p in mutation.deleted]
    )
    assert {row["run"] for row in rows} == {2}
    # Every other page the recrawl asked for was answered 304: none sent in full.
    in_full = {r.path for r in after_first if r.status == 200 and r.path != "/robots.txt"}
    assert in_full <= set(mutation.changed), sorted(in_full - set(mutation.changed))
    assert "identical" in verified
