"""The console's ASGI app (Starlette) and how ``crawlog console`` serves it (uvicorn).

One Redis client for the process; per job, the ``OpenJob`` the operator commands use and
a :class:`JobWatch` folding its log, both made on the first request about the job. Every
request passes :class:`TokenGuard` first (``_guard``); every POST also checks the token in
its form, then acts once per form (``_actions.FormLedger``) and answers with a redirect
back to the page, which says what happened (``?done=FORM_ID``).
"""

from __future__ import annotations

import socket
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from html import escape
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlencode

import anyio
import anyio.to_thread
import msgspec
import redis.asyncio as aioredis
from anyio.abc import TaskGroup
from starlette.applications import Starlette
from starlette.datastructures import URL
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from crawler._job import load_config
from crawler.console import _pages as pages
from crawler.console._actions import (
    FormLedger,
    Outcome,
    actor_of,
    control_site,
    needing_a_person,
    replay_dead,
    require_reason,
    resolve_task,
    retry_group,
    retry_task,
    uncertain,
)
from crawler.console._guard import TOKEN_COOKIE, TOKEN_PARAM, access, same_token
from crawler.console._live import JobWatch
from crawler.console._sse import log_messages, start_position
from crawler.ops import JobRow, OpenJob, last_failure, read_job_rows, task_id_of
from eventlog import ConfigError, CrawlogError, EventLog, Evidence, JobKeys, LogEntry, connect
from projector import TaskState

DEAD_SHOWN = 1_000
EVIDENCE_STORIES_KEPT = 1_000
"""Stories of tasks shown with their evidence kept in memory (the latest)."""
SEARCH_FOUND_MAX = 1_000
"""Tasks a search collects at most (the page lists the first ``SHOWN_TASKS``)."""
SCRIPT = resources.files("crawler.console").joinpath("static/console.js").read_text()
GRACEFUL_SHUTDOWN_S = 1
"""Open event streams never end by themselves: a stop waits this long for them."""


class ConsoleSettings(msgspec.Struct, frozen=True, kw_only=True):
    """What one console process serves, and to whom."""

    data_dir: Path
    redis_url: str
    token: str
    user: str
    job: str | None = None
    """The job the home page opens; None: the list of jobs."""


class Console:
    """The process's shared parts: the client, the jobs opened, the forms submitted."""

    def __init__(self, settings: ConsoleSettings) -> None:
        self.settings = settings
        self.ledger = FormLedger()
        self.client: aioredis.Redis | None = None
        self.background: TaskGroup | None = None
        """Where a job's state is read while its panel shows the last commit."""
        self._jobs: dict[str, tuple[OpenJob, JobWatch]] = {}
        self._opening = anyio.Lock()

    async def job(self, name: str) -> tuple[OpenJob, JobWatch]:
        """The job ``name`` (``ConfigError`` if it never started), opened once."""
        from projector import Store

        async with self._opening:
            if (found := self._jobs.get(name)) is not None:
                return found
            assert self.client is not None, "the app's lifespan opens the client"
            keys = JobKeys(name)
            config = await load_config(self.client, keys)
            opened = OpenJob(self.client, keys, config, Store(self.settings.data_dir, name))
            watch = JobWatch(self.client, name, self.settings.data_dir, lease_ms=config.lease_ms)
            self._jobs[name] = (opened, watch)
            return opened, watch


