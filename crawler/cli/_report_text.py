"""A job's progress report (``projector``'s ``Report``) as plain text for a terminal."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from crawler._defaults import PAST_MAX_PAGES
from crawler.ops import table_lines, twice_phrase
from projector import LISTED

if TYPE_CHECKING:
    from projector import ClockSkew, Report

SERIES_SHOWN: Final = 10
"""Minutes of the throughput series a terminal shows (the last ones)."""
_KIB: Final = 1024.0
_BYTE_UNITS: Final = ("B", "KiB", "MiB", "GiB", "TiB")


def _n(value: int) -> str:
    return f"{value:,}"


def _count(value: int, noun: str, plural: str | None = None) -> str:
    """``1 task``, ``2 tasks``."""
    return f"{value:,} {noun if value == 1 else plural or noun + 's'}"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f} ms"


def _size(value: int) -> str:
    size = float(value)
    for unit in _BYTE_UNITS[:-1]:
        if size < _KIB:
            return f"{size:,.0f} {unit}" if unit == "B" else f"{size:,.1f} {unit}"
        size /= _KIB
    return f"{size:,.1f} {_BYTE_UNITS[-1]}"


def _time(epoch: float, fmt: str = "%Y-%m-%d %H:%M:%S") -> str:
    return dt.datetime.fromtimestamp(epoch, dt.UTC).strftime(fmt)


def _more(shown: int, total: int, what: str) -> list[str]:
    return [f"  … and {_n(total - shown)} more {what}"] if total > shown else []


def format_report(report: Report) -> str:
    """The report as plain text for a terminal."""
    lines = [
        f"crawlog report: job {report.job}",
        f"  as of {report.position} ({_n(report.events)} events archived), "
        f"generated {_time(report.generated_at)} UTC",
        "",
    ]
    lines += clock_skew_lines(report.clock_skew)
    for section in (
        _text_totals,
        _text_sites,
        _text_throughput,
        _text_response_times,
        _text_failures,
        _text_retries,
        _text_recoveries,
        _text_stuck,
        _text_anomalies,
    ):
        lines += [*section(report), ""]
    return "\n".join(lines).rstrip() + "\n"


def _text_totals(report: Report) -> list[str]:
    t = report.totals
    rows = [[status, _n(n)] for status, n in t.by_status.items()]
    return [
        f"Tasks: {_n(t.tasks)}",
        *table_lines(rows, [False, True], "  "),
        f"Pages: {_n(t.pages)} fetched ({twice_phrase(t.requests_maybe_twice)}), {_size(t.bytes)}",
        _items_line(report),
        f"URLs dropped: {_n(sum(t.dropped.values()))}"
        + "".join(f", {reason} {_n(n)}" for reason, n in t.dropped.items()),
        *_items_dropped(t.items_dropped),
        *_bound_reached(t.dropped),
    ]


def _items_line(report: Report) -> str:
    t, runs = report.totals, report.items_over_runs
    if runs is None:
        return f"Items: {_n(t.items)} ({_count(t.duplicate_items, 'duplicate')} ignored)"
    # The totals count a later run's new look at a key among the duplicates ignored.
    duplicates = max(0, t.duplicate_items - runs.scraped_again)
    return (
        f"Items: {_n(runs.live)} live after run {runs.runs} ({_n(runs.keys)} keys over "
        f"{runs.runs} runs: {_n(runs.keys - runs.live)} removed, "
        f"{_n(runs.scraped_again)} scraped again by a later run; "
        f"{_count(duplicates, 'duplicate')} ignored)"
    )


def clock_skew_lines(skews: Sequence[ClockSkew]) -> list[str]:
    """A warning line for each worker whose clock is off the server's, and a blank line."""
    if not skews:
        return []
    lines = [
        f"Warning: worker {s.worker}'s clock is {abs(s.offset_s):,.0f} s "
        f"{'ahead of' if s.offset_s > 0 else 'behind'} the server's: its events' own times "
        "are off by that much (rates and durations here are the server's)"
        for s in skews
    ]
    return [*lines, ""]


