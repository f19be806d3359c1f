"""HFiles read and written on threads: the same cells, bytes, problems and errors as one thread."""

from __future__ import annotations

import gzip
import threading
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from cellstore import hbase
from cellstore.errors import CorruptFileError, InvalidArgumentError
from cellstore.hbase import HFileReadOptions
from cellstore.storefiles.hfile import writer as writer_module
from cellstore.storefiles.hfile.options import HFileOptions
from cellstore.storefiles.hfile.threads import ordered_map
from cellstore.storefiles.hfile.writer import build_hfile, write_hfile

VECTORS = Path(__file__).resolve().parents[2] / "shared" / "testdata" / "hbase-hfiles"
HUDI = VECTORS / "apache-hudi"
CORRUPT = VECTORS / "apache-hbase" / "TestCompaction_HFileWithCorruptBlock.branch-2.5.gz"
needs_vectors = pytest.mark.needs(
    need="vectors", present=VECTORS.is_dir(), reason="HBase test vectors not present"
)
COLUMNS = ["row", "qualifier", "ts", "type", "value"]


def _cells(rows: int) -> pa.Table:
    """``rows`` rows x 3 qualifiers x 2 versions, rows and values of varying lengths."""
    n = rows * 6
    r = np.repeat(np.arange(rows), 6)
    row = [b"row-%06d" % i + b"x" * (i % 7) for i in r.tolist()]
    qual = [b"q%d" % q for q in np.tile(np.repeat(np.arange(3), 2), rows).tolist()]
    value = [b"v" * (i % 23) + b"%d" % i for i in range(n)]
    return pa.table(
        {
            "row": pa.array(row, pa.binary()),
            "qualifier": pa.array(qual, pa.binary()),
            "ts": pa.array(np.tile(np.array([2000, 1000], np.int64), rows * 3)),
            "type": pa.array(np.full(n, 4, np.int8)),
            "value": pa.array(value, pa.binary()),
        }
    )


@pytest.mark.parametrize("encoding", ["none", "prefix", "diff", "fast_diff", "row_index_v1"])
@pytest.mark.parametrize("compression", ["none", "gz", "snappy", "zstd"])
def test_threads_read_the_same_cells(tmp_path: Path, encoding: str, compression: str) -> None:
    cells = _cells(1500)
    path = tmp_path / "f"
    write_hfile(
        str(path),
        cells,
        family=b"cf",
        encoding=encoding,  # type: ignore[arg-type]
        compression=compression,  # type: ignore[arg-type]
        block_size=4096,
    )
    one = hbase.read_hfile(path, threads=1)
    assert one.select(COLUMNS).cast(cells.schema).equals(cells)
    for threads in (2, 4):
        for batch_bytes in (1, 40_000, 1 << 24):
            got = hbase.read_hfile(path, threads=threads, batch_bytes=batch_bytes)
            assert got.equals(one), (threads, batch_bytes)
    stream = list(
        hbase.iter_hfile_batches(path, threads=3, batch_bytes=40_000, start_row="row-001")
    )
    assert len(stream) > 1
    assert pa.concat_tables(stream).equals(hbase.read_hfile(path, threads=1, start_row="row-001"))


@pytest.mark.parametrize("encoding", ["fast_diff", "prefix"])
def test_batches_hold_about_batch_bytes_of_decoded_cells(tmp_path: Path, encoding: str) -> None:
    """A compressed, encoded file gives batches of about the cells of a NONE file's."""
    cells = _cells(20_000)
    plain, packed = tmp_path / "plain", tmp_path / "packed"
    write_hfile(str(plain), cells, family=b"cf")
    write_hfile(str(packed), cells, family=b"cf", encoding=encoding, compression="snappy")  # type: ignore[arg-type]
    assert hbase.open_hfile(plain).expansion == 1.0
    assert hbase.open_hfile(packed).expansion > 3
    sizes = {
        p.name: [b.num_rows for b in hbase.iter_hfile_batches(p, batch_bytes=400_000)]
        for p in (plain, packed)
    }
    assert len(sizes["plain"]) >= 8
    assert 0.5 <= len(sizes["packed"]) / len(sizes["plain"]) <= 2
    assert sum(sizes["packed"]) == sum(sizes["plain"]) == cells.num_rows


