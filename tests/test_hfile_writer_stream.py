"""HFileWriter: streamed batches give the same bytes as one write_hfile call; order, abort.

The reference is ``build_hfile`` of all cells at once (itself byte-identical to HBase on the
real vectors, see ``test_hfile_write.py``); every file also reads back through the reader.
"""

from __future__ import annotations

import io
import itertools
import random
from pathlib import Path
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from cellstore import hbase
from cellstore.errors import BadCellError, CellstoreError, InvalidArgumentError
from cellstore.storefiles.hfile.assembler import Assembler, WriteOptions
from cellstore.storefiles.hfile.cellbytes import prepare_cells
from cellstore.storefiles.hfile.writer import build_hfile

FIXED = {"create_time": 1, "bulkload_timestamp": 2}


def random_cells(seed: int, n: int, families: tuple[bytes, ...] = (b"f", b"f", b"g")) -> pa.Table:
    """Cells with all five types, duplicates, empty qualifiers/values, long rows, tags."""
    r = random.Random(seed)
    cols: dict[str, list[Any]] = {
        k: [] for k in ("row", "family", "qualifier", "ts", "type", "value", "seq_id", "tags")
    }
    for _ in range(n):
        cols["row"].append(b"r%05d" % r.randrange(n // 3 + 1) + b"x" * r.choice([0, 0, 130]))
        cols["family"].append(r.choice(families))
        cols["qualifier"].append(r.choice([b"", b"q1", b"q2"]))
        cols["ts"].append(r.choice([1, 2, 100, 2**63 - 1]))
        cols["type"].append(r.choice([4, 4, 4, 8, 10, 12, 14]))
        cols["value"].append(b"v" * r.randrange(40))
        cols["seq_id"].append(r.choice([0, 5, 70000]))
        cols["tags"].append(r.choice([b"", b"\x00\x02\x01a"]))
    table = pa.table(cols)
    # HBase order (the writer's own sort is checked in test_hfile_write.py)
    p = prepare_cells(table)
    return pa.table(
        {
            "row": p.row,
            "family": p.family,
            "qualifier": p.qualifier,
            "ts": p.ts,
            "type": p.type,
            "value": p.value,
            "seq_id": p.seq_id,
            "tags": p.tags,
        }
    )


def split(table: pa.Table, seed: int) -> list[pa.Table]:
    r = random.Random(seed)
    cuts = sorted(r.sample(range(1, table.num_rows), min(12, table.num_rows - 1)))
    bounds = [0, *cuts, table.num_rows]
    return [table.slice(a, b - a) for a, b in itertools.pairwise(bounds)]


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"block_size": 256, "index_block_max_size": 128, "index_min_entries": 2},
        {"block_size": 512, "bloom": "rowcol", "bloom_block_size": 64, "compression": "gz"},
        {"block_size": 64, "bloom_block_size": 64, "encoding": "fast_diff"},
        {"block_size": 300, "encoding": "prefix", "include_mvcc": False, "bloom": "none"},
    ],
)
def test_batches_give_the_bytes_of_one_call(tmp_path: Path, options: dict[str, Any]) -> None:
    # DIFF/FAST_DIFF keep one family per file, as HBase's store files do
    cells = random_cells(1, 3000, (b"f",) if "encoding" in options else (b"f", b"g"))
    expected, summary = build_hfile(cells, **options, **FIXED)
    path = str(tmp_path / "f.hfile")
    with hbase.HFileWriter(None, path, **options, **FIXED) as w:
        for i, batch in enumerate(split(cells, 7)):
            w.write(batch if i % 2 else batch.to_pandas())
            w.write(batch.slice(0, 0))  # empty batches are no-ops
        assert w.cells == 3000
        written = w.close()
    assert Path(path).read_bytes() == expected
    assert written.path == path
    assert (written.entry_count, written.data_blocks, written.index_levels) == (
        summary.entry_count,
        summary.data_blocks,
        summary.index_levels,
    )
    assert (written.bloom_chunks, written.first_row, written.last_row) == (
        summary.bloom_chunks,
        summary.first_row,
        summary.last_row,
    )
    back = hbase.read_hfile(path, with_seq_id=True, with_tags=True)
    back = back.select(cells.column_names).cast(cells.schema)  # family reads back as string
    if options.get("include_mvcc") is False:  # no memstore timestamps in the file
        cells = cells.set_column(6, "seq_id", pa.array([0] * cells.num_rows, pa.int64()))
    assert back.to_pylist() == cells.to_pylist()