def _bound_reached(dropped: dict[str, int]) -> list[str]:
    """A line when ``--max-pages`` stopped the crawl; none when it did not."""
    line = bound_reached_line(dropped.get(PAST_MAX_PAGES, 0))
    return [] if line is None else [line[0].upper() + line[1:]]


def _items_dropped(dropped: dict[str, int]) -> list[str]:
    """``Items dropped by pipelines: N, reason n, ...``; no line for a job without drops."""
    if not dropped:
        return []
    by_reason = "".join(f", {reason} {_n(n)}" for reason, n in dropped.items())
    return [f"Items dropped by pipelines: {_n(sum(dropped.values()))}{by_reason}"]


def _text_sites(report: Report) -> list[str]:
    header = ["site", "done/total", "pending", "running", "pages", "failures", "state"]
    rows = [header]
    for s in report.sites[:LISTED]:
        flags = []
        if s.paused:
            flags.append(f"paused ({s.paused_reason})" if s.paused_reason else "paused")
        if s.circuit != "closed":
            flags.append(f"circuit {s.circuit} ({s.circuit_reason})")
        if s.circuit_openings:
            flags.append(f"circuit opened {_times(s.circuit_openings)}")
        rows.append(
            [
                s.site,
                f"{_n(s.done)}/{_n(s.total)}",
                _n(s.by_status.get("pending", 0)),
                _n(s.by_status.get("running", 0)),
                _n(s.pages),
                _n(s.failures),
                ", ".join(flags) or "ok",
            ]
        )
    return [
        f"Sites: {_n(len(report.sites))}",
        *table_lines(rows, [False, True, True, True, True, True, False], "  "),
        *_more(LISTED, len(report.sites), "sites"),
        *_circuit_openings(report),
        *_robots_lines(report),
    ]


def _robots_lines(report: Report) -> list[str]:
    """A line for each site whose robots.txt could not be read or was cut, and why."""
    notes = report.robots
    return [f"  robots.txt of {n.site}: {n.reason}" for n in notes[:LISTED]] + _more(
        LISTED, len(notes), "robots.txt files not taken whole"
    )


def _times(n: int) -> str:
    return "once" if n == 1 else f"{_n(n)} times"


def _circuit_openings(report: Report) -> list[str]:
    """``Circuits opened: N times on M sites``; no line for a job whose circuits never did:
    each opening held a site's pages for the job's ``--circuit-cooldown``."""
    opened = [s for s in report.sites if s.circuit_openings]
    if not opened:
        return []
    total = sum(s.circuit_openings for s in opened)
    return [f"Circuits opened: {_times(total)} on {_count(len(opened), 'site')}"]


def _text_throughput(report: Report) -> list[str]:
    t = report.throughput
    if t.peak_minute is None:
        return ["Throughput: no pages yet"]
    shown = t.series[-SERIES_SHOWN:]
    return [
        f"Throughput: {t.per_minute_avg:,.1f} pages/min on average over {_n(t.minutes)} min, "
        f"peak {_n(t.peak)} at {_time(t.peak_minute, '%Y-%m-%d %H:%M')} UTC",
        f"  last {len(shown)} min: " + " ".join(_n(m.pages) for m in shown),
    ]


def _text_response_times(report: Report) -> list[str]:
    r = report.response_times
    # Quantiles from the projector's histogram are within a bound, not exact: said so.
    near = "~" if r.quantiles_error else ""
    bound = f", p50 and p95 within {r.quantiles_error:.0%}" if r.quantiles_error else ""
    return [
        f"Response time: avg {_ms(r.avg_ms)}, p50 {near}{_ms(r.p50_ms)}, "
        f"p95 {near}{_ms(r.p95_ms)} ({_n(r.pages)} fetches{bound})"
    ]


