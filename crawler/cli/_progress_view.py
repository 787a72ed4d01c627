"""How progress is shown: a rich live table on a terminal, plain lines elsewhere, or JSON.

Only formatting: the numbers are computed in ``crawler/ops/_progress.py`` and read in
``crawler/ops/_progress_source.py``. Plain lines are what a log file or a CI job wants (no cursor
movement, one self-contained line per refresh and site); the rich table redraws in place.
rich is imported only for the table: plain lines, e.g. of a crawl whose output is piped,
cost a crawl no rich import on the way to its summary.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, Self

import msgspec

from crawler.cli._terminal import TERMINAL as _TERMINAL
from crawler.ops import TOTAL, Progress, Row, format_duration, format_eta
from eventlog import WorkerInfo

if TYPE_CHECKING:
    from rich.console import Console, Group

SITE_LINES_MAX = 20
"""Sites listed one per line in plain output; beyond, the busiest ones."""


def as_dict(report: Progress) -> dict[str, Any]:
    """The progress as plain JSON-able data (``crawlog status --json``)."""
    return {
        "job": report.job,
        "position": report.position,
        "complete": report.complete,
        "tail_events": report.tail_events,
        "behind_s": None if report.behind_s is None else round(report.behind_s, 3),
        "job_paused": report.job_paused,
        "job_paused_reason": report.job_paused_reason,
        "dead_letters": report.dead_letters,
        "clock_skew": [msgspec.to_builtins(s) for s in report.clock_skew],
        "requests_maybe_twice": report.requests_maybe_twice,
        "items_dropped": report.items_dropped,
        "lease_ms": report.lease_ms,
        "total": _row_dict(report.total),
        "sites": [_row_dict(r) for r in report.sites],
        "workers": [msgspec.to_builtins(w) for w in report.workers],
        "host_delays": [msgspec.to_builtins(d) for d in report.host_delays],
    }


def _row_dict(row: Row) -> dict[str, Any]:
    counts = row.counts
    data: dict[str, Any] = msgspec.to_builtins(counts)
    data.update(
        finished=counts.finished,
        remaining=counts.remaining,
        rate=None if row.rate is None else round(row.rate, 3),
        pages_rate=None if row.pages_rate is None else round(row.pages_rate, 3),
        eta_s=None if row.eta_s is None else round(row.eta_s, 3),
        window_s=round(row.window_s, 3),
        # ``paused`` is the row's flag (nothing here can end until a pause is lifted), which
        # takes the counts' key: the count of paused and parked tasks is ``parked``.
        parked=counts.paused,
        paused=row.paused,
    )
    return data


def _rate(rate: float | None) -> str:
    return "-" if rate is None else f"{rate:.1f}"


def _percent(row: Row) -> str:
    counts = row.counts
    return f"{100 * counts.finished / counts.discovered:.1f}%" if counts.discovered else "-"


def _flags(row: Row) -> str:
    flags = []
    if row.counts.site == TOTAL:
        # The sites' own rows say which one is held back.
        if row.paused:
            flags.append("paused")
    elif row.counts.site_paused:
        flags.append("paused")
    elif row.paused:
        flags.append("job paused")
    if row.counts.circuit_open and row.counts.site != TOTAL:
        flags.append("circuit open")
    if n := row.counts.circuit_openings:
        # Each opening held the site's pages for the job's --circuit-cooldown.
        flags.append("circuit opened once" if n == 1 else f"circuit opened {n} times")
    return f" [{', '.join(flags)}]" if flags else ""


def row_line(row: Row) -> str:
    """One row as a line of text."""
    counts = row.counts
    name = "total" if counts.site == TOTAL else counts.site
    return (
        f"{name}: {counts.finished}/{counts.discovered} tasks ended ({_percent(row)}), "
        f"{_rate(row.rate)}/s, ETA {format_eta(row)}, {counts.failed} failed, "
        f"{counts.retries} retries, {counts.recoveries} recovered{_flags(row)}"
    )


def _lease_age(worker: WorkerInfo) -> str:
    if worker.oldest_lease_ms is None:
        return "-"
    return format_duration(worker.oldest_lease_ms / 1000, tenths=True)


def workers_line(report: Progress) -> str:
    """The workers in one line: alive ones, and dead ones still holding leases."""
    if not report.workers:
        return "workers: none"
    parts = [
        f"{w.name}{'' if w.alive else ' (gone)'} {w.leases} leases, oldest {_lease_age(w)}"
        for w in report.workers
    ]
    alive = sum(1 for w in report.workers if w.alive)
    return f"workers: {alive} alive; " + "; ".join(parts)


def _slot_wait_ms(worker: WorkerInfo, lease_ms: int | None) -> int | None:
    """How long a gone worker's politeness slots still hold their hosts: until the first of
    its leases expires (whoever recovers it frees them) or their ttl runs out."""
    if worker.alive or not worker.held_slots:
        return None
    ends = [worker.slots_expire_ms] if worker.slots_expire_ms is not None else []
    if lease_ms and worker.oldest_lease_ms is not None:
        ends.append(max(lease_ms - worker.oldest_lease_ms, 0))
    return min(ends) if ends else None


def no_worker_text(report: Progress) -> str:
    """``no worker alive: ...`` with how to resume, when every worker the job had is gone
    and tasks are left (a killed crawl); else nothing."""
    workers = report.workers
    if not workers or any(w.alive for w in workers) or not report.total.counts.remaining:
        return ""
    return (
        f"no worker alive: run the same `crawlog crawl ... --job {report.job}` again to resume "
        "(its workers take their tasks back)"
    )


def slot_wait_text(report: Progress) -> str:
    """``waiting for a host slot (N s)`` while gone workers hold slots that a live worker
    waits for, else nothing (with no worker alive, nobody waits)."""
    if not any(w.alive for w in report.workers):
        return ""
    waits = [_slot_wait_ms(w, report.lease_ms) for w in report.workers]
    known = [ms for ms in waits if ms is not None]
    return f"waiting for a host slot ({format_duration(max(known) / 1000)})" if known else ""


def workers_summary(report: Progress) -> str:
    """The workers in a few words: how many live, the oldest lease any of them holds."""
    alive = sum(1 for w in report.workers if w.alive)
    ages = [w.oldest_lease_ms for w in report.workers if w.oldest_lease_ms is not None]
    oldest = f", oldest lease {format_duration(max(ages) / 1000, tenths=True)}" if ages else ""
    gone = len(report.workers) - alive
    held = f", {gone} gone holding leases" if gone else ""
    waiting = f", {text}" if (text := no_worker_text(report) or slot_wait_text(report)) else ""
    return f"{alive} worker(s) alive{oldest}{held}{waiting}"


def progress_lines(report: Progress, *, detail: bool = False) -> list[str]:
    """Plain text: the total (and, briefly, the workers), then each site if there are several.

    With ``detail``, one more line lists every worker; without, a crawl's log gets one line
    per refresh for a one-site job.
    """
    total = row_line(report.total).removeprefix("total: ")
    name = report.job if report.run is None else f"{report.job} run {report.run}"
    lines = [f"progress {name}: {total}; {workers_summary(report)}{_job_flags(report)}"]
    if len(report.sites) > 1:
        busiest = sorted(report.sites, key=lambda r: (-r.counts.remaining, r.counts.site))
        lines += [f"  {row_line(r)}" for r in busiest[:SITE_LINES_MAX]]
        if len(report.sites) > SITE_LINES_MAX:
            lines.append(f"  ... and {len(report.sites) - SITE_LINES_MAX} more sites")
    if detail:
        lines.append(f"  {workers_line(report)}")
        lines.append(f"  {projector_line(report)}")
        if delays := host_delays_line(report):
            lines.append(f"  {delays}")
        if report.items_dropped:
            lines.append(f"  {items_dropped_text(report)}")
    return lines


def host_delays_line(report: Progress) -> str:
    """``autothrottle: HOST delay S, ...`` (the delay each host has now), or nothing
    without ``--autothrottle``."""
    if not report.host_delays:
        return ""
    shown = [f"{d.host} delay {d.delay_ms / 1000:.2f} s" for d in report.host_delays]
    more = len(shown) - SITE_LINES_MAX
    listed = ", ".join(shown[:SITE_LINES_MAX]) + (f", ... and {more} more" if more > 0 else "")
    return f"autothrottle: {listed}"


def items_dropped_text(report: Progress) -> str:
    """``items dropped by pipelines: N (reason n, ...)``; nothing when none were."""
    dropped = report.items_dropped
    if not dropped:
        return ""
    reasons = ", ".join(f"{reason} {n}" for reason, n in dropped.items())
    return f"items dropped by pipelines: {sum(dropped.values())} ({reasons})"


def job_paused_text(report: Progress) -> str:
    """``job paused (why)``, or nothing when the job is not paused."""
    if not report.job_paused:
        return ""
    why = f" ({report.job_paused_reason})" if report.job_paused_reason else ""
    return f"job paused{why}: no task starts until `crawlog resume --job {report.job}`"


def dead_letters_text(report: Progress) -> str:
    """How many entries nobody could decode, and where to see them; nothing when none."""
    if not report.dead_letters:
        return ""
    return (
        f"{report.dead_letters} dead letter(s): entries nobody could decode, in no count "
        f"here (crawlog dead list --job {report.job})"
    )


def clock_skew_text(report: Progress) -> str:
    """The workers whose clock is off the server's, by how much; nothing when none is."""
    if not report.clock_skew:
        return ""
    offsets = ", ".join(
        f"{s.worker} {abs(s.offset_s):,.0f} s {'ahead' if s.offset_s > 0 else 'behind'}"
        for s in report.clock_skew
    )
    return f"worker clock off the server's: {offsets} (their events' own times are off too)"


