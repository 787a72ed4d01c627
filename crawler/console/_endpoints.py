"""The console's pages and actions as Starlette endpoints, and their routes (``ROUTES``).

Each endpoint is a module-level function of the request; what the process shares (the
client, the jobs opened, the forms submitted) is ``request.app.state.console``
(``_state.console_of``). A page about a job is wrapped by :func:`about_a_job`, which opens
the job (404 if it never started) and turns a refusal into a page that says why (409). An
action is wrapped by :func:`action`: the session's form token in the form first, then a reason,
then the form acts once (``_actions.FormLedger``) and the answer is a redirect back to the
page, which says what happened (``?done=FORM_ID``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from html import escape
from importlib import resources
from urllib.parse import parse_qs, quote

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route

from crawler.console import _pages as pages
from crawler.console._actions import (
    Outcome,
    actor_of,
    control_site,
    needing_a_person,
    replay_dead,
    resolve_task,
    retry_group,
    retry_task,
    uncertain,
)
from crawler.console._changes_page import changes
from crawler.console._flow_page import flow_section
from crawler.console._guard import (
    CSRF_FIELD,
    FORM_REFUSED,
    LOGIN_PATH,
    OPERATOR_PARAM,
    REFUSED,
    SESSION_COOKIE,
    TOKEN_PARAM,
    operator_name,
    same_token,
)
from crawler.console._live import JobWatch
from crawler.console._sse import log_messages, start_position
from crawler.console._state import Console, console_of, session_of
from crawler.console._task_index import STATUS_ORDER, TaskQuery
from crawler.ops import OpenJob, last_report, read_job_rows, require_reason, task_id_of
from eventlog import ConfigError, CrawlogError, EventLog, TaskPaused, connect
from projector import TaskState

DEAD_SHOWN = 1_000
SEARCH_FOUND_MAX = 1_000
"""Tasks a search collects at most (the page lists the first ``SHOWN_TASKS``)."""
SCRIPT = resources.files("crawler.console").joinpath("static/console.js").read_text()

Endpoint = Callable[[Request], Awaitable[Response]]
JobPage = Callable[[Request, str, OpenJob, JobWatch], Awaitable[Response]]
"""A page about a job: (request, job name, the job opened, its watch)."""
Form = dict[str, str]
Act = Callable[[Form, str, OpenJob, JobWatch, str, str], Awaitable[Outcome]]
"""An action: (form, job name, the job opened, its watch, reason, actor) → its outcome."""


@asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    """The process's Redis client, and a task group for reads in the background."""
    console: Console = app.state.console
    async with connect(console.settings.redis_url) as client, anyio.create_task_group() as tg:
        console.client = client
        console.background = tg
        yield
        tg.cancel_scope.cancel()


def _flash(request: Request) -> Outcome | None:
    form_id = request.query_params.get("done")
    return console_of(request).ledger.outcome(form_id) if form_id else None


def _html(
    request: Request, title: str, body: str, job: str | None, after: str | None
) -> HTMLResponse:
    page = pages.layout(
        title,
        body,
        job=job,
        events_after=after,
        flash=_flash(request),
        actor=actor_of(session_of(request).operator),
    )
    return HTMLResponse(page, headers={"Cache-Control": "no-store"})


def _failed(exc: CrawlogError, job: str | None, status: int) -> HTMLResponse:
    body = f'<p id="error" class="flash refused">{escape(str(exc))}</p>'
    return HTMLResponse(
        pages.layout("Not here", body, job=job, events_after=None), status_code=status
    )


def about_a_job(handler: JobPage) -> Endpoint:
    """The endpoint of a page about the job in the path."""

    async def endpoint(request: Request) -> Response:
        name = request.path_params["job"]
        try:
            opened, watch = await console_of(request).job(name)
        except ConfigError as exc:
            return _failed(exc, None, 404)
        try:
            return await handler(request, name, opened, watch)
        except CrawlogError as exc:
            return _failed(exc, name, 409)

    return endpoint


async def login(request: Request) -> Response:
    """``/login?token=...[&as=NAME]``: a new session in a cookie, then the home page."""
    settings = console_of(request).settings
    if not same_token(request.query_params.get(TOKEN_PARAM), settings.token):
        return PlainTextResponse(REFUSED, status_code=401)
    try:
        operator = operator_name(request.query_params.get(OPERATOR_PARAM), settings.user)
    except ConfigError as exc:
        return PlainTextResponse(f"{exc}\n", status_code=400)
    response = RedirectResponse("/", status_code=303)
    response.set_cookie(
        SESSION_COOKIE,
        console_of(request).sessions.open(operator),
        httponly=True,
        samesite="strict",
    )
    return response