def _text_failures(report: Report) -> list[str]:
    f = report.failures
    lines = [
        f"Failures: {_count(f.tasks, 'task')} failed or aborted, {_count(f.pages, 'page error')}"
    ]
    if f.task_reasons:
        lines.append("  tasks, by last reason:")
        lines += table_lines(
            [[_n(r.count), r.reason] for r in f.task_reasons], [True, False], "    "
        )
    if f.page_errors:
        lines.append("  page errors:")
        lines += table_lines(
            [[_n(r.count), r.reason] for r in f.page_errors], [True, False], "    "
        )
    if f.http_statuses:
        statuses = ", ".join(f"{s.status}: {_n(s.pages)}" for s in f.http_statuses)
        lines.append(f"  pages by HTTP status: {statuses}")
    return lines


def _text_retries(report: Report) -> list[str]:
    r = report.retries
    distribution = ", ".join(f"{d.retries}: {_count(d.tasks, 'task')}" for d in r.distribution)
    return [
        f"Retries: {_n(r.total)} scheduled, at most {_n(r.peak)} for one task; "
        f"{_count(r.pages_retried, 'page')} fetched again after a failed fetch "
        f"({_count(r.retry_fetches, 'fetch', 'fetches')})",
        f"  tasks by retries: {distribution or '-'}",
    ] + (
        [f"  released (handed back by a stopping worker, not a retry): {_n(r.released)}"]
        if r.released
        else []
    )


def _text_recoveries(report: Report) -> list[str]:
    r = report.recoveries
    lines = [
        f"Recoveries: {_count(r.tasks_resumed, 'task')} resumed after a lost lease; "
        f"{_count(r.pages_refetched, 'page')} fetched again after a good fetch "
        f"({_count(r.extra_fetches, 'extra fetch', 'extra fetches')}); "
        f"{_count(r.unrecorded_refetches, 'page')} fetched after a lost lease whose request "
        "may have been sent before"
    ]
    if r.resumed:
        lines.append("  resumed:")
        rows = [[t.task_id, f"x{t.recoveries}", t.status, t.url] for t in r.resumed]
        lines += table_lines(rows, [False, True, False, False], "    ")
        lines += _more(len(r.resumed), r.tasks_resumed, "tasks")
    if r.refetched:
        lines.append("  refetched:")
        rows = [[p.task_id, f"page {p.page}", f"x{p.times}", p.url] for p in r.refetched]
        lines += table_lines(rows, [False, True, True, False], "    ")
        lines += _more(len(r.refetched), r.pages_refetched, "pages")
    return lines


def _text_stuck(report: Report) -> list[str]:
    s = report.stuck
    lines = [f"Stuck: {_count(s.count, 'task')} running past the {s.lease_s:g} s lease"]
    rows = [
        [t.task_id, t.owner or "-", f"{t.idle_s:,.0f} s idle", f"attempt {t.attempt}", t.url]
        for t in s.tasks
    ]
    lines += table_lines(rows, [False, False, True, False, False], "    ")
    return lines + _more(len(s.tasks), s.count, "tasks")


def _text_anomalies(report: Report) -> list[str]:
    a = report.anomalies
    lines = [f"Anomalies: {_count(a.total, 'refused event')}"]
    if a.orphaned:
        lines[0] += (
            f" ({_n(a.orphaned)} of them journalled writes orphaned by a lease taken over: "
            "refused by design)"
        )
    if a.dead_letters:
        lines[0] += (
            f"; {_count(a.dead_letters, 'dead letter')} (entries that could not be decoded, "
            f"never folded: crawlog dead list --job {report.job})"
        )
    if a.by_reason:
        lines.append("  by reason:")
        lines += table_lines([[_n(r.count), r.reason] for r in a.by_reason], [True, False], "    ")
    if a.first:
        lines.append("  first:")
        rows = [[x.stream_id, x.event_type, x.task_id or "-", f"({x.reason})"] for x in a.first]
        lines += table_lines(rows, [False, False, False, False], "    ")
    return lines


def bound_reached_line(past: int) -> str | None:
    """What a crawl's summary or report says when its page bound left ``past`` links (or
    next pages) uncrawled; None when it left none."""
    if not past:
        return None
    return (
        f"bound reached: {past:,} link(s) not followed past --max-pages; crawl again with a "
        "higher --max-pages N (0: no bound) under a new --job name to crawl them"
    )