def test_one_cell_batches_and_memory_filesystem(memory_root: str) -> None:
    cells = random_cells(2, 400)
    expected, _ = build_hfile(cells, family=None, block_size=128, **FIXED)
    fs = fsspec.filesystem("memory")
    path = f"{memory_root}/one.hfile"
    w = hbase.HFileWriter(fs, path, block_size=128, **FIXED)
    for i in range(cells.num_rows):
        w.write(cells.slice(i, 1))
    w.close()
    assert fs.cat_file(path) == expected


def test_family_option_and_uncompressed_bytes(tmp_path: Path) -> None:
    cells = random_cells(3, 500, (b"f",)).drop_columns(["family", "tags"])
    with hbase.HFileWriter(None, str(tmp_path / "f"), family="cf", **FIXED) as w:
        w.write(cells)
        # key (12 + row + 2 + qualifier) + value + 8-byte lengths + 2 tag bytes + VLong
        size = sum(
            8 + 12 + len(c["row"]) + 2 + len(c["qualifier"]) + len(c["value"]) + 2
            for c in cells.to_pylist()
        ) + sum(1 if s == 0 else (4 if s == 70000 else 1) for s in cells["seq_id"].to_pylist())
        assert w.uncompressed_bytes == size
    back = hbase.read_hfile(str(tmp_path / "f"))
    assert set(back["family"].to_pylist()) == {"cf"}


def test_blocks_are_streamed_not_held() -> None:
    """After a batch, all but the last (incomplete) block is in the sink."""
    buf = io.BytesIO()
    asm = Assembler(buf, WriteOptions(block_size=1024, bloom="none"))
    cells = random_cells(4, 5000)
    asm.append(prepare_cells(cells.slice(0, 2500), sort=False))
    first = buf.tell()
    assert first > asm.uncompressed_bytes - 4 * 1024  # one held block (+ headers) at most
    asm.append(prepare_cells(cells.slice(2500), sort=False))
    assert buf.tell() > first + asm.uncompressed_bytes // 3


def test_out_of_order_batches_are_refused_and_the_writer_stays_usable(tmp_path: Path) -> None:
    cells = random_cells(5, 600)
    path = str(tmp_path / "f")
    with hbase.HFileWriter(None, path, **FIXED) as w:
        w.write(cells.slice(0, 300))
        with pytest.raises(InvalidArgumentError, match=r"not in HBase order.*sorts before"):
            w.write(cells.slice(0, 10))  # before the previous batch
        shuffled = cells.slice(300).take([1, 0, *range(2, 300)])
        with pytest.raises(InvalidArgumentError, match=r"cell 1 \(b'r"):
            w.write(shuffled)  # out of order inside the batch
        with pytest.raises(BadCellError):
            w.write(cells.slice(300).drop_columns(["value"]))
        w.write(cells.slice(300))
    expected, _ = build_hfile(cells, **FIXED)
    assert Path(path).read_bytes() == expected
    with pytest.raises(InvalidArgumentError, match="closed"):
        w.write(cells)


