"""The Tasks page's index (``TaskIndex``), kept in step with tasks that change status: the
pages of a filter list exactly the tasks that match it now, each once, within a group the
task that entered it last first, and a page never holds more than its size."""

from __future__ import annotations

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from crawler.console._task_index import PAGE_SIZE, TaskIndex, TaskQuery, group_of
from projector import ABORTED, DONE, FAILED, PENDING, RUNNING, TaskState

STATUSES = (PENDING, RUNNING, DONE, FAILED, ABORTED)
SITES = ("http://a", "http://b")
REASONS = ("HTTP 404", "timeout")

change = st.tuples(
    st.integers(0, 29), st.sampled_from(STATUSES), st.sampled_from(SITES), st.sampled_from(REASONS)
)


def _task(n: int, status: str, site: str, reason: str, at: float) -> TaskState:
    return TaskState(
        task_id=f"t{n:02d}",
        url=f"{site}/{n}",
        site=site,
        status=status,  # type: ignore[arg-type]  # one of STATUSES
        last_reason=reason,
        updated_at=at,
    )


def _every_page(index: TaskIndex, query: TaskQuery, size: int) -> tuple[list[str], int]:
    listed: list[str] = []
    total = -1
    offset = 0
    while True:
        page = index.page(msgspec.structs.replace(query, offset=offset), size)
        assert len(page.tasks) <= size
        assert page.offset == offset or page.total == 0
        total = page.total
        listed += [t.task_id for t in page.tasks]
        offset += size
        if offset >= page.total:
            return listed, total


@settings(max_examples=60, deadline=None)
@given(
    first=st.lists(change, max_size=30),
    later=st.lists(change, max_size=40),
    status=st.sampled_from(("", *STATUSES)),
    site=st.sampled_from(("", *SITES)),
    reason=st.sampled_from(("", *REASONS)),
    size=st.integers(1, 7),
)
def test_every_page_of_a_filter_lists_its_tasks_once_newest_first(
    first: list[tuple[int, str, str, str]],
    later: list[tuple[int, str, str, str]],
    status: str,
    site: str,
    reason: str,
    size: int,
) -> None:
    tasks: dict[str, TaskState] = {}
    clock = 0.0
    for n, s, w, r in first:
        clock += 1
        tasks[f"t{n:02d}"] = _task(n, s, w, r, clock)
    index = TaskIndex(tasks)
    entered = {t: task.updated_at for t, task in tasks.items()}
    for n, s, w, r in later:  # the fold changes a task in place (or adds one), then says so
        clock += 1
        task_id = f"t{n:02d}"
        before = tasks.get(task_id)
        tasks[task_id] = _task(n, s, w, r, clock)
        if before is None or group_of(before) != group_of(tasks[task_id]):
            entered[task_id] = clock
        index.update(task_id)
    query = TaskQuery(status=status, site=site, reason=reason)
    listed, total = _every_page(index, query, size)
    wanted = {t.task_id for t in tasks.values() if query.matches(group_of(t))}
    assert sorted(listed) == sorted(wanted)
    assert total == len(wanted) == len(listed)
    # Within a group, the task that entered it last comes first.
    for group in {group_of(tasks[t]) for t in listed}:
        times = [entered[t] for t in listed if group_of(tasks[t]) == group]
        assert times == sorted(times, reverse=True)


def test_a_page_past_the_end_is_the_last_page() -> None:
    made = [_task(n, DONE, SITES[0], "", float(n)) for n in range(PAGE_SIZE + 3)]
    tasks = {t.task_id: t for t in made}
    page = TaskIndex(tasks).page(TaskQuery(offset=10 * PAGE_SIZE))
    assert page.offset == PAGE_SIZE and len(page.tasks) == 3 and page.total == PAGE_SIZE + 3


def test_a_failure_reason_groups_failed_tasks_only() -> None:
    made = [
        _task(1, FAILED, SITES[0], "HTTP 404", 1.0),
        _task(2, PENDING, SITES[0], "HTTP 404", 2.0),  # a retry's reason: no failure
    ]
    page = TaskIndex({t.task_id: t for t in made}).page(TaskQuery(reason="HTTP 404"))
    assert [t.task_id for t in page.tasks] == ["t01"]
