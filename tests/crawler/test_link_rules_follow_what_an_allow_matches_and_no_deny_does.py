"""Link rules as Scrapy's LinkExtractor has them: a URL passes when it matches (anywhere)
one allow pattern, or there are none, and no deny pattern; a pattern that is no regular
expression is a `ConfigError` naming its option."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler._rules import LinkRules, link_rules
from eventlog import ConfigError

PATTERNS = st.lists(
    st.sampled_from(["/item/", r"\d$", "^https:", "page=2", "list", "x"]), max_size=3
)
URLS = st.builds(
    "{}://shop.test/{}{}".format,
    st.sampled_from(["http", "https"]),
    st.sampled_from(["item/", "list/a", "x/", ""]),
    st.sampled_from(["1", "22", "?page=2", "b"]),
)


@given(allow=PATTERNS, deny=PATTERNS, url=URLS)
def test_a_url_passes_when_an_allow_matches_or_there_is_none_and_no_deny_matches(
    allow: list[str], deny: list[str], url: str
) -> None:
    rules = LinkRules(tuple(allow), tuple(deny))
    allowed = not allow or any(re.search(p, url) for p in allow)
    denied = any(re.search(p, url) for p in deny)
    assert rules.allows(url) is (allowed and not denied)
    # No rules at all is no rule object: a crawl without rules checks nothing per link.
    assert (link_rules(allow, deny) is None) is (not allow and not deny)


def test_deny_wins_over_allow_and_patterns_match_anywhere() -> None:
    rules = LinkRules(allow=("/item/",), deny=(r"/item/\d*7$",))
    assert rules.allows("http://shop.test/item/1")
    assert not rules.allows("http://shop.test/item/17")
    assert not rules.allows("http://shop.test/list/a")
    assert LinkRules(deny=("(?i)PDF$",)).allows("http://shop.test/a.html")
    assert not LinkRules(deny=("(?i)PDF$",)).allows("http://shop.test/a.pdf")


@pytest.mark.parametrize(
    ("allow", "deny", "named"), [(("(",), (), "--allow '('"), ((), ("a[",), "--deny 'a['")]
)
def test_a_pattern_that_is_no_regex_is_a_config_error_naming_it(
    allow: tuple[str, ...], deny: tuple[str, ...], named: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(named) + " is not a regular expression"):
        link_rules(allow, deny)
