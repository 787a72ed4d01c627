"""``crawlog shell URL``: fetch one page as a job's worker would, and try selectors on it.

The page is fetched with the job's settings (``--job``) or the defaults, and handed to a
Python prompt as ``response``, the spider's own `Response`; ``fetch(url)`` loads another
page into it. IPython is used when it is installed, else the standard library's prompt.
With ``--command`` (given again: each in turn), or a script on stdin that is not a
terminal, the lines are run as the prompt would run them, each expression's value
printed, and no prompt is shown: that is how scripts and tests use it.

One fetcher serves every ``fetch`` of a session, on an event loop of its own thread (a
blocking portal), so the prompt itself stays plain synchronous Python.
"""

from __future__ import annotations

import code
import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from crawler.cli._options import data_dir_option
from eventlog import ConfigError, CrawlogError

if TYPE_CHECKING:
    import redis.asyncio as aioredis

    from crawler._fetch import Fetcher
    from crawler._job import JobConfig
    from crawler._spider import Response

EXIT_RAISED = 1
"""A line run with --command or from stdin raised: the traceback is shown, then this."""
SHELL_DEPTH = 0
SHELL_PAGE = 1
BANNER = (
    "crawlog shell: `response` is {url} (HTTP {status}); fetch(url) loads another page "
    "into it; `config` is the job's settings ({job}). Ctrl-D to leave."
)


@click.command(
    "shell",
    epilog="Examples:  crawlog shell http://127.0.0.1:8000/ --job site\n\n"
    "           crawlog shell http://127.0.0.1:8000/ -c 'response.status' -c 'response.encoding'",
)
@click.argument("url")
@click.option(
    "--job",
    default=None,
    metavar="NAME",
    help="Fetch with this job's settings [default: the defaults; so too for a job not found].",
)
@data_dir_option
@click.option(
    "-c",
    "--command",
    "commands",
    multiple=True,
    metavar="CODE",
    help="Run CODE (lines, as typed at the prompt: values are printed) instead of a prompt; "
    "given again, each in turn.",
)
def shell_command(
    url: str, job: str | None, data_dir: Path | None, commands: tuple[str, ...]
) -> None:
    """Fetch URL as a worker of the job would and open a Python prompt with `response`
    (the spider's Response: status, headers, text, json(), and the selectors) and
    fetch(url) to load another page.

    With --command, or with a script piped to stdin, the code runs without a prompt and
    the command exits 1 if it raised. A URL that cannot be fetched is one line, exit 2.
    """
    import anyio.from_thread

    from crawler._urls import check_seed_url

    target = check_seed_url(url)
    config = _job_config(job, data_dir)
    with anyio.from_thread.start_blocking_portal() as portal:
        fetcher, client = portal.call(_open_fetcher, config, job, data_dir)
        try:
            session = _Session(lambda u: portal.call(_fetch, fetcher, u))
            session.fetch(target)
            namespace = session.namespace(config)
            if commands:
                ok = _run_lines(namespace, [ln for c in commands for ln in [*c.splitlines(), ""]])
            elif not sys.stdin.isatty():
                ok = _run_lines(namespace, sys.stdin.read().splitlines())
            else:
                _prompt(namespace, _banner(session.response, job if config else None))
                ok = True
        finally:
            portal.call(fetcher.aclose)
            if client is not None:
                portal.call(client.aclose)
    if not ok:
        sys.exit(EXIT_RAISED)


class _Session:
    """The page the prompt shows, and how it loads another."""

    def __init__(self, get: Callable[[str], Response]) -> None:
        self._get = get
        self._namespace: dict[str, Any] = {}
        self.response: Response | None = None

    def fetch(self, url: str) -> Response:
        """Fetch ``url`` (resolved against the page shown, if relative): the new
        ``response``, also returned."""
        from crawler._urls import check_seed_url, join_href

        if self.response is not None:
            url = join_href(url, self.response.base_url) or url
        self.response = self._get(check_seed_url(url))
        self._namespace["response"] = self.response
        return self.response

    def namespace(self, config: JobConfig | None) -> dict[str, Any]:
        """The prompt's globals: ``response``, ``fetch`` and ``config``."""
        self._namespace.update(
            {"__name__": "__crawlog_shell__", "fetch": self.fetch, "config": config}
        )
        return self._namespace


