"""Chaos run: crawl the test site while killing anything at any time; then prove nothing was
lost or done twice.

    python tools/chaos.py --rounds 50 --seed 1

A crawl of the generated test site (faults on: 500s, 429s, slow pages, redirects, a loop, a
huge page, a robots.txt disallow) by 3 worker processes and the projector, on crawlog's own
Valkey server started with ``appendfsync always``. Each worker reaches Valkey over TCP
through its own fault-injecting proxy (``tools/faultproxy.py``); the projector and this
tool use the unix socket directly. A seeded chaos loop, after a random pause, does one of:

* ``kill_worker``: SIGKILL a random worker; a replacement (new name) starts at once;
* ``stop_worker``: SIGSTOP a worker for longer than its lease, then SIGCONT it: the others
  take its tasks over, and what it still tries to write is refused (fencing);
* ``kill_projector``: SIGKILL the projector and start it again;
* ``kill_valkey``: SIGKILL the server and start it again on the same data and socket;
  the last event seen before the kill must still be there (appendfsync always);
* ``lose_reply``: a worker's next command reaches the server, its reply is dropped and
  the connection cut (redis-py retries: the idempotent scripts must absorb it);
* ``delay``: a worker's Redis traffic is held back for a while;
* ``oom_window``: ``CONFIG SET maxmemory`` far below what the server holds for a few
  seconds, then back: workers and projector ride the refused writes out;
* ``second_projector``: ``crawlog project --once`` on another data directory mid-crawl:
  it must be refused (the job's projector lease), the crawl unaffected;
* ``damage_file``: SIGKILL the projector, truncate its manifest or snapshot, repair it
  with ``crawlog repair``, and let the projector resume;
* ``kill_primary``: a side crawl (``crawlog crawl --durability replica``) on a replica set
  of its own, its primary SIGKILLed mid-crawl: the Sentinels promote the replica and the
  same crawl ends.
* ``kill_primary_local``: the same with ``--durability local`` (the workers journal every
  write): the replica is cut off from its primary for up to a second first, so the promoted
  replica lacks writes the workers were told went through; the promotion must raise the
  job's epoch once and the journals give every such write back.

One round is one fault. When the crawl ends with rounds left, another crawl (new job, new
site seed) takes the rest. After each crawl the invariants (``crawler/testsite/_invariants.py``,
shared with ``crawlog demo``) are checked from the site's request log and from the log:
every reachable page fetched and every task terminal; pages fetched twice only among, and
no more than, those in flight at the faults; no item twice; ``replay --verify`` identical;
no event rejected; Redis memory bounded. Recovery time is from a kill (or stop) to the
first event another worker writes for each task the victim held.

Prints a table of faults and invariants and, as its last line, one JSON object. Exit
status 0 only if every invariant holds.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TypeVar
from urllib.parse import quote

import anyio
import redis.asyncio as aioredis
import redis.exceptions
from anyio.abc import Process, TaskGroup
from faultproxy import FaultProxy, serve_proxy

from crawler import JobConfig, Politeness, enqueue_seeds, save_config
from crawler.cli import crawlog_command, stop_processes
from crawler.cli.demo import DEMO_CIRCUIT_COOLDOWN_S, DEMO_CIRCUIT_FAILURES
from crawler.testsite import (
    CrawlCheck,
    Faults,
    RunningSite,
    check_crawl,
    serve_testsite,
    tasks_held,
)
from eventlog import (
    REDIS_URL_ENV,
    TERMINAL_EVENT_TYPES,
    CrawlogError,
    EventLog,
    JobKeys,
    JournalSettle,
    TaskOrphaned,
    TaskQueue,
    TaskReclaimed,
    acknowledged_writes,
    client_for,
    ensure_server,
    journal_directory,
    primary_facts,
    projector_holder,
    read_identity,
    read_journal,
    read_leases,
    replica_set_password_path,
    replica_set_status,
    server_status,
    start_replica_set,
    stop_replica_set,
    stop_server,
    stream_id_key,
)
from projector import (
    MANIFEST,
    TERMINAL,
    Store,
    archived_entries,
    read_committed,
    wait_for_position,
)

T = TypeVar("T")

LEASE_MS = 3_000
"""Short leases, so that the tasks of a killed or stopped worker move within seconds."""
WORKERS = 3
CONCURRENCY = 16
DEFAULT_PAGES = 3_000
PAUSE_S = (0.2, 1.2)
"""Random pause before each fault."""
STOP_BEYOND_LEASE_S = 2.0
"""A stopped worker stays stopped this long past its lease: others have reclaimed by then."""
VALKEY_DOWN_S = (0.2, 1.5)
DELAY_S = (0.05, 0.5)
"""Per-chunk delay of a worker's Redis traffic..."""
DELAY_FOR_S = (1.0, 3.0)
"""...for this long."""
FAULT_WEIGHTS = {
    "kill_worker": 3,
    "stop_worker": 2,
    "kill_projector": 2,
    "kill_valkey": 2,
    "lose_reply": 3,
    "delay": 2,
    "oom_window": 2,
    "second_projector": 1,
    "damage_file": 1,
    "kill_primary": 1,
    "kill_primary_local": 1,
    "lose_store": 1,
}
MEMORY_BOUND_MB = 128.0
"""Peak ``used_memory`` allowed: the projector trims the log, dedup sets expire."""
RECOVERY_GIVE_UP_S = 120.0
CRAWL_TIMEOUT_S = 900.0
PROJECTOR_WAIT_S = 120.0
REDIS_RETRY_S = 30.0
PROJECTOR_LEASE_WAIT_S = 10.0
POLL_S = 0.05
RESTART_PAUSE_S = 0.2
WARM_UP_REQUESTS = 100
OOM_FOR_S = (2.0, 5.0)
"""How long the server stays out of memory (well within the 60 s the processes ride out)."""
OOM_MAXMEMORY = "1mb"
"""Far below what a crawl's server holds: every write is refused (``noeviction``)."""
SIDE_PAGES = 300
"""Site size of a side crawl (``kill_primary``)."""
SIDE_WORKERS = 2
SIDE_CONCURRENCY = 8
SIDE_CRAWL_S = 240.0
SIDE_FAULT_AT = 3
"""A side crawl's fault comes once the site served 1/3 of its pages."""
SIDE_DOWN_AFTER_MS = 3_000
"""The Sentinels' down-after of a side replica set (5 s by default): a quick failover, and
not shorter, as in the tests' replica sets: a Sentinel that has just switched to a new
primary counts it silent until its first reply, and on a loaded machine a shorter
down-after calls the new primary down too and fails over a second time."""
REPLICA_SET_KINDS = ("kill_primary", "kill_primary_local")
CUT_S = 1.0
"""The longest the replica is cut off before its primary is killed (``kill_primary_local``):
a replica whose link has been down for much longer than the Sentinels' down-after is not
promoted."""
CUT_REQUESTS = 20
"""...and the cut ends as soon as the site served this many requests meanwhile."""
PAUSE_WRITES_MS = 10_000
"""``CLIENT PAUSE ... WRITE`` of the primary about to be killed: what it holds and what the
workers were told stay still while they are read (the kill ends the pause)."""
WRONG_PASSWORD = "not-the-password"
COMMAND_TIMEOUT_S = 120.0
AOF_DIR = "appendonlydir"
"""Valkey's default ``appenddirname``: where the embedded server keeps its append-only files."""


