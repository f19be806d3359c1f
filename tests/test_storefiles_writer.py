"""The one store-file write path: whole and streamed writes agree, rolling, abort."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cellstore import Family
from cellstore.errors import InvalidNameError
from cellstore.storefiles import (
    RollingWriter,
    StoreFileReader,
    StoreFileWriter,
    check,
    roll_points,
    write_rolled,
    write_store_file,
)
from cellstore.storefiles.footer import FOOTER_KEY
from cellstore.storefiles.rolling import ParquetFormat, write_rolled_chunks
from cellstore.storefiles.writer import RollCuts, bloom_ndv


def cells_of(n: int, *, per_row: int = 3) -> pa.Table:
    return pa.table(
        {
            "row": pa.array([f"r{i // per_row:06d}".encode() for i in range(n)], pa.binary()),
            "qualifier": pa.array([f"q{i % per_row}".encode() for i in range(n)], pa.binary()),
            "ts": pa.array(np.full(n, 7), pa.int64()),
            "type": pa.array(np.full(n, 4), pa.int8()),
            "value": pa.array([b"v" * (i % 17) for i in range(n)], pa.binary()),
        }
    )


@pytest.mark.parametrize("n,chunk,rgc", [(50, 7, 1000), (5000, 401, 700), (3000, 3000, 256)])
def test_whole_and_streamed_files_are_identical(tmp_path: Path, n: int, chunk: int, rgc: int):
    """One writer: a file written whole equals the same cells written in chunks, byte for byte
    (same footer, row groups, Bloom filter sizing and Parquet options)."""
    fs = fsspec.filesystem("file")
    fam = Family(name="d", bloom_filter=True)
    cells = cells_of(n)
    with StoreFileWriter(
        fs, str(tmp_path / "s.parquet"), family=fam, seq=3, load_id="l", row_group_cells=rgc
    ) as w:
        for start in range(0, n, chunk):  # chunks cut rows in the middle
            w.write(cells.slice(start, chunk))
        streamed = w.close()
    whole = write_store_file(
        fs, str(tmp_path / "w.parquet"), cells, family=fam, seq=3, load_id="l", row_group_cells=rgc
    )
    assert streamed.footer_dict() == whole.footer_dict()
    assert streamed.row_groups == whole.row_groups == -(-n // rgc)
    assert (tmp_path / "s.parquet").read_bytes() == (tmp_path / "w.parquet").read_bytes()
    # The footer lives in the Parquet key-value metadata for both.
    kv = pq.ParquetFile(tmp_path / "w.parquet").metadata.metadata
    assert FOOTER_KEY in kv
    assert check(fs, str(tmp_path / "s.parquet")).ok


def test_bloom_is_sized_by_rows_of_the_first_row_group():
    cells = cells_of(3000, per_row=3)
    assert bloom_ndv(cells, row_group_cells=700) == len({f"r{i // 3}" for i in range(700)})
    assert bloom_ndv(cells.slice(0, 10), row_group_cells=700) == 4


def test_bloom_filter_absent_when_family_has_none(tmp_path: Path):
    fs = fsspec.filesystem("file")
    write_store_file(
        fs,
        str(tmp_path / "a.parquet"),
        cells_of(100),
        family=Family(name="d", bloom_filter=False),
        seq=1,
        load_id="l",
    )
    with StoreFileReader(fs, str(tmp_path / "a.parquet")) as r:
        assert r.info.bloom_filter is False


def test_roll_points_cut_on_row_boundaries():
    cells = cells_of(900, per_row=3)
    cuts = roll_points(cells, 2000)
    assert cuts[0] == 0 and cuts[-1] == 900 and len(cuts) > 3
    rows = cells.column("row").to_pylist()
    for c in cuts[1:-1]:
        assert rows[c] != rows[c - 1]  # never inside a row


def _chunked_cuts(cells: pa.Table, max_bytes: int, bounds: list[int]) -> list[int]:
    """roll_points' offsets made by RollCuts fed ``cells`` cut at ``bounds`` (row starts)."""
    rolls = RollCuts(max_bytes)
    cuts, tentative = [0], None
    for lo, hi in itertools.pairwise(bounds):
        if tentative is not None:  # a tentative cut holds once more cells come
            cuts.append(tentative)
            tentative = None
        found = [lo + c for c in rolls.feed(cells.slice(lo, hi - lo))]
        if rolls.tentative:
            tentative = found.pop()
        cuts += found
    return [*cuts, cells.num_rows]


