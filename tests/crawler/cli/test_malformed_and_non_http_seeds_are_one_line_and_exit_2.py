"""Malformed seeds and seeds that are not http(s) are refused before anything starts: one
line naming the seed and what is wrong, exit status 2, no server started."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from crawler.cli._argv import crawlog_command

BAD_SEEDS = {
    "": "empty",
    "http://": "no host",
    "//example.org/": "no scheme",
    "not a url": "whitespace",
    "http://exa mple.org/": "whitespace",
    "http://[::1": "cannot be parsed",
    "http://example.org:99999/": "cannot be parsed",
    "http://exa\\mple.org/": "cannot be parsed",
    "ftp://example.org/": "not an http(s) URL",
    "file:///etc/passwd": "not an http(s) URL",
    "javascript:alert(1)": "not an http(s) URL",
    "data:text/html,hi": "not an http(s) URL",
    "mailto:a@example.org": "not an http(s) URL",
}


# Every bad seed for crawl; a few for enqueue, which checks seeds the same way.
CASES = [("crawl", seed, says) for seed, says in BAD_SEEDS.items()] + [
    ("enqueue", seed, BAD_SEEDS[seed]) for seed in ("", "http://[::1", "file:///etc/passwd")
]


@pytest.mark.parametrize(("command", "seed", "says"), CASES, ids=[f"{c}:{s}" for c, s, _ in CASES])
def test_a_bad_seed_is_one_line_and_exit_2(
    command: str, seed: str, says: str, tmp_path: Path
) -> None:
    job = ["--job", "seeds"] if command == "enqueue" else []
    argv = crawlog_command(command, *job, "--data-dir", str(tmp_path))
    result = subprocess.run(
        [*argv, "http://127.0.0.1:9/ok/", seed], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    named = repr(seed) in lines[0] or not seed  # an empty seed is "seed URL is empty"
    assert len(lines) == 1 and says in lines[0] and named, result.stderr
    assert not list(tmp_path.iterdir())  # refused before a server or a job was started