@dataclass
class Fault:
    """One fault injected, and what it had in flight."""

    round: int
    crawl: int
    kind: str
    target: str
    at_s: float
    in_flight: dict[str, str] = field(default_factory=dict)
    recovery_s: float | None = None
    """Kill/stop: until every task the victim held ran again elsewhere (None: none held)."""
    reclaim_s: float | None = None
    """Kill/stop: until every task the victim held was taken back (``TaskReclaimed``)."""
    server_down_s: float = 0.0
    """Kill/stop: how much of ``recovery_s`` the server was down (a later round killed it)."""
    note: str = ""
    fenced: int = 0
    """Stop: writes of the continued worker refused with ``LeaseLost`` (from its log)."""


@dataclass
class Slot:
    """One of the crawl's worker places: its proxy and its current process."""

    index: int
    proxy: FaultProxy
    name: str = ""
    process: Process | None = None
    done: bool = False


@dataclass
class Totals:
    """Across every crawl of the run."""

    faults: list[Fault] = field(default_factory=list)
    checks: list[tuple[int, CrawlCheck, dict[str, bool]]] = field(default_factory=list)
    crashes: list[str] = field(default_factory=list)
    """Processes that died without being killed (name, status, last line of stderr)."""
    acked_lost: int = 0
    replica_lacked: int = 0
    failover_anomalies: int = 0
    """Events refused as repeats of a task done (``... while done``) after a promotion
    whose replica lacked the old primary's last writes: the projector archived the first
    run from the old primary (documented in docs/operating.md); any other refusal counts."""
    """Events of writes the workers were told went through that a promoted replica lacked
    (``kill_primary_local``): what the journals had to give back."""
    memory_peak_mb: float = 0.0
    pages: int = 0
    stream_after: list[int] = field(default_factory=list)
    server_down: list[list[float]] = field(default_factory=list)
    """[killed, back up] (monotonic) of each Valkey kill; back up is inf until it is."""
    failed: list[str] = field(default_factory=list)
    """Faults whose expected outcome did not come: a second projector that ran, a repair
    that failed, a side crawl that did not end, with what was seen."""


class ChaosRun:
    """The whole run: a Valkey server, crawls one after another, the chaos loop."""

    def __init__(
        self,
        rounds: int,
        seed: int,
        pages: int,
        work: Path,
        echo: Callable[[str], None],
        kinds: list[str] | None = None,
    ) -> None:
        self.rounds, self.seed, self.pages, self.work, self.echo = rounds, seed, pages, work, echo
        self.kinds = kinds or list(FAULT_WEIGHTS)
        self._cycle: list[str] = []
        self.rng = random.Random(seed)
        self.totals = Totals()
        self.started = time.monotonic()
        self.round = 0
        self.server = ensure_server(work, fsync="always")
        self.url = self.server.url
        self.logs = work / "logs"
        self.logs.mkdir(exist_ok=True)

    def next_kind(self) -> str:
        """The next fault: every kind once first (in a seeded order), then weighted draws."""
        if not self._cycle and self.round < len(self.kinds):
            self._cycle = self.rng.sample(self.kinds, len(self.kinds))
        if self.round < len(self._cycle):
            return self._cycle[self.round]
        return self.rng.choices(self.kinds, [FAULT_WEIGHTS[kind] for kind in self.kinds])[0]

    def now(self) -> float:
        return time.monotonic() - self.started

    async def run(self) -> None:
        """Crawl until every round has been injected (one crawl at least)."""
        crawl = 0
        asyncio.get_running_loop().set_exception_handler(_ignore_unix_socket_race)
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._sample_memory)
            while crawl == 0 or self.round < self.rounds:
                crawl += 1
                await Crawl(self, crawl).run()
            tg.cancel_scope.cancel()

    async def _sample_memory(self) -> None:
        client = client_for(self.url)
        try:
            while True:
                with contextlib.suppress(redis.exceptions.RedisError, OSError):
                    info: dict[str, Any] = await client.info("memory")
                    used = int(info["used_memory"]) / 2**20
                    self.totals.memory_peak_mb = max(self.totals.memory_peak_mb, used)
                await anyio.sleep(0.5)
        finally:
            with anyio.CancelScope(shield=True):
                await client.aclose()

    async def kill_valkey(self) -> tuple[float, bool]:
        """SIGKILL the server, wait, start it on the same data; (seconds down, events kept)."""
        outage = [time.monotonic(), math.inf]
        self.totals.server_down.append(outage)
        os.kill(self.server.pid, signal.SIGKILL)
        while Path(f"/proc/{self.server.pid}").exists() and _state(self.server.pid) not in "ZX":
            await anyio.sleep(0.01)
        down = self.rng.uniform(*VALKEY_DOWN_S)
        await anyio.sleep(down)
        self.server = await anyio.to_thread.run_sync(
            lambda: ensure_server(self.work, fsync="always")
        )
        outage[1] = time.monotonic()
        return down, True


