"""``--fail-on spider-errors`` (the default) fails a finished crawl exactly when more than
``--spider-error-share`` of its tasks failed through spider errors; failures of the site
(a 404) never count, and the lenient levels ignore spider errors altogether."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from crawler._defaults import is_spider_failure
from crawler.cli._processes import CrawlSummary, failure


def summary(done: int, failed: int, spider_failures: int) -> CrawlSummary:
    return CrawlSummary(
        job="j",
        complete=True,
        tasks={"done": done, "failed": failed},
        pages=done + failed,
        refetches=0,
        items=done,
        duplicate_items=0,
        anomalies=0,
        seconds=1.0,
        spider_failures=spider_failures,
    )


@given(
    done=st.integers(1, 200),
    site_failures=st.integers(0, 200),
    spider_failures=st.integers(0, 200),
    share=st.sampled_from([0.0, 0.1, 0.25, 0.5, 1.0]),
)
def test_spider_errors_fail_the_crawl_exactly_past_their_share(
    done: int, site_failures: int, spider_failures: int, share: float
) -> None:
    ended = summary(done, site_failures + spider_failures, spider_failures)
    reason = failure(ended, "spider-errors", share)
    total = done + site_failures + spider_failures
    assert (reason is not None) == (spider_failures > share * total)
    if reason is not None:
        assert reason.startswith(f"{spider_failures} of {total} task(s) (")
    assert failure(ended, "aborted", share) is None
    assert failure(ended, "never", share) is None


def test_only_the_spider_s_own_failures_are_spider_errors() -> None:
    assert is_spider_failure("spider error: KeyError: 'price'")
    assert is_spider_failure("spider output: an item's data is not JSON")
    assert not is_spider_failure("HTTP 404")
    assert not is_spider_failure("disallowed by robots.txt")
