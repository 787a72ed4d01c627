"""Defaults the command line shows, importable without the heavy modules that use them.

``crawlog --help`` and every command's options are built when ``crawler.cli`` is imported,
so their defaults and choices must not import the worker's HTTP clients, Prometheus,
Arrow or DuckDB. The worker's and the metrics' defaults are defined here (``_worker`` and
``_metrics`` import them from here); the projector's are in ``projector._defaults``.
"""

from __future__ import annotations

from typing import Literal, get_args

DEFAULT_CONCURRENCY = 32
DEFAULT_GRACE_S = 10.0
"""On SIGTERM, in-flight tasks get this long to finish their page before being released."""
DEFAULT_METRICS_HOST = "127.0.0.1"
BATCH_SCRIPT_CALLS_ENV = "CRAWLOG_BATCH_SCRIPT_CALLS"
"""Set to 1: a worker sends the script calls its tasks make while one is in flight
together (``crawlog worker --batch-script-calls``, `eventlog.ScriptBatcher`). Off by
default: it halved the round trips of a crawl without lowering its CPU (docs/benchmarks.md)."""
DEFAULT_MAX_TASK_PAGES = 10_000
"""Pages one task may fetch (its first and its `NextPage`s): generous for a real listing,
a bound for a pagination that never ends."""
DEFAULT_MAX_PAGES = 10_000
"""``crawlog crawl``'s bound on the pages a job fetches (``--max-pages``; 0: none): a crawl
caught in a calendar or pagination trap ends by itself, and says so at its start and in
its report. Every task's first page and every next page counts; a retry of a page does not."""
DEFAULT_MAX_ITEM_BYTES = 4 * 1024 * 1024
"""An item's size at most, msgpack-encoded as its event carries it (``--max-item-bytes``;
0: no cap). An item is a record: one past this is a page body or a file yielded by mistake,
which would travel through Redis, the archive and every export; its task fails saying so."""
PAST_MAX_PAGES: Literal["past --max-pages"] = "past --max-pages"
"""Why a URL is not crawled once the job fetched ``--max-pages`` pages (a ``dropped`` reason
in a page's event, which the report sums)."""

FailOn = Literal["none-done", "aborted", "spider-errors", "failed", "never"]
"""When a finished crawl exits non-zero, from the most lenient to the strictest: ``never``;
``none-done``: no task ended done; ``aborted``: that, or a task was aborted (recovered too
often: it kills its workers); ``spider-errors``: that, or more than a share of the tasks
(``--spider-error-share``) failed through spider errors; ``failed``: that, or any task
failed."""
FAIL_ON_CHOICES: tuple[str, ...] = get_args(FailOn)
DEFAULT_FAIL_ON: FailOn = "spider-errors"
"""A few dead links on a real site are not a failed crawl; nothing done, a task that kills
workers, or a spider that fails on many pages (a bug to fix, not the site's doing) is."""
DEFAULT_SPIDER_ERROR_SHARE = 0.10
"""With ``--fail-on spider-errors``: the share of the ended tasks that may fail through
spider errors before the crawl fails."""
SPIDER_FAILURE_PREFIXES: tuple[str, ...] = ("spider error: ", "spider output: ")
"""How the reason of a task failed by its spider begins (`crawler._scraper:Scraper.failure`):
the spider raised, or yielded what the log cannot carry. Any other failure (an HTTP 404, a
timeout, robots.txt) is the site's."""


def is_spider_failure(reason: str) -> bool:
    """Whether a failed task's reason says its spider failed it (not the site)."""
    return reason.startswith(SPIDER_FAILURE_PREFIXES)