class Crawl:
    """One job crawled to the end under chaos, then checked."""

    def __init__(self, run: ChaosRun, number: int) -> None:
        self.run_, self.number = run, number
        self.job = f"chaos-{run.seed}-{number}"
        self.names = 0
        self.killed: set[Process] = set()
        self.finishing = False
        self.projector: Process | None = None
        self.projector_held = False
        """While set, a dead projector is not restarted (its files are being damaged)."""
        self.slots: list[Slot] = []
        self.in_flight: dict[str, str] = {}
        self.stderr: dict[str, Path] = {}
        self.site_requests: Callable[[], int] = lambda: 0

    @property
    def common(self) -> tuple[str, ...]:
        return ("--job", self.job, "--data-dir", str(self.run_.work))

    async def run(self) -> None:
        run = self.run_
        client = client_for(run.url)
        async with (
            serve_testsite(
                pages=run.pages, seed=run.seed + self.number, faults=Faults.all()
            ) as site,
            contextlib.AsyncExitStack() as proxies,
        ):
            self.site_requests = lambda: site.request_count
            for index in range(WORKERS):
                proxy = await proxies.enter_async_context(
                    serve_proxy(unix_path=run.server.socket_path)
                )
                self.slots.append(Slot(index, proxy))
            self.queue = TaskQueue(client, self.job, "chaos", lease_ms=LEASE_MS)
            self.log = EventLog(client, self.job)
            # The demo's breaker, for the same scattered faults: with the default one (5 in
            # a row, 30 s) a run of retried 500s sometimes held the site for 30 s or more,
            # and the suite's short run took 140 s instead of 12.
            config = JobConfig(
                seeds=(site.url + "/",),
                lease_ms=LEASE_MS,
                politeness=Politeness(per_host=WORKERS * CONCURRENCY),
                circuit_failures=DEMO_CIRCUIT_FAILURES,
                circuit_cooldown_s=DEMO_CIRCUIT_COOLDOWN_S,
            )
            await save_config(client, JobKeys(self.job), config)
            await enqueue_seeds(self.queue, list(config.seeds), actor="chaos")
            run.echo(
                f"crawl {self.number}: job {self.job}, {len(site.reachable)} reachable pages, "
                f"{WORKERS} workers x {CONCURRENCY}, lease {LEASE_MS / 1000:g} s"
            )
            try:
                with anyio.fail_after(CRAWL_TIMEOUT_S):
                    await self._crawl(site)
            finally:
                with anyio.CancelScope(shield=True):
                    await client.aclose()
            store = Store(run.work, self.job)
            check = check_crawl(site, store, self.in_flight)
            checks = check.checks(len(self.in_flight))
            run.totals.checks.append((self.number, check, checks))
            run.totals.pages += check.requested
            self._crawl_report(check, checks)
            # Fencing at work: what the stopped workers tried to write once continued.
            for fault in run.totals.faults:
                if fault.crawl == self.number and fault.kind == "stop_worker":
                    text = self.stderr[fault.target].read_text(errors="replace")
                    fault.fenced = text.count("nothing was written")
                    fault.note += f"; {fault.fenced} late write(s) refused"

    async def _crawl(self, site: RunningSite) -> None:
        async with anyio.create_task_group() as background:
            background.start_soon(self._supervise_projector)
            chaos = anyio.CancelScope()
            background.start_soon(self._chaos_loop, chaos, background)
            async with anyio.create_task_group() as workers:
                for slot in self.slots:
                    workers.start_soon(self._supervise_worker, slot)
            chaos.cancel()
            # Every task is terminal: let the projector catch up, then stop it (it commits).
            last = await self._retrying(self.log.last_id)
            if last is not None:
                position = await wait_for_position(
                    self.queue.redis, self.job, last, PROJECTOR_WAIT_S
                )
                if position is None:
                    self.run_.totals.crashes.append(f"{self.job}: projector did not reach {last}")
            self.finishing = True
            if self.projector is not None:
                await stop_processes([self.projector])
            self.run_.totals.stream_after.append(await self._retrying(self.log.length))
            # The recovery trackers end by themselves once their tasks ran elsewhere.
            with anyio.move_on_after(10):
                while self._trackers:
                    await anyio.sleep(POLL_S)
            background.cancel_scope.cancel()

    # --- processes -----------------------------------------------------------------------

    def _log_file(self, name: str) -> IO[bytes]:
        path = self.run_.logs / f"{self.job}-{name}.log"
        self.stderr[name] = path
        return path.open("ab")

    async def _supervise_worker(self, slot: Slot) -> None:
        """Keep a worker running in this slot until one exits 0 (every task terminal)."""
        while True:
            self.names += 1
            slot.name = f"w{self.names}"
            command = crawlog_command(
                "worker", *self.common, "--concurrency", str(CONCURRENCY), "--exit-when-done",
                "--name", slot.name,
            )  # fmt: skip
            env = {**os.environ, "REDIS_URL": slot.proxy.url}
            with self._log_file(slot.name) as err:
                process = await anyio.open_process(command, env=env, stdout=err, stderr=err)
            slot.process = process
            status = await process.wait()
            if status == 0:
                slot.done = True
                return
            if process not in self.killed:
                self._crashed(slot.name, status)
                await anyio.sleep(RESTART_PAUSE_S)

    async def _supervise_projector(self) -> None:
        """Keep the projector running (restarted after a kill or a crash) until the end."""
        env = {**os.environ, "REDIS_URL": self.run_.url}
        attempt = 0
        while not self.finishing:
            attempt += 1
            name = f"projector{attempt}"
            with self._log_file(name) as err:
                process = await anyio.open_process(
                    crawlog_command("project", *self.common), env=env, stdout=err, stderr=err
                )
            self.projector = process
            try:
                status = await process.wait()
            except anyio.get_cancelled_exc_class():
                with anyio.CancelScope(shield=True):
                    await stop_processes([process])
                raise
            if not self.finishing and process not in self.killed:
                self._crashed(name, status)
                await anyio.sleep(RESTART_PAUSE_S)
            while self.projector_held:
                await anyio.sleep(POLL_S)

    def _crashed(self, name: str, status: int) -> None:
        lines = self.stderr[name].read_text(errors="replace").strip().splitlines()
        last = lines[-1] if lines else ""
        self.run_.totals.crashes.append(f"{self.job} {name} exit {status}: {last[:200]}")
        self.run_.echo(f"  ! {name} exited with status {status}: {last[:200]}")

    def _alive_workers(self) -> list[Slot]:
        alive = [s for s in self.slots if s.process is not None and s.process.returncode is None]
        return [s for s in alive if s.process not in self.killed]

    # --- chaos ---------------------------------------------------------------------------

    _trackers: int = 0

    async def _chaos_loop(self, scope: anyio.CancelScope, background: TaskGroup) -> None:
        run = self.run_
        with scope:
            # Faults start once the workers are under way (they take a second to start).
            while self.site_requests() < WARM_UP_REQUESTS:
                await anyio.sleep(POLL_S)
            while run.round < run.rounds:
                await anyio.sleep(run.rng.uniform(*PAUSE_S))
                kind = run.next_kind()
                # An injection is never cut short: a stopped worker must get its SIGCONT,
                # a killed server its restart.
                with anyio.CancelScope(shield=True):
                    fault = await self._inject(kind, background)
                if fault is not None:
                    run.totals.faults.append(fault)
                    self.in_flight.update(fault.in_flight)
                    run.echo(
                        f"  round {fault.round:>3} at {fault.at_s:6.1f} s: {kind:<14} "
                        f"{fault.target:<10} in flight {len(fault.in_flight):>3} {fault.note}"
                    )

    async def _inject(self, kind: str, background: TaskGroup) -> Fault | None:
        run = self.run_
        workers = self._alive_workers()
        if kind in ("kill_worker", "stop_worker", "lose_reply", "delay") and not workers:
            return None
        if kind in ("kill_projector", "second_projector", "damage_file") and (
            self.projector is None or self.projector.returncode is not None
        ):
            return None
        run.round += 1
        fault = Fault(run.round, self.number, kind, "", run.now())
        if kind == "kill_worker":
            slot = run.rng.choice(workers)
            # The slot's supervisor renames the slot as soon as the process is gone.
            process, name = slot.process, slot.name
            assert process is not None
            fault.target = name
            mark = await self._retrying(self.log.last_id)
            self.killed.add(process)
            process.send_signal(signal.SIGKILL)
            killed = time.monotonic()
            await process.wait()
            fault.in_flight = await self._held(name)
            self._track(background, fault, name, mark, killed, back_at=None)
        elif kind == "stop_worker":
            slot = run.rng.choice(workers)
            process, name = slot.process, slot.name
            assert process is not None
            fault.target = name
            mark = await self._retrying(self.log.last_id)
            process.send_signal(signal.SIGSTOP)
            stopped = time.monotonic()
            back_at: list[str | None] = [None]
            try:
                fault.in_flight = await self._held(name)
                self._track(background, fault, name, mark, stopped, back_at=back_at)
                await anyio.sleep(LEASE_MS / 1000 + STOP_BEYOND_LEASE_S)
            finally:
                back_at[0] = await self._retrying(self.log.last_id)
                with contextlib.suppress(ProcessLookupError):
                    process.send_signal(signal.SIGCONT)
            fault.note = f"stopped {time.monotonic() - stopped:.1f} s"
        elif kind == "kill_projector":
            assert self.projector is not None
            fault.target = "projector"
            self.killed.add(self.projector)
            self.projector.send_signal(signal.SIGKILL)
            await self.projector.wait()
        elif kind == "kill_valkey":
            fault.target = "valkey"
            for slot in workers:
                fault.in_flight.update(await self._held(slot.name))
            seen = await self._retrying(self.log.last_id)
            down, _ = await run.kill_valkey()
            after = await self._retrying(self.log.last_id)
            kept = seen is None or (
                after is not None and stream_id_key(after) >= stream_id_key(seen)
            )
            if not kept:
                run.totals.acked_lost += 1
            fault.note = f"down {down:.1f} s; last event {seen} {'kept' if kept else 'LOST'}"
        elif kind == "lose_reply":
            slot = run.rng.choice(workers)
            fault.target = slot.name
            fault.in_flight = await self._held(slot.name)
            slot.proxy.lose_next_reply()
            fault.note = "next reply dropped, connections cut"
        elif kind == "delay":
            slot = run.rng.choice(workers)
            fault.target = slot.name
            fault.in_flight = await self._held(slot.name)
            per_chunk, for_s = run.rng.uniform(*DELAY_S), run.rng.uniform(*DELAY_FOR_S)
            slot.proxy.delay(per_chunk, for_s)
            fault.note = f"{per_chunk * 1000:.0f} ms per chunk for {for_s:.1f} s"
        elif kind == "oom_window":
            await self._oom_window(fault, workers)
        elif kind == "second_projector":
            await self._second_projector(fault)
        elif kind == "damage_file":
            await self._damage_file(fault)
        else:
            await SideCrawl(run, fault).run()
        return fault

    async def _oom_window(self, fault: Fault, workers: list[Slot]) -> None:
        """The server out of memory for a few seconds: every write refused, then room again.

        Leases cannot be renewed meanwhile, so every worker's tasks are in flight.
        """
        run = self.run_
        fault.target = "valkey"
        for slot in workers:
            fault.in_flight.update(await self._held(slot.name))
        client = client_for(run.url)
        for_s = run.rng.uniform(*OOM_FOR_S)
        try:
            before = await self._retrying(lambda: _oom_refusals(client))
            await self._retrying(lambda: client.config_set("maxmemory", OOM_MAXMEMORY))
            await anyio.sleep(for_s)
        finally:
            await self._retrying(lambda: client.config_set("maxmemory", "0"))
            refused = await self._retrying(lambda: _oom_refusals(client)) - before
            await client.aclose()
        fault.note = f"maxmemory {OOM_MAXMEMORY} for {for_s:.1f} s: {refused} write(s) refused"

    async def _second_projector(self, fault: Fault) -> None:
        """``crawlog project --once`` of the job on another data directory: refused."""
        run = self.run_
        fault.target = "projector"
        other = run.work / f"other-{fault.round}"
        # Only a lease held is a lease to refuse by: a projector restarted a moment ago (after
        # a `damage_file` or `kill_projector` round) has not taken it yet, and a second one
        # that takes a free lease first is right to.
        if not await self._projector_holds_lease():
            fault.note = "the crawl's projector held no lease: not a second projector"
            return
        result = await _crawlog(
            ("project", "--job", self.job, "--data-dir", str(other), "--once"), run.url
        )
        last = _last_line(result.stderr or result.stdout)
        refused = result.returncode == 2 and "another projector holds" in last
        fault.note = f"exit {result.returncode}: {last[:160]}"
        if not refused:
            run.totals.failed.append(f"round {fault.round} second projector: {fault.note}")

    async def _projector_holds_lease(self) -> bool:
        """Whether the crawl's projector holds the job's projector lease, waited for up to
        ``PROJECTOR_LEASE_WAIT_S`` (its restart takes the lease once it has started)."""
        process = self.projector
        with anyio.move_on_after(PROJECTOR_LEASE_WAIT_S):
            while process is not None and process.returncode is None:
                holder = await self._retrying(
                    lambda: projector_holder(self.queue.redis, JobKeys(self.job))
                )
                if holder is not None and holder.pid == process.pid:
                    return True
                await anyio.sleep(0.1)
        return False

    async def _damage_file(self, fault: Fault) -> None:
        """Between a projector's kill and its restart, truncate its manifest or snapshot;
        ``crawlog repair`` (the documented path) rebuilds it, then the projector resumes."""
        run = self.run_
        assert self.projector is not None
        fault.target = "projector"
        self.projector_held = True
        try:
            self.killed.add(self.projector)
            self.projector.send_signal(signal.SIGKILL)
            await self.projector.wait()
            store = Store(run.work, self.job)
            root = store.root
            if not (root / MANIFEST).exists():
                # Killed before its first commit: there is no file to damage yet.
                fault.note = "projector killed before its first commit: nothing to damage"
                return
            snapshot = store.read_manifest().snapshot
            damaged = root / MANIFEST
            if snapshot is not None and run.rng.random() < 0.5:
                damaged = store.snapshots / snapshot
            size = damaged.stat().st_size
            with damaged.open("r+b") as file:
                file.truncate(size // 2)
            result = await _crawlog(
                ("repair", "--job", self.job, "--data-dir", str(run.work)), run.url
            )
            last = _last_line(result.stdout or result.stderr)
            fault.note = (
                f"{damaged.relative_to(root)} cut to {size // 2} of {size} bytes; "
                f"repair exit {result.returncode}: {last[:120]}"
            )
            if result.returncode != 0:
                run.totals.failed.append(f"round {fault.round} repair: {fault.note}")
        finally:
            self.projector_held = False

    async def _held(self, name: str) -> dict[str, str]:
        async def read() -> dict[str, str]:
            return await tasks_held(self.queue, await self.queue.leases_of(name))

        return await self._retrying(read)

    def _track(
        self,
        tg: TaskGroup,
        fault: Fault,
        victim: str,
        mark: str | None,
        t0: float,
        *,
        back_at: list[str | None] | None,
    ) -> None:
        if not fault.in_flight:
            return
        self._trackers += 1
        tg.start_soon(self._recovery, fault, victim, mark, t0, back_at)

    async def _recovery(
        self,
        fault: Fault,
        victim: str,
        mark: str | None,
        t0: float,
        back_at: list[str | None] | None,
    ) -> None:
        """Time until every task ``victim`` held was reclaimed, and ran again elsewhere.

        A stopped worker may, once continued, be given one of its old tasks again: that
        task then ran again, but not elsewhere, and is left out.
        """
        waiting, unclaimed = set(fault.in_flight), set(fault.in_flight)
        position = mark or "0-0"
        try:
            with anyio.move_on_after(RECOVERY_GIVE_UP_S):
                while waiting:
                    try:
                        entries = await self.log.read_after(position, 1000)
                    except (CrawlogError, redis.exceptions.RedisError, OSError):
                        await anyio.sleep(0.2)
                        continue
                    for entry in entries:
                        position = entry.stream_id
                        event = entry.event
                        task_id = getattr(event, "task_id", None)
                        if task_id not in waiting:
                            continue
                        if isinstance(event, TaskReclaimed):
                            if task_id in unclaimed:
                                unclaimed.discard(task_id)
                                if not unclaimed:
                                    fault.reclaim_s = time.monotonic() - t0
                        elif (
                            event.actor != victim
                            or _after(entry.stream_id, back_at)
                            or isinstance(event, TERMINAL_EVENT_TYPES)
                        ):
                            # A terminal event of the victim's own: its last step was on its
                            # way (in the proxy) when it was stopped or killed, and the server
                            # took it, lease still held: the task ended, nothing to recover.
                            waiting.discard(task_id)
                            unclaimed.discard(task_id)
                    if not entries:
                        await anyio.sleep(POLL_S)
            if not waiting:
                fault.recovery_s = time.monotonic() - t0
                fault.server_down_s = _overlap(t0, t0 + fault.recovery_s, self.run_.totals)
                if fault.reclaim_s is None:
                    fault.reclaim_s = fault.recovery_s
            else:
                fault.note += f" {len(waiting)} task(s) never ran elsewhere"
        finally:
            self._trackers -= 1
            if waiting and fault.recovery_s is None and "never ran" not in fault.note:
                # Cut off when the crawl ended: name what was still awaited, to look into.
                fault.note += (
                    f" recovery not seen for {len(waiting)} task(s), e.g. {sorted(waiting)[:3]}"
                )

    async def _retrying(self, call: Callable[[], Awaitable[T]]) -> T:
        """``call()``, retried while the server is down (a chaos round may have killed it)."""
        with anyio.fail_after(REDIS_RETRY_S):
            while True:
                try:
                    return await call()
                except (CrawlogError, redis.exceptions.RedisError, OSError):
                    await anyio.sleep(0.1)

    def _crawl_report(self, check: CrawlCheck, checks: dict[str, bool]) -> None:
        echo = self.run_.echo
        echo(
            f"crawl {self.number} checked: requested {check.requested}/{check.reachable} pages, "
            f"lost {len(check.lost)}, unfinished {len(check.unfinished)}, refetched "
            f"{check.refetched_pages} (log {len(check.refetched_in_log)}, site "
            f"{len(check.refetched_by_site)}) of {len(self.in_flight)} in flight, items "
            f"{check.items} ({check.duplicate_items} duplicated), anomalies {check.anomalies}"
        )
        for name, held in checks.items():
            if not held:
                echo(f"  FAIL {name}")
        if check.lost:
            echo(f"    lost: {check.lost[:10]}")
        if check.unfinished:
            echo(f"    unfinished: {check.unfinished[:10]}")
        if check.refetched_outside:
            echo(
                f"    refetched outside the faults' in-flight tasks: {check.refetched_outside[:10]}"
            )


class SideCrawl:
    """A crawl of its own, run by ``crawlog crawl`` as a user runs it, for a fault that needs
    a store of its own, once the site served a third of its pages:

    * ``kill_primary``: on a replica set with ``--durability replica``, the primary
      SIGKILLed; the crawl must end by itself (exit 0);
    * ``kill_primary_local``: the same with ``--durability local``, the replica cut off
      first (`FailoverWitness`); the crawl must end by itself, the epoch raised once, and
      every write the workers were told went through in the archive (or orphaned);
    * ``lose_store``: on the data directory's own server, its data lost (``FLUSHALL``, or
      SIGKILL and its append-only files deleted, the crawl's supervisor restarting it
      empty); the crawl must stop with exit 2 naming ``crawlog restore``, then
      ``crawlog restore --job J --yes`` and the same crawl command end the job.

    Either is then checked like the main crawls, the leases held at the fault as its
    in-flight tasks."""

    def __init__(self, run: ChaosRun, fault: Fault) -> None:
        self.run_, self.fault = run, fault
        self.job = f"chaos-{run.seed}-r{fault.round}"
        self.directory = run.work / f"side-{fault.round}"
        self.log = run.logs / f"{self.job}-crawl.log"
        self.witness: FailoverWitness | None = None
        # The data directory's server or replica set, found by the crawl itself.
        self.env = {k: v for k, v in os.environ.items() if k != REDIS_URL_ENV}

    def _command(self, site: RunningSite) -> list[str]:
        durability = "replica" if self.fault.kind == "kill_primary" else "local"
        return crawlog_command(
            "crawl", site.url + "/", "--job", self.job, "--data-dir", str(self.directory),
            "--workers", str(SIDE_WORKERS), "--concurrency", str(SIDE_CONCURRENCY),
            "--per-host", str(SIDE_WORKERS * SIDE_CONCURRENCY), "--lease", f"{LEASE_MS / 1000:g}",
            "--max-pages", "0", "--fail-on", "never", "--durability", durability,
        )  # fmt: skip

    async def run(self) -> None:
        run, fault = self.run_, self.fault
        if fault.kind in REPLICA_SET_KINDS:
            fault.target = "primary"
            url = (
                await anyio.to_thread.run_sync(
                    lambda: start_replica_set(self.directory, down_after_ms=SIDE_DOWN_AFTER_MS)
                )
            ).url
        else:
            fault.target = "store"
            url = (await anyio.to_thread.run_sync(lambda: ensure_server(self.directory))).url
        try:
            async with serve_testsite(pages=SIDE_PAGES, seed=run.seed * 1000 + fault.round) as site:
                if await self._crawl(site, url):
                    await self._check(site)
                    if self.witness is not None:
                        await self._check_failover(url, self.witness)
        finally:
            with anyio.CancelScope(shield=True):
                if fault.kind in REPLICA_SET_KINDS:
                    await anyio.to_thread.run_sync(stop_replica_set, self.directory)
                else:
                    await anyio.to_thread.run_sync(stop_server, self.directory)

    async def _crawl(self, site: RunningSite, url: str) -> bool:
        """The crawl, the fault, and what the user does next; whether it all went as said."""
        fault = self.fault
        started = time.monotonic()
        with self.log.open("ab") as out:
            process = await anyio.open_process(
                self._command(site), env=self.env, stdout=out, stderr=out
            )
        status: int | None = None
        try:
            with anyio.move_on_after(SIDE_CRAWL_S):
                while site.request_count < len(site.reachable) // SIDE_FAULT_AT:
                    if process.returncode is not None:
                        break
                    await anyio.sleep(POLL_S)
                if fault.kind == "kill_primary":
                    fault.in_flight, killed = await self._kill_primary()
                    fault.note = f"primary pid {killed} SIGKILLed"
                elif fault.kind == "kill_primary_local":
                    fault.in_flight = await self._leases(url)
                    self.witness = await self._fail_over_unreplicated(site)
                    fault.in_flight.update(self.witness.leases)
                else:
                    fault.in_flight = await self._leases(url)
                    await self._lose_store(url)
                status = await process.wait()
                if fault.kind == "lose_store":
                    fault.in_flight.update(self._forgotten(site))
                if self.witness is not None:
                    fault.in_flight.update(self._urls(self.witness.lacked_tasks))
        finally:
            if process.returncode is None:
                with anyio.CancelScope(shield=True):
                    await stop_processes([process])
        text = self.log.read_text(errors="replace")
        fault.note += f"; crawl exit {status} after {time.monotonic() - started:.1f} s"
        if fault.kind in REPLICA_SET_KINDS:
            return self._ended(status, text)
        said = status == 2 and f"crawlog restore --job {self.job}" in text
        if not said or f"finished {self.job}" in text:
            return self._failed(f"the crawl went on or did not say to restore: exit {status}")
        restore = await _crawlog(
            ("restore", "--job", self.job, "--data-dir", str(self.directory), "--yes"), None
        )
        said_out = restore.stdout.decode(errors="replace")
        line = next(
            (ln for ln in said_out.splitlines() if "restored" in ln), _last_line(restore.stderr)
        )
        fault.note += f"; restore exit {restore.returncode}: {line[:100]}"
        if restore.returncode != 0:
            return self._failed("restore failed")
        resumed = time.monotonic()
        mark = self.log.stat().st_size
        status = None
        with anyio.move_on_after(SIDE_CRAWL_S), self.log.open("ab") as log:
            again = await anyio.run_process(
                self._command(site), env=self.env, stdout=log, stderr=log, check=False
            )
            status = again.returncode
        fault.note += f"; same crawl again exit {status} after {time.monotonic() - resumed:.1f} s"
        with self.log.open("rb") as log:
            log.seek(mark)
            return self._ended(status, log.read().decode(errors="replace"))

    def _ended(self, status: int | None, text: str) -> bool:
        if status == 0 and f"finished {self.job}" in text:
            return True
        return self._failed(f"the crawl did not end: exit {status}, {_tail(text)}")

    def _failed(self, what: str) -> bool:
        self.run_.totals.failed.append(
            f"round {self.fault.round} {self.fault.kind} ({self.job}): {what}; see {self.log}"
        )
        return False

    async def _lose_store(self, url: str) -> None:
        """FLUSHALL, or SIGKILL and the append-only files deleted (restarted empty)."""
        fault = self.fault
        if self.run_.rng.random() < 0.5:
            client = client_for(url)
            try:
                await client.flushall()
            finally:
                await client.aclose()
            fault.note = "FLUSHALL"
            return
        status = server_status(self.directory)
        assert status is not None
        # Deleted first: killed first, the supervisor may restart the server on the intact
        # files before they are gone, and the store would lose nothing.
        shutil.rmtree(self.directory / AOF_DIR, ignore_errors=True)
        os.kill(status.pid, signal.SIGKILL)
        while _state(status.pid) not in "ZX":
            await anyio.sleep(0.01)
        fault.note = f"{AOF_DIR}/ deleted, server pid {status.pid} SIGKILLed"

    def _forgotten(self, site: RunningSite) -> dict[str, str]:
        """Tasks the site already served but the archive has not seen end: what they did
        after the projector's last commit is what the lost store forgot, and ``restore``
        puts them back to run again (their journalled events come back orphaned once
        another worker took them)."""
        _, state = read_committed(Store(self.directory, self.job))
        served = {request.path for request in site.requests}
        return {
            task.task_id: task.url
            for task in state.tasks.values()
            if task.status not in TERMINAL and task.url.removeprefix(site.url) in served
        }

    async def _check(self, site: RunningSite) -> None:
        run, fault = self.run_, self.fault
        check = await anyio.to_thread.run_sync(
            lambda: check_crawl(site, Store(self.directory, self.job), fault.in_flight)
        )
        checks = check.checks(len(fault.in_flight))
        if fault.kind == "kill_primary_local":
            repeats = self._repeats_of_done()
            run.totals.failover_anomalies += repeats
            checks["no event rejected by the state machine"] = check.anomalies == repeats
        run.totals.checks.append((fault.crawl, check, checks))
        run.totals.pages += check.requested
        fault.note += (
            f"; lost {len(check.lost)}, refetched {check.refetched_pages}, items "
            f"{check.items} ({check.duplicate_items} duplicated), anomalies {check.anomalies}, "
            f"orphaned {check.orphaned}"
        )
        for name, held in checks.items():
            if not held:
                run.echo(f"  FAIL side crawl {self.job}: {name}")
        if check.refetched_outside:
            run.echo(
                f"    refetched outside the fault's in-flight tasks: {check.refetched_outside[:10]}"
            )

    async def _leases(self, url: str) -> dict[str, str]:
        """Task id -> URL of every lease of the job: the tasks a store fault has in flight."""
        client = client_for(url)
        try:
            leases, _ = await read_leases(client, JobKeys(self.job))
        except (CrawlogError, redis.exceptions.RedisError, OSError) as exc:
            self.fault.note += f" (leases not read: {exc})"
            return {}
        finally:
            await client.aclose()
        return {lease.task_id: lease.url or "" for lease in leases if lease.task_id}

    async def _fail_over_unreplicated(self, site: RunningSite) -> FailoverWitness:
        """``kill_primary_local``: the replica cut off from its primary (its link dropped,
        its reconnections refused by a wrong ``masterauth``) until the site served
        `CUT_REQUESTS` more requests or `CUT_S` passed; then the primary's writes paused,
        what it and the replica hold and what the workers were told read, and the primary
        SIGKILLed: the replica promoted lacks what the workers wrote meanwhile."""
        members = replica_set_status(self.directory) or []
        (primary,) = [m for m in members if m.role == "primary" and m.pid is not None]
        (replica,) = [m for m in members if m.role == "replica"]
        assert primary.pid is not None
        password = replica_set_password_path(self.directory).read_text().strip()
        async with _member(primary.port, password) as old, _member(replica.port, password) as new:
            await new.config_set("masterauth", WRONG_PASSWORD)
            try:
                await new.client_kill_filter(_type="master")
                cut, lagging_from = time.monotonic(), site.request_count
                with anyio.move_on_after(CUT_S):
                    while site.request_count < lagging_from + CUT_REQUESTS:
                        await anyio.sleep(POLL_S)
                await old.client_pause(PAUSE_WRITES_MS, all=False)
                witness = await self._witness(old, new)
                os.kill(primary.pid, signal.SIGKILL)
            finally:
                await new.config_set("masterauth", password)
        self.run_.totals.replica_lacked += len(witness.lacked)
        self.fault.note = (
            f"replica cut off {time.monotonic() - cut:.1f} s "
            f"({site.request_count - lagging_from} requests), primary pid {primary.pid} "
            f"SIGKILLed; the replica lacked {len(witness.lacked)} event(s) of the "
            f"{len(witness.told)} write(s) the journals had acknowledged, epoch {witness.epoch}"
        )
        return witness

    async def _witness(self, old: aioredis.Redis, new: aioredis.Redis) -> FailoverWitness:
        """What the paused primary and the cut-off replica hold, and what the workers'
        journals say they were told went through (a request's start aside: it is not given
        back, by design — the page's write that follows it clears it)."""
        keys = JobKeys(self.job)
        identity = await read_identity(old, keys)
        leases: dict[str, str] = {}
        for server in (old, new):
            held, _ = await read_leases(server, keys)
            leases |= {lease.task_id: lease.url or "" for lease in held if lease.task_id}
        old_entries = await EventLog(old, self.job).read_range()
        on_old = {e.event.event_id for e in old_entries}
        on_new = {e.event.event_id for e in await EventLog(new, self.job).read_range()}
        workers = self.directory / "workers"
        told = [
            write
            for name in sorted(p.name for p in workers.glob("*") if p.is_dir())
            for write in acknowledged_writes(
                read_journal(journal_directory(self.directory, name, self.job))
            )
            if write.event_ids and write.mode != "started"
        ]
        lacked = {i for write in told for i in write.event_ids if i in on_old - on_new}
        return FailoverWitness(
            epoch=identity.epoch if identity is not None else 0,
            leases=leases,
            told=told,
            lacked=lacked,
            lacked_tasks={
                task_id
                for entry in old_entries
                if entry.event.event_id not in on_new
                and (task_id := getattr(entry.event, "task_id", None)) is not None
            },
        )

    def _repeats_of_done(self) -> int:
        """Events the fold refused as a repeat of a task done (``... while done``)."""
        _, state = read_committed(Store(self.directory, self.job))
        return sum(n for reason, n in state.job.anomalies.items() if reason.endswith(" while done"))

    def _urls(self, task_ids: set[str]) -> dict[str, str]:
        """Task id -> URL of these tasks, from the committed state."""
        _, state = read_committed(Store(self.directory, self.job))
        return {t: state.tasks[t].url for t in task_ids if t in state.tasks}

    async def _check_failover(self, url: str, witness: FailoverWitness) -> None:
        """The promotion raised the epoch once, and every write the workers were told went
        through is in the archive, or was orphaned (its task's lease taken over: recorded,
        never applied, the task run again)."""
        keys = JobKeys(self.job)
        client = client_for(url)
        try:
            identity = await read_identity(client, keys)
            facts = await primary_facts(client, keys)
        finally:
            await client.aclose()
        epoch = identity.epoch if identity is not None else 0
        store = Store(self.directory, self.job)
        archived: set[str] = set()
        orphaned: set[tuple[str, str, str]] = set()
        for entry in archived_entries(store, store.read_manifest()):
            archived.add(entry.event.event_id)
            if isinstance(entry.event, TaskOrphaned):
                event = entry.event
                orphaned.add((event.task_id, event.entry_id, event.step))
        lost = [
            i
            for write in witness.told
            if (write.task_id, write.entry_id, write.mode) not in orphaned
            for i in write.event_ids
            if i not in archived
        ]
        self.run_.totals.acked_lost += len(lost)
        self.fault.note += (
            f"; epoch {witness.epoch} -> {epoch} (failovers {sorted(facts.failovers)}), "
            f"{len(lost)} acknowledged event(s) lost"
        )
        if epoch != witness.epoch + 1 or sorted(facts.failovers) != [witness.epoch + 1]:
            self._failed(f"the epoch went {witness.epoch} -> {epoch}, not raised once")
        if not witness.lacked:
            self._failed("the promoted replica lacked nothing: the fault did not bite")

    async def _kill_primary(self) -> tuple[dict[str, str], int]:
        """``kill_primary``: the primary's writes paused, its leases read (the tasks in
        flight: none can be claimed between the read and the kill), and the primary
        SIGKILLed; its pid."""
        members = replica_set_status(self.directory) or []
        (primary,) = [m for m in members if m.role == "primary" and m.pid is not None]
        assert primary.pid is not None
        password = replica_set_password_path(self.directory).read_text().strip()
        async with _member(primary.port, password) as old:
            await old.client_pause(PAUSE_WRITES_MS, all=False)
            held, _ = await read_leases(old, JobKeys(self.job))
            os.kill(primary.pid, signal.SIGKILL)
        return {lease.task_id: lease.url or "" for lease in held if lease.task_id}, primary.pid


@dataclass
class FailoverWitness:
    """``kill_primary_local``, read at the kill: what the workers were told went through,
    and what the promoted replica lacked of it."""

    epoch: int
    """The job's epoch before the promotion."""
    leases: dict[str, str]
    """Task id -> URL of every lease on the primary or the replica: in flight."""
    told: list[JournalSettle]
    """Every write (with events) the workers' journals say the store acknowledged."""
    lacked: set[str]
    """Event ids of those writes the primary had and the replica did not."""
    lacked_tasks: set[str]
    """Tasks with any event the primary had and the replica did not (a claim, a write):
    in flight too, run again at most (docs/operating.md, "Durability and failover")."""


@contextlib.asynccontextmanager
async def _member(port: int, password: str) -> AsyncIterator[aioredis.Redis]:
    """A client of one data server of a replica set, directly (not through the Sentinels)."""
    client = client_for(f"redis://:{quote(password, safe='')}@127.0.0.1:{port}")
    try:
        yield client
    finally:
        await client.aclose()


async def _oom_refusals(client: aioredis.Redis) -> int:
    """Commands the server refused for want of memory since it started (its error stats)."""
    stats: dict[str, Any] = await client.info("errorstats")
    return int(stats.get("errorstat_OOM", {}).get("count", 0))


async def _crawlog(args: tuple[str, ...], url: str | None) -> subprocess.CompletedProcess[bytes]:
    """``crawlog ARGS`` against the server at ``url`` (None: the data directory's), to its
    end."""
    env = {k: v for k, v in os.environ.items() if k != REDIS_URL_ENV}
    if url is not None:
        env[REDIS_URL_ENV] = url
    with anyio.fail_after(COMMAND_TIMEOUT_S):
        return await anyio.run_process(crawlog_command(*args), env=env, check=False)


def _last_line(output: bytes) -> str:
    lines = output.decode(errors="replace").strip().splitlines()
    return lines[-1] if lines else ""


def _tail(text: str) -> str:
    return " | ".join(text.strip().splitlines()[-3:])[-300:]


def _ignore_unix_socket_race(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """Drop one known, harmless asyncio complaint; report everything else as usual.

    anyio's unix socket stream waits with ``loop.add_reader(sock, future.set_result)``:
    when the proxy cancels a link while Valkey is being killed, the reader can fire after
    the future was cancelled, and asyncio logs an ``InvalidStateError`` for the callback.
    """
    if isinstance(context.get("exception"), asyncio.InvalidStateError):
        return
    loop.default_exception_handler(context)


def _after(stream_id: str, mark: list[str | None] | None) -> bool:
    """Whether ``stream_id`` comes after the mark (a stopped worker's SIGCONT)."""
    return (
        mark is not None
        and mark[0] is not None
        and (stream_id_key(stream_id) > stream_id_key(mark[0]))
    )


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return "X"


def summarize(run: ChaosRun) -> tuple[bool, dict[str, Any]]:
    """Print the tables; whether every invariant held, and the JSON figures."""
    totals, echo = run.totals, run.echo
    faults = totals.faults
    echo("")
    echo(
        f"{'round':>5} {'crawl':>5} {'at s':>7}  {'fault':<14} {'target':<10} {'in flight':>9} "
        f"{'reclaim s':>9} {'recovery s':>10}  note"
    )
    for f in faults:
        echo(
            f"{f.round:>5} {f.crawl:>5} {f.at_s:>7.1f}  {f.kind:<14} {f.target:<10} "
            f"{len(f.in_flight):>9} {_s(f.reclaim_s):>9} {_s(f.recovery_s):>10}  {f.note}"
            + (f" (server down {f.server_down_s:.1f} s of it)" if f.server_down_s else "")
        )
    in_flight = sum(len(f.in_flight) for f in faults)
    recoveries = [f.recovery_s for f in faults if f.recovery_s is not None]
    unrecovered = [
        f
        for f in faults
        if f.in_flight and f.kind in ("kill_worker", "stop_worker") and f.recovery_s is None
    ]
    checks = [c for _, c, _ in totals.checks]
    lost = sum(len(c.lost) for c in checks)
    duplicates = sum(c.duplicate_items for c in checks)
    refetched = sum(c.refetched_pages for c in checks)
    stuck = sum(len(c.unfinished) for c in checks)
    anomalies = sum(c.anomalies for c in checks) - totals.failover_anomalies
    replay_identical = all(not c.replay_differences for c in checks)
    max_recovery = max(recoveries, default=0.0)
    # The target is about noticing and moving a dead worker's tasks: while a later round
    # has the server down, no task can run anywhere, so that time is not counted against it
    # (both figures are reported).
    max_recovery_up = max(
        (f.recovery_s - f.server_down_s for f in faults if f.recovery_s is not None),
        default=0.0,
    )
    invariants = {
        f"{run.rounds} rounds injected": len(faults) >= run.rounds,
        "no reachable page lost (site request log)": lost == 0,
        "no task stuck (pending, running or paused)": stuck == 0,
        "no item duplicated in the output": duplicates == 0,
        "refetches only among in-flight tasks, and no more than them": all(
            held["pages fetched again only among those in flight at a fault"]
            for _, _, held in totals.checks
        ),
        "replay --verify identical": replay_identical,
        "no event rejected by the state machine (fencing; a promotion's documented repeats "
        "aside)": anomalies == 0,
        "no acknowledged event lost by a SIGKILLed Valkey or primary": totals.acked_lost == 0,
        f"Redis memory bounded (peak {totals.memory_peak_mb:.1f} MB <= {MEMORY_BOUND_MB:g})": (
            totals.memory_peak_mb <= MEMORY_BOUND_MB
        ),
        f"every killed worker's tasks ran again elsewhere within lease + 2 s of server "
        f"uptime (max {max_recovery_up:.1f} s; {max_recovery:.1f} s with the server's "
        "downtime)": not unrecovered and max_recovery_up <= LEASE_MS / 1000 + 2.0,
        "every second projector refused, every damaged file repaired, every side crawl "
        "ended by itself": not totals.failed,
    }
    echo("")
    for name, held in invariants.items():
        echo(f"  {'ok  ' if held else 'FAIL'} {name}")
    for failed in totals.failed:
        echo(f"  {failed}")
    if totals.crashes:
        echo(f"processes that died without being killed ({len(totals.crashes)}):")
        for crash in totals.crashes[:20]:
            echo(f"  {crash}")
    ok = all(invariants.values())
    figures: dict[str, Any] = {
        "rounds": len(faults),
        "seed": run.seed,
        "crawls": len(totals.checks),
        "pages_requested": totals.pages,
        "faults": dict(Counter(f.kind for f in faults)),
        "round_faults": [f.kind for f in faults],
        "faults_failed": len(totals.failed),
        "lost_pages": lost,
        "duplicate_items": duplicates,
        "refetched_pages": refetched,
        "inflight_at_kills": in_flight,
        "replay_identical": replay_identical,
        "stuck_tasks": stuck,
        "anomalies": anomalies,
        "failover_anomalies": totals.failover_anomalies,
        "orphaned_events": sum(c.orphaned for c in checks),
        "max_recovery_s": round(max_recovery, 2),
        "max_recovery_server_up_s": round(max_recovery_up, 2),
        "max_reclaim_s": round(max((f.reclaim_s for f in faults if f.reclaim_s), default=0.0), 2),
        "lease_s": LEASE_MS / 1000,
        "fenced_writes": sum(f.fenced for f in faults),
        "acked_events_lost": totals.acked_lost,
        "acked_missing_on_replica": totals.replica_lacked,
        "redis_peak_mb": round(totals.memory_peak_mb, 1),
        "stream_left_after_projection": totals.stream_after,
        "crashes": len(totals.crashes),
        "seconds": round(run.now(), 1),
        "ok": ok,
    }
    return ok, figures


def _overlap(start: float, end: float, totals: Totals) -> float:
    """Seconds of [start, end] during which the server was down."""
    return sum(max(0.0, min(end, up) - max(start, down)) for down, up in totals.server_down)


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def main() -> None:
    """Parse the options, run the chaos, print the figures; exit 1 if an invariant broke."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=10, help="faults to inject")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--pages", type=int, default=DEFAULT_PAGES, help="test site size")
    parser.add_argument(
        "--data-dir", type=Path, default=None, help="work dir (server, archive, logs) [a temp dir]"
    )
    parser.add_argument(
        "--kinds",
        default=",".join(FAULT_WEIGHTS),
        help=f"comma-separated fault kinds to draw from [{','.join(FAULT_WEIGHTS)}]",
    )
    args = parser.parse_args()
    kinds = [kind for kind in args.kinds.split(",") if kind]
    if unknown := set(kinds) - set(FAULT_WEIGHTS):
        parser.error(f"unknown fault kinds: {', '.join(sorted(unknown))}")
    work = args.data_dir or Path(tempfile.mkdtemp(prefix="crawlog-chaos-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"chaos: {args.rounds} rounds, seed {args.seed}, work dir {work}", flush=True)

    def echo(line: str) -> None:
        print(line, flush=True)

    run = ChaosRun(args.rounds, args.seed, args.pages, work.absolute(), echo, kinds)
    try:
        anyio.run(run.run)
    finally:
        # The server is ours: stop it (its data stays in the work dir).
        with contextlib.suppress(ProcessLookupError):
            os.kill(run.server.pid, signal.SIGTERM)
    ok, figures = summarize(run)
    # Every fault with its in-flight tasks, for a post-mortem.
    faults = [dataclasses.asdict(fault) for fault in run.totals.faults]
    (work / "faults.json").write_text(json.dumps(faults, indent=1))
    print(json.dumps(figures), flush=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