def _job_flags(report: Progress) -> str:
    flags = [
        text
        for text in (job_paused_text(report), dead_letters_text(report), clock_skew_text(report))
        if text
    ]
    return "".join(f"; {flag}" for flag in flags)


def projector_line(report: Progress) -> str:
    """Where the log is, and how far the projector's last commit is behind it."""
    where = f"log position {report.position}"
    if not report.tail_events:
        return f"{where}; projector up to date"
    age = f" / {report.behind_s:.1f} s" if report.behind_s is not None else ""
    return f"{where}; projector behind by {report.tail_events} events{age}"


def progress_renderable(report: Progress) -> Group:
    from rich import box
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    """A rich table of sites and one of workers."""
    sites = Table(title=f"crawlog job {report.job}", title_justify="left", box=box.SIMPLE_HEAD)
    # The site folds onto more lines rather than squeeze the numbers off a narrow terminal.
    sites.add_column("site", overflow="fold", min_width=12)
    for header in ("ended/found", "%", "tasks/s", "pages/s", "ETA", "failed", "retry", "recov"):
        sites.add_column(header, justify="right", no_wrap=True)
    rows = list(report.sites)
    if len(rows) != 1:
        rows.append(report.total)
    for row in rows:
        counts = row.counts
        name = "total" if counts.site == TOTAL else counts.site
        sites.add_row(
            # Text, not markup: "[paused]" would be read as a style tag and vanish.
            Text(f"{name}{_flags(row)}"),
            f"{counts.finished}/{counts.discovered}",
            _percent(row),
            _rate(row.rate),
            _rate(row.pages_rate),
            format_eta(row),
            str(counts.failed),
            str(counts.retries),
            str(counts.recoveries),
            style="bold" if counts.site == TOTAL else None,
        )
    workers = Table(box=box.SIMPLE_HEAD)
    for header in ("worker", "state", "leases", "oldest lease", "idle"):
        workers.add_column(header, justify="left" if header == "worker" else "right")
    lease = f" / {format_duration(report.lease_ms / 1000)}" if report.lease_ms else ""
    for worker in report.workers:
        workers.add_row(
            Text(worker.name),
            Text("alive") if worker.alive else Text(_gone_state(worker, report), style="red"),
            str(worker.leases),
            _lease_age(worker) + (lease if worker.oldest_lease_ms is not None else ""),
            format_duration(worker.idle_ms / 1000, tenths=True),
        )
    parts: list[Any] = []
    if report.job_paused:
        parts.append(Text(job_paused_text(report), style="bold yellow"))
    parts += [sites, workers if report.workers else Text("no workers")]
    if nobody := no_worker_text(report):
        parts.append(Text(nobody, style="yellow"))
    if report.dead_letters:
        parts.append(Text(dead_letters_text(report), style="red"))
    if report.clock_skew:
        parts.append(Text(clock_skew_text(report), style="yellow"))
    if report.items_dropped:
        parts.append(Text(items_dropped_text(report)))
    parts.append(Text(projector_line(report)))
    if delays := host_delays_line(report):
        parts.append(Text(delays))
    return Group(*parts)


