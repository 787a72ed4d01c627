"""A Redis with a password, and a crawl run as an ACL user that may touch only crawlog's
keys and channels and no dangerous command: enqueue, workers, projector and report work."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest
import redis

from crawler.cli._argv import crawlog_command
from crawler.testsite import serve_testsite
from tests.valkey_process import running_valkey

ROOT = Path(__file__).resolve().parents[2]
ADMIN_PASSWORD = "admin-secret"
CRAWLER_PASSWORD = "crawler-secret"
# The recipe docs/eventlog.md gives: crawlog's keys and channels, no dangerous command.
ACL_RULES = ("on", f">{CRAWLER_PASSWORD}", "~crawlog:*", "&crawlog:*", "+@all", "-@dangerous")


async def crawlog(*args: str, url: str, timeout: float = 120) -> tuple[int, str, str]:
    """Run a crawlog command (off this event loop, which serves the test site)."""
    env = {**os.environ, "REDIS_URL": url}
    command = crawlog_command(*args)
    with anyio.fail_after(timeout):
        done = await anyio.run_process(command, env=env, cwd=ROOT, check=False)
    assert done.returncode is not None
    return done.returncode, done.stdout.decode(), done.stderr.decode()


@pytest.mark.anyio
async def test_an_acl_user_limited_to_crawlog_keys_crawls_projects_and_reports(
    tmp_path: Path,
) -> None:
    with running_valkey(tmp_path / "valkey", "--save", "", password=ADMIN_PASSWORD) as server:
        with redis.Redis.from_url(server.url) as admin:
            admin.execute_command("ACL", "SETUSER", "crawler", *ACL_RULES)
            admin.set("someone-else:key", "theirs")
        url = f"redis://crawler:{CRAWLER_PASSWORD}@127.0.0.1:{server.port}/0"
        with redis.Redis.from_url(url) as limited:
            # The ACL really bites: other keys and dangerous commands are refused.
            with pytest.raises(redis.exceptions.NoPermissionError):
                limited.get("someone-else:key")
            with pytest.raises(redis.exceptions.NoPermissionError):
                limited.flushall()

        data_dir = tmp_path / "data"
        async with serve_testsite(pages=40, seed=5) as site:
            code, out, err = await crawlog(
                "crawl",
                site.url + "/",
                "--job",
                "acl",
                "--workers",
                "1",
                "--data-dir",
                str(data_dir),
                url=url,
            )
            assert code == 0, out + err
            reachable = {u.removeprefix(site.url) for u in site.reachable}
            assert reachable <= {r.path for r in site.requests}
        code, out, err = await crawlog(
            "report", "--job", "acl", "--data-dir", str(data_dir), "--json", url=url
        )
        assert code == 0, out + err
        assert json.loads(out)  # a report came back
        code, out, err = await crawlog(
            "replay", "--job", "acl", "--data-dir", str(data_dir), "--verify", url=url
        )
        assert code == 0, out + err

        with redis.Redis.from_url(server.url) as admin:
            # Everything the crawl wrote is under crawlog:, and nothing else was touched.
            keys = {k.decode() for k in admin.keys("*")}
            assert keys - {"someone-else:key"} and all(
                k.startswith("crawlog:") for k in keys - {"someone-else:key"}
            )
            assert admin.get("someone-else:key") == b"theirs"


@pytest.mark.anyio
async def test_a_wrong_password_is_one_clear_line(tmp_path: Path) -> None:
    with running_valkey(tmp_path / "valkey", "--save", "", password=ADMIN_PASSWORD) as server:
        wrong = f"redis://default:nope@127.0.0.1:{server.port}/0"
        code, _, err = await crawlog("server", "status", url=wrong, timeout=30)
    assert code != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "credentials" in lines[0] and "nope" not in lines[0], err