class EvidenceCache:
    """The stories of the tasks whose evidence "needs a person" shows, kept while they stay
    ended: the page is redrawn on every event, and a failure's evidence never changes, so
    the archive is read once per task and attempt, not once per redraw."""

    def __init__(self) -> None:
        self._stories: OrderedDict[tuple[str, str, int], list[LogEntry]] = OrderedDict()

    async def _stories_of(
        self, opened: OpenJob, tasks: Sequence[TaskState]
    ) -> dict[str, list[LogEntry]]:
        from projector import task_history

        job = opened.keys.job
        found = {
            t.task_id: self._stories[(job, t.task_id, t.attempt)]
            for t in tasks
            if (job, t.task_id, t.attempt) in self._stories
        }
        missing = [t for t in tasks if t.task_id not in found]
        if missing:
            entries = await task_history(opened.client, opened.store, [t.task_id for t in missing])
            for t in missing:
                own = [e for e in entries if getattr(e.event, "task_id", None) == t.task_id]
                found[t.task_id] = self._stories[(job, t.task_id, t.attempt)] = own
        while len(self._stories) > EVIDENCE_STORIES_KEPT:
            self._stories.popitem(last=False)
        return found

    async def of_groups(
        self, opened: OpenJob, groups: dict[tuple[str, str], list[TaskState]]
    ) -> list[pages.GroupEvidence]:
        """One task of each of the largest groups, with its story."""
        ordered = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        chosen = ordered[: pages.EVIDENCE_GROUPS_SHOWN]
        stories = await self._stories_of(opened, [tasks[0] for _, tasks in chosen])
        return [
            pages.GroupEvidence(
                status=status,
                reason=reason,
                count=len(tasks),
                task=tasks[0],
                entries=stories[tasks[0].task_id],
            )
            for (status, reason), tasks in chosen
        ]

    async def last(self, opened: OpenJob, task_id: str) -> Evidence | None:
        """The evidence of the task's last failure or abort, if it kept one."""
        from projector import task_history

        entries = await task_history(opened.client, opened.store, [task_id])
        found = last_failure(task_id, entries)
        return None if found is None else found[1].evidence