async def home(request: Request) -> Response:
    settings = console_of(request).settings
    if settings.job is not None:
        return RedirectResponse(f"/jobs/{quote(settings.job, safe='')}", status_code=303)
    # Every job as ``crawlog jobs`` lists it (the server's and the data directory's).
    rows = await read_job_rows(settings.data_dir, settings.redis_url)
    return _html(request, "Jobs", pages.jobs_page(rows), None, None)


async def script(request: Request) -> Response:
    # Named by its version (``SCRIPT_URL``): a browser may keep it, and asks again only
    # when another crawlog serves another one.
    return Response(
        SCRIPT, media_type="text/javascript", headers={"Cache-Control": "max-age=86400"}
    )


@about_a_job
async def panel(request: Request, job: str, opened: OpenJob, watch: JobWatch) -> Response:
    background = console_of(request).background
    assert background is not None, "the app's lifespan opens it"
    view = await watch.panel(background)
    now = await EventLog(opened.client, opened.keys).server_time()
    body = pages.panel_page(view, watch.observed, now)
    return _html(request, f"Job {job}", body, job, view.report.position)


@about_a_job
async def sites(request: Request, job: str, opened: OpenJob, watch: JobWatch) -> Response:
    console = console_of(request)
    report = await watch.refresh()
    form_ids = [console.ledger.new_form() for _ in report.sites]
    body = pages.sites_page(
        job, report, watch.state, watch.observed, session_of(request).csrf, form_ids
    )
    return _html(request, f"Sites of {job}", body, job, report.position)


@about_a_job
async def tasks(request: Request, job: str, opened: OpenJob, watch: JobWatch) -> Response:
    report = await watch.refresh()
    query = request.query_params.get("q", "").strip()
    if query:
        body = pages.search_page(job, query, _search(watch, query))
    else:
        listed = _task_query(request)
        index = watch.observed.tasks
        body = (
            pages.search_page(job, "", [])
            + pages.task_filters(job, listed, index.counts())
            + pages.task_list(job, listed, index.page(listed))
        )
    return _html(request, f"Tasks of {job}", body, job, report.position)


def _task_query(request: Request) -> TaskQuery:
    """The list's filters and offset as the page's query string gives them."""
    params = request.query_params
    status = params.get("status", "")
    if status and status not in STATUS_ORDER:
        raise ConfigError(f"no task status {status!r} (the statuses: {', '.join(STATUS_ORDER)})")
    offset = params.get("offset", "0")
    return TaskQuery(
        status=status,
        site=params.get("site", ""),
        reason=params.get("reason", ""),
        offset=int(offset) if offset.isdigit() else 0,
    )


@about_a_job
async def task(request: Request, job: str, opened: OpenJob, watch: JobWatch) -> Response:
    from projector import task_history

    console = console_of(request)
    report = await watch.refresh()
    task_id = request.path_params["task_id"]
    state = watch.state.tasks.get(task_id)
    if state is None:
        raise ConfigError(f"job {job!r} has no task {task_id} in its log")
    entries = await task_history(opened.client, opened.store, [task_id], page_url=state.url)
    csrf = session_of(request).csrf
    body = pages.task_page(job, state, entries, csrf, console.ledger.new_form())
    body += flow_section(job, state, entries, csrf, console.ledger.new_form())
    body += pages.task_evidence_section(job, state, entries)
    return _html(request, f"Task {task_id}", body, job, report.position)


@about_a_job
async def attention(request: Request, job: str, opened: OpenJob, watch: JobWatch) -> Response:
    console = console_of(request)
    report = await watch.refresh()
    tasks = watch.state.tasks.values()
    groups = needing_a_person(tasks)
    sites = needing_a_person(tasks, by_site=True)
    waiting = uncertain(tasks)
    count = len(groups) + len(sites) + len(waiting)
    form_ids = [console.ledger.new_form() for _ in range(count)]
    shown = await console.evidence.of_groups(opened, groups)
    body = pages.attention_page(
        job, groups, sites, waiting, session_of(request).csrf, form_ids, shown
    ) + pages.evidence_section(job, shown)
    return _html(request, f"Needs a person in {job}", body, job, report.position)


