"""``crawlog demo``: a real crawl, a worker SIGKILLed in the middle of it, an exact resume.

The demo serves the generated test site (with a few faults on: 500s and 429s that
recover, slow pages, redirects, a redirect loop, a huge page, a robots.txt disallow),
crawls it with two worker processes and the projector, SIGKILLs worker ``w1`` at about
40 % while it holds tasks, starts a replacement, and lets the crawl finish. Then it checks,
from the site's own request log and from the event log (via DuckDB): every reachable page
fetched, pages fetched again only among those in flight at the kill, no item twice,
``replay --verify`` identical, and prints the report. Exit status 0 only if all hold.
"""

from __future__ import annotations

import os
import shlex
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import click
from anyio.abc import Process

from crawler._job import JobConfig, save_config
from crawler._politeness import Politeness
from crawler.cli._options import data_dir_option
from crawler.testsite import Faults, RunningSite, serve_testsite
from eventlog import (
    REDIS_URL_ENV,
    JobKeys,
    TaskQueue,
    connect,
    ensure_server,
    resolve_data_dir,
    resolve_url,
)

if TYPE_CHECKING:
    from projector import Store

DEMO_PAGES = 1_500
KILL_AT = 0.4
DEMO_LEASE_MS = 3_000
"""Short leases, so that the killed worker's tasks are taken over within seconds."""
DEMO_CIRCUIT_FAILURES = 20
DEMO_CIRCUIT_COOLDOWN_S = 5.0
"""The site's 500s are scattered (a tenth of its pages, once each), but 32 fetches at a
time can meet five in a row: the default breaker (5 failures, 30 s) then held the whole
small demo for half a minute. As for any site known to fail this way, the breaker is set
for it; it still opens on a run of 20, for 5 s."""
CONCURRENCY = 16
POLL_S = 0.01
PROJECTOR_WAIT_S = 60.0


async def run_demo(
    url: str, data_dir: Path, pages: int, echo: Callable[[str], None]
) -> tuple[bool, str]:
    """Run the demo; whether every invariant held, and the job's name."""
    from crawler._worker import enqueue_seeds
    from crawler.cli._argv import crawlog_command
    from crawler.cli._processes import stop_processes
    from projector import Store, wait_for_position

    job = f"demo-{time.strftime('%Y%m%d-%H%M%S')}"
    env = {**os.environ, "REDIS_URL": url}
    common = ("--job", job, "--data-dir", str(data_dir))
    worker_args = ("worker", *common, "--concurrency", str(CONCURRENCY), "--exit-when-done")
    async with (
        serve_testsite(pages=pages, seed=7, faults=Faults.all()) as site,
        connect(url) as client,
    ):
        config = JobConfig(
            seeds=(site.url + "/",),
            lease_ms=DEMO_LEASE_MS,
            politeness=Politeness(per_host=2 * CONCURRENCY),
            circuit_failures=DEMO_CIRCUIT_FAILURES,
            circuit_cooldown_s=DEMO_CIRCUIT_COOLDOWN_S,
        )
        await save_config(client, JobKeys(job), config)
        queue = TaskQueue(client, job, "demo")
        await enqueue_seeds(queue, list(config.seeds), actor="demo")
        echo(f"job {job}: crawling {site.url} ({len(site.reachable)} reachable pages, faults on)")
        processes = [await anyio.open_process(crawlog_command("project", *common), env=env)]
        try:
            w1 = await anyio.open_process(crawlog_command(*worker_args, "--name", "w1"), env=env)
            w2 = await anyio.open_process(crawlog_command(*worker_args, "--name", "w2"), env=env)
            processes += [w1, w2]
            in_flight = await _kill_mid_task(site, queue, w1, echo)
            w3 = await anyio.open_process(crawlog_command(*worker_args, "--name", "w3"), env=env)
            processes.append(w3)
            echo("started w3 to replace it; w2 and w3 take over its tasks when their leases expire")
            for worker in (w2, w3):
                await worker.wait()
            last = await queue.log.last_id()
            if last is not None:
                await wait_for_position(client, job, last, PROJECTOR_WAIT_S)
        finally:
            with anyio.CancelScope(shield=True):
                await stop_processes(processes)
        return _verdict(site, Store(data_dir, job), in_flight, config.lease_ms, echo), job


