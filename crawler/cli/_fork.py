"""A crawl's workers and projector, forked from the crawl before its event loop starts.

Each crawlog process imports the command line (click, the event log, redis-py, anyio) before
it does anything, and a crawl used to start its workers and projector as new interpreters
(``python -m crawler.cli worker ...``) that each paid for that again, one after the other
on the way to a 1-page crawl's summary. A forked child has it all already: the crawl forks
them first thing, before its embedded server starts, and each child imports what only it
uses (the worker its HTTP stack, the projector Arrow) while the crawl starts the server,
stores the job's settings and enqueues the seeds. Then the crawl says go, with the
environment the child runs in (the server's URL), and the child runs its command as if it
had been started as ``crawlog ARGS``.

Forked before any thread or event loop exists (:func:`can_fork` checks), so a child starts
from one thread's state. A child that is not told to go (the crawl failed, or needs fewer
workers than it forked) exits without doing anything: the crawl kills it, or the go pipe
ends (the crawl died). A child of a crawl killed with SIGKILL dies with it
(``die_with_parent``) from the moment it is forked, as a started one did.

What the children inherit is what the crawl imported by then: nothing of Arrow, DuckDB,
rich or the progress table (``tests/crawler/cli/test_cli_startup.py``).
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import json
import os
import signal
import sys
import threading
import traceback
from collections.abc import Collection, Mapping, Sequence

import anyio

from crawler._gc import collector_paused
from crawler.cli._lifeline import PARENT_ENV, die_with_parent

_GO_FDS: set[int] = set()
"""Write ends of the go pipes this process holds: a child closes every one it inherits,
else a sibling's pipe would not end when the crawl dies."""
_CHUNK = 65536
_PR_SET_NAME = 15


def can_fork() -> bool:
    """Whether forking is safe here: Linux pidfds, and this process's only thread."""
    return hasattr(os, "pidfd_open") and threading.active_count() == 1


class Forked:
    """A crawlog command in a forked child: waits for :meth:`start`, then runs.

    Stands in for an ``anyio.abc.Process`` where a crawl uses one: ``pid``, ``returncode``,
    ``wait``, ``send_signal``, ``kill``. Signals go through a pidfd, so none reaches another
    process that reused the pid after this one was reaped.
    """

    def __init__(self, pid: int, go_fd: int, environment: Mapping[str, str]) -> None:
        self.pid = pid
        self._go_fd = go_fd
        self._environment = dict(environment)
        self._pidfd: int | None = os.pidfd_open(pid)
        self._returncode: int | None = None
        self._lock: anyio.Lock | None = None
        self.started = False

    @property
    def returncode(self) -> int | None:
        """As ``subprocess``: the exit status, minus the signal that killed it, or None."""
        if self._returncode is None:
            self._reap(os.WNOHANG)
        return self._returncode

    def start(self, environment: Mapping[str, str]) -> None:
        """Go: run the command, in ``environment`` (what differs from the crawl's at fork)."""
        removed = [k for k in self._environment if k not in environment]
        changed = {k: v for k, v in environment.items() if self._environment.get(k) != v}
        message = json.dumps({"set": changed, "unset": removed}).encode()
        # A few hundred bytes: the pipe takes them at once. A child that died already says
        # so by its exit status.
        with contextlib.suppress(BrokenPipeError):
            os.write(self._go_fd, message)
        self._close_go()
        self.started = True

    def dismiss(self) -> None:
        """Not needed after all: end it (it did nothing yet) and reap it."""
        self._close_go()
        self.kill()
        self._reap(0)

    async def wait(self) -> int:
        """Its exit status, once it has exited."""
        if self._lock is None:
            self._lock = anyio.Lock()
        while (status := self.returncode) is None:
            # One waiter on the pidfd at a time (anyio allows no more); the others queue.
            # Readable once the child has exited, reaped or not.
            async with self._lock:
                if self.returncode is None and self._pidfd is not None:
                    await anyio.wait_readable(self._pidfd)
                    self._reap(0)
        return status

    def send_signal(self, signum: int) -> None:
        """Signal it, unless it was reaped (as ``Popen.send_signal``)."""
        if self.returncode is None and self._pidfd is not None:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(self._pidfd, signum)

    def kill(self) -> None:
        """SIGKILL it."""
        self.send_signal(signal.SIGKILL)

    def _reap(self, flags: int) -> None:
        if self._returncode is not None:
            return
        try:
            pid, status = os.waitpid(self.pid, flags)
        except ChildProcessError:
            pid, status = self.pid, 255 << 8  # reaped elsewhere: the status is lost
        if pid == 0:
            return
        self._returncode = os.waitstatus_to_exitcode(status)
        # The pidfd stays open: a waiter may be polling it (closed, it would never wake).

    def __del__(self) -> None:
        pidfd = getattr(self, "_pidfd", None)  # None too if __init__ failed before it
        if pidfd is not None:
            os.close(pidfd)
            self._pidfd = None

    def _close_go(self) -> None:
        if self._go_fd != -1:
            _GO_FDS.discard(self._go_fd)
            os.close(self._go_fd)
            self._go_fd = -1


