"""A crawl's summary reads every task's state (for a recrawled job, every run's) to count
its spider failures only when that count could fail it: under ``--fail-on spider-errors``,
with more failed tasks than ``--spider-error-share`` of them. Otherwise the exit status is
the same whatever the count, and the summary leaves it uncounted (None). Before, any
failed task made the summary read every task: after each recrawl of a job with a gone
page (a 404 is a failed task), and for no use, as a recrawl's exit does not judge them."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from crawler.cli._processes import CrawlSummary, failure, spider_failures_counted

SHARES = st.sampled_from([0.0, 0.1, 0.25, 0.5, 1.0])


def _summary(done: int, failed: int, spider_failures: int | None) -> CrawlSummary:
    return CrawlSummary(
        job="j", complete=True, tasks={"done": done, "failed": failed}, pages=done + failed,
        refetches=0, items=done, duplicate_items=0, anomalies=0, seconds=1.0,
        spider_failures=spider_failures,
    )  # fmt: skip


@given(done=st.integers(1, 200), failed=st.integers(0, 200), share=SHARES, data=st.data())
def test_left_uncounted_the_exit_is_what_any_count_would_give(
    done: int, failed: int, share: float, data: st.DataObject
) -> None:
    tasks = {"done": done, "failed": failed}
    if spider_failures_counted(tasks, share):
        return
    spider = data.draw(st.integers(0, failed), label="spider failures")
    for fail_on in ("spider-errors", "failed", "aborted", "none-done", "never"):
        counted = failure(_summary(done, failed, spider), fail_on, share)  # type: ignore[arg-type]
        uncounted = failure(_summary(done, failed, None), fail_on, share)  # type: ignore[arg-type]
        assert counted == uncounted


def test_counted_only_past_the_share_and_never_for_a_recrawl() -> None:
    assert spider_failures_counted({"done": 8, "failed": 2}, 0.1)
    assert not spider_failures_counted({"done": 9, "failed": 1}, 0.1)  # 1 is not past 10 %
    assert not spider_failures_counted({"done": 10}, 0.0)
    assert not spider_failures_counted({"done": 1, "failed": 9}, None)
