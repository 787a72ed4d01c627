"""Configuration: ``crawlog.toml``, ``CRAWLOG_*`` environment variables, command-line flags.

Every setting is one entry of :data:`SETTINGS`: its key in ``crawlog.toml``, its environment
variable, and the click parameter it fills. The precedence is click's own, so no layer of
ours can disagree with it: a flag beats the environment variable (the parameter's
``envvar``), which beats ``crawlog.toml`` (the context's ``default_map``), which beats the
built-in default. :func:`bind` wires the settings into the command tree once, before the
command line is parsed; ``crawlog config`` asks click where each value came from.

Two settings have no flag and reach the code through the environment instead: ``redis_url``
(``REDIS_URL``, which ``eventlog._server.resolve_url`` reads, as do the worker and projector
processes a crawl starts) and the file's own location (``CRAWLOG_CONFIG``).
"""

from __future__ import annotations

import difflib
import os
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from crawler._spider import is_spider_file
from eventlog import DATA_DIR_ENV, REDIS_URL_ENV, ConfigError

CONFIG_FILE = "crawlog.toml"
CONFIG_ENV = "CRAWLOG_CONFIG"
"""Path of the configuration file, if not ``./crawlog.toml``."""
EVERY_COMMAND = None
"""A setting that fills its parameter in every command that has it (``--job``, ``--data-dir``)."""
ROOT = ""
"""The command path of the top-level group."""
CONFIG_COMMAND = "config"
"""``crawlog config`` takes every setting's flag, to show what a command line would get."""


