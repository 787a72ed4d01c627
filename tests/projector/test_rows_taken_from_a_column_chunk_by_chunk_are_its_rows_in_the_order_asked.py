"""``taken`` and ``taken_in_order`` (replay's columnar path reads rows of a column of many
chunks without joining the chunks first) give the column's values at the rows asked for,
in the order asked, whatever the chunks."""

from __future__ import annotations

import itertools

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from projector._columnar import taken, taken_in_order


@st.composite
def columns_and_rows(draw: st.DrawFn) -> tuple[list[bytes], list[list[bytes]], list[int]]:
    values = draw(st.lists(st.binary(max_size=6), max_size=40))
    cuts = sorted(draw(st.lists(st.integers(0, len(values)), max_size=5)))
    bounds = [0, *cuts, len(values)]
    chunks = [values[a:b] for a, b in itertools.pairwise(bounds)]
    rows = draw(st.lists(st.integers(0, len(values) - 1), max_size=30)) if values else []
    return values, chunks, rows


@given(columns_and_rows())
def test_rows_taken_chunk_by_chunk_are_the_column_s_rows(
    case: tuple[list[bytes], list[list[bytes]], list[int]],
) -> None:
    values, chunks, rows = case
    column = pa.chunked_array([pa.array(c, pa.binary()) for c in chunks], pa.binary())
    assert taken(column, sorted(rows)) == [values[r] for r in sorted(rows)]
    assert taken_in_order(column, pa.array(rows, pa.int64())) == [values[r] for r in rows]