def test_second_family_refused_by_family_blind_encodings(tmp_path: Path) -> None:
    cells = random_cells(8, 300)  # families f and g
    for encoding in ("prefix", "diff", "fast_diff"):
        with pytest.raises(BadCellError, match="needs one family per HFile"):
            build_hfile(cells, encoding=encoding)  # type: ignore[arg-type]
    f_only = cells.filter(pc.equal(cells["family"], b"f"))
    g_only = cells.filter(pc.equal(cells["family"], b"g"))
    with hbase.HFileWriter(None, str(tmp_path / "f"), encoding="fast_diff") as w:
        w.write(f_only)
        with pytest.raises(BadCellError, match=r"family b'g'"):
            w.write(g_only.slice(g_only.num_rows - 1))
    for encoding in ("none", "row_index_v1"):  # full keys: any number of families
        data, _ = build_hfile(cells, encoding=encoding)  # type: ignore[arg-type]
        path = tmp_path / encoding
        path.write_bytes(data)
        assert hbase.read_hfile(str(path))["family"].to_pylist() == [
            f.decode() for f in cells["family"].to_pylist()
        ]


def test_equal_keys_across_batches_stay_in_one_block(tmp_path: Path) -> None:
    n = 50
    cells = pa.table(
        {
            "row": [b"r"] * n,
            "family": [b"f"] * n,
            "qualifier": [b"q"] * n,
            "ts": [5] * n,
            "type": [4] * n,
            "value": [b"v%02d" % i for i in range(n)],
        }
    )
    path = str(tmp_path / "f")
    with hbase.HFileWriter(None, path, block_size=16, **FIXED) as w:
        for b in split(cells, 3):
            w.write(b)
        written = w.close()
    assert written.data_blocks == 1  # never cut between identical keys
    assert hbase.read_hfile(path)["value"].to_pylist() == cells["value"].to_pylist()


def test_abort_and_exception_delete_the_partial_file(tmp_path: Path) -> None:
    cells = random_cells(6, 2000)
    path = tmp_path / "f"
    w = hbase.HFileWriter(None, str(path), block_size=256)
    w.write(cells)
    assert path.exists()
    w.abort()
    assert not path.exists()
    w.abort()  # idempotent
    with (
        pytest.raises(RuntimeError, match="boom"),
        hbase.HFileWriter(None, str(path), block_size=256) as w2,
    ):
        w2.write(cells)
        raise RuntimeError("boom")
    assert not path.exists()
    with pytest.raises(CellstoreError):
        hbase.HFileWriter(None, str(path), compression="lzo")  # type: ignore[arg-type]
    assert not path.exists()


def test_s3_streaming_and_abort(s3_root: str, s3_options: dict[str, Any]) -> None:
    fs = fsspec.filesystem("s3", **s3_options)
    cells = random_cells(7, 1500)
    path = f"{s3_root}/f.hfile"
    with hbase.HFileWriter(fs, path, block_size=512, **FIXED) as w:
        for b in split(cells, 1):
            w.write(b)
    assert fs.cat_file(path) == build_hfile(cells, block_size=512, **FIXED)[0]
    aborted = f"{s3_root}/g.hfile"
    w = hbase.HFileWriter(fs, aborted, block_size=512)
    w.write(cells)
    w.abort()
    assert not fs.exists(aborted)


def test_write_hfile_feeds_slices_with_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sorted input streams in slices; disorder found late falls back to sort-and-rewrite."""
    from cellstore.storefiles.hfile import writer as writer_module

    monkeypatch.setattr(writer_module, "_SLICE_CELLS", 97)
    cells = random_cells(9, 1000)
    options: dict[str, Any] = {"block_size": 200, "bloom": "rowcol", **FIXED}
    order = list(range(1000))
    late = [*order[:990], order[995], *order[990:995], *order[996:]]  # last slice out of order
    for label, table in (
        ("sorted", cells),
        ("reversed", cells.take(order[::-1])),
        ("late", cells.take(late)),
    ):
        path = tmp_path / label
        out = writer_module.write_hfile(str(path), table, **options)
        assert path.read_bytes() == build_hfile(table, **options)[0], label
        assert out.entry_count == 1000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["late", "reversed", "sorted"]