def fork_command(
    args: Sequence[str],
    *,
    name: str,
    title: str,
    preload: Sequence[str] = (),
    stderr: int,
    quiet: bool = False,
    new_session: bool = False,
    blocked: Collection[signal.Signals] = (),
) -> Forked:
    """Fork a child that waits to be started, then runs ``crawlog ARGS``.

    ``name``: what ``ps -o comm``, ``top`` and ``pstree`` show (the kernel keeps 15
    bytes); ``title``: its command line as ``ps`` shows it, in place of the crawl's it was
    forked with; ``preload``: what it imports meanwhile (modules, or ``module:name`` for a
    package's lazily loaded name); ``stderr``: its stderr's fd; ``quiet``: its stdout to
    /dev/null; ``new_session``: in a session of its own; ``blocked``: signals blocked as it
    starts (its command unblocks what it listens for).
    """
    go_read, go_write = os.pipe()
    crawl = os.getpid()
    environment = dict(os.environ)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()  # else the child would write what this process had buffered too
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, blocked)
    try:
        pid = os.fork()
        if pid == 0:
            status = 1
            try:
                _name_process(name, title)
                status = _child(crawl, args, preload, go_read, go_write, stderr, quiet, new_session)
            except BaseException:  # never back into the crawl's own code
                traceback.print_exc()
            finally:
                os._exit(status)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    os.close(go_read)
    _GO_FDS.add(go_write)
    return Forked(pid, go_write, environment)


def _child(
    crawl: int,
    args: Sequence[str],
    preload: Sequence[str],
    go_read: int,
    go_write: int,
    stderr: int,
    quiet: bool,
    new_session: bool,
) -> int:
    os.environ[PARENT_ENV] = str(crawl)
    die_with_parent()  # from now on, as a started child is
    for fd in (*_GO_FDS, go_write):
        os.close(fd)
    _GO_FDS.clear()
    if new_session:
        os.setsid()
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    if quiet:
        os.dup2(devnull, 1)
    os.dup2(stderr, 2)
    os.close(devnull)
    try:
        # As the command line's own imports (crawler/_gc.py): what the child imports lives
        # as long as it does, out of every collection.
        with collector_paused(freeze=True):
            for name in preload:
                module, _, attribute = name.partition(":")
                loaded = importlib.import_module(module)
                if attribute:
                    getattr(loaded, attribute)  # a package's lazy export: loads its module
        message = _read_all(go_read)
    except KeyboardInterrupt:  # a Ctrl-C before the crawl said go: it stops too
        return 130
    if not message:
        return 0  # dismissed, or the crawl died: nothing was done
    changes = json.loads(message)
    for key in changes["unset"]:
        os.environ.pop(key, None)
    os.environ.update(changes["set"])
    from crawler.cli._main import cli

    try:
        cli.main(args=list(args), prog_name="crawlog")
    except SystemExit as exit_:
        return _status(exit_.code)
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
    return 0


def _name_process(name: str, title: str) -> None:
    import setproctitle

    # Rewrites the argv the child shares with nothing now (/proc/PID/cmdline); it sets the
    # short name from the title too, hence the short name after it.
    setproctitle.setproctitle(title)
    with contextlib.suppress(OSError, AttributeError):
        # The kernel keeps 15 bytes of it.
        ctypes.CDLL(None).prctl(_PR_SET_NAME, name.encode()[:15], 0, 0, 0)


def _read_all(fd: int) -> bytes:
    data = b""
    while chunk := os.read(fd, _CHUNK):
        data += chunk
    os.close(fd)
    return data


def _status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)  # as the interpreter does for sys.exit("message")
    return 1
