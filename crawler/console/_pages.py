"""The console's pages as HTML, rendered on the server from what the CLI reads.

Pure functions of their data: every text from the log (URLs, reasons, headers, actors) is
escaped, so a page a crawler fetched can never run anything here. Parts that change as the
crawl goes on carry ``data-live`` and an ``id``: the page's script fetches the page again
when the event stream says something happened and swaps those parts in (see
``static/console.js``), except a part the operator is typing into.
"""

from __future__ import annotations

import datetime as dt
import time
import zlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from html import escape
from urllib.parse import quote, urlencode

import msgspec

from crawler.console._actions import Outcome
from crawler.console._chart import bars_per_minute, line_over_time
from crawler.console._live import Observed, PanelView
from crawler.console._task_index import PAGE_SIZE, STATUS_ORDER, Group, TaskPage, TaskQuery
from crawler.ops import (
    JobRow,
    Progress,
    Row,
    detail_of,
    evidence_summary,
    export_command_line,
    format_duration,
    format_eta,
    last_failure,
)
from eventlog import (
    DeadLetter,
    Evidence,
    LogEntry,
    TaskAborted,
    TaskClaimed,
    TaskReclaimed,
    WorkerInfo,
    tag_of,
)
from projector import TERMINAL, State, TaskState


def _version() -> str:
    from importlib import metadata, resources

    script = resources.files("crawler.console").joinpath("static/console.js").read_bytes()
    try:
        version = metadata.version("crawlog")
    except metadata.PackageNotFoundError:
        version = "0"
    return f"{version}-{zlib.crc32(script):08x}"


STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#222}
nav{background:#223;color:#eee;padding:.5em 1em}nav a{color:#9cf;margin-right:1em}
main{padding:1em}table{border-collapse:collapse;margin:.5em 0}
td,th{border-bottom:1px solid #ddd;padding:.2em .6em;text-align:left;vertical-align:top}
th{background:#f4f4f4}.num{text-align:right;font-variant-numeric:tabular-nums}
.flash{padding:.5em 1em;margin:.5em 1em}.ok{background:#e3f6e3}.refused{background:#fbe3e0}
.panel{display:flex;flex-wrap:wrap;gap:1em}.figure{border:1px solid #ddd;padding:.5em 1em}
.figure b{display:block;font-size:1.6em}.paused{color:#b35a00;font-weight:bold}
.swatch{display:inline-block;width:.8em;height:.8em;margin:0 .2em}
#charts{display:flex;flex-wrap:wrap;gap:1em}.chart-box{margin:0}
form.inline{display:inline}input[type=text]{width:14em}
""".strip()
SCRIPT_PATH = "/static/console.js"
SCRIPT_URL = f"{SCRIPT_PATH}?v={_version()}"
"""The page script's URL names its version, so that a browser may cache it."""
SHOWN_TASKS = 50
"""Tasks listed per search or group."""


def layout(
    title: str,
    body: str,
    *,
    job: str | None,
    events_after: str | None,
    flash: Outcome | None = None,
    actor: str | None = None,
) -> str:
    """A whole page: navigation (and who acts from it), the outcome of the form just
    submitted, the body."""
    nav = ['<a href="/">Jobs</a>']
    if job is not None:
        base = f"/jobs/{quote(job, safe='')}"
        nav += [
            f"<b>{escape(job)}</b>:",
            f'<a href="{base}">Panel</a>',
            f'<a href="{base}/sites">Sites</a>',
            f'<a href="{base}/tasks">Tasks</a>',
            f'<a href="{base}/attention">Needs a person</a>',
            f'<a href="{base}/dead">Dead letters</a>',
            f'<a href="{base}/changes">Changes</a>',
        ]
    stream = ""
    if job is not None and events_after is not None:
        query = urlencode({"after": events_after})
        stream = f' data-events="/jobs/{quote(job, safe="")}/events?{query}"'
    acting = "" if actor is None else f' <span id="actor">acting as {escape(actor)}</span>'
    said = ""
    if flash is not None:
        kind = "ok" if flash.ok else "refused"
        said = f'<div id="flash" class="flash {kind}" role="status">{escape(flash.message)}</div>'
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>{escape(title)} · crawlog console</title><style>{STYLE}</style>"
        f'<script src="{SCRIPT_URL}" defer></script></head>'
        f"<body{stream}><nav>crawlog console · {' '.join(nav)}{acting}"
        '<span id="stream-state" style="float:right"></span></nav>'
        f"{said}<main><h1>{escape(title)}</h1>{body}</main></body></html>"
    )


def _n(value: float | int | None, digits: int = 0) -> str:
    if value is None:
        return "-"
    return f"{value:,.{digits}f}"


def _cell(value: str, *, num: bool = False) -> str:
    return f'<td class="num">{value}</td>' if num else f"<td>{value}</td>"


def table(head: Sequence[str], rows: Iterable[Sequence[str]], *, id_: str = "") -> str:
    """A table; cells are HTML already (escape what is text)."""
    ident = f' id="{id_}"' if id_ else ""
    header = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table{ident}><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table>"


def when(epoch: float) -> str:
    """A wall-clock time (UTC) to the millisecond."""
    moment = dt.datetime.fromtimestamp(epoch, dt.UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d}"


def hidden(**fields: str) -> str:
    """Hidden form fields."""
    return "".join(
        f'<input type="hidden" name="{escape(k)}" value="{escape(v)}">' for k, v in fields.items()
    )


# --- jobs --------------------------------------------------------------------------------------


def jobs_page(rows: Sequence[JobRow]) -> str:
    """Every job with its status, counts and last activity."""
    if not rows:
        return "<p>No job in this data directory or on its server yet.</p>"
    lines = []
    now = time.time()
    for r in rows:
        name = r.job
        last = r.last_activity
        ago = f"{format_duration(max(0, int(now - last)))} ago" if last is not None else "-"
        lines.append(
            [
                f'<a href="/jobs/{quote(name, safe="")}">{escape(name)}</a>',
                escape(r.status),
                _n(r.run),
                _n(r.done),
                _n(r.failed),
                _n(r.remaining),
                _n(r.workers_alive),
                ago,
            ]
        )
    head = ("job", "status", "run", "ended", "failed", "remaining", "workers", "last activity")
    return f'<div id="jobs" data-live>{table(head, lines)}</div>'


# --- the job's panel ----------------------------------------------------------------------------


def _figure(label: str, value: str, ident: str) -> str:
    return f'<div class="figure"><span>{escape(label)}</span><b id="{ident}">{value}</b></div>'


def panel_page(view: PanelView, observed: Observed, now: float) -> str:
    """The job's panel: the figures, the charts, the workers."""
    report = view.report
    total: Row = report.total
    counts = total.counts
    aborted = view.aborted
    average, p95 = view.response_ms
    behind = (
        f"{report.tail_events:,} events, {format_duration(report.behind_s)}"
        if report.tail_events
        else "up to date"
    )
    paused = (
        f'<p class="paused" id="job-paused">Job paused: {escape(report.job_paused_reason)}</p>'
        if report.job_paused
        else ""
    )
    figures = "".join(
        [
            _figure("done", _n(counts.done), "f-done"),
            _figure("remaining", _n(counts.remaining), "f-remaining"),
            _figure("failed", _n(counts.failed - aborted), "f-failed"),
            _figure("aborted", _n(aborted), "f-aborted"),
            _figure("peak retries of a task", _n(view.peak_retries), "f-peak-retries"),
            _figure("avg response", f"{_n(average)} ms", "f-avg-ms"),
            _figure("p95 response", f"{_n(p95)} ms", "f-p95-ms"),
            _figure("pages/s", _n(total.pages_rate, 1), "f-pages-rate"),
            _figure("ETA", escape(format_eta(total)), "f-eta"),
            _figure("projector behind", escape(behind), "f-behind"),
            _figure("dead letters", _n(report.dead_letters), "f-dead"),
            _figure(
                "requests that may have reached the site twice",
                _n(report.requests_maybe_twice),
                "f-twice",
            ),
        ]
    )
    charts = _charts(view, observed, now)
    reading = (
        '<p id="committed-only">As of the projector&#39;s last commit: the job&#39;s state '
        "is being read, live numbers follow.</p>"
        if view.committed_only
        else ""
    )
    return (
        f'<div id="panel" data-live>{reading}{paused}<div class="panel">{figures}</div>'
        f'<div id="charts">{charts}</div>'
        f"<h2>Workers</h2>{workers_table(report.workers, report.lease_ms)}"
        f'<p>as of stream ID <code id="position">{escape(report.position)}</code></p></div>'
    )


def _charts(view: PanelView, observed: Observed, now: float) -> str:
    """Pages and failures per minute; the queue and the ETA as sampled: each an SVG."""
    minute = int(now // 60)
    pages = bars_per_minute(
        observed.pages_per_minute, minute, title="pages fetched per minute", unit="pages"
    )
    failures = (
        # The commit's summary counts failures by reason, not by minute: no chart to draw
        # (an empty one would say there were none) until the state is read.
        '<p id="failures-chart-pending">failures per minute, by reason: drawn once the '
        "job&#39;s state is read</p>"
        if view.committed_only
        else bars_per_minute(
            observed.failures_per_minute,
            minute,
            title="failures per minute, by reason",
            unit="tasks",
        )
    )
    queue = line_over_time(
        [(at, float(queue)) for at, queue in observed.queue_points()],
        now,
        title="tasks remaining (the queue)",
        axis="tasks",
        none_said="not sampled yet",
    )
    eta = line_over_time(
        [(at, eta) for at, _, eta in observed.samples],
        now,
        title="ETA",
        axis="time left",
        label=format_duration,
        none_said="unknown: not moving, or paused",
    )
    return "".join(
        f'<figure class="chart-box" id="{ident}">{svg}</figure>'
        for ident, svg in (
            ("chart-pages", pages),
            ("chart-failures", failures),
            ("chart-queue", queue),
            ("chart-eta", eta),
        )
    )


def workers_table(workers: Sequence[WorkerInfo], lease_ms: int | None) -> str:
    """Workers that are alive or hold leases, with the age of their oldest lease."""
    if not workers:
        return "<p>No worker is running.</p>"
    rows = [
        [
            escape(w.name),
            "alive" if w.alive else "gone",
            _n(w.leases),
            format_duration(w.oldest_lease_ms / 1000) if w.oldest_lease_ms is not None else "-",
            format_duration(w.idle_ms / 1000),
        ]
        for w in workers
    ]
    head = ("worker", "process", "leases", "oldest lease", "idle")
    lease = f"<p>lease: {format_duration(lease_ms / 1000)}</p>" if lease_ms else ""
    return table(head, rows, id_="workers") + lease


# --- sites -----------------------------------------------------------------------------------


def sites_page(
    job: str,
    report: Progress,
    state: State,
    observed: Observed,
    csrf: str,
    form_ids: Sequence[str],
) -> str:
    """Every site: progress, in flight, failures, circuit, pause (who, why), and a button."""
    rows = []
    for row, form_id in zip(report.sites, form_ids, strict=False):
        c = row.counts
        site = state.sites.get(c.site)
        if c.site_paused:
            who = observed.site_paused_by.get(c.site)
            why = site.paused_reason if site is not None else ""
            by = f" by {escape(who)}" if who else ""
            pause = f'<span class="paused">paused{by}: {escape(why)}</span>'
        else:
            pause = "crawling"
        circuit = "open" if c.circuit_open else "closed"
        if c.circuit_open and site is not None and site.circuit_reason:
            circuit += f": {escape(site.circuit_reason)}"
        verb = "resume" if c.site_paused else "pause"
        form = (
            f'<form method="post" class="inline" action="/jobs/{quote(job, safe="")}/sites/{verb}">'
            + hidden(csrf=csrf, form_id=form_id, site=c.site)
            + f'<input type="text" name="reason" required placeholder="reason to {verb}" '
            f'aria-label="reason to {verb} {escape(c.site)}">'
            f'<button type="submit">{verb.capitalize()}</button></form>'
        )
        rows.append(
            [
                escape(c.site),
                f"{_n(c.done)} / {_n(c.discovered)}",
                _n(c.running),
                f'<span class="parked">{_n(c.paused)}</span>',
                _n(c.failed),
                circuit,
                pause,
                form,
            ]
        )
    head = ("site", "done / found", "in flight", "parked", "failed", "circuit", "state", "")
    return f'<div id="sites" data-live>{table(head, rows, id_="sites-table")}</div>'


# --- tasks ------------------------------------------------------------------------------------


def task_link(job: str, task: TaskState) -> str:
    return (
        f'<a href="/jobs/{quote(job, safe="")}/tasks/{quote(task.task_id, safe="")}">'
        f"{escape(task.task_id)}</a>"
    )


def tasks_table(job: str, tasks: Sequence[TaskState], *, id_: str = "") -> str:
    rows = [
        [
            task_link(job, t),
            escape(t.url),
            escape(t.status),
            _n(t.attempt),
            _n(t.retries),
            escape(t.last_error or t.last_reason or ""),
        ]
        for t in tasks[:SHOWN_TASKS]
    ]
    more = f"<p>… and {len(tasks) - SHOWN_TASKS:,} more.</p>" if len(tasks) > SHOWN_TASKS else ""
    head = ("task", "url", "status", "attempt", "retries", "last reason")
    return table(head, rows, id_=id_) + more


def search_page(job: str, query: str, found: Sequence[TaskState]) -> str:
    """The task search form and what it found."""
    form = (
        f'<form method="get" action="/jobs/{quote(job, safe="")}/tasks">'
        f'<input type="text" name="q" value="{escape(query)}" placeholder="URL or task id" '
        'aria-label="URL or task id"><button type="submit">Search</button></form>'
    )
    if not query:
        return form
    if not found:
        return form + f"<p>No task matches {escape(query)!s}.</p>"
    return form + tasks_table(job, found)


def _options(name: str, label: str, chosen: str, counts: Mapping[str, int]) -> str:
    options = [f'<option value="">every {escape(label)}</option>'] + [
        f'<option value="{escape(value)}"{" selected" if value == chosen else ""}>'
        f"{escape(value)} ({n:,})</option>"
        for value, n in counts.items()
    ]
    return (
        f'<label>{escape(label)} <select name="{name}" aria-label="{escape(label)}">'
        f"{''.join(options)}</select></label> "
    )


def task_filters(job: str, query: TaskQuery, groups: Mapping[Group, int]) -> str:
    """The list's filters: status, site and failure reason, each with its count of tasks."""
    by: list[Counter[str]] = [Counter(), Counter(), Counter()]
    for group, n in groups.items():
        for counter, value in zip(by, group, strict=True):
            if value:
                counter[value] += n
    statuses = {s: by[0][s] for s in STATUS_ORDER if by[0][s]}
    sites = dict(sorted(by[1].items()))
    reasons = dict(by[2].most_common())
    return (
        f'<form method="get" id="task-filters" action="/jobs/{quote(job, safe="")}/tasks">'
        + _options("status", "status", query.status, statuses)
        + _options("site", "site", query.site, sites)
        + _options("reason", "failure reason", query.reason, reasons)
        + '<button type="submit">List</button></form>'
    )


def task_list(job: str, query: TaskQuery, page: TaskPage) -> str:
    """One page of the filtered list, with the pages before and after it."""
    if not page.total:
        return '<div id="task-list" data-live><p id="page-range">No task matches.</p></div>'
    first, last = page.offset + 1, page.offset + len(page.tasks)
    base = f"/jobs/{quote(job, safe='')}/tasks?"
    fields = {"status": query.status, "site": query.site, "reason": query.reason}
    kept = {k: v for k, v in fields.items() if v}

    def link(offset: int, text: str, rel: str) -> str:
        href = base + urlencode({**kept, "offset": offset})
        return f'<a href="{escape(href)}" rel="{rel}" class="{rel}">{text}</a>'

    pager = [
        link(max(page.offset - PAGE_SIZE, 0), "&laquo; newer", "prev") if page.offset else "",
        f'<span id="page-range">tasks {first:,}&ndash;{last:,} of {page.total:,}</span>',
        link(page.offset + PAGE_SIZE, "older &raquo;", "next") if last < page.total else "",
    ]
    nav = f'<p id="pager" role="navigation">{" ".join(p for p in pager if p)}</p>'
    return f'<div id="task-list" data-live>{tasks_table(job, page.tasks, id_="tasks")}{nav}</div>'


def task_page(
    job: str, task: TaskState, entries: Sequence[LogEntry], csrf: str, form_id: str
) -> str:
    """A task's whole story: every event, when, who, what, why; and Retry when it ended."""
    facts = (
        f"<p>{escape(task.url)}<br>site {escape(task.site)}, depth {task.depth}"
        + (f", parent task {escape(task.parent_task_id)}" if task.parent_task_id else "")
        + f'<br>now <b id="task-status">{escape(task.status)}</b> at attempt '
        f'<span id="task-attempt">{task.attempt}</span>; {task.retries} retries, '
        f"{task.recoveries} lease(s) lost"
        + (f"<br>last error: {escape(task.last_error)}" if task.last_error else "")
        + "</p>"
    )
    retry = ""
    if task.status in TERMINAL:
        retry = (
            f'<form method="post" id="retry-form" action="/jobs/{quote(job, safe="")}/tasks/'
            f'{quote(task.task_id, safe="")}/retry">'
            + hidden(csrf=csrf, form_id=form_id, task_id=task.task_id, attempt=str(task.attempt))
            + '<input type="text" name="reason" required placeholder="why run it again" '
            'aria-label="reason to retry">'
            '<button type="submit">Retry</button></form>'
        )
    rows = [
        [
            when(e.event.at),
            f"<code>{escape(e.stream_id)}</code>",
            escape(e.event.actor),
            escape(tag_of(type(e.event))),
            escape(detail_of(e.event)),
        ]
        for e in entries
    ]
    story = table(("time (UTC)", "stream id", "who", "what", "why / detail"), rows, id_="story")
    # The page's script redraws this part on the events of this task (and of no task: its
    # site's, the job's), not on every event of the job.
    follow = f'data-task-events="{escape(task.task_id)}"'
    return f'<div id="task" data-live {follow}>{facts}{story}</div>{retry}'


# --- needs a person ----------------------------------------------------------------------------


def attention_page(
    job: str,
    groups: dict[tuple[str, str], list[TaskState]],
    sites: dict[tuple[str, str], list[TaskState]],
    waiting: Sequence[tuple[TaskState, str]],
    csrf: str,
    form_ids: Sequence[str],
    evidence: Sequence[GroupEvidence] = (),
) -> str:
    """Uncertain actions to decide about; failed and aborted tasks by reason, where
    "Retry all N" asks for the job name; each group links its ``evidence`` (shown by
    `evidence_section`) if it has one."""
    if not groups and not waiting:
        return '<div id="attention" data-live><p>Nothing needs a person.</p></div>'
    decisions = _uncertain_section(job, waiting, csrf, form_ids[len(groups) + len(sites) :])
    per_site = _site_section(job, sites, csrf, form_ids[len(groups) : len(groups) + len(sites)])
    ordered = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    with_evidence = {(g.status, g.reason) for g in evidence}
    parts = []
    for ((status, reason), tasks), form_id in zip(ordered, form_ids, strict=False):
        n = len(tasks)
        form = _bulk_form(job, csrf, form_id, n, status=status, group=reason)
        link = (
            f' <a class="to-evidence" href="#{evidence_anchor(status, reason)}">evidence</a>'
            if (status, reason) in with_evidence
            else ""
        )
        parts.append(
            f'<section class="group"><h2>{n:,} {escape(status)}: '
            f"{escape(reason or 'no reason')}{link}</h2>"
            f"{form}{tasks_table(job, tasks)}</section>"
        )
    return f'<div id="attention" data-live>{decisions}{"".join(parts)}{per_site}</div>'


def _bulk_form(job: str, csrf: str, form_id: str, n: int, **fields: str) -> str:
    return (
        f'<form method="post" class="bulk" '
        f'action="/jobs/{quote(job, safe="")}/attention/retry">'
        + hidden(csrf=csrf, form_id=form_id, count=str(n), **fields)
        + '<input type="text" name="reason" required placeholder="why run them again" '
        f'aria-label="reason to retry {n}">'
        f'<input type="text" name="confirm" required placeholder="type {escape(job)}" '
        'aria-label="type the job name to confirm" autocomplete="off">'
        f'<button type="submit">Retry all {n}</button></form>'
    )


def _site_section(
    job: str, sites: dict[tuple[str, str], list[TaskState]], csrf: str, form_ids: Sequence[str]
) -> str:
    if not sites:
        return ""
    rows = [
        [
            escape(site),
            escape(status),
            _n(len(tasks)),
            _bulk_form(job, csrf, form_id, len(tasks), status=status, site=site),
        ]
        for ((status, site), tasks), form_id in zip(sorted(sites.items()), form_ids, strict=False)
    ]
    return (
        '<section class="by-site"><h2>By site</h2>'
        f"{table(('site', 'status', 'tasks', ''), rows, id_='by-site')}</section>"
    )


def _uncertain_section(
    job: str, waiting: Sequence[tuple[TaskState, str]], csrf: str, form_ids: Sequence[str]
) -> str:
    if not waiting:
        return ""
    rows = []
    for (task, action_id), form_id in zip(waiting, form_ids, strict=False):
        form = (
            f'<form method="post" class="inline" action="/jobs/{quote(job, safe="")}'
            '/attention/resolve">'
            + hidden(csrf=csrf, form_id=form_id, task_id=task.task_id)
            + '<input type="text" name="reason" required placeholder="what you found" '
            f'aria-label="reason to decide about {escape(task.task_id)}">'
            '<button type="submit" name="decision" value="done">Mark done</button>'
            '<button type="submit" name="decision" value="redo">Run again</button>'
            '<button type="submit" name="decision" value="abort">Abort the task</button></form>'
        )
        rows.append([task_link(job, task), escape(task.url), escape(action_id), form])
    head = ("task", "url", "action (intended, not known done)", "")
    return (
        '<section class="uncertain"><h2>Uncertain actions: did they happen?</h2>'
        f"{table(head, rows, id_='uncertain')}</section>"
    )


# --- dead letters ------------------------------------------------------------------------------


def dead_page(job: str, letters: Sequence[DeadLetter], csrf: str, form_ids: Sequence[str]) -> str:
    """Entries nobody could decode, moved aside; each can be put back (if it decodes now)."""
    if not letters:
        return '<div id="dead" data-live><p>No dead letters.</p></div>'
    rows = [
        [
            f"<code>{escape(d.dead_id)}</code>",
            escape(d.stream),
            f"<code>{escape(d.entry_id)}</code>",
            _n(d.deliveries),
            f"{sum(len(v) for v in d.fields.values()):,} B",
            escape(d.reason),
            f'<form method="post" class="inline" action="/jobs/{quote(job, safe="")}/dead/replay">'
            + hidden(csrf=csrf, form_id=form_id, dead_id=d.dead_id)
            + '<input type="text" name="reason" required placeholder="why put it back" '
            f'aria-label="reason to replay {escape(d.dead_id)}">'
            '<button type="submit">Replay</button></form>',
        ]
        for d, form_id in zip(letters, form_ids, strict=False)
    ]
    head = ("dead id", "from", "entry", "deliveries", "size", "reason", "")
    return f'<div id="dead" data-live>{table(head, rows)}</div>'


# --- evidence (needs a person) -----------------------------------------------------------------

EVIDENCE_GROUPS_SHOWN = 10
"""Groups of "needs a person" whose evidence the page shows (each up to 64 KiB of text)."""
VIEWABLE_TYPES = frozenset({"text/html", "application/xhtml+xml", "text/plain"})
"""Content types a body is served as for "view as page"; any other is served as text."""
EVIDENCE_CSP = (
    "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
    "form-action 'none'; frame-ancestors 'self'; base-uri 'none'"
)
"""The policy of the response that serves a body for "view as page": no script runs, no
form posts, nothing is fetched from anywhere, even when the body is opened on its own
(``sandbox`` here is the iframe's ``sandbox=""`` carried by the response itself)."""


class GroupEvidence(msgspec.Struct, frozen=True, kw_only=True):
    """What "needs a person" shows of one group: one of its tasks and that task's story."""

    status: str
    reason: str
    count: int
    task: TaskState
    entries: list[LogEntry]


def evidence_anchor(status: str, reason: str) -> str:
    """The id of a group's evidence on the page (a link from the group goes there)."""
    key = f"{status}\n{reason}".encode()
    return f"evidence-{zlib.crc32(key):08x}"


def evidence_body_path(job: str, task_id: str) -> str:
    """Where the console serves a task's evidence body for "view as page"."""
    return f"/jobs/{quote(job, safe='')}/tasks/{quote(task_id, safe='')}/evidence/body"


def body_as_text(evidence: Evidence) -> str:
    """The kept body decoded as its content type's charset says (UTF-8 if it names none or
    one Python does not know), undecodable bytes replaced: shown escaped, never run."""
    charset = "utf-8"
    for part in (evidence.content_type or "").split(";")[1:]:
        name, _, value = part.strip().partition("=")
        if name.lower() == "charset" and value:
            charset = value.strip("\"'")
    try:
        return evidence.body.decode(charset, errors="replace")
    except LookupError:
        return evidence.body.decode("utf-8", errors="replace")


def served_type(evidence: Evidence) -> str:
    """The content type "view as page" serves a body as."""
    media = (evidence.content_type or "").partition(";")[0].strip().lower()
    if media in VIEWABLE_TYPES and evidence.content_type is not None:
        return evidence.content_type
    return "text/plain; charset=utf-8"


def owner_history(task_id: str, entries: Sequence[LogEntry]) -> list[str]:
    """Who held the task, in order: each claim (attempt, delivery), each lease taken over."""
    held: list[str] = []
    for entry in entries:
        event = entry.event
        if getattr(event, "task_id", None) != task_id:
            continue
        if isinstance(event, TaskClaimed):
            again = f", delivery {event.deliveries}" if event.deliveries > 1 else ""
            held.append(f"{event.actor} (attempt {event.attempt}{again})")
        elif isinstance(event, TaskReclaimed):
            held.append(f"lease of {event.previous_owner} taken over by {event.actor}")
        elif isinstance(event, TaskAborted):
            held.append(f"aborted by {event.actor}")
    return held


def evidence_section(job: str, shown: Sequence[GroupEvidence]) -> str:
    """Each group's evidence: the last response of one of its tasks (status, headers, the
    body as text, and "view as page" in an iframe where nothing runs), its last error and
    who held it. Not a live part: it does not change once the task ended, and a redraw
    would reload the frames."""
    if not shown:
        return ""
    parts = [
        '<div id="evidence"><h2>Evidence</h2><p>The last response of one task of each '
        "group, as the worker that ended it got it (as of this page's load).</p>"
    ]
    for group in shown:
        parts.append(_group_evidence(job, group))
    parts.append("</div>")
    return "".join(parts)


def task_evidence_section(job: str, task: TaskState, entries: list[LogEntry]) -> str:
    """A failed or aborted task's evidence on its own page (nothing for any other task)."""
    if last_failure(task.task_id, entries) is None:
        return ""
    own = [e for e in entries if getattr(e.event, "task_id", None) == task.task_id]
    group = GroupEvidence(
        status=task.status, reason=task.last_reason, count=1, task=task, entries=own
    )
    return f'<div id="evidence"><h2>Evidence</h2>{_group_evidence(job, group)}</div>'


def _group_evidence(job: str, group: GroupEvidence) -> str:
    task = group.task
    found = last_failure(task.task_id, group.entries)
    title = (
        f"<h3>{escape(group.status)}: {escape(group.reason or 'no reason')} "
        f"({group.count:,} task(s)): {task_link(job, task)}</h3>"
        f"<p>{escape(task.url)}</p>"
    )
    owners = owner_history(task.task_id, group.entries)
    error = task.last_error or (found[1].reason if found else task.last_reason) or ""
    facts = (
        f"<p>last error: <b>{escape(error or 'none')}</b><br>"
        f"held by: {escape(' → '.join(owners) or 'nobody recorded')}</p>"
    )
    anchor = evidence_anchor(group.status, group.reason)
    evidence = found[1].evidence if found else None
    if evidence is None:
        kept = "<p>No response kept: the task ended before any came (or in an older log).</p>"
        return f'<section class="evidence" id="{anchor}">{title}{facts}{kept}</section>'
    summary = escape(evidence_summary(evidence))
    head = "\n".join(
        [f"HTTP {evidence.status} {evidence.url}"] + [f"{n}: {v}" for n, v in evidence.headers]
    )
    source = evidence_body_path(job, task.task_id)
    command = escape(export_command_line(job, task.task_id))
    return (
        f'<section class="evidence" id="{anchor}">{title}{facts}'
        f"<p>last response: <b>{summary}</b>; <code>{command}</code></p>"
        f'<pre class="evidence-headers">{escape(head)}</pre>'
        '<details class="evidence-text"><summary>the body as text</summary>'
        f'<pre class="evidence-body" style="white-space:pre-wrap;max-height:30em;overflow:auto">'
        f"{escape(body_as_text(evidence))}</pre></details>"
        '<details class="evidence-view" open><summary>view as page (scripts off)</summary>'
        f'<iframe sandbox="" src="{escape(source)}" referrerpolicy="no-referrer" '
        f'loading="lazy" title="the body of task {escape(task.task_id)}" '
        'style="width:100%;height:20em;border:1px solid #ccc"></iframe></details></section>'
    )
