"""`did_you_mean` offers the known names close to a job's, never the job's own: a job with a
log but no settings is known by its name, and "no job 'books' here (did you mean 'books'?)"
tells the user nothing."""

from __future__ import annotations

from eventlog import did_you_mean


def test_the_name_asked_for_is_not_offered_back() -> None:
    assert did_you_mean("books", ["books"]) == ""


def test_the_names_close_to_it_still_are() -> None:
    assert did_you_mean("books", ["books", "book", "films"]) == " (did you mean 'book'?)"