@dataclass(frozen=True, slots=True)
class Setting:
    """One configurable value."""

    key: str
    """Dotted key in ``crawlog.toml``: ``section.name``, or ``name`` at the top."""
    env: str
    param: str | None
    """The click parameter it fills; None for a setting passed on through the environment."""
    commands: tuple[str, ...] | None
    """Command paths ("crawl", "server start", "" for the group) whose ``param`` it fills;
    :data:`EVERY_COMMAND` for every command that has that parameter."""
    kind: type
    """The TOML type: str, int, float (an integer is accepted too), bool, list (of strings;
    one string is a list of one) or dict (a table of strings, given to a ``Name: value``
    option such as ``--header`` as one such string per entry)."""
    help: str

    @property
    def flag(self) -> str | None:
        """The command-line flag, e.g. ``--per-host``."""
        return None if self.param is None else "--" + self.param.replace("_", "-")


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "redis_url",
        REDIS_URL_ENV,
        None,
        None,
        str,
        "Redis/Valkey server to use [default: crawlog's own server in the data dir]",
    ),
    Setting(
        "data_dir",
        DATA_DIR_ENV,
        "data_dir",
        EVERY_COMMAND,
        str,
        "data directory (server, archive, state); relative to crawlog.toml's directory",
    ),
    Setting(
        "log_format",
        "CRAWLOG_LOG_FORMAT",
        "log_format",
        (ROOT,),
        str,
        "human or json, for this process and the ones it starts",
    ),
    Setting(
        "log_level",
        "CRAWLOG_LOG_LEVEL",
        "log_level",
        EVERY_COMMAND,
        str,
        "debug, info, warning or error (worker and projector processes)",
    ),
    Setting("job.name", "CRAWLOG_JOB", "job", EVERY_COMMAND, str, "the job commands act on"),
    Setting(
        "job.workers",
        "CRAWLOG_WORKERS",
        "workers",
        ("crawl",),
        int,
        "worker processes `crawl` starts",
    ),
    Setting(
        "job.concurrency",
        "CRAWLOG_CONCURRENCY",
        "concurrency",
        ("crawl", "worker"),
        int,
        "fetches in flight per worker",
    ),
    Setting(
        "job.spider",
        "CRAWLOG_SPIDER",
        "spider",
        ("crawl",),
        str,
        "MODULE:CLASS or FILE.py:CLASS (a file relative to crawlog.toml's directory)",
    ),
    Setting(
        "job.max_pages",
        "CRAWLOG_MAX_PAGES",
        "max_pages",
        ("crawl",),
        int,
        "fetch at most this many pages, each task's first and next pages (0: no bound)",
    ),
    Setting(
        "job.max_item_bytes",
        "CRAWLOG_MAX_ITEM_BYTES",
        "max_item_bytes",
        ("crawl",),
        int,
        "an item's encoded size at most (0: no cap): a larger one fails its task",
    ),
    Setting(
        "job.lease",
        "CRAWLOG_LEASE",
        "lease",
        ("crawl",),
        float,
        "seconds a stalled worker keeps its tasks",
    ),
    Setting(
        "job.fail_on",
        "CRAWLOG_FAIL_ON",
        "fail_on",
        ("crawl",),
        str,
        "none-done, aborted, spider-errors, failed or never: when a finished crawl exits 1",
    ),
    Setting(
        "job.spider_error_share",
        "CRAWLOG_SPIDER_ERROR_SHARE",
        "spider_error_share",
        ("crawl",),
        float,
        "with fail_on spider-errors: the share of tasks that may fail through spider errors",
    ),
    Setting("scope.mode", "CRAWLOG_SCOPE", "scope", ("crawl",), str, "prefix, host or domain"),
    Setting("scope.depth", "CRAWLOG_DEPTH", "depth", ("crawl",), int, "follow links this deep"),
    Setting(
        "politeness.per_host",
        "CRAWLOG_PER_HOST",
        "per_host",
        ("crawl",),
        int,
        "requests in flight per host, across workers",
    ),
    Setting(
        "politeness.delay",
        "CRAWLOG_DELAY",
        "delay",
        ("crawl",),
        float,
        "seconds between request starts per host",
    ),
    Setting(
        "politeness.autothrottle",
        "CRAWLOG_AUTOTHROTTLE",
        "autothrottle",
        ("crawl",),
        bool,
        "adapt each host's delay to its latency (delay is its floor)",
    ),
    Setting(
        "politeness.autothrottle_target",
        "CRAWLOG_AUTOTHROTTLE_TARGET",
        "autothrottle_target",
        ("crawl",),
        float,
        "with autothrottle: requests a host should have in flight on average",
    ),
    Setting(
        "politeness.autothrottle_max_delay",
        "CRAWLOG_AUTOTHROTTLE_MAX_DELAY",
        "autothrottle_max_delay",
        ("crawl",),
        float,
        "with autothrottle: the adapted delay's ceiling, in seconds",
    ),
    Setting(
        "politeness.ignore_robots",
        "CRAWLOG_IGNORE_ROBOTS",
        "ignore_robots",
        ("crawl",),
        bool,
        "do not obey robots.txt",
    ),
    Setting(
        "cookies",
        "CRAWLOG_COOKIES",
        "cookies",
        ("crawl",),
        bool,
        "keep and send cookies: one jar per site, shared by every worker",
    ),
    Setting(
        "browser",
        "CRAWLOG_BROWSER",
        "browser",
        ("crawl",),
        bool,
        "render every page in Chromium (Playwright; Debian's chromium or $CRAWLOG_CHROMIUM)",
    ),
    Setting(
        "http.user_agent",
        "CRAWLOG_USER_AGENT",
        "user_agent",
        ("crawl",),
        str,
        "User-Agent of every request (beats the spider's user_agent)",
    ),
    Setting(
        "http.headers",
        "CRAWLOG_HEADERS",
        "header",
        ("crawl",),
        dict,
        "default request headers, a table Name = value (env: one Name: value a line)",
    ),
    Setting(
        "http.proxy",
        "CRAWLOG_PROXY",
        "proxy",
        ("crawl",),
        list,
        "http(s) proxy URL, or a list of them to rotate through",
    ),
    Setting(
        "http.proxy_rotation",
        "CRAWLOG_PROXY_ROTATION",
        "proxy_rotation",
        ("crawl",),
        str,
        "site (a site always through the same proxy) or request (in turn)",
    ),
    Setting(
        "http.allow_private",
        "CRAWLOG_ALLOW_PRIVATE",
        "allow_private",
        ("crawl",),
        bool,
        "fetch from loopback, private and link-local addresses, not only the seeds' own",
    ),
    Setting(
        "http.timeout",
        "CRAWLOG_TIMEOUT",
        "timeout",
        ("crawl",),
        float,
        "seconds a whole fetch may take",
    ),
    Setting(
        "http.connect_timeout",
        "CRAWLOG_CONNECT_TIMEOUT",
        "connect_timeout",
        ("crawl",),
        float,
        "seconds to open a connection",
    ),
    Setting(
        "http.read_timeout",
        "CRAWLOG_READ_TIMEOUT",
        "read_timeout",
        ("crawl",),
        float,
        "seconds to wait for the next bytes of a response",
    ),
    Setting(
        "retry.retries",
        "CRAWLOG_RETRIES",
        "retries",
        ("crawl",),
        int,
        "retries of a failed fetch after the first attempt",
    ),
    Setting(
        "retry.retry_on",
        "CRAWLOG_RETRY_ON",
        "retry_on",
        ("crawl",),
        str,
        "HTTP statuses retried, e.g. 429,500-504, or none",
    ),
    Setting(
        "retry.backoff_base",
        "CRAWLOG_BACKOFF_BASE",
        "backoff_base",
        ("crawl",),
        float,
        "seconds: retry N waits up to base * 2^(N-1)",
    ),
    Setting(
        "retry.backoff_cap",
        "CRAWLOG_BACKOFF_CAP",
        "backoff_cap",
        ("crawl",),
        float,
        "the most seconds a retry's backoff waits",
    ),
    Setting(
        "retry.circuit_failures",
        "CRAWLOG_CIRCUIT_FAILURES",
        "circuit_failures",
        ("crawl",),
        int,
        "failed fetches of a site in a row that open its circuit",
    ),
    Setting(
        "retry.circuit_cooldown",
        "CRAWLOG_CIRCUIT_COOLDOWN",
        "circuit_cooldown",
        ("crawl",),
        float,
        "seconds an open circuit holds its site's pages before one probe",
    ),
    Setting(
        "links.allow",
        "CRAWLOG_ALLOW",
        "allow",
        ("crawl",),
        list,
        "follow only links matching one of these regexes (spider's allow if unset)",
    ),
    Setting(
        "links.deny",
        "CRAWLOG_DENY",
        "deny",
        ("crawl",),
        list,
        "follow no link matching one of these regexes (spider's deny if unset)",
    ),
    Setting(
        "seeds.sitemaps",
        "CRAWLOG_SITEMAP",
        "sitemap",
        ("crawl",),
        list,
        "sitemap URLs (or indexes) whose URLs are seeds",
    ),
    Setting(
        "seeds.sitemaps_from_robots",
        "CRAWLOG_SITEMAPS_FROM_ROBOTS",
        "sitemaps_from_robots",
        ("crawl",),
        bool,
        "seed from the sitemaps each seed site's robots.txt lists",
    ),
    Setting(
        "metrics.host",
        "CRAWLOG_METRICS_HOST",
        "metrics_host",
        ("crawl", "worker", "project"),
        str,
        "address the metrics endpoint binds",
    ),
    Setting(
        "metrics.port",
        "CRAWLOG_METRICS_PORT",
        "metrics_port",
        ("crawl", "worker", "project"),
        int,
        "Prometheus metrics port (crawl: projector P, worker n P+n)",
    ),
)

