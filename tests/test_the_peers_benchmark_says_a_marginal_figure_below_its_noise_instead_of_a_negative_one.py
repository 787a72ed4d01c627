"""A marginal CPU figure is a difference of two crawls' CPU: no larger than how much the
one-page crawl's CPU varied over the rounds, it is no figure, and the peers benchmark says
so (its JSON key kept, None) rather than printing a negative number."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tools.bench_vs_peers import below_noise, marginal_noise_ms, shown_marginal


def test_the_noise_is_the_one_page_crawl_s_spread_over_the_pages() -> None:
    assert marginal_noise_ms([0.50, 0.62, 0.55], 1200) == 1000 * 0.12 / 1200
    assert marginal_noise_ms([0.5], 1200) == 0.0  # one round: no spread to go by


def test_a_figure_within_its_noise_is_said_to_be_so() -> None:
    assert shown_marginal(-7.2, 0.0) == "below its noise (0.00)"
    assert shown_marginal(0.08, 0.1) == "below its noise (0.10)"
    assert shown_marginal(1.67, 0.1) == "1.67"


@given(st.floats(-100, 100), st.floats(0, 10))
def test_no_negative_figure_is_ever_shown(marginal: float, noise: float) -> None:
    shown = shown_marginal(marginal, noise)
    assert below_noise(marginal, noise) == shown.startswith("below")
    assert not shown.startswith("-")