def _gone_state(worker: WorkerInfo, report: Progress) -> str:
    wait = _slot_wait_ms(worker, report.lease_ms)
    if wait is None or not any(w.alive for w in report.workers):
        return "gone"
    return f"gone, waiting for a host slot ({format_duration(wait / 1000)})"


class Display(Protocol):
    """Shows progress as it changes; a context manager around a crawl or a watch."""

    def __enter__(self) -> Self: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...

    def update(self, report: Progress) -> None:
        """Show this progress now."""


class PlainDisplay:
    """Prints lines for each update: for pipes, log files and CI."""

    def __init__(self, echo: Callable[[str], None], *, detail: bool = False) -> None:
        self.echo = echo
        self.detail = detail

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None

    def update(self, report: Progress) -> None:
        """Print the progress as plain lines."""
        for line in progress_lines(report, detail=self.detail):
            self.echo(line)


class LiveDisplay:
    """A rich table redrawn in place on the terminal."""

    def __init__(self, console: Console) -> None:
        from rich.live import Live

        # Redrawn on each update only: an automatic refresh would redraw unchanged numbers.
        self.live = Live(console=console, auto_refresh=False, transient=False)

    def __enter__(self) -> Self:
        with _TERMINAL:
            self.live.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        with _TERMINAL:
            self.live.__exit__(exc_type, exc, tb)

    def update(self, report: Progress) -> None:
        """Redraw the table."""
        renderable = progress_renderable(report)
        with _TERMINAL:
            self.live.update(renderable, refresh=True)


def display_for(
    echo: Callable[[str], None], *, console: Console | None = None, detail: bool = False
) -> Display:
    """A live table if stdout is a terminal, else plain lines through ``echo``."""
    if console is None and not _may_be_a_terminal():
        return PlainDisplay(echo, detail=detail)
    from rich.console import Console

    console = console or Console()
    if console.is_terminal and not console.is_dumb_terminal:
        return LiveDisplay(console)
    return PlainDisplay(echo, detail=detail)


_TERMINAL_ENV = ("FORCE_TERMINAL", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "FORCE_COLOR")
"""What makes rich take an output for a terminal (or not) whatever it is."""


def _may_be_a_terminal() -> bool:
    """Whether rich could find stdout a terminal: it is a tty, or the environment says how
    to take it (then rich decides). False: plain lines, without importing rich."""
    if any(name in os.environ for name in _TERMINAL_ENV):
        return True
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False  # closed, or no file: as rich takes it
