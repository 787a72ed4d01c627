"""The console's page of a job's runs and what one of them changed
(``/jobs/JOB/changes?run=N``): each run's pages by verdict, then the run's pages new,
changed and gone and its items added, changed and removed, as ``crawlog changes`` lists
them (`projector.page_changes`, `projector.item_changes`, from the whole log).

Its own module, beside the other pages: the endpoint and its pure HTML. Every text from the
log (URLs, item keys and data) is escaped.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Final
from urllib.parse import quote

import msgspec
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from crawler._recrawl import latest_run
from crawler.console import _pages as pages
from crawler.console._actions import actor_of
from crawler.console._state import console_of, session_of
from crawler.ops import unjudged_phrase
from eventlog import ConfigError, CrawlogError, read_run
from projector import ItemChange, PageChange, RunSummary, Unjudged

CHANGES_SHOWN: Final = 1_000
"""Page changes and item changes listed each, at most (the counts are of all)."""
DATA_SHOWN: Final = 200
"""Characters of an item's data shown (as JSON) in its row."""
_json = msgspec.json.Encoder()


async def changes(request: Request) -> Response:
    """``/jobs/{job}/changes[?run=N]``: the job's runs, and what run N (the latest if not
    given) changed."""
    from projector import (
        Store,
        item_changes,
        listed,
        log_entries,
        page_changes,
        run_summaries,
        unjudged,
    )

    name = request.path_params["job"]
    console = console_of(request)
    try:
        opened, _ = await console.job(name)
    except ConfigError as exc:
        return _answer(request, "Not here", _refused(exc), None, 404)
    try:
        given = request.query_params.get("run", "")
        record = await read_run(opened.client, opened.keys)
        entries = await log_entries(opened.client, Store(console.settings.data_dir, name))
    except CrawlogError as exc:
        return _answer(request, "Not here", _refused(exc), name, 409)
    latest = latest_run((entry.event for entry in entries), recorded=record.run)
    run = int(given) if given.isdigit() else latest
    found = page_changes(entries)
    body = changes_page(
        name,
        run,
        run_summaries(found),
        listed([c for c in found if c.run == run]),
        item_changes(entries, run=run),
        unjudged(entries, run),
    )
    return _answer(request, f"Changes of {name}", body, name, 200)


def _refused(exc: CrawlogError) -> str:
    return f'<p id="error" class="flash refused">{escape(str(exc))}</p>'


def _answer(request: Request, title: str, body: str, job: str | None, status: int) -> Response:
    actor = actor_of(session_of(request).operator)
    page = pages.layout(title, body, job=job, events_after=None, actor=actor)
    return HTMLResponse(page, status_code=status, headers={"Cache-Control": "no-store"})


def changes_page(
    job: str,
    run: int,
    runs: Sequence[RunSummary],
    found: Sequence[PageChange],
    items: Sequence[ItemChange],
    left: Unjudged | None = None,
) -> str:
    """The runs table, then run ``run``'s page changes and item changes, and its pages with
    no verdict (``left``) if any."""
    base = f"/jobs/{quote(job, safe='')}/changes"
    runs_table = pages.table(
        ["run", "started", "ended", "pages", "new", "changed", "gone", "unchanged"],
        (
            [
                f'<a href="{base}?run={r.run}">{r.run}</a>' + (" ◀" if r.run == run else ""),
                pages.when(r.started),
                pages.when(r.ended),
                *(f"{n:,}" for n in (r.pages, r.new, r.changed, r.gone, r.unchanged)),
            ]
            for r in runs
        ),
        id_="runs",
    )
    page_rows = (
        [escape(c.change), pages.when(c.time), escape(c.url)] for c in found[:CHANGES_SHOWN]
    )
    item_rows = (
        [escape(c.change), escape(c.key), escape(c.url), _data(c)] for c in items[:CHANGES_SHOWN]
    )
    return (
        f"<h2>Runs</h2>{runs_table if runs else '<p>No page fetched yet.</p>'}"
        f"<h2>Run {run}</h2>"
        f'<p id="run-counts">{_counts(found, "page")}; {_counts(items, "item")}</p>'
        f"{_not_judged(left)}"
        f"<h3>Pages new, changed or gone</h3>"
        f"{pages.table(['change', 'time', 'url'], page_rows, id_='page-changes')}"
        f"<h3>Items added, changed or removed</h3>"
        f"{pages.table(['change', 'key', 'page', 'data'], item_rows, id_='item-changes')}"
        f"<p>The same from the command line: <code>crawlog changes --job {escape(job)} "
        f"--run {run} [--items]</code></p>"
    )


def _not_judged(left: Unjudged | None) -> str:
    if left is None or not left.total:
        return ""
    phrase = escape(unjudged_phrase(left.failed, left.open))
    return f'<p id="not-judged">Not judged: {phrase} (their tasks: the report).</p>'


def _counts(changes: Sequence[PageChange] | Sequence[ItemChange], what: str) -> str:
    tally: dict[str, int] = {}
    for change in changes:
        tally[change.change] = tally.get(change.change, 0) + 1
    said = ", ".join(f"{n:,} {kind}" for kind, n in sorted(tally.items()))
    return f"{what}s: {said or 'none'}"


def _data(change: ItemChange) -> str:
    """The item's data now (as it was, for a removed one), cut to `DATA_SHOWN`."""
    data = change.data if change.data is not None else change.previous
    text = _json.encode(data).decode()
    cut = text if len(text) <= DATA_SHOWN else text[:DATA_SHOWN] + "…"
    return f"<code>{escape(cut)}</code>"
