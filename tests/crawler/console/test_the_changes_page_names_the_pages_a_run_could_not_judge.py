"""The console's Changes page names a run's pages with no verdict under its counts, as
``crawlog changes`` does under its list (one wording, `crawler.ops.unjudged_phrase`), and
says nothing of them when there are none."""

from __future__ import annotations

from crawler.console._changes_page import changes_page
from projector import Unjudged


def test_a_run_s_pages_with_no_verdict_are_named_under_its_counts() -> None:
    left = Unjudged(failed={"redirect loop": 2, "HTTP 503": 1}, open=1)
    html = changes_page("shop", 2, [], [], [], left)
    assert (
        '<p id="not-judged">Not judged: 4 page(s), 3 failed (1 HTTP 503, 2 redirect loop); '
        "1 not ended yet (their tasks: the report).</p>"
    ) in html


def test_a_run_whose_every_page_has_a_verdict_says_nothing_of_them() -> None:
    assert "not-judged" not in changes_page("shop", 2, [], [], [], Unjudged())
    assert "not-judged" not in changes_page("shop", 2, [], [], [])