async def _kill_mid_task(
    site: RunningSite, queue: TaskQueue, victim: Process, echo: Callable[[str], None]
) -> dict[str, str]:
    """SIGKILL ``w1`` once 40 % is fetched, while it holds tasks; the tasks it held."""
    from crawler.testsite import tasks_held

    target = int(KILL_AT * len(site.reachable))
    while site.request_count < target or not await queue.leases_of("w1"):
        await anyio.sleep(POLL_S)
    victim.send_signal(signal.SIGKILL)
    await victim.wait()
    held = await queue.leases_of("w1")
    tasks = await tasks_held(queue, held)
    shown = ", ".join(sorted(tasks.values())[:5]) + (" ..." if len(tasks) > 5 else "")
    echo(
        f"killed w1 with SIGKILL after {site.request_count} requests; "
        f"it held {len(held)} task(s) mid-way: {shown}"
    )
    return tasks


def _verdict(
    site: RunningSite,
    store: Store,
    in_flight: dict[str, str],
    lease_ms: int,
    echo: Callable[[str], None],
) -> bool:
    from crawler.cli._report_text import format_report
    from crawler.testsite import check_crawl
    from projector import build_report

    check = check_crawl(site, store, in_flight)
    checks = check.checks(len(in_flight))
    echo("")
    echo(format_report(build_report(store, lease_s=lease_ms / 1000, now=time.time())))
    echo("")
    echo(
        f"pages requested: {check.requested}, reachable: {check.reachable}, lost: {len(check.lost)}"
    )
    counts = site.fetch_counts()
    redone = sorted(u for u in in_flight.values() if counts.get(u.removeprefix(site.url), 0) > 1)
    echo(
        f"in flight at the kill: {len(in_flight)} task(s); fetched again by the site's log: "
        f"{len(redone)} {redone}"
    )
    again = check.refetched_in_log
    echo(f"a task's page recorded twice in the log: {len(again)} {[row[2] for row in again]}")
    echo(f"items: {check.items}, distinct keys: {check.distinct_items}")
    differences = check.replay_differences
    echo(
        f"replay --verify at {check.replay_position}: "
        f"{'identical' if not differences else differences[:3]}"
    )
    for name, held in checks.items():
        echo(f"  {'ok  ' if held else 'FAIL'} {name}")
    return all(checks.values())


@click.command("demo", epilog="Example:  crawlog demo --pages 1000")
@click.option("--pages", type=click.IntRange(50, 20_000), default=DEMO_PAGES, show_default=True)
@data_dir_option
@click.pass_context
def demo_command(ctx: click.Context, pages: int, data_dir: Path | None) -> None:
    """Crawl the test site, SIGKILL a worker at 40 %, finish, and prove nothing was lost.

    Uses the server of the data directory (started if needed, and left running: the demo
    says how to stop it), or REDIS_URL. Exits 0 only
    if every reachable page was fetched, only pages in flight at the kill were fetched
    again, no item is there twice, and replay gives the live state exactly. The job's data
    stays: run `crawlog report --job JOB` or `crawlog sql --job JOB ...` on it afterwards.
    """
    directory = resolve_data_dir(data_dir)
    server = None if os.environ.get(REDIS_URL_ENV) else ensure_server(directory)
    url = server.url if server is not None else resolve_url(data_dir)
    ok, job = anyio.run(run_demo, url, directory, pages, click.echo)
    click.echo("every invariant holds" if ok else "AN INVARIANT FAILED")
    click.echo(
        f"the job's log and archive stay: crawlog report --job {job}   "
        f'crawlog sql --job {job} "SELECT status, count(*) FROM pages GROUP BY 1"'
    )
    if server is not None:
        # A daemon outlives the demo (every later command uses it): say how to end it.
        click.echo(
            f"crawlog's valkey-server (pid {server.pid}) keeps running for them; "
            f"stop it with: crawlog server stop --data-dir {shlex.quote(str(directory))}"
        )
    ctx.exit(0 if ok else 1)
