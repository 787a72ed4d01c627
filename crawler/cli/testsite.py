"""``crawlog testsite``: serve the generated test site as a process of its own."""

from __future__ import annotations

import asyncio
from pathlib import Path

import click
import msgspec

from crawler.testsite import (
    DEFAULT_HUGE_PAGE_BYTES,
    DEFAULT_PAGES,
    LAYOUTS,
    MAX_PAGES,
    MAX_SEED,
    NO_FAULTS,
    Faults,
    Layout,
    run_testsite,
)
from eventlog import ConfigError


def _rate_times(option: str, text: str | None, default_times: int) -> tuple[float, int] | None:
    """``RATE`` or ``RATE:TIMES`` from an option, or None if the option was not given."""
    if text is None:
        return None
    rate, _, times = text.partition(":")
    try:
        return float(rate), int(times) if times else default_times
    except ValueError:
        raise ConfigError(
            f"{option} wants RATE or RATE:TIMES, such as 0.05 or 0.05:2, not {text!r}"
        ) from None


def _rate_seconds(text: str | None) -> tuple[float, float] | None:
    if text is None:
        return None
    rate, colon, seconds = text.partition(":")
    try:
        if not colon:
            raise ValueError(text)
        return float(rate), float(seconds)
    except ValueError:
        raise ConfigError(f"--slow wants RATE:SECONDS, such as 0.01:0.5, not {text!r}") from None


def build_faults(
    *,
    preset: str,
    fault_500: str | None = None,
    fault_429: str | None = None,
    slow: str | None = None,
    redirects: bool | None = None,
    redirect_loop: bool | None = None,
    huge_page: bool | None = None,
    robots_disallow: str | None = None,
) -> Faults:
    """The faults the command-line options ask for: a preset ("none" or "all"), adjusted."""
    faults = Faults.all() if preset == "all" else NO_FAULTS
    changes: dict[str, object] = {}
    if (errors := _rate_times("--fault-500", fault_500, faults.error_500_times)) is not None:
        changes["error_500_rate"], changes["error_500_times"] = errors
    if (throttles := _rate_times("--fault-429", fault_429, faults.throttle_429_times)) is not None:
        changes["throttle_429_rate"], changes["throttle_429_times"] = throttles
    if (slowness := _rate_seconds(slow)) is not None:
        changes["slow_rate"], changes["slow_s"] = slowness
    for name, value in (
        ("redirects", redirects),
        ("redirect_loop", redirect_loop),
        ("huge_page", huge_page),
        ("robots_disallow", robots_disallow),
    ):
        if value is not None:
            changes[name] = value
    return msgspec.structs.replace(faults, **changes)


@click.command(
    "testsite",
    epilog="Example:  crawlog testsite --port 8080 --pages 5000 --faults all "
    "--request-log requests.jsonl",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="Port on 127.0.0.1; 0 picks a free one (printed).",
)
@click.option(
    "--pages",
    type=click.IntRange(1, MAX_PAGES),
    default=DEFAULT_PAGES,
    show_default=True,
    help="Detail pages (10-100 KiB each), all reachable from /.",
)
@click.option(
    "--seed",
    type=click.IntRange(0, MAX_SEED),
    default=0,
    show_default=True,
    help="The same seed gives the same site, byte for byte.",
)
@click.option(
    "--layout",
    type=click.Choice(LAYOUTS),
    default="default",
    show_default=True,
    help="default: item pages and listings; link-dense: a documentation site (pages of "
    "~100 KB with hundreds of links, mostly the same navigation, indexes with thousands); "
    "scripted: a shop whose links scripts write (crawl it with --browser); docs: an "
    "ordinary documentation site (pages of 10-20 KB with 40-80 links, the same navigation, "
    "a few figures and PDFs).",
)
@click.option(
    "--request-log",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="PATH",
    help="Append every request served to PATH, one JSON line each.",
)
@click.option(
    "--faults",
    "preset",
    type=click.Choice(["none", "all"]),
    default="none",
    show_default=True,
    help="Start from no faults, or all of them at a demo dose; the options below adjust.",
)
@click.option(
    "--fault-500",
    metavar="RATE[:TIMES]",
    help="Share of paths that answer 500 to their first TIMES requests [TIMES: 2].",
)
@click.option(
    "--fault-429",
    metavar="RATE[:TIMES]",
    help="Share of paths that answer 429 with Retry-After: 1 to their first TIMES requests "
    "[TIMES: 1].",
)
@click.option("--slow", metavar="RATE:SECONDS", help="Share of paths answered SECONDS late.")
@click.option(
    "--redirects/--no-redirects",
    default=None,
    help="Some item pages link /moved/N (301) and /go/N (302) to canonical items.",
)
@click.option(
    "--redirect-loop/--no-redirect-loop",
    default=None,
    help="The home page links /loop/a, which redirects to /loop/b and back.",
)
@click.option(
    "--huge-page/--no-huge-page",
    default=None,
    help=f"The home page links /huge, {DEFAULT_HUGE_PAGE_BYTES // 2**20} MiB.",
)
@click.option(
    "--robots-disallow",
    metavar="PREFIX",
    help="robots.txt disallows PREFIX (such as /private/), whose pages the home page links.",
)
def testsite_command(
    port: int,
    pages: int,
    seed: int,
    layout: Layout,
    request_log: Path | None,
    preset: str,
    fault_500: str | None,
    fault_429: str | None,
    slow: str | None,
    redirects: bool | None,
    redirect_loop: bool | None,
    huge_page: bool | None,
    robots_disallow: str | None,
) -> None:
    """Serve a generated site to crawl on 127.0.0.1, until SIGINT or SIGTERM.

    Listing pages with pagination link every detail page; detail pages are 10-100 KiB with
    50-200 links each. The same --pages and --seed give the same site. Faults are off unless
    asked for.
    """
    faults = build_faults(
        preset=preset,
        fault_500=fault_500,
        fault_429=fault_429,
        slow=slow,
        redirects=redirects,
        redirect_loop=redirect_loop,
        huge_page=huge_page,
        robots_disallow=robots_disallow,
    )
    served = asyncio.run(
        run_testsite(
            pages=pages,
            seed=seed,
            faults=faults,
            port=port,
            request_log=request_log,
            announce=lambda line: click.echo(line),
            layout=layout,
        )
    )
    click.echo(f"stopped after {served} requests")
