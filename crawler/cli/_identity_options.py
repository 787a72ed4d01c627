"""``crawl``'s options for the job's HTTP identity and retries: user agent, default headers,
proxies, timeouts, retries, the statuses retried on, the backoff and the circuit breaker;
and which addresses its fetches may reach (``--allow-private``).

All of them are stored in the job's configuration (`crawler._job.JobConfig`), so every
worker of the job, and one that resumes it, fetches the same way; ``crawlog worker`` takes
none of them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import click

from crawler._backoff import (
    DEFAULT_BASE_DELAY_S,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_MAX_DELAY_S,
    RETRYABLE_STATUSES,
)
from crawler._circuit import DEFAULT_COOLDOWN_S, DEFAULT_FAILURES_TO_OPEN
from crawler._fetch_spec import (
    DEFAULT_CONNECT_TIMEOUT_S,
    DEFAULT_READ_TIMEOUT_S,
    DEFAULT_TOTAL_TIMEOUT_S,
    DEFAULT_USER_AGENT,
)
from crawler._identity import (
    DEFAULT_PROXY_ROTATION,
    PROXY_ROTATIONS,
    Header,
    check_proxy,
    format_statuses,
    merged_headers,
    parse_header,
    parse_statuses,
)
from crawler._spider import Spider
from eventlog import ConfigError

F = TypeVar("F", bound=Callable[..., Any])

MAX_RETRIES = 100
MAX_TIMEOUT_S = 86_400.0
MAX_BACKOFF_S = 86_400.0
MAX_CIRCUIT_FAILURES = 1_000_000
MAX_CIRCUIT_COOLDOWN_S = 86_400.0


class HeaderType(click.ParamType[Header, Any]):
    """``Name: value`` as a ``(name, value)`` pair."""

    name = "header"
    envvar_list_splitter = "\n"
    """CRAWLOG_HEADERS holds one header a line: a value has spaces, never a newline."""

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> Header:
        """The header, checked; one line naming what is wrong if it is not one."""
        if isinstance(value, tuple):
            return value
        try:
            return parse_header(str(value))
        except ConfigError as exc:
            raise _bad(exc, param) from None


class ProxyType(click.ParamType[str, Any]):
    """An http(s) proxy URL."""

    name = "url"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        """The URL, checked."""
        try:
            return check_proxy(str(value))
        except ConfigError as exc:
            raise _bad(exc, param) from None


class StatusesType(click.ParamType[tuple[int, ...], Any]):
    """``429,500-504``: HTTP status codes and ranges of them, or ``none``."""

    name = "codes"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> tuple[int, ...]:
        """The codes as a sorted tuple."""
        if isinstance(value, tuple):
            return value
        try:
            return tuple(sorted(parse_statuses(str(value))))
        except ConfigError as exc:
            raise _bad(exc, param) from None


def _bad(exc: ConfigError, param: click.Parameter | None) -> ConfigError:
    # A CrawlogError, not click's BadParameter: one line (click adds its usage), exit 2.
    where = param.opts[0] if param is not None and param.opts else "option"
    return ConfigError(f"{where}: {exc}")


def _seconds(maximum: float) -> click.FloatRange:
    return click.FloatRange(0, maximum, min_open=True)


_OPTIONS: tuple[Callable[[F], F], ...] = (
    click.option(
        "--user-agent",
        default=None,
        metavar="TEXT",
        help="User-Agent of every request, beating the spider's user_agent "
        f"[default: the spider's, else {DEFAULT_USER_AGENT}].",
    ),
    click.option(
        "--header",
        "header",
        type=HeaderType(),
        multiple=True,
        metavar="'NAME: VALUE'",
        help="A default header of every request (repeatable); replaces a spider header of "
        "the same name, and a request's own headers replace it.",
    ),
    click.option(
        "--proxy",
        "proxy",
        type=ProxyType(),
        multiple=True,
        metavar="URL",
        help="Fetch through this http(s) proxy; repeat it for a list to rotate through.",
    ),
    click.option(
        "--proxy-rotation",
        type=click.Choice(PROXY_ROTATIONS),
        default=DEFAULT_PROXY_ROTATION,
        show_default=True,
        help="site: a site always goes through the same proxy (a hash of the site, the "
        "same in every worker); request: the proxies take turns, request by request.",
    ),
    click.option(
        "--timeout",
        type=_seconds(MAX_TIMEOUT_S),
        default=DEFAULT_TOTAL_TIMEOUT_S,
        show_default=True,
        metavar="SECONDS",
        help="The longest a whole fetch may take (every redirect and the body included).",
    ),
    click.option(
        "--connect-timeout",
        type=_seconds(MAX_TIMEOUT_S),
        default=DEFAULT_CONNECT_TIMEOUT_S,
        show_default=True,
        metavar="SECONDS",
        help="The longest wait to open a connection.",
    ),
    click.option(
        "--read-timeout",
        type=_seconds(MAX_TIMEOUT_S),
        default=DEFAULT_READ_TIMEOUT_S,
        show_default=True,
        metavar="SECONDS",
        help="The longest wait for the next bytes of a response.",
    ),
    click.option(
        "--retries",
        type=click.IntRange(0, MAX_RETRIES),
        default=DEFAULT_MAX_ATTEMPTS - 1,
        show_default=True,
        metavar="N",
        help="Retries of a failed fetch after the first attempt: a page is fetched at most "
        "N+1 times, then its task fails.",
    ),
    click.option(
        "--retry-on",
        type=StatusesType(),
        default=format_statuses(RETRYABLE_STATUSES),
        show_default=True,
        help="HTTP statuses retried, e.g. 429,500-504, or none; timeouts and network "
        "errors are always retried.",
    ),
    click.option(
        "--backoff-base",
        type=click.FloatRange(0, MAX_BACKOFF_S),
        default=DEFAULT_BASE_DELAY_S,
        show_default=True,
        metavar="SECONDS",
        help="Retry N waits a random time up to BASE * 2^(N-1) (or longer if Retry-After asks).",
    ),
    click.option(
        "--backoff-cap",
        type=click.FloatRange(0, MAX_BACKOFF_S),
        default=DEFAULT_MAX_DELAY_S,
        show_default=True,
        metavar="SECONDS",
        help="The most a retry's backoff waits.",
    ),
    click.option(
        "--circuit-failures",
        type=click.IntRange(1, MAX_CIRCUIT_FAILURES),
        default=DEFAULT_FAILURES_TO_OPEN,
        show_default=True,
        metavar="N",
        help="A site's circuit opens after N failed fetches in a row (429, 5xx, network "
        "errors, timeouts): none of its pages is fetched until --circuit-cooldown has "
        "passed, then one probe decides.",
    ),
    click.option(
        "--circuit-cooldown",
        type=click.FloatRange(0, MAX_CIRCUIT_COOLDOWN_S),
        default=DEFAULT_COOLDOWN_S,
        show_default=True,
        metavar="SECONDS",
        help="How long an open circuit holds its site's pages before the probe (0: probe at once).",
    ),
    click.option(
        "--allow-private",
        is_flag=True,
        help="Fetch from loopback, private and link-local addresses too (refused by default "
        "but for the seeds' own: a site's redirect, robots.txt or sitemap cannot reach "
        "this machine or its network).",
    ),
)

PARAMS = (
    "user_agent",
    "header",
    "proxy",
    "proxy_rotation",
    "timeout",
    "connect_timeout",
    "read_timeout",
    "retries",
    "retry_on",
    "backoff_base",
    "backoff_cap",
    "circuit_failures",
    "circuit_cooldown",
    "allow_private",
)
"""The parameters `identity_options` adds, as ``crawl`` receives them."""


def identity_options(command: F) -> F:
    """Every option of this module, in the order ``--help`` lists them."""
    for option in reversed(_OPTIONS):
        command = option(command)
    return command


def identity_settings(spider: Spider, values: Mapping[str, Any]) -> dict[str, Any]:
    """The `JobConfig` fields for the options' ``values`` (by parameter name) and the
    spider's ``user_agent`` and ``headers``: an option (flag, environment or crawlog.toml)
    beats the spider, which beats the default; headers are merged by name."""
    user_agent = values["user_agent"]
    if user_agent is None:
        user_agent = spider.user_agent
    if user_agent is not None and not isinstance(user_agent, str):
        raise ConfigError(f"spider {spider.name}: user_agent {user_agent!r} is not a string")
    if not isinstance(spider.headers, Mapping):
        raise ConfigError(
            f"spider {spider.name}: headers {spider.headers!r} is not a dict of name: value"
        )
    flag_headers: tuple[Header, ...] = values["header"]
    return {
        "user_agent": user_agent,
        "headers": merged_headers(spider.headers, flag_headers),
        "proxies": tuple(values["proxy"]),
        "proxy_rotation": values["proxy_rotation"],
        "total_timeout_s": values["timeout"],
        "connect_timeout_s": values["connect_timeout"],
        "read_timeout_s": values["read_timeout"],
        "max_attempts": values["retries"] + 1,
        "retry_on": tuple(values["retry_on"]),
        "backoff_base_s": values["backoff_base"],
        "backoff_cap_s": values["backoff_cap"],
        "circuit_failures": values["circuit_failures"],
        "circuit_cooldown_s": values["circuit_cooldown"],
        "allow_private": values["allow_private"],
    }