_BY_KEY = {s.key: s for s in SETTINGS}


@dataclass(frozen=True, slots=True)
class ConfigFile:
    """What ``crawlog.toml`` set (only the keys it has), and where it is."""

    path: Path
    values: Mapping[str, Any]
    """Setting key -> value, already checked against the setting's type."""
    exists: bool


def config_path() -> Path:
    """``$CRAWLOG_CONFIG``, else ``./crawlog.toml``."""
    return Path(os.environ.get(CONFIG_ENV) or CONFIG_FILE).expanduser().absolute()


def load_file(path: Path | None = None) -> ConfigFile:
    """Read and check the configuration file; an absent file sets nothing.

    ``ConfigError`` (one line naming the file and the key) for a syntax error, an unknown
    key or a value of the wrong type.
    """
    path = path or config_path()
    shown = _shown(path)
    try:
        with path.open("rb") as file:
            document = tomllib.load(file)
    except FileNotFoundError:
        if CONFIG_ENV in os.environ:
            raise ConfigError(f"{shown} (from {CONFIG_ENV}): no such file") from None
        return ConfigFile(path, {}, exists=False)
    except OSError as exc:
        raise ConfigError(f"{shown}: cannot read it ({exc.strerror or exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{shown}: not valid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{shown}: {_not_utf8(exc)}") from None
    values: dict[str, Any] = {}
    for key, value in _flatten(document):
        setting = _BY_KEY.get(key)
        if setting is None:
            close = difflib.get_close_matches(key, list(_BY_KEY), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(f"{shown}: unknown key {key!r}{hint}; see `crawlog config`")
        values[key] = _checked(shown, setting, value)
    if isinstance(values.get("data_dir"), str):
        # Relative to the file, not to wherever a command happens to run.
        values["data_dir"] = str(path.parent / Path(values["data_dir"]).expanduser())
    spider = values.get("job.spider")
    if isinstance(spider, str) and is_spider_file(spider):
        values["job.spider"] = str(path.parent / Path(spider).expanduser())  # the same
    return ConfigFile(path, values, exists=True)


def _not_utf8(exc: UnicodeDecodeError) -> str:
    # tomllib decodes the whole file before parsing: the error's object is the file's bytes.
    before = exc.object[: exc.start]
    line = before.count(b"\n") + 1
    column = exc.start - (before.rfind(b"\n") + 1) + 1
    byte = exc.object[exc.start : exc.start + 1].hex()
    return (
        f"not UTF-8 (byte 0x{byte} at line {line}, column {column}): TOML files are UTF-8; "
        "save it in that encoding"
    )


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _flatten(table: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    for key, value in table.items():
        if isinstance(value, dict) and f"{prefix}{key}" not in _BY_KEY:
            yield from _flatten(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


_KIND_NAMES = {
    str: "a string",
    int: "an integer",
    float: "a number",
    bool: "true or false",
    list: "a string or a list of strings",
    dict: "a table of strings",
}


def _checked(shown: str, setting: Setting, value: Any) -> Any:
    kind = setting.kind
    if kind is list or kind is dict:
        return _checked_collection(shown, setting, value)
    # TOML's types are strict and bool is an int in Python: check them before click's
    # conversion, which would happily take "3" for an integer or "yes" for a flag.
    ok = (
        isinstance(value, bool)
        if kind is bool
        else isinstance(value, (int, float)) and not isinstance(value, bool)
        if kind is float
        else isinstance(value, kind) and not isinstance(value, bool)
    )
    if not ok:
        raise ConfigError(
            f"{shown}: {setting.key} = {value!r}: expected {_KIND_NAMES[kind]} ({setting.help})"
        )
    return float(value) if kind is float else value


def _checked_collection(shown: str, setting: Setting, value: Any) -> list[str]:
    if setting.kind is list and isinstance(value, str):
        value = [value]
    if setting.kind is list and isinstance(value, list):
        if all(isinstance(item, str) for item in value):
            return value
    elif isinstance(value, dict) and all(isinstance(item, str) for item in value.values()):
        return [f"{name}: {item}" for name, item in value.items()]
    raise ConfigError(
        f"{shown}: {setting.key} = {value!r}: expected {_KIND_NAMES[setting.kind]} ({setting.help})"
    )


# --- binding the settings to the command tree -------------------------------------------------


def commands(group: click.Group, path: str = ROOT) -> Iterator[tuple[str, click.Command]]:
    """Every command under ``group`` (the group itself first) with its path, e.g. "server start"."""
    yield path, group
    for name, command in group.commands.items():
        sub = f"{path} {name}".strip()
        if isinstance(command, click.Group):
            yield from commands(command, sub)
        else:
            yield sub, command


def targets(root: click.Group, setting: Setting) -> Iterator[tuple[str, click.Parameter]]:
    """The (command path, parameter) pairs a setting fills (``crawlog config`` has them all)."""
    if setting.param is None:
        return
    for path, command in commands(root):
        listed = setting.commands is EVERY_COMMAND or path in setting.commands
        if not listed and path != CONFIG_COMMAND:
            continue
        for param in command.params:
            if param.name == setting.param:
                yield path, param


def bind(root: click.Group, file: ConfigFile) -> dict[str, Any]:
    """Give every bound parameter its environment variable; the file's ``default_map``.

    Also checks the file's values with the parameters' own types (ranges, choices), so a
    bad value is reported against the file rather than as a flag nobody typed.
    """
    default_map: dict[str, Any] = {}
    for setting in SETTINGS:
        for path, param in targets(root, setting):
            # Set on the parameter itself: click then resolves flag > env > default_map.
            param.envvar = setting.env
            if isinstance(param, click.Option):
                param.show_envvar = True
            if setting.key not in file.values:
                continue
            value = file.values[setting.key]
            try:
                for item in value if isinstance(value, list) else [value]:
                    param.type.convert(item, param, None)
            except click.BadParameter as exc:
                raise ConfigError(
                    f"{_shown(file.path)}: {setting.key} = {value!r}: {exc.message}"
                ) from None
            except ConfigError as exc:  # the identity options' own checks
                message = str(exc).removeprefix(f"{param.opts[0]}: ") if param.opts else exc
                raise ConfigError(
                    f"{_shown(file.path)}: {setting.key} = {value!r}: {message}"
                ) from None
            node = default_map
            for part in path.split():
                node = node.setdefault(part, {})
            node[param.name] = value
    return default_map


def export_redis_url(file: ConfigFile) -> bool:
    """Put the file's ``redis_url`` in ``REDIS_URL`` unless that is set; whether it did.

    The URL has no flag to fill: this way it reaches ``resolve_url``, and the processes a
    crawl starts, exactly as an exported REDIS_URL would, with the same precedence.
    """
    url = file.values.get("redis_url")
    if url is None or os.environ.get(REDIS_URL_ENV):
        return False
    os.environ[REDIS_URL_ENV] = url
    return True