def _job_config(job: str | None, data_dir: Path | None) -> JobConfig | None:
    """The settings of ``job`` if it exists; None (the defaults) otherwise, said on stderr."""
    if job is None:
        return None
    import anyio

    from crawler._job import load_config
    from eventlog import JobKeys, check_job_name, connect, resolve_url

    check_job_name(job)

    async def read() -> JobConfig:
        async with connect(resolve_url(data_dir, create=False)) as client:
            return await load_config(client, JobKeys(job))

    try:
        return anyio.run(read)
    except ConfigError as exc:
        click.echo(f"crawlog: {exc}; fetching with the default settings", err=True)
        return None


async def _open_fetcher(
    config: JobConfig | None, job: str | None, data_dir: Path | None
) -> tuple[Fetcher, aioredis.Redis | None]:
    """A fetcher with the settings a worker of the job has (the defaults without one), and
    the client of the job's server it uses (for a job's cookie jars), if any."""
    from crawler._fetch import FetchConfig, Fetcher

    # A worker's fetcher is built from the job's settings by the same rules: what the job
    # adds to its fetches (identity, cookies, proxies) reaches the shell through here.
    client = None
    cookies = None
    if config is not None and config.cookies and job is not None:
        from crawler._cookies import SharedCookies
        from eventlog import CookieStore, JobKeys, client_for, resolve_url

        # The job's shared jars: the shell sends a session the crawl opened, and keeps
        # what the page sets, as one more worker would.
        client = client_for(resolve_url(data_dir, create=False))
        cookies = SharedCookies(CookieStore(client, JobKeys(job)))
    fetch_config = config.fetch_config() if config is not None else FetchConfig()
    fetcher = Fetcher(fetch_config, cookies=cookies)
    await fetcher.__aenter__()
    return fetcher, client


async def _fetch(fetcher: Fetcher, url: str) -> Response:
    """The page at ``url`` as a spider's `Response`; CrawlogError if nothing answered."""
    from crawler._spider import Response
    from crawler._urls import fingerprint

    result = await fetcher.fetch(url)
    if result.error is not None:
        raise CrawlogError(f"cannot fetch {url}: {result.error}")
    return Response(
        url=result.final_url or url,
        status=result.status,
        headers=result.headers,
        body=result.body,
        elapsed_ms=result.elapsed_ms,
        task_id=fingerprint(url),
        depth=SHELL_DEPTH,
        page=SHELL_PAGE,
        resume=None,
        once=_no_once,
        task_url=url,
    )


async def _no_once(action_id: str, action: Callable[[], Any]) -> Any:
    # ``once`` is recorded in a job's log, which the shell does not write: refuse rather
    # than run an action that must never repeat without its marker.
    raise CrawlogError(f"once({action_id!r}) runs only in a crawl, not in crawlog shell")


def _banner(response: Response | None, job: str | None) -> str:
    assert response is not None
    shown = f"job {job}" if job else "the defaults"
    return BANNER.format(url=response.url, status=response.status, job=shown)


class _Console(code.InteractiveConsole):
    """Runs lines as the prompt would, remembering whether any of them raised."""

    raised = False

    def showtraceback(self) -> None:
        self.raised = True
        super().showtraceback()

    def showsyntaxerror(self, filename: str | None = None, **kwargs: Any) -> None:
        self.raised = True
        super().showsyntaxerror(filename, **kwargs)


def _run_lines(namespace: dict[str, Any], lines: list[str]) -> bool:
    """Run ``lines`` as typed at the prompt (an expression's value printed); whether none
    raised."""
    # A failed fetch(...) here is a traceback, as any error in the user's code is; only
    # the first page, fetched before any line runs, is crawlog's one-line error.
    console = _Console(namespace)
    for line in [*lines, ""]:  # the empty line ends a block left open
        console.push(line)
    return not console.raised


def _prompt(namespace: dict[str, Any], banner: str) -> None:
    """IPython if it is installed, else the standard library's prompt."""
    try:
        ipython = importlib.import_module("IPython")
    except ImportError:
        code.interact(banner=banner, local=namespace, exitmsg="")
        return
    click.echo(banner)
    ipython.start_ipython(argv=["--no-banner"], user_ns=namespace)