class TokenGuard:
    """Refuses a request from another host without the token (see ``_guard``)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        bearer = request.headers.get("authorization", "")
        presented = {
            "query": request.query_params.get(TOKEN_PARAM),
            "cookie": request.cookies.get(TOKEN_COOKIE),
            "header": bearer.removeprefix("Bearer ") if bearer.startswith("Bearer ") else None,
        }
        client = scope.get("client")
        how = access(
            client[0] if client else None, request.headers.get("host"), presented, self.token
        )
        if how == "refused":
            response: Response = PlainTextResponse(
                "This console serves another host only with its token: open the URL "
                "`crawlog console` printed at start (it ends in ?token=...).\n",
                status_code=403,
            )
        elif same_token(presented["query"], self.token):
            # Into a cookie, and out of the address bar (and of the history, and of a
            # Referer sent anywhere).
            query = [(k, v) for k, v in request.query_params.multi_items() if k != TOKEN_PARAM]
            clean = URL(scope=scope).replace(query=urlencode(query))
            response = RedirectResponse(str(clean), status_code=303)
            response.set_cookie(TOKEN_COOKIE, self.token, httponly=True, samesite="strict")
        else:
            await self.app(scope, receive, send)
            return
        await response(scope, receive, send)


def create_app(settings: ConsoleSettings) -> Starlette:
    """The console as an ASGI app (its lifespan connects to the job's Redis)."""
    console = Console(settings)
    evidence = EvidenceCache()

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with connect(settings.redis_url) as client, anyio.create_task_group() as tg:
            console.client = client
            console.background = tg
            yield
            tg.cancel_scope.cancel()

    def flash(request: Request) -> Outcome | None:
        form_id = request.query_params.get("done")
        return console.ledger.outcome(form_id) if form_id else None

    def html(
        request: Request, title: str, body: str, job: str | None, after: str | None
    ) -> HTMLResponse:
        page = pages.layout(title, body, job=job, events_after=after, flash=flash(request))
        return HTMLResponse(page, headers={"Cache-Control": "no-store"})

    def failed(exc: CrawlogError, job: str | None, status: int) -> HTMLResponse:
        body = f'<p id="error" class="flash refused">{escape(str(exc))}</p>'
        return HTMLResponse(
            pages.layout("Not here", body, job=job, events_after=None), status_code=status
        )

    Endpoint = Callable[[Request], Awaitable[Response]]

    def about_a_job(
        handler: Callable[[Request, str, OpenJob, JobWatch], Awaitable[Response]],
    ) -> Endpoint:
        async def endpoint(request: Request) -> Response:
            name = request.path_params["job"]
            try:
                opened, watch = await console.job(name)
            except ConfigError as exc:
                return failed(exc, None, 404)
            try:
                return await handler(request, name, opened, watch)
            except CrawlogError as exc:
                return failed(exc, name, 409)

        return endpoint

    async def home(request: Request) -> Response:
        if settings.job is not None:
            return RedirectResponse(f"/jobs/{quote(settings.job, safe='')}", status_code=303)
        rows = await _job_rows(settings)
        return html(request, "Jobs", pages.jobs_page(rows), None, None)

    async def panel(request: Request, job: str, opened: OpenJob, watch: JobWatch) -> Response:
        assert console.background is not None, "the app's lifespan opens it"
        view = await watch.panel(console.background)
        now = await EventLog(opened.client, opened.keys).server_time()
        body = pages.panel_page(view, watch.observed, now)
        return html(request, f"Job {job}", body, job, view.report.position)

    async def sites(request: Request, job: str, opened: OpenJob, watch: JobWatch) -> Response:
        report = await watch.refresh()
        form_ids = [console.ledger.new_form() for _ in report.sites]
        body = pages.sites_page(job, report, watch.state, watch.observed, settings.token, form_ids)
        return html(request, f"Sites of {job}", body, job, report.position)

    async def tasks(request: Request, job: str, opened: OpenJob, watch: JobWatch) -> Response:
        report = await watch.refresh()
        query = request.query_params.get("q", "").strip()
        found = _search(watch, query) if query else []
        return html(
            request, f"Tasks of {job}", pages.search_page(job, query, found), job, report.position
        )

    async def task(request: Request, job: str, opened: OpenJob, watch: JobWatch) -> Response:
        from projector import task_history

        report = await watch.refresh()
        task_id = request.path_params["task_id"]
        state = watch.state.tasks.get(task_id)
        if state is None:
            raise ConfigError(f"job {job!r} has no task {task_id} in its log")
        entries = await task_history(opened.client, opened.store, [task_id], page_url=state.url)
        body = pages.task_page(job, state, entries, settings.token, console.ledger.new_form())
        body += pages.task_evidence_section(job, state, entries)
        return html(request, f"Task {task_id}", body, job, report.position)

    async def attention(request: Request, job: str, opened: OpenJob, watch: JobWatch) -> Response:
        report = await watch.refresh()
        tasks = watch.state.tasks.values()
        groups = needing_a_person(tasks)
        sites = needing_a_person(tasks, by_site=True)
        waiting = uncertain(tasks)
        count = len(groups) + len(sites) + len(waiting)
        form_ids = [console.ledger.new_form() for _ in range(count)]
        shown = await evidence.of_groups(opened, groups)
        body = pages.attention_page(
            job, groups, sites, waiting, settings.token, form_ids, shown
        ) + pages.evidence_section(job, shown)
        return html(request, f"Needs a person in {job}", body, job, report.position)

    async def evidence_body(
        request: Request, job: str, opened: OpenJob, watch: JobWatch
    ) -> Response:
        task_id = request.path_params["task_id"]
        found = await evidence.last(opened, task_id)
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

    async def dead(request: Request, job: str, opened: OpenJob, watch: JobWatch) -> Response:
        report = await watch.refresh()
        letters = await EventLog(opened.client, opened.keys).dead_letters(DEAD_SHOWN)
        form_ids = [console.ledger.new_form() for _ in letters]
        body = pages.dead_page(job, letters, settings.token, form_ids)
        return html(request, f"Dead letters of {job}", body, job, report.position)

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

    def action(
        act: Callable[[Any, str, OpenJob, JobWatch, str, str], Awaitable[Outcome]],
        back: Callable[[str, Any], str],
    ) -> Endpoint:
        async def handler(request: Request, job: str, opened: OpenJob, watch: JobWatch) -> Response:
            form = await _form(request)  # the body is kept: read again, not received again
            form_id = _text(form.get("form_id"))
            if not form_id:
                return PlainTextResponse("a form without its form_id", status_code=400)
            try:
                reason = require_reason(_text(form.get("reason")))
            except ConfigError as exc:
                # Not an outcome of the form: with a reason, the same form may act.
                return failed(exc, job, 400)
            by = actor_of(settings.user)
            await console.ledger.once(form_id, lambda: act(form, job, opened, watch, reason, by))
            watch.invalidate()  # the page redirected to shows the action's event
            target = back(job, form)
            joiner = "&" if "?" in target else "?"
            return RedirectResponse(f"{target}{joiner}done={quote(form_id)}", status_code=303)

        acting = about_a_job(handler)

        async def endpoint(request: Request) -> Response:
            # Before anything else, the job looked up included: no token, nothing done.
            if not same_token(_text((await _form(request)).get("token")), settings.token):
                return PlainTextResponse("an action needs the console's token", status_code=403)
            return await acting(request)

        return endpoint

    def pause_or_resume(pause: bool) -> Endpoint:
        async def act(
            form: Any, job: str, opened: OpenJob, watch: JobWatch, reason: str, by: str
        ) -> Outcome:
            site = _text(form.get("site"))
            if site not in watch.state.sites:
                raise ConfigError(f"no site {site!r} in job {job!r}")
            return await control_site(opened, site, reason, by, pause=pause)

        return action(act, lambda job, form: f"/jobs/{quote(job, safe='')}/sites")

    async def retry_one(
        form: Any, job: str, opened: OpenJob, watch: JobWatch, reason: str, by: str
    ) -> Outcome:
        task_id = _task_id_from_form(form)
        return await retry_task(opened, task_id, _int(form.get("attempt")), reason, by)

    async def retry_bulk(
        form: Any, job: str, opened: OpenJob, watch: JobWatch, reason: str, by: str
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

    async def decide(
        form: Any, job: str, opened: OpenJob, watch: JobWatch, reason: str, by: str
    ) -> Outcome:
        return await resolve_task(
            opened, _task_id_from_form(form), _text(form.get("decision")), reason, by
        )

    async def replay(
        form: Any, job: str, opened: OpenJob, watch: JobWatch, reason: str, by: str
    ) -> Outcome:
        return await replay_dead(opened, _text(form.get("dead_id")), reason, by)

    routes = [
        Route("/", home),
        Route(pages.SCRIPT_PATH, _script),
        Route("/jobs/{job}", about_a_job(panel)),
        Route("/jobs/{job}/sites", about_a_job(sites)),
        Route("/jobs/{job}/sites/pause", pause_or_resume(True), methods=["POST"]),
        Route("/jobs/{job}/sites/resume", pause_or_resume(False), methods=["POST"]),
        Route("/jobs/{job}/tasks", about_a_job(tasks)),
        Route("/jobs/{job}/tasks/{task_id}", about_a_job(task)),
        Route(
            "/jobs/{job}/tasks/{task_id}/retry",
            action(retry_one, _task_page_of),
            methods=["POST"],
        ),
        Route("/jobs/{job}/attention", about_a_job(attention)),
        Route("/jobs/{job}/tasks/{task_id}/evidence/body", about_a_job(evidence_body)),
        Route(
            "/jobs/{job}/attention/retry",
            action(retry_bulk, lambda job, form: f"/jobs/{quote(job, safe='')}/attention"),
            methods=["POST"],
        ),
        Route(
            "/jobs/{job}/attention/resolve",
            action(decide, lambda job, form: f"/jobs/{quote(job, safe='')}/attention"),
            methods=["POST"],
        ),
        Route("/jobs/{job}/dead", about_a_job(dead)),
        Route(
            "/jobs/{job}/dead/replay",
            action(replay, lambda job, form: f"/jobs/{quote(job, safe='')}/dead"),
            methods=["POST"],
        ),
        Route("/jobs/{job}/events", about_a_job(events)),
    ]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.add_middleware(TokenGuard, token=settings.token)
    return app


def _task_page_of(job: str, form: Any) -> str:
    return f"/jobs/{quote(job, safe='')}/tasks/{quote(_text(form.get('task_id')), safe='')}"


async def _form(request: Request) -> dict[str, str]:
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


def _task_id_from_form(form: Any) -> str:
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


async def _script(request: Request) -> Response:
    # Named by its version (``SCRIPT_URL``): a browser may keep it, and asks again only
    # when another crawlog serves another one.
    return Response(
        SCRIPT, media_type="text/javascript", headers={"Cache-Control": "max-age=86400"}
    )


async def _job_rows(settings: ConsoleSettings) -> list[JobRow]:
    """Every job as ``crawlog jobs`` lists it (the server's and the data directory's)."""
    return await read_job_rows(settings.data_dir, settings.redis_url)


def bind_socket(host: str, port: int) -> socket.socket:
    """The listening socket, bound now: the URL printed names the real port, and a port in
    use is a one-line error before anything starts."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket, token: str) -> str:
    """The URL to open, token included."""
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/?{TOKEN_PARAM}={token}"


async def serve(settings: ConsoleSettings, sock: socket.socket) -> None:
    """Serve the console on ``sock`` until SIGINT or SIGTERM."""
    import uvicorn

    config = uvicorn.Config(
        create_app(settings),
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
    )
    await uvicorn.Server(config).serve(sockets=[sock])