@pytest.mark.parametrize("per_row", [1, 3])
def test_roll_cuts_of_row_chunks_are_the_roll_points_of_the_whole(per_row: int):
    """Cells fed chunk by chunk (a compaction's streamed output) roll where the whole
    cells would: for every size limit, whatever the chunks (whole rows each)."""
    cells = cells_of(600, per_row=per_row)
    rng = np.random.default_rng(per_row)
    starts = list(range(0, 600, per_row))
    for max_bytes in [*range(20, 400, 7), 1000, 5000, 20_000, 10**9]:
        whole = roll_points(cells, max_bytes)
        for _ in range(4):
            inner = sorted(rng.choice(starts[1:], size=rng.integers(0, 12), replace=False))
            bounds = [0, *map(int, inner), 600]
            assert _chunked_cuts(cells, max_bytes, bounds) == whole, (max_bytes, bounds)


def test_roll_cuts_first_file_of_exactly_the_limit():
    """A first file whose cells make exactly ``max_bytes`` with a one-cell last row is cut
    before that cell only when more cells follow (roll_points' rule for the whole)."""
    cells = cells_of(20, per_row=1)
    head = cells.slice(0, 10)
    exact = int(roll_cell_bytes(head))
    assert roll_points(head, exact) == [0, 10]
    assert roll_points(cells, exact) == [0, 9, *roll_points(cells, exact)[2:]]
    rolls = RollCuts(exact)
    assert rolls.feed(head) == [9] and rolls.tentative
    assert _chunked_cuts(head, exact, [0, 5, 10]) == [0, 10]
    assert _chunked_cuts(cells, exact, [0, 10, 20]) == roll_points(cells, exact)


def roll_cell_bytes(cells: pa.Table) -> int:
    """What roll_points counts: 13 bytes a cell besides its row, qualifier and value."""
    d = cells.to_pydict()
    return sum(
        13 + len(r) + len(q) + len(v)
        for r, q, v in zip(d["row"], d["qualifier"], d["value"], strict=True)
    )


def test_write_rolled_chunks_writes_the_files_of_write_rolled(tmp_path: Path):
    """Streamed in row chunks, cells make byte for byte the files of the whole write."""
    fs = fsspec.filesystem("file")
    fam = Family(name="f")
    cells = cells_of(900)
    fmt = ParquetFormat(seq=2, load_id="l", row_group_cells=128)
    kw: dict[str, Any] = {"region": "r1", "family": fam, "stem": "s", "max_file_bytes": 4000}
    whole = write_rolled(fs, str(tmp_path / "a"), cells, format=fmt, **kw)
    chunks = [cells.slice(lo, hi - lo) for lo, hi in itertools.pairwise([0, 3, 300, 300, 630, 900])]
    streamed = write_rolled_chunks(fs, str(tmp_path / "b"), iter(chunks), format=fmt, **kw)
    assert len(whole) == len(streamed) > 3
    for a, b in zip(whole, streamed, strict=True):
        assert a.relpath == b.relpath
        assert (tmp_path / "a" / a.relpath).read_bytes() == (
            tmp_path / "b" / b.relpath
        ).read_bytes()
    assert (
        write_rolled_chunks(fs, str(tmp_path / "c"), iter([cells.slice(0, 0)]), format=fmt, **kw)
        == []
    )


def test_write_rolled_names_files_through_layout(tmp_path: Path):
    fs = fsspec.filesystem("file")
    fam = Family(name="c f")  # quoted in the directory name
    out = write_rolled(
        fs,
        str(tmp_path),
        cells_of(900),
        region="r000001",
        family=fam,
        stem="load-1",
        seq=2,
        load_id="load-1",
        max_file_bytes=4000,
    )
    assert len(out) > 1
    assert [w.relpath for w in out] == [
        f"data/r000001/c%20f/load-1-{k:03d}.parquet" for k in range(len(out))
    ]
    assert sum(w.info.cells for w in out) == 900
    for a, b in itertools.pairwise(out):
        assert a.info.last_row < b.info.first_row  # files in order, rows never split
    assert (
        write_rolled(
            fs,
            str(tmp_path),
            cells_of(0),
            region="r000001",
            family=fam,
            stem="e",
            seq=2,
            load_id="e",
            max_file_bytes=10,
        )
        == []
    )


def test_rolling_writer_refuses_escaping_names(tmp_path: Path):
    fs = fsspec.filesystem("file")
    with (
        pytest.raises(InvalidNameError),
        RollingWriter(
            fs,
            str(tmp_path),
            region="r1",
            family=Family(name="f"),
            stem="../../x",
            seq=1,
            load_id="x",
            max_file_bytes=100,
        ) as w,
    ):
        w.write(cells_of(10))
    assert list(tmp_path.rglob("*.parquet")) == []


