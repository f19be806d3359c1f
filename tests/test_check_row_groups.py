"""``storefiles.check`` checks a store file row group by row group (issue 18: verify speed).

Row groups are decoded and checked on threads; order across row groups is checked at
their boundaries and the footer statistics are folded over the groups, so a file is judged
exactly as if it were read whole: cells strictly in cell order (R2.1), footer statistics
equal to the data.
"""

from __future__ import annotations

from pathlib import Path

import fsspec
import pyarrow as pa

from cellstore.core.family import Family
from cellstore.storefiles import write_store_file
from cellstore.storefiles.check import check


def _cells(keys: list[tuple[bytes, bytes, int]]) -> pa.Table:
    n = len(keys)
    return pa.table(
        {
            "row": pa.array([k[0] for k in keys], pa.binary()),
            "qualifier": pa.array([k[1] for k in keys], pa.binary()),
            "ts": pa.array([k[2] for k in keys], pa.int64()),
            "type": pa.array([4] * n, pa.int8()),
            "value": pa.array([b"v%d" % i for i in range(n)], pa.binary()),
        }
    )


def _check(
    tmp_path: Path, keys: list[tuple[bytes, bytes, int]], *, bloom: bool = True
) -> list[str]:
    fs = fsspec.filesystem("file")
    path = str(tmp_path / f"f{len(list(tmp_path.iterdir()))}.parquet")
    family = Family(name="f", bloom_filter=bloom)
    write_store_file(fs, path, _cells(keys), family=family, seq=1, load_id="t", row_group_cells=2)
    return list(check(fs, path).problems)


def test_a_sound_file_of_many_row_groups_passes(tmp_path: Path) -> None:
    """Rows that span row-group boundaries (a, a | a, b | ...) count once in the footer's
    row total: the folded statistics must equal what the writer recorded."""
    keys = [(b"a", b"q1", 9), (b"a", b"q2", 9), (b"a", b"q3", 9), (b"b", b"q", 5)]
    keys += [(b"c%d" % i, b"q", i) for i in range(7)]
    assert _check(tmp_path, keys) == []
    assert _check(tmp_path, keys, bloom=False) == []


def test_cells_out_of_order_across_a_row_group_boundary_r2_1(tmp_path: Path) -> None:
    """Each group is sorted on its own; cell 2 (first of group 1) sorts before cell 1."""
    keys = [(b"a", b"q", 1), (b"c", b"q", 1), (b"b", b"q", 1), (b"d", b"q", 1)]
    problems = _check(tmp_path, keys)
    assert "cell 2 is not after cell 1 in cell order" in problems, problems


def test_cells_out_of_order_inside_a_later_row_group_r2_1(tmp_path: Path) -> None:
    """The index reported is the cell's index in the file, not in its row group."""
    keys = [(b"a", b"q", 1), (b"b", b"q", 1), (b"c", b"q", 1), (b"d", b"q", 1)]
    keys += [(b"f", b"q", 1), (b"e", b"q", 1)]
    problems = _check(tmp_path, keys)
    assert "cell 5 is not after cell 4 in cell order" in problems, problems


def test_a_duplicate_key_at_a_boundary_is_reported(tmp_path: Path) -> None:
    """Store files hold unique keys: equal keys in two row groups are not in strict order."""
    keys = [(b"a", b"q", 1), (b"b", b"q", 2), (b"b", b"q", 2), (b"c", b"q", 1)]
    problems = _check(tmp_path, keys)
    assert "cell 2 is not after cell 1 in cell order" in problems, problems
