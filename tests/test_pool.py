"""Work arrays from Arrow's memory pool (core/pool.py) and the checks that avoid touching
memory a clean encode never needs (core/codecs.py ``Problems.clean``)."""

from __future__ import annotations

import gc

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from cellstore.core import pool
from cellstore.core.codecs import Problems
from cellstore.core.rowkey import RowKeySpec


def test_empty_and_full_come_from_arrows_pool_and_are_writable() -> None:
    """An array of :func:`pool.empty` is Arrow pool memory: the pool's count grows by its
    size while it lives (and an Arrow array built on it keeps it), and shrinks after."""
    gc.collect()
    before = pa.total_allocated_bytes()
    arr = pool.empty(1_000_000, np.int64)
    assert arr.flags.writeable and arr.flags.c_contiguous and arr.shape == (1_000_000,)
    assert pa.total_allocated_bytes() - before >= 8_000_000
    arr[:] = np.arange(1_000_000)
    wrapped = pa.Array.from_buffers(pa.int64(), len(arr), [None, pa.py_buffer(arr)])
    del arr
    gc.collect()
    assert pa.total_allocated_bytes() - before >= 8_000_000  # (held by the Arrow array)
    assert wrapped[999_999].as_py() == 999_999
    del wrapped
    gc.collect()
    assert pa.total_allocated_bytes() - before < 8_000_000
    grid = pool.full((3, 4), -1, np.int64)
    assert grid.shape == (3, 4) and grid.flags.c_contiguous and (grid == -1).all()
    assert pool.empty(0, np.bool_).shape == (0,) and pool.full((0, 5), 1, np.int8).shape == (0, 5)


@settings(max_examples=100, deadline=None)
@given(mask=hnp.arrays(np.bool_, st.integers(0, 300)))
def test_flatnonzero_is_numpys(mask: np.ndarray) -> None:
    got = pool.flatnonzero(mask)
    assert got.dtype == np.int64 and np.array_equal(got, np.flatnonzero(mask))


def test_a_clean_encode_leaves_its_problem_masks_untouched() -> None:
    """``Problems.clean`` until a record is marked bad: then ``first`` names it; a clean
    set answers ``first`` without reading its masks (a clean encode gives keys without a
    validity bitmap)."""
    problems = Problems(5)
    assert problems.clean and problems.first() is None
    problems.add(np.array([False, False, True, True, False]), "a", "bad")
    assert not problems.clean and problems.first() == 2
    spec = RowKeySpec.from_dict(
        {"fields": [{"name": "a", "type": "string"}, {"name": "b", "type": "int32"}]}
    )
    keys = spec.encode(pa.table({"a": ["x", "y"], "b": pa.array([1, 2], pa.int32())}))
    assert keys.null_count == 0 and keys.buffers()[0] is None and len(keys) == 2