@about_a_job
async def evidence_body(request: Request, job: str, opened: OpenJob, watch: JobWatch) -> Response:
    task_id = request.path_params["task_id"]
    found = await console_of(request).evidence.last(opened, task_id)
    if found is None:
        raise ConfigError(f"task {task_id} of job {job!r} has no evidence kept")
    return Response(
        found.body,
        headers={
            "Content-Type": pages.served_type(found),
            "Content-Security-Policy": pages.EVIDENCE_CSP,
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
            "Cross-Origin-Resource-Policy": "same-origin",
            "Cache-Control": "no-store",
        },
    )


@about_a_job
async def report_screenshot(
    request: Request, job: str, opened: OpenJob, watch: JobWatch
) -> Response:
    """The screenshot of the page a flow handed to a person (its last report's)."""
    from projector import task_history

    task_id = request.path_params["task_id"]
    entries = await task_history(opened.client, opened.store, [task_id])
    found = last_report(task_id, entries)
    event = found[1] if found else None
    if not isinstance(event, TaskPaused) or event.evidence is None or not event.evidence.screenshot:
        raise ConfigError(f"task {task_id} of job {job!r} has no screenshot of a report kept")
    return Response(event.evidence.screenshot, media_type="image/jpeg")


@about_a_job
async def dead(request: Request, job: str, opened: OpenJob, watch: JobWatch) -> Response:
    console = console_of(request)
    report = await watch.refresh()
    letters = await EventLog(opened.client, opened.keys).dead_letters(DEAD_SHOWN)
    form_ids = [console.ledger.new_form() for _ in letters]
    body = pages.dead_page(job, letters, session_of(request).csrf, form_ids)
    return _html(request, f"Dead letters of {job}", body, job, report.position)


