"""Only eventlog talks to Redis in its own words: keys, scripts and raw commands live there.

Every other package calls eventlog's methods. A module outside ``eventlog/`` that spells a
key prefix (``crawlog:{job}:…``), registers a script, sends a raw command (eventlog's
``command()``, redis-py's ``execute_command``) or calls a stream or set command of the
client itself fails this test, with the file and line.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("crawler", "projector")
KEY_PREFIX = re.compile(r"crawlog:(?!\s)")
"""``crawlog:`` that starts a key; ``crawlog: error: …`` (a message) has a space after it."""
RAW_METHODS = frozenset(
    {
        "register_script",
        "execute_command",
        "eval",
        "evalsha",
        "script_load",
        "xadd",
        "xack",
        "xclaim",
        "xautoclaim",
        "xdel",
        "xlen",
        "xpending",
        "xpending_range",
        "xrange",
        "xrevrange",
        "xread",
        "xreadgroup",
        "xtrim",
        "xinfo_stream",
        "xinfo_consumers",
        "xinfo_groups",
        "sismember",
        "smembers",
        "sadd",
        "scard",
        "zadd",
        "zcard",
        "zrange",
        "zrangebylex",
        "zrem",
        "zscore",
        "hset",
        "hget",
        "hdel",
        "hgetall",
        "hmget",
        "hscan_iter",
        "scan_iter",
        "publish",
        "pubsub",
    }
)
"""redis-py client methods only eventlog calls."""
RAW_FUNCTIONS = frozenset({"command"})
"""eventlog's own raw-command helper (``eventlog._connection.command``)."""


def modules() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py"))


def key_prefixes(source: str) -> Iterator[tuple[int, str]]:
    """(line, text) of every string or comment that spells a key prefix."""
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
            continue
        if KEY_PREFIX.search(node.value):
            yield node.lineno, node.value
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT and KEY_PREFIX.search(token.string):
            yield token.start[0], token.string


def raw_calls(source: str) -> Iterator[tuple[int, str]]:
    """(line, name) of every raw Redis call: a script registered, a raw command sent."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module == "eventlog._connection":
            for alias in node.names:
                if alias.name in RAW_FUNCTIONS:
                    yield node.lineno, f"import of {alias.name}"
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in RAW_METHODS:
            yield node.lineno, f".{func.attr}()"
        elif isinstance(func, ast.Name) and func.id in RAW_FUNCTIONS:
            yield node.lineno, f"{func.id}()"


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_a_module_outside_eventlog_spells_no_key_and_sends_no_raw_command(path: Path) -> None:
    source = path.read_text()
    where = path.relative_to(ROOT)
    found = [f"{where}:{line}: key prefix in {text!r}" for line, text in key_prefixes(source)]
    found += [f"{where}:{line}: raw Redis call {name}" for line, name in raw_calls(source)]
    assert not found, "use eventlog's keys and methods instead:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "source",
    [
        'prefix = f"crawlog:{keys.tag}:"',
        "# the slots live in crawlog:{job}:host:<host>:slots",
        "script = redis.register_script(LUA)",
        'await client.execute_command("XINFO", "STREAM", key)',
        "from eventlog._connection import command",
        'await command(redis, "XTRIM", key, "MINID", position)',
        "await redis.sismember(keys.seen, fingerprint)",
    ],
)
def test_the_check_sees_each_way_around_eventlog(source: str) -> None:
    assert [*key_prefixes(source), *raw_calls(source)]


def test_the_check_leaves_messages_and_click_commands_alone() -> None:
    source = (
        'click.echo(f"crawlog: error: {message}", err=True)\n'
        '@click.command("demo")\n'
        "def demo() -> None: ...\n"
        "group.add_command(demo)\n"
    )
    assert not [*key_prefixes(source), *raw_calls(source)]