@needs_vectors
@pytest.mark.parametrize("name", sorted(p.name for p in HUDI.glob("*.hfile")))
def test_hbase_written_vectors_read_the_same_on_threads(name: str) -> None:
    path = HUDI / name
    one = hbase.read_hfile(path, threads=1, with_seq_id=True, with_tags=True)
    for batch_bytes in (1, 50_000):
        got = hbase.read_hfile(
            path, threads=4, batch_bytes=batch_bytes, with_seq_id=True, with_tags=True
        )
        assert got.equals(one)


@needs_vectors
def test_a_worker_error_is_the_same_typed_error_naming_the_file(tmp_path: Path) -> None:
    """The corrupt block's error leaves the worker as one thread raises it, in file order."""
    path = tmp_path / "corrupt.hfile"
    path.write_bytes(gzip.decompress(CORRUPT.read_bytes()))
    messages = []
    for threads in (1, 2, 4):
        with pytest.raises(CorruptFileError) as err:
            hbase.read_hfile(path, threads=threads, batch_bytes=1)
        messages.append(str(err.value))
    assert messages[0].startswith(f"{path}: ")
    assert "offset 0" in messages[0] and "expected 0xded9f6a6" in messages[0]
    assert messages == [messages[0]] * 3
    skipped = []
    for threads in (1, 4):
        problems: list[hbase.BlockProblem] = []
        reader = hbase.open_hfile(path)
        table = reader.read(threads=threads, batch_bytes=1, on_corrupt="skip", problems=problems)
        assert table.num_rows == 15461
        skipped.append([(p.offset, p.message) for p in problems])
    assert skipped[0] == skipped[1] and [o for o, _ in skipped[0]] == [0]


