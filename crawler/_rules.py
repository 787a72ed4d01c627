"""Link rules: which links a crawl follows, by regular expressions on their absolute URLs.

Scrapy's ``LinkExtractor(allow=..., deny=...)`` semantics: a URL is followed when it
matches (``re.search``, anywhere in the URL) at least one ``allow`` pattern, or there are
none, and no ``deny`` pattern. Deny wins over allow. The rules apply to the links the
default spider finds and to ``response.follow_all``; a ``Follow`` a spider yields itself is
its own decision. A link a rule leaves out is counted on its page as :data:`DENIED_BY_RULE`.

Everything here is pure: the worker builds one :class:`LinkRules` per job.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from crawler._urls import DropReason
from eventlog import ConfigError

DENIED_BY_RULE: Final[DropReason] = "denied by rule"
"""The drop reason of a link a rule leaves out (matches a deny, or no allow)."""


@dataclass(frozen=True, slots=True)
class LinkRules:
    """Allow and deny patterns, compiled once; ``ConfigError`` for one that is no regex."""

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    _allow: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)
    _deny: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Frozen: the compiled patterns are set once, here, through object's own setattr.
        object.__setattr__(self, "_allow", _compiled("--allow", self.allow))
        object.__setattr__(self, "_deny", _compiled("--deny", self.deny))

    @property
    def active(self) -> bool:
        """Whether any pattern is set (no rules: every link is followed)."""
        return bool(self._allow or self._deny)

    def allows(self, url: str) -> bool:
        """Whether ``url`` (absolute) passes: an allow matches (or there is none) and no deny."""
        if self._allow and not any(p.search(url) for p in self._allow):
            return False
        return not any(p.search(url) for p in self._deny)


def _compiled(option: str, patterns: Iterable[str]) -> tuple[re.Pattern[str], ...]:
    compiled = []
    for pattern in patterns:
        try:
            compiled.append(re.compile(pattern))
        except re.error as exc:
            raise ConfigError(f"{option} {pattern!r} is not a regular expression: {exc}") from None
    return tuple(compiled)


def link_rules(allow: Iterable[str] = (), deny: Iterable[str] = ()) -> LinkRules | None:
    """The rules for these patterns; None when there are none, so that a crawl without rules
    checks nothing per link."""
    rules = LinkRules(tuple(allow), tuple(deny))
    return rules if rules.active else None