def test_rolling_writer_abort_removes_every_file(tmp_path: Path):
    fs = fsspec.filesystem("file")
    with (
        pytest.raises(RuntimeError),
        RollingWriter(
            fs,
            str(tmp_path),
            region="r1",
            family=Family(name="f"),
            stem="s",
            seq=1,
            load_id="s",
            max_file_bytes=500,
        ) as w,
    ):
        for start in range(0, 300, 30):
            w.write(cells_of(300).slice(start, 30))
        assert len(w.written) > 1  # some files were closed already
        raise RuntimeError("task failed")
    assert list(tmp_path.rglob("*.parquet")) == []


def test_paths_are_built_only_in_layout():
    """Family quoting and store-file names live in storefiles/layout.py alone (issue 13)."""
    import re

    src = Path(__file__).parents[1] / "src" / "cellstore"
    offenders = []
    for path in src.rglob("*.py"):
        if path.name == "layout.py" and path.parent.name in ("storefiles", "hbasefiles"):
            continue  # ours, and HBase's own directory layout (cellstore.hbasefiles.layout)
        text = path.read_text()
        for pattern in (
            r"(?<![\w.])quote\(",
            r"urllib\.parse import .*\bquote\b",
            r"join\(\s*\"data\"",
            r"\"data/\{",
        ):
            for m in re.finditer(pattern, text, flags=re.MULTILINE):
                line = text.count("\n", 0, m.start()) + 1
                offenders.append(f"{path.relative_to(src)}:{line}: {pattern}")
    assert offenders == []


def test_store_files_are_written_only_by_the_writer():
    """Every store file comes from StoreFileWriter (cells) or ColumnFileWriter (columns,
    in storefiles/columns.py beside it): no other module calls the wrappers' internals or
    writes a file with the store-file footer key."""
    src = Path(__file__).parents[1] / "src" / "cellstore"
    allowed = ("writer.py", "rolling.py", "columns.py", "__init__.py")
    for p in src.rglob("*.py"):
        if p.parent.name == "storefiles" and p.name in allowed:
            continue
        text = p.read_text()
        assert "write_store_file(" not in text, p
        assert "StoreFileWriter(" not in text, p
        assert "{FOOTER_KEY:" not in text, p  # writing the footer metadata


def test_one_roll_loop_writes_hfiles_too(tmp_path: Path):
    """The same RollingWriter writes bulk-load HFiles through HFileFormat: named
    ``<family>/<32 hex>`` by layout, rolled between chunks, capped by max_files, and the
    cells read back with the HFile reader equal the cells written."""
    import re

    from cellstore.hbase import hfile_info, read_hfile
    from cellstore.storefiles.rolling import HFileFormat, HFileSettings

    fs = fsspec.filesystem("file")
    cells = cells_of(300)
    fmt = HFileFormat(default=HFileSettings(compression="gz"), bulkload_timestamp=5)
    with RollingWriter(
        fs,
        str(tmp_path / "o"),
        region="r1",
        family=Family(name="f"),
        stem="s",
        max_file_bytes=500,
        format=fmt,
        max_files=3,
    ) as w:
        for start in range(0, 300, 30):  # whole rows per chunk (3 cells a row)
            w.write(cells.slice(start, 30))
        files = w.close()
    assert len(files) == 3  # capped: the last file takes the rest
    assert sorted(
        p.relative_to(tmp_path / "o").as_posix() for p in (tmp_path / "o").rglob("*") if p.is_file()
    ) == sorted(f"f/{Path(f.path).name}" for f in files)
    got = []
    for f in files:
        assert re.fullmatch(r"[0-9a-f]{32}", Path(f.path).name) and f.family == "f"
        info = hfile_info(f.path)
        assert info.compression == "GZ" and info.bulkload_timestamp == 5
        t = read_hfile(f.path)
        assert (f.cells, f.first_row, f.last_row) == (
            t.num_rows,
            t["row"][0].as_py(),
            t["row"][-1].as_py(),
        )
        got += t.select(cells.column_names).to_pylist()
    assert got == cells.to_pylist()
    # Leaving with an error deletes every HFile written so far.
    with (
        pytest.raises(RuntimeError),
        RollingWriter(
            fs,
            str(tmp_path / "x"),
            region="r1",
            family=Family(name="f"),
            stem="s",
            max_file_bytes=200,
            format=fmt,
        ) as w,
    ):
        for start in range(0, 300, 30):
            w.write(cells.slice(start, 30))
        assert len(w.written) > 1
        raise RuntimeError("task failed")
    assert [p for p in (tmp_path / "x").rglob("*") if p.is_file()] == []