@about_a_job
async def events(request: Request, job: str, opened: OpenJob, watch: JobWatch) -> Response:
    log = EventLog(opened.client, opened.keys)
    try:
        after = await start_position(
            log, request.headers.get("last-event-id"), request.query_params.get("after")
        )
    except ValueError:
        return PlainTextResponse("not a stream ID", status_code=400)
    return StreamingResponse(
        log_messages(log, after),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


def action(back: Callable[[str, Form], str]) -> Callable[[Act], Endpoint]:
    """The endpoint of an action, which redirects to ``back(job, form)`` once it acted."""

    def wrap(act: Act) -> Endpoint:
        @about_a_job
        async def acting(request: Request, job: str, opened: OpenJob, watch: JobWatch) -> Response:
            form = await _form(request)  # the body is kept: read again, not received again
            form_id = _text(form.get("form_id"))
            if not form_id:
                return PlainTextResponse("a form without its form_id", status_code=400)
            try:
                reason = require_reason(_text(form.get("reason")))
            except ConfigError as exc:
                # Not an outcome of the form: with a reason, the same form may act.
                return _failed(exc, job, 400)
            console = console_of(request)
            by = actor_of(session_of(request).operator)
            await console.ledger.once(form_id, lambda: act(form, job, opened, watch, reason, by))
            watch.invalidate()  # the page redirected to shows the action's event
            target = back(job, form)
            joiner = "&" if "?" in target else "?"
            return RedirectResponse(f"{target}{joiner}done={quote(form_id)}", status_code=303)

        async def endpoint(request: Request) -> Response:
            # Before anything else, the job looked up included: not this session's form,
            # nothing done.
            csrf = session_of(request).csrf
            if not same_token(_text((await _form(request)).get(CSRF_FIELD)), csrf):
                return PlainTextResponse(FORM_REFUSED, status_code=403)
            return await acting(request)

        return endpoint

    return wrap


def _sites_page_of(job: str, form: Form) -> str:
    return f"/jobs/{quote(job, safe='')}/sites"


def _task_page_of(job: str, form: Form) -> str:
    return f"/jobs/{quote(job, safe='')}/tasks/{quote(_text(form.get('task_id')), safe='')}"


def _attention_page_of(job: str, form: Form) -> str:
    return f"/jobs/{quote(job, safe='')}/attention"


def _dead_page_of(job: str, form: Form) -> str:
    return f"/jobs/{quote(job, safe='')}/dead"


async def _control(
    form: Form, job: str, opened: OpenJob, watch: JobWatch, reason: str, by: str, *, pause: bool
) -> Outcome:
    site = _text(form.get("site"))
    if site not in watch.state.sites:
        raise ConfigError(f"no site {site!r} in job {job!r}")
    return await control_site(opened, site, reason, by, pause=pause)


@action(_sites_page_of)
async def pause_site(
    form: Form, job: str, opened: OpenJob, watch: JobWatch, reason: str, by: str
) -> Outcome:
    return await _control(form, job, opened, watch, reason, by, pause=True)


@action(_sites_page_of)
async def resume_site(
    form: Form, job: str, opened: OpenJob, watch: JobWatch, reason: str, by: str
) -> Outcome:
    return await _control(form, job, opened, watch, reason, by, pause=False)


@action(_task_page_of)
async def retry_one(
    form: Form, job: str, opened: OpenJob, watch: JobWatch, reason: str, by: str
) -> Outcome:
    task_id = _task_id_from_form(form)
    return await retry_task(opened, task_id, _int(form.get("attempt")), reason, by)


@action(_attention_page_of)
async def retry_bulk(
    form: Form, job: str, opened: OpenJob, watch: JobWatch, reason: str, by: str
) -> Outcome:
    site = _text(form.get("site"))
    return await retry_group(
        opened,
        _text(form.get("status")),
        site or _text(form.get("group")),
        _int(form.get("count")),
        _text(form.get("confirm")),
        reason,
        by,
        by_site=bool(site),
    )


@action(_attention_page_of)
async def decide(
    form: Form, job: str, opened: OpenJob, watch: JobWatch, reason: str, by: str
) -> Outcome:
    return await resolve_task(
        opened, _task_id_from_form(form), _text(form.get("decision")), reason, by
    )


@action(_task_page_of)
async def decide_on_task(
    form: Form, job: str, opened: OpenJob, watch: JobWatch, reason: str, by: str
) -> Outcome:
    return await resolve_task(
        opened, _task_id_from_form(form), _text(form.get("decision")), reason, by
    )


@action(_dead_page_of)
async def replay(
    form: Form, job: str, opened: OpenJob, watch: JobWatch, reason: str, by: str
) -> Outcome:
    return await replay_dead(opened, _text(form.get("dead_id")), reason, by)


async def _form(request: Request) -> Form:
    """An urlencoded form (what the pages post): each field's first value.

    Parsed here rather than by Starlette, which needs python-multipart for any form.
    """
    fields = parse_qs((await request.body()).decode(errors="replace"), keep_blank_values=True)
    return {name: values[0] for name, values in fields.items()}


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _int(value: object) -> int:
    try:
        return int(_text(value))
    except ValueError:
        raise ConfigError(f"not a number: {value!r}") from None


def _task_id_from_form(form: Form) -> str:
    task_id = _text(form.get("task_id"))
    if not task_id:
        raise ConfigError("a retry names its task")
    return task_id


def _search(watch: JobWatch, query: str) -> list[TaskState]:
    """Tasks whose id is ``query``, whose URL is it (as the crawler keys URLs), or whose
    URL contains it."""
    tasks = watch.state.tasks
    exact: list[TaskState] = []
    try:
        task_id, _ = task_id_of(query)
    except ConfigError:
        task_id = query
    if (hit := tasks.get(task_id)) is not None:
        exact.append(hit)
    found = [t for t in tasks.values() if query in t.url and t.task_id != task_id]
    found.sort(key=lambda t: t.url)
    return exact + found[:SEARCH_FOUND_MAX]


ROUTES = [
    Route(LOGIN_PATH, login),
    Route("/", home),
    Route(pages.SCRIPT_PATH, script),
    Route("/jobs/{job}", panel),
    Route("/jobs/{job}/sites", sites),
    Route("/jobs/{job}/sites/pause", pause_site, methods=["POST"]),
    Route("/jobs/{job}/sites/resume", resume_site, methods=["POST"]),
    Route("/jobs/{job}/tasks", tasks),
    Route("/jobs/{job}/tasks/{task_id}", task),
    Route("/jobs/{job}/tasks/{task_id}/retry", retry_one, methods=["POST"]),
    Route("/jobs/{job}/tasks/{task_id}/resolve", decide_on_task, methods=["POST"]),
    Route("/jobs/{job}/tasks/{task_id}/report/screenshot", report_screenshot),
    Route("/jobs/{job}/attention", attention),
    Route("/jobs/{job}/tasks/{task_id}/evidence/body", evidence_body),
    Route("/jobs/{job}/attention/retry", retry_bulk, methods=["POST"]),
    Route("/jobs/{job}/attention/resolve", decide, methods=["POST"]),
    Route("/jobs/{job}/dead", dead),
    Route("/jobs/{job}/changes", changes),
    Route("/jobs/{job}/dead/replay", replay, methods=["POST"]),
    Route("/jobs/{job}/events", events),
]
"""Every page and action of the console (each refused without a session but the login)."""