def test_a_damaged_block_in_the_middle_raises_in_order(tmp_path: Path) -> None:
    """Batches after the damaged one may already be decoded: the error still comes first."""
    cells = _cells(3000)
    data, _ = build_hfile(cells, family=b"cf", encoding="fast_diff", compression="snappy")
    reader_blocks = _data_block_offsets(data, tmp_path)
    bad = reader_blocks[len(reader_blocks) // 2]
    damaged = bytearray(data)
    damaged[bad + 40] ^= 0xFF  # inside the payload: the checksum no longer matches
    path = tmp_path / "damaged"
    path.write_bytes(bytes(damaged))
    for threads in (1, 3):
        got: list[pa.Table] = []
        with pytest.raises(CorruptFileError, match=f"^{path}: .*offset {bad}"):
            for batch in hbase.iter_hfile_batches(path, threads=threads, batch_bytes=1):
                got.append(batch)
        assert sum(b.num_rows for b in got) == len(_rows_before(path, bad))


def _data_block_offsets(data: bytes, tmp_path: Path) -> list[int]:
    path = tmp_path / "intact"
    path.write_bytes(data)
    return [e.offset for e in hbase.open_hfile(path).data_blocks()]


def _rows_before(path: Path, offset: int) -> list[int]:
    """Cells of the data blocks before ``offset`` (read one block at a time)."""
    reader = hbase.open_hfile(path)
    blocks = [e for e in reader.data_blocks() if e.offset < offset]
    return list(range(reader.read(blocks=blocks, threads=1).num_rows)) if blocks else []


def test_thread_and_batch_options_are_checked() -> None:
    for bad in (0, -1, True, 1.5):
        with pytest.raises(InvalidArgumentError, match="threads"):
            HFileReadOptions(threads=bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="batch_bytes"):
        HFileReadOptions(batch_bytes=0)
    assert HFileReadOptions().threads >= 1


@pytest.mark.parametrize("encoding", ["none", "fast_diff"])
@pytest.mark.parametrize("compression", ["none", "gz", "snappy", "zstd", "lz4"])
def test_threads_write_the_same_bytes(encoding: str, compression: str) -> None:
    cells = _cells(1500)
    files = {
        threads: build_hfile(
            cells,
            family=b"cf",
            encoding=encoding,  # type: ignore[arg-type]
            compression=compression,  # type: ignore[arg-type]
            block_size=2048,
            bulkload_timestamp=1,
            create_time=1,
            threads=threads,
        )
        for threads in (1, 2, 4)
    }
    assert files[1][1].data_blocks > 20
    assert files[2] == files[1] and files[4] == files[1]


def test_streamed_writes_on_threads_equal_one_call(tmp_path: Path) -> None:
    cells = _cells(1500)
    one = tmp_path / "one"
    write_hfile(str(one), cells, family=b"cf", compression="snappy", threads=1, create_time=1)
    streamed = tmp_path / "streamed"
    with hbase.HFileWriter(
        None, str(streamed), family=b"cf", compression="snappy", threads=3, create_time=1
    ) as w:
        for batch in cells.to_batches(max_chunksize=777):
            w.write(batch)
    first = hbase.hfile_info(one).file_info
    assert hbase.read_hfile(streamed).equals(hbase.read_hfile(one))
    assert hbase.hfile_info(streamed).file_info.keys() == first.keys()


def test_ordered_map_keeps_order_bounds_work_and_raises_in_order() -> None:
    started: list[int] = []
    lock = threading.Lock()

    def work(i: int) -> int:
        with lock:
            started.append(i)
        if i == 7:
            raise CorruptFileError(f"item {i}")
        return i * i

    got = []
    stream = ordered_map(work, range(20), threads=3, ahead=4)
    with pytest.raises(CorruptFileError, match=r"^item 7$"):
        for value in stream:
            got.append(value)
            with lock:
                assert len(started) <= len(got) + 4  # never more than 4 ahead
    assert got == [i * i for i in range(7)]
    assert max(started) < 7 + 4 + 1
    assert list(ordered_map(work, range(5), threads=1, ahead=1)) == [0, 1, 4, 9, 16]


def test_writer_thread_option_is_checked() -> None:
    for bad in (0, -2, False):
        with pytest.raises(InvalidArgumentError, match="threads"):
            HFileOptions(threads=bad)  # type: ignore[arg-type]


def test_big_batches_are_laid_out_in_ranges_on_threads() -> None:
    """150k cells: the NONE layout is written in two or three ranges, the same bytes."""
    cells = _cells(25_000)
    files = [
        build_hfile(cells, family=b"cf", bulkload_timestamp=1, create_time=1, threads=threads)
        for threads in (1, 2, 3)
    ]
    assert files[1] == files[0] and files[2] == files[0]
    assert files[0][1].entry_count == cells.num_rows


def test_slices_prepared_ahead_on_a_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``write_hfile`` prepares the next slice while it writes one: same file, same sort."""
    monkeypatch.setattr(writer_module, "_SLICE_CELLS", 1000)
    cells = _cells(1500)  # 9000 cells: nine slices
    one, two = tmp_path / "one", tmp_path / "two"
    for path, threads in ((one, 1), (two, 2)):
        write_hfile(
            str(path), cells, family=b"cf", threads=threads, bulkload_timestamp=1, create_time=1
        )
    assert one.read_bytes() == two.read_bytes()
    # Out of order in the last slice: refused there, then everything sorted and written.
    shuffled = pa.concat_tables([cells.slice(0, 5500), cells.slice(5600), cells.slice(5500, 100)])
    mixed = tmp_path / "mixed"
    write_hfile(str(mixed), shuffled, family=b"cf", threads=2, bulkload_timestamp=1, create_time=1)
    assert mixed.read_bytes() == one.read_bytes()
