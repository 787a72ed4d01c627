"""The Tasks page's list: the folded state's tasks grouped by status, site and failure
reason, kept in step event by event, so that one page of a filtered list costs the page
and the number of groups, not the job's million tasks.

Each group keeps its tasks in the order they entered it (a dict: insertion order, O(1)
moves), so a page lists the newest of a group first. A filter matches whole groups; a page
skips whole groups by their sizes, then the first tasks of one group (in C, ``islice``):
no request walks the job's tasks in Python. The index is rebuilt with each state the
console starts from (a commit), and each event that names a task moves that task; the
two events whose fold moves tasks it does not name (a site's or the job's resume
unparks them) look every task over again.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from operator import attrgetter

import msgspec

from projector import ABORTED, DONE, FAILED, PAUSED, PENDING, RUNNING, TaskState

STATUS_ORDER = (RUNNING, PENDING, PAUSED, FAILED, ABORTED, DONE)
"""The statuses the list offers, in the order its groups are listed."""
FAILURES = frozenset({FAILED, ABORTED})
"""The statuses whose reason is a group of its own: why the task ended."""
PAGE_SIZE = 50
"""Tasks listed per page."""

Group = tuple[str, str, str]
"""(status, site, failure reason: "" but for a failed or aborted task)."""


class TaskQuery(msgspec.Struct, frozen=True, kw_only=True):
    """Which tasks the list shows (an empty field matches every value) and from where."""

    status: str = ""
    site: str = ""
    reason: str = ""
    offset: int = 0

    def matches(self, group: Group) -> bool:
        status, site, reason = group
        return (
            (not self.status or status == self.status)
            and (not self.site or site == self.site)
            and (not self.reason or reason == self.reason)
        )


class TaskPage(msgspec.Struct, frozen=True, kw_only=True):
    """One page of the list: its tasks, where it starts, and how many match in all."""

    tasks: list[TaskState]
    offset: int
    total: int


def group_of(task: TaskState) -> Group:
    """The group a task is listed in."""
    reason = task.last_reason if task.status in FAILURES else ""
    return (task.status, task.site, reason)


def _order(group: Group) -> tuple[int, str, str]:
    status, site, reason = group
    rank = STATUS_ORDER.index(status) if status in STATUS_ORDER else len(STATUS_ORDER)
    return (rank, site, reason)


class TaskIndex:
    """The tasks of one state (``tasks``: the state's own dict, read as it changes) by group."""

    def __init__(self, tasks: Mapping[str, TaskState]) -> None:
        self._tasks = tasks
        self._group_of: dict[str, Group] = {}
        self._groups: dict[Group, dict[str, None]] = {}
        # Oldest change first: the newest task of each group is its last one.
        for task in sorted(tasks.values(), key=attrgetter("updated_at")):
            self._add(task.task_id, group_of(task))

    def __len__(self) -> int:
        return len(self._group_of)

    def _add(self, task_id: str, group: Group) -> None:
        self._group_of[task_id] = group
        self._groups.setdefault(group, {})[task_id] = None

    def update(self, task_id: str) -> None:
        """Move the task to the group it is in now (last of it), if it changed group."""
        task = self._tasks.get(task_id)
        old = self._group_of.get(task_id)
        new = None if task is None else group_of(task)
        if old == new:
            return
        if old is not None:
            members = self._groups[old]
            del members[task_id]
            if not members:
                del self._groups[old]
            del self._group_of[task_id]
        if new is not None:
            self._add(task_id, new)

    def update_all(self) -> None:
        """Look every task over again (after an event that moves tasks it does not name)."""
        for task_id in self._tasks:
            self.update(task_id)

    def counts(self) -> dict[Group, int]:
        """Every group and how many tasks it has."""
        return {group: len(members) for group, members in self._groups.items()}

    def page(self, query: TaskQuery, size: int = PAGE_SIZE) -> TaskPage:
        """The tasks of the page that starts at ``query.offset`` (clamped to the list)."""
        groups = sorted((g for g in self._groups if query.matches(g)), key=_order)
        total = sum(len(self._groups[g]) for g in groups)
        offset = max(0, min(query.offset, max(total - 1, 0)))
        offset -= offset % size
        return TaskPage(
            tasks=[self._tasks[t] for t in self._ids(groups, offset, size)],
            offset=offset,
            total=total,
        )

    def _ids(self, groups: list[Group], skip: int, size: int) -> Iterator[str]:
        for group in groups:
            members = self._groups[group]
            if skip >= len(members):
                skip -= len(members)
                continue
            taken = list(itertools.islice(reversed(members), skip, skip + size))
            yield from taken
            size -= len(taken)
            skip = 0
            if size <= 0:
                return
