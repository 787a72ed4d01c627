"""``crawlog cookies``: the cookie jars of a ``--cookies`` job, listed or cleared."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import click

from crawler.cli._operator import echo_json
from crawler.cli._options import data_dir_option, job_option, json_option
from crawler.ops import format_duration, open_job, resolve_site, table_lines
from eventlog import CookieStore, StoredCookie

VALUE_SHOWN = 12
"""Characters of a cookie's value listed (a session token is a secret): the rest is cut."""
SESSION = "session"
"""The expiry listed for a cookie without one: it lasts as long as the crawl."""
EXPIRED = "expired"
HEADER = ("site", "name", "value", "domain", "path", "expires in", "flags")


@click.command("cookies", epilog="Example:  crawlog cookies --job shop --site shop.example.com")
@job_option
@data_dir_option
@click.option(
    "--site",
    metavar="HOST",
    help="One site's jar: HOST[:PORT] or scheme://host[:port] [default: every site's].",
)
@click.option(
    "--clear",
    is_flag=True,
    help="Empty the jars listed: every worker sends none of their cookies from its next "
    "request on (a login starts a fresh session).",
)
@json_option
def cookies_command(
    job: str, data_dir: Path | None, site: str | None, clear: bool, as_json: bool
) -> None:
    """List the cookies a --cookies job keeps, one jar per site, or clear them (--clear).

    Values are cut to their first few characters; expiry is counted from now.
    """

    async def run() -> tuple[list[tuple[str, StoredCookie]], int, list[str], bool]:
        async with open_job(data_dir, job) as opened:
            store = CookieStore(opened.client, opened.keys)
            known = await store.sites()
            sites = [await resolve_site(opened, site, also=known)] if site else known
            listed = [(s, c) for s in sites for c in await store.cookies(s)]
            dropped = await store.clear(sites) if clear else 0
            return listed, dropped, sites, opened.config.cookies

    listed, dropped, sites, enabled = anyio.run(run)
    if as_json:
        echo_json(
            {
                "cookies": [{"site": s, **_fields(c)} for s, c in listed],
                "cleared": dropped if clear else None,
            }
        )
        return
    if not enabled:
        click.echo(f"job {job} keeps no cookies (it was started without --cookies)")
    if listed:
        now = time.time()
        rows = [HEADER, *[(s, *_row(c, now)) for s, c in listed]]
        click.echo("\n".join(table_lines(rows, rule=True)))
    elif enabled:
        where = f"site {sites[0]}" if site else f"job {job}"
        click.echo(f"no cookies kept for {where}")
    if clear:
        jars = f"{len(sites)} jar(s)" if not site else f"the jar of {sites[0]}"
        click.echo(f"cleared {jars}: {dropped} cookie(s) dropped")


def _fields(cookie: StoredCookie) -> dict[str, object]:
    return {
        "name": cookie.name,
        "value": _cut(cookie.value),
        "domain": cookie.domain,
        "path": cookie.path,
        "expires": cookie.expires,
        "secure": cookie.secure,
        "http_only": _http_only(cookie),
    }


def _row(cookie: StoredCookie, now: float) -> tuple[str, ...]:
    if cookie.expires is None:
        expires = SESSION
    elif cookie.expires <= now:
        expires = EXPIRED
    else:
        expires = format_duration(cookie.expires - now)
    flags = [
        name for name, on in (("secure", cookie.secure), ("httponly", _http_only(cookie))) if on
    ]
    return (
        cookie.name,
        _cut(cookie.value) or "",
        cookie.domain,
        cookie.path,
        expires,
        ",".join(flags) or "-",
    )


def _cut(value: str | None) -> str | None:
    if value is None or len(value) <= VALUE_SHOWN:
        return value
    return value[:VALUE_SHOWN] + "…"


def _http_only(cookie: StoredCookie) -> bool:
    return any(name.lower() == "httponly" for name in cookie.rest)
