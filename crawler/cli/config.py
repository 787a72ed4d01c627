"""``crawlog config``: the effective configuration, and where each value came from."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from crawler._fetch_spec import DEFAULT_USER_AGENT
from crawler._identity import format_statuses, merged_headers, parse_header
from crawler._spider import load_spider, spider_path
from crawler.cli._options import json_option
from crawler.cli._settings import (
    CONFIG_COMMAND,
    SETTINGS,
    ConfigFile,
    Setting,
    config_path,
    targets,
)
from eventlog import REDIS_URL_ENV, ConfigError, redacted, resolve_data_dir

CONFIG_META = "crawlog.config"
"""``ctx.meta`` key of the loaded :class:`ConfigFile` (set by the top-level group)."""
REDIS_FROM_FILE_META = "crawlog.redis_url_from_file"


@click.command(
    CONFIG_COMMAND,
    epilog="Example:  crawlog config --delay 0.5   (or: CRAWLOG_DELAY=0.5 crawlog config)",
)
@json_option
@click.pass_context
def config_command(ctx: click.Context, /, as_json: bool, **values: Any) -> None:
    """Print the effective configuration and where each value came from.

    Precedence: a flag beats its CRAWLOG_* environment variable, which beats crawlog.toml
    (in the working directory, or $CRAWLOG_CONFIG), which beats the built-in default. Give
    this command any flag of `crawl` or `worker` to see what that command line would get.
    """
    file: ConfigFile = ctx.meta.get(CONFIG_META) or ConfigFile(config_path(), {}, exists=False)
    rows = [_row(ctx, file, setting, values) for setting in SETTINGS]
    _spider_identity(rows)
    if as_json:
        out = {"file": str(file.path) if file.exists else None, "settings": rows}
        click.echo(json.dumps(out, indent=2, default=str))
        return
    click.echo(f"config file: {file.path if file.exists else f'{file.path} (none)'}")
    width = max(len(r["key"]) for r in rows)
    for r in rows:
        value = r["value"]
        if isinstance(value, list):
            value = "; ".join(value) if value else "-"
        elif value is None:
            value = "-"
        click.echo(f"{r['key']:<{width}}  {value!s:<24}  {r['source']}")


def _row(
    ctx: click.Context, file: ConfigFile, setting: Setting, values: dict[str, Any]
) -> dict[str, Any]:
    value: Any
    if setting.param is None:  # redis_url
        value = os.environ.get(REDIS_URL_ENV)
        if ctx.meta.get(REDIS_FROM_FILE_META):
            source = _file_source(file)
        else:
            source = f"env {setting.env}" if value else "default"
        shown = redacted(value) if value else None
    else:
        owner = ctx if setting.param in values else ctx.find_root()
        value = owner.params.get(setting.param)
        source = _source(owner.get_parameter_source(setting.param), setting, file)
        shown = _shown_value(setting, value)
        if setting.param == "data_dir":
            shown = str(resolve_data_dir(value))
    return {
        "key": setting.key,
        "value": shown,
        "source": source,
        "env": setting.env,
        "flag": setting.flag,
        "help": setting.help,
    }


def _spider_identity(rows: list[dict[str, Any]]) -> None:
    """The spider's ``user_agent`` and ``headers`` where no option beats them, with the
    spider as their source: what ``crawl`` would store (`identity_settings`)."""
    by_key = {row["key"]: row for row in rows}
    path = by_key["job.spider"]["value"]
    try:
        spider = load_spider(spider_path(path)) if path else None
    except ConfigError:
        spider = None  # `crawl` says why; here the other settings are still worth showing
    source = f"spider {path}"
    agent = by_key["http.user_agent"]
    if agent["value"] is None:
        if spider is not None and spider.user_agent is not None:
            agent["value"], agent["source"] = spider.user_agent, source
        else:
            agent["value"] = DEFAULT_USER_AGENT
    headers = by_key["http.headers"]
    if spider is not None and spider.headers:
        given = [parse_header(text) for text in headers["value"]]
        merged = merged_headers(spider.headers, given)
        headers["value"] = [f"{name}: {value}" for name, value in merged]
        headers["source"] = source if not given else f"{headers['source']} over {source}"


def _shown_value(setting: Setting, value: Any) -> Any:
    """A value as it is typed: a header ``Name: value``, codes ``429,500-504``, a proxy
    without its password; a repeatable option's values as a list."""
    if setting.param == "retry_on" and isinstance(value, tuple):
        return format_statuses(value)
    if not isinstance(value, tuple):
        return value
    if setting.param == "proxy":
        return [redacted(url) for url in value]
    return [f"{item[0]}: {item[1]}" if isinstance(item, tuple) else item for item in value]


def _source(found: ParameterSource | None, setting: Setting, file: ConfigFile) -> str:
    if found is ParameterSource.COMMANDLINE:
        return f"flag {setting.flag}"
    if found is ParameterSource.ENVIRONMENT:
        return f"env {setting.env}"
    if found is ParameterSource.DEFAULT_MAP:
        return _file_source(file)
    return "default"


def _file_source(file: ConfigFile) -> str:
    try:
        return str(file.path.relative_to(Path.cwd()))
    except ValueError:
        return str(file.path)


def add_setting_options(command: click.Command, root: click.Group) -> None:
    """Give ``crawlog config`` each setting's flag, typed like the option it stands for."""
    have = {p.name for p in command.params}
    for setting in SETTINGS:
        if setting.param is None or setting.param in have:
            continue
        model = next(
            (p for path, p in targets(root, setting) if path != CONFIG_COMMAND),
            None,
        )
        if not isinstance(model, click.Option) or setting.commands == ("",):
            continue  # the group's own options (--log-format) stay the group's
        command.params.append(
            click.Option(
                [str(setting.flag)],
                setting.param,
                type=model.type,
                is_flag=model.is_flag,
                multiple=model.multiple,
                default=None if model.required else model.default,
                envvar=setting.env,
                show_envvar=True,
                help=f"As for {setting.commands[0] if setting.commands else 'every command'}.",
            )
        )
        have.add(setting.param)
