"""The command line has one duration formatter and one table renderer (``crawler.ops``): ETAs,
uptimes, ages and leases read alike, and every table lines up the same way."""

from __future__ import annotations

from crawler.ops import format_duration, table_lines

DAY = 24 * 3600


def test_durations_read_like_a_person_wrote_them() -> None:
    assert [format_duration(s) for s in (None, 0.4, 59, 61, 3600 + 120, 2 * DAY + 3 * 3600)] == [
        "-",
        "0s",
        "59s",
        "1m01s",
        "1h02m",
        "2d03h",
    ]


def test_a_lease_age_is_told_to_a_tenth_of_a_second_under_a_minute() -> None:
    assert [format_duration(s, tenths=True) for s in (0.04, 1.5, 59.94, 59.96, 75)] == [
        "0.0s",
        "1.5s",
        "59.9s",
        "1m00s",
        "1m15s",
    ]


def test_a_table_aligns_its_columns_without_trailing_spaces() -> None:
    rows = [["name", "n", "note"], ["a", "10", ""], ["longer", "7", "x"]]
    assert table_lines(rows, [False, True], "  ", rule=True) == [
        "  name     n  note",
        "  ------  --  ----",
        "  a       10",
        "  longer   7  x",
    ]
    assert table_lines([]) == []
