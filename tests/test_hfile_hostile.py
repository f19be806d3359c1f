"""HBase files are untrusted input (issue 26): one test per hostile field the reader met.

Each test takes a real HBase-written vector (``shared/testdata/hbase-hfiles``, read in
place) or a file written by our ``write_hfile``, changes one field and recomputes the
block's checksums (``hfile_patch``), so the forged field itself reaches the parser. Reads
that could blow up (a forged size allocated, a decompression bomb, an exponential index
walk, a Bloom loop of 2^31 probes) run in a :class:`fuzzing.BoundedWorker`: without the
limits they end in ``MemoryError``, a dead process or a hang there, not in this process.
Every failure must be a :class:`~cellstore.errors.CellstoreError` naming the file and the
block offset.
"""

from __future__ import annotations

import os
import struct
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

from cellstore import hbase
from cellstore.cli import cli
from cellstore.errors import (
    BadCellError,
    CellstoreError,
    CorruptFileError,
    UnsupportedFormatError,
)
from cellstore.storefiles.hfile.writer import build_hfile
from fuzzing import BoundedWorker, Outcome
from hbase_fixtures import BIGTABLE, VECTORS
from hfile_patch import (
    BlockAt,
    block_at,
    blocks_of,
    first,
    gzip_bomb,
    last,
    none_cells,
    patch_trailer,
    put,
    rechecksum,
    replace_payload,
    zstd_rle_bomb,
)

HUDI_NONE = VECTORS / "apache-hudi" / "hudi_1_0_hbase_2_4_9_16KB_NONE_5000.hfile"

pytestmark = pytest.mark.needs(
    need="vectors", present=VECTORS.is_dir(), reason="HBase test vectors not present"
)


@pytest.fixture(scope="module")
def worker() -> Iterator[BoundedWorker]:
    """A child with 768 MiB of address space and 20 s per call: a blow-up fails the call."""
    w = BoundedWorker(extra_bytes=768 << 20, timeout=20)
    yield w
    w.close()


def cells(n: int, *, value: bytes | None = None) -> pa.Table:
    """``n`` cells of family ``f``, rows ``row00000``..., one qualifier, Puts."""
    return pa.table(
        {
            "row": [b"row%05d" % i for i in range(n)],
            "family": [b"f"] * n,
            "qualifier": [b"q"] * n,
            "ts": [7] * n,
            "type": [4] * n,
            "value": [value if value is not None else b"value-%d" % i for i in range(n)],
        }
    )


def ours(tmp_path: Path, name: str, table: pa.Table, **options: object) -> tuple[Path, bytearray]:
    """A file our writer builds (``options`` as ``write_hfile``), and its bytes to patch."""
    data, _ = build_hfile(table, **options)  # type: ignore[arg-type]
    return tmp_path / name, bytearray(data)


def save(path: Path, data: bytes | bytearray) -> str:
    path.write_bytes(bytes(data))
    return str(path)


def failed_cleanly(outcome: Outcome, *fragments: str) -> str:
    """Assert the call ended in a cellstore error whose message has every fragment."""
    assert outcome.bounded_failure, outcome
    message = outcome.message.split("\n", 1)[0]
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    return message


# --------------------------------------------------------------------------- index entries
def test_index_entry_beyond_the_file_is_refused_not_padded(
    tmp_path: Path, worker: BoundedWorker
) -> None:
    """A root entry of 2 GiB was read and zero-padded to its size (MemoryError)."""
    data = bytearray(HUDI_NONE.read_bytes())
    root = first(data, "ROOT_INDEX")
    put(data, root.payload + 8, "i", 0x7FFFFFF0)  # entry 0: i64 offset | i32 size
    rechecksum(data, root.offset)
    path = save(tmp_path / "huge-entry.hfile", data)
    message = failed_cleanly(
        worker.call("hfile_patch:read_all", path), path, "data index root", "offset 0"
    )
    assert f"block at offset {root.offset}" in message
    # skip leaves the block out and reads the rest
    cells_read, skipped = worker.call("hfile_patch:read_skip", path).value
    assert skipped == [0]
    assert 0 < cells_read < 5000


def test_negative_index_offset_is_refused(tmp_path: Path) -> None:
    """A negative offset leaked ``ValueError`` from the range read."""
    data = bytearray(HUDI_NONE.read_bytes())
    root = first(data, "ROOT_INDEX")
    put(data, root.payload, "q", -16410)
    rechecksum(data, root.offset)
    path = save(tmp_path / "negative-entry.hfile", data)
    with pytest.raises(CorruptFileError, match="offset -16410") as e:
        hbase.read_hfile(path)
    assert path in str(e.value)
    assert f"block at offset {root.offset}" in str(e.value)


def test_bloom_chunk_entry_outside_the_file_is_refused(tmp_path: Path) -> None:
    data = bytearray(_bigtable_none())
    meta = first(data, "GENERAL_BLOOM_META")
    # The chunk index follows the 40 fixed bytes and the comparator name.
    clen = data[meta.payload + 40]
    at = meta.payload + 41 + clen
    put(data, at, "q", len(data) * 4)
    rechecksum(data, meta.offset)
    path = save(tmp_path / "bloom-chunk-outside.hfile", data)
    rows = hbase.read_hfile(path).column("row").to_pylist()  # cells do not need the Bloom
    assert len(rows) == 10
    with pytest.raises(CorruptFileError, match="BLOOM_CHUNK block") as e:
        hbase.hfile_might_contain(path, rows[0])
    assert path in str(e.value) and f"offset {len(data) * 4}" in str(e.value)


def test_meta_index_entry_outside_the_file_is_refused(tmp_path: Path) -> None:
    data = bytearray(HUDI_NONE.read_bytes())
    meta_index = [b for b in blocks_of(data) if b.kind == "ROOT_INDEX"][1]
    put(data, meta_index.payload, "q", -1)
    rechecksum(data, meta_index.offset)
    path = save(tmp_path / "meta-outside.hfile", data)
    reader = hbase.open_hfile(path)
    assert reader.read().num_rows == 5000
    with pytest.raises(
        CorruptFileError, match="META block points at a 105-byte block at offset -1"
    ) as e:
        reader.meta_block(b"bloomFilter")
    assert path in str(e.value)


# --------------------------------------------------------------------------- index walk
def _multi_level(tmp_path: Path) -> tuple[Path, bytearray]:
    path, data = ours(
        tmp_path,
        "levels.hfile",
        cells(3000),
        block_size=512,
        index_block_max_size=512,
        index_min_entries=4,
        bloom="none",
    )
    assert hbase.read_hfile(save(path, data)).num_rows == 3000
    assert sum(b.kind == "LEAF_INDEX" for b in blocks_of(data)) > 2
    return path, data


def _point_at_itself(data: bytearray, kind: str) -> list[int]:
    """Make every entry of every ``kind`` index block name that block; returns their
    offsets."""
    offsets = []
    for block in [b for b in blocks_of(data) if b.kind == kind]:
        _repoint(data, block, block.offset, block.header.on_disk_size)
        offsets.append(block.offset)
    return offsets


def _repoint(data: bytearray, block: BlockAt, offset: int, size: int) -> None:
    """Make every entry of the non-root index ``block`` name ``size`` bytes at ``offset``."""
    (count,) = struct.unpack_from(">i", data, block.payload)
    base = block.payload + 4 + 4 * (count + 1)
    for k in range(count):
        (rel,) = struct.unpack_from(">i", data, block.payload + 4 + 4 * k)
        put(data, base + rel, "q", offset)
        put(data, base + rel + 8, "i", size)
    rechecksum(data, block.offset)


def test_forty_index_levels_are_refused(tmp_path: Path, worker: BoundedWorker) -> None:
    """Index blocks naming themselves with 40 claimed levels expanded exponentially (a
    hang)."""
    path, data = _multi_level(tmp_path)
    _point_at_itself(data, "INTERMEDIATE_INDEX")
    _point_at_itself(data, "LEAF_INDEX")
    bad = save(path, patch_trailer(data, num_data_index_levels=40))
    failed_cleanly(worker.call("hfile_patch:read_all", bad), bad, "40 data index levels")
    failed_cleanly(worker.call("hfile_patch:read_info", bad), bad, "40 data index levels")


def test_an_index_block_pointing_at_itself_is_refused(
    tmp_path: Path, worker: BoundedWorker
) -> None:
    """16 levels (HBase's most) and intermediate blocks naming themselves: no cycle, no
    exponential walk (entries must lie before the block naming them)."""
    path, data = _multi_level(tmp_path)
    selves = _point_at_itself(data, "INTERMEDIATE_INDEX")
    bad = save(path, patch_trailer(data, num_data_index_levels=16))
    message = failed_cleanly(worker.call("hfile_patch:read_all", bad), bad)
    assert f"INTERMEDIATE_INDEX block at offset {selves[0]}" in message
    assert f"outside the file's blocks [0, {selves[0]})" in message
    failed_cleanly(worker.call("hfile_patch:read_info", bad), bad)
    # verify keeps going: the damage is reported, not raised
    blocks, _, problems = worker.call("hfile_patch:read_verify", bad).value
    assert blocks == len(blocks_of(data))
    assert any(f"offset {selves[0]}" in p for p in problems)


def test_an_index_block_named_twice_is_refused(tmp_path: Path) -> None:
    """The second intermediate block naming the first: never read one index block twice."""
    path, data = _multi_level(tmp_path)
    one, two = [b for b in blocks_of(data) if b.kind == "INTERMEDIATE_INDEX"]
    # Its last entry (after the leaves it names, still before itself) names the first.
    (count,) = struct.unpack_from(">i", data, two.payload)
    (rel,) = struct.unpack_from(">i", data, two.payload + 4 + 4 * (count - 1))
    entry = two.payload + 4 + 4 * (count + 1) + rel
    put(data, entry, "q", one.offset)
    put(data, entry + 8, "i", one.header.on_disk_size)
    rechecksum(data, two.offset)
    bad = save(path, data)
    with pytest.raises(CorruptFileError, match=f"block at offset {one.offset} is named twice"):
        hbase.read_hfile(bad)
    problems: list[hbase.BlockProblem] = []
    table = hbase.open_hfile(bad).read(on_corrupt="skip", problems=problems)
    assert 0 < table.num_rows < 3000  # all but the cells under the replaced entry
    assert [p.offset for p in problems] == [one.offset]


def test_index_levels_expect_hbase_block_types(tmp_path: Path) -> None:
    """A 2-level file claiming 3 levels reads a leaf where an intermediate block belongs."""
    path, data = _multi_level(tmp_path)
    levels = hbase.open_hfile(save(path, data)).trailer.num_data_index_levels
    bad = save(path, patch_trailer(data, num_data_index_levels=levels + 1))
    with pytest.raises(CorruptFileError, match="expected a INTERMEDIATE_INDEX block") as e:
        hbase.read_hfile(bad)
    assert bad in str(e.value)


# --------------------------------------------------------------------------- decompression
def test_gzip_bomb_stops_at_the_stated_size(tmp_path: Path, worker: BoundedWorker) -> None:
    """A GZ block inflating to 1 GiB (4 GiB in the attack): MemoryError before."""
    path, data = ours(
        tmp_path, "gz.hfile", cells(3, value=os.urandom(2 << 20)), compression="gz", bloom="none"
    )
    block = first(data, "DATA")
    replace_payload(data, block, gzip_bomb(1024))
    bad = save(path, data)
    failed_cleanly(
        worker.call("hfile_patch:read_all", bad),
        bad,
        f"DATA block at offset {block.offset}",
        "GZ payload decompressed to more than",
    )


def test_zstd_bomb_stops_at_the_stated_size(tmp_path: Path, worker: BoundedWorker) -> None:
    """A zstd frame decoding to 4 GiB aborted the process inside cramjam."""
    path, data = ours(
        tmp_path,
        "zstd.hfile",
        cells(3, value=os.urandom(192 << 10)),
        compression="zstd",
        bloom="none",
    )
    block = first(data, "DATA")
    replace_payload(data, block, zstd_rle_bomb(4 << 30))
    bad = save(path, data)
    failed_cleanly(
        worker.call("hfile_patch:read_all", bad), bad, f"DATA block at offset {block.offset}"
    )


def test_lz4_frame_claiming_4_gib_is_refused(tmp_path: Path, worker: BoundedWorker) -> None:
    """An LZ4 Hadoop frame claiming 0xFFFFFFF0 raw bytes was allocated."""
    path, data = ours(tmp_path, "lz4.hfile", cells(500), compression="lz4", bloom="none")
    block = first(data, "DATA")
    put(data, block.payload, "I", 0xFFFFFFF0)
    rechecksum(data, block.offset)
    bad = save(path, data)
    failed_cleanly(
        worker.call("hfile_patch:read_all", bad),
        bad,
        f"DATA block at offset {block.offset}",
        "4294967280 raw bytes",
    )


def test_stated_size_beyond_what_the_codec_can_expand_to(tmp_path: Path) -> None:
    path, data = ours(tmp_path, "gz-size.hfile", cells(500), compression="gz", bloom="none")
    block = first(data, "DATA")
    put(data, block.offset + 12, "i", 0x7FFFFFF0)  # uncompressedSizeWithoutHeader
    rechecksum(data, block.offset)
    bad = save(path, data)
    with pytest.raises(CorruptFileError, match="more than the 268435456-byte block limit") as e:
        hbase.read_hfile(bad)
    assert bad in str(e.value) and f"offset {block.offset}" in str(e.value)
    put(data, block.offset + 12, "i", 64 << 20)  # within the limit, beyond GZ's 1032:1
    rechecksum(data, block.offset)
    with pytest.raises(CorruptFileError, match="more than GZ can"):
        hbase.read_hfile(save(path, data))


# --------------------------------------------------------------------------- encodings
def test_encoded_block_claiming_2_gib_is_refused(tmp_path: Path, worker: BoundedWorker) -> None:
    """``unencodedDataSize`` of 2 GiB was allocated up front by the decoder."""
    path, data = ours(tmp_path, "fd.hfile", cells(500), encoding="fast_diff", bloom="none")
    block = first(data, "ENCODED_DATA")
    put(data, block.payload + 2, "i", 0x7FFFFFF0)  # i16 encoding id | i32 unencoded size
    rechecksum(data, block.offset)
    bad = save(path, data)
    failed_cleanly(
        worker.call("hfile_patch:read_all", bad),
        bad,
        f"ENCODED_DATA block at offset {block.offset}",
        "unencoded size 2147483632",
    )


# --------------------------------------------------------------------------- Bloom
def _bigtable_none() -> bytes:
    """The first NONE-compressed HFile of the Bigtable export (ROW Bloom, CRC32C)."""
    with zipfile.ZipFile(BIGTABLE) as z:
        name = next(
            n
            for n in sorted(z.namelist())
            if "/test-table/" in n and "/cf/" in n and not n.endswith("/")
        )
        return z.read(name)


def test_bloom_hash_count_is_bounded(tmp_path: Path, worker: BoundedWorker) -> None:
    """A hash count of 2^31-1 looped in Python for minutes on every lookup."""
    data = bytearray(_bigtable_none())
    meta = first(data, "GENERAL_BLOOM_META")
    put(data, meta.payload + 12, "i", 0x7FFFFFFF)  # i32 version | i64 totalByteSize | hashCount
    rechecksum(data, meta.offset)
    chunk = first(data, "BLOOM_CHUNK")  # every bit set: every probe hits, none ends the loop
    data[chunk.payload : chunk.data_end] = b"\xff" * (chunk.data_end - chunk.payload)
    rechecksum(data, chunk.offset)
    bad = save(tmp_path / "hash-count.hfile", data)
    row = hbase.read_hfile(bad).column("row")[0].as_py()  # cells read as before
    failed_cleanly(
        worker.call("hfile_patch:read_might_contain", bad, row),
        bad,
        f"GENERAL_BLOOM_META block at offset {meta.offset}",
        "hash count 2147483647",
    )
    _, cells_read, problems = worker.call("hfile_patch:read_verify", bad).value
    assert cells_read == 10
    assert any("hash count" in p for p in problems)
    info = CliRunner().invoke(cli, ["hfile", "info", bad])
    assert info.exit_code == 0 and "type=ROW, damaged" in info.output, info.output
    verify = CliRunner().invoke(cli, ["hfile", "verify", bad])
    assert verify.exit_code == 9 and "hash count 2147483647" in verify.output, verify.output


# --------------------------------------------------------------------------- cells
def _row_too_long(tmp_path: Path) -> tuple[str, int, int]:
    """The real NONE vector with the last cell of its last block claiming a 65535-byte
    row; returns (path, block offset, cells in the other blocks)."""
    data = bytearray(HUDI_NONE.read_bytes())
    block = last(data, "DATA")
    payload = bytes(data[block.payload : block.data_end])
    # Hudi cells: no tags, a one-byte memstore timestamp after each value.
    starts, pos = [], 0
    while pos < len(payload):
        starts.append(pos)
        klen, vlen = struct.unpack_from(">II", payload, pos)
        pos += 8 + klen + vlen + 1
    put(data, block.payload + starts[-1] + 8, "H", 0xFFFF)
    rechecksum(data, block.offset)
    return save(tmp_path / "row-too-long.hfile", data), block.offset, 5000 - len(starts)


def test_row_length_longer_than_its_key_names_file_and_block(tmp_path: Path) -> None:
    """The last cell of a block with a row longer than its key: raw IndexError before."""
    path, offset, others = _row_too_long(tmp_path)
    with pytest.raises(CorruptFileError, match="row length 65535 overruns its") as e:
        hbase.read_hfile(path)
    assert path in str(e.value) and f"data block at offset {offset}" in str(e.value)
    problems: list[hbase.BlockProblem] = []
    table = hbase.open_hfile(path).read(on_corrupt="skip", problems=problems)
    assert table.num_rows == others
    assert [p.offset for p in problems] == [offset]
    report = hbase.verify_hfile(path)
    assert not report.ok and report.cells == others
    assert any(p.offset == offset for p in report.problems)


def test_row_length_longer_than_its_key_through_the_cli(tmp_path: Path) -> None:
    path, offset, _ = _row_too_long(tmp_path)
    result = CliRunner().invoke(cli, ["hfile", "cat", path])
    assert result.exit_code == CorruptFileError.exit_code, result.output
    assert "unexpected" not in result.output
    assert path in result.output and f"offset {offset}" in result.output
    result = CliRunner().invoke(cli, ["hfile", "verify", path])
    assert result.exit_code == 9, result.output
    assert "unexpected" not in result.output
    assert "DAMAGED" in result.output and f"offset {offset}" in result.output


def test_damaged_cell_errors_name_file_and_block(tmp_path: Path) -> None:
    """A family that is not UTF-8: the error did not say which file or block."""
    path, data = ours(
        tmp_path, "family.hfile", cells(50), include_tags=False, include_mvcc=False, bloom="none"
    )
    block = first(data, "DATA")
    at = block.payload + none_cells(bytes(data[block.payload : block.data_end]))[3]
    rlen = struct.unpack_from(">H", data, at + 8)[0]
    data[at + 11 + rlen] = 0xFF  # the family's one byte ("f")
    rechecksum(data, block.offset)
    bad = save(path, data)
    with pytest.raises(CorruptFileError, match="family name is not UTF-8") as e:
        hbase.read_hfile(bad)
    assert bad in str(e.value) and f"data block at offset {block.offset}" in str(e.value)
    problems: list[hbase.BlockProblem] = []
    assert hbase.open_hfile(bad).read(on_corrupt="skip", problems=problems).num_rows == 0
    assert [p.offset for p in problems] == [block.offset]


# --------------------------------------------------------------------------- FileInfo
def test_non_utf8_index_block_encoding(tmp_path: Path) -> None:
    """``INDEX_BLOCK_ENCODING`` of invalid UTF-8 leaked UnicodeDecodeError."""
    path, data = ours(
        tmp_path,
        "index-enc.hfile",
        cells(10),
        file_info={b"INDEX_BLOCK_ENCODING": b"\xff\xfePREFIX"},
    )
    bad = save(path, data)
    for call in (hbase.read_hfile, hbase.hfile_info):
        with pytest.raises(UnsupportedFormatError, match=r"\\xFF\\xFEPREFIX") as e:
            call(bad)
        assert bad in str(e.value)
    for command in ("info", "cat", "verify"):
        result = CliRunner().invoke(cli, ["hfile", command, bad])
        assert result.exit_code in (UnsupportedFormatError.exit_code, 9), result.output
        assert "unexpected" not in result.output and bad in result.output


# --------------------------------------------------------------------------- checksums
def test_zeroed_bytes_per_checksum_does_not_skip_verification(tmp_path: Path) -> None:
    """bytesPerChecksum damaged to 0 (one bit flip of 16384) turned verification off."""
    data = bytearray(HUDI_NONE.read_bytes())
    block = first(data, "DATA")
    put(data, block.offset + 25, "i", 0)  # not re-summed: this is damage
    path = save(tmp_path / "bpc-zero.hfile", data)
    with pytest.raises(CorruptFileError) as e:
        hbase.read_hfile(path)
    assert path in str(e.value) and f"offset {block.offset}" in str(e.value)


def test_checksum_type_flipped_to_null_is_detected(tmp_path: Path) -> None:
    """CRC32C (2) with bit 1 flipped is NULL (0): the stored sums then went unchecked."""
    data = bytearray(HUDI_NONE.read_bytes())
    block = first(data, "DATA")
    data[block.offset + 24] ^= 0x02
    path = save(tmp_path / "null-type.hfile", data)
    with pytest.raises(CorruptFileError, match="checksum type NULL") as e:
        hbase.read_hfile(path)
    assert f"offset {block.offset}" in str(e.value)
    assert not hbase.verify_hfile(path).ok


# --------------------------------------------------------------------------- trailer
@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("num_data_index_levels", 0, "0 data index levels"),
        ("num_data_index_levels", 17, "17 data index levels (HBase writes 1 to 16)"),
        ("last_data_block_offset", 1 << 40, "last data block offset 1099511627776"),
    ],
)
def test_absurd_trailer_fields(tmp_path: Path, field: str, value: int, fragment: str) -> None:
    data = patch_trailer(HUDI_NONE.read_bytes(), **{field: value})
    bad = save(tmp_path / f"{field}.hfile", data)
    with pytest.raises(CorruptFileError, match="the trailer is damaged") as e:
        hbase.read_hfile(bad)
    assert bad in str(e.value) and fragment in str(e.value)


@pytest.mark.parametrize(("field", "which"), [("data_index_count", 0), ("meta_index_count", 1)])
def test_trailer_entry_counts_are_checked_against_the_block(
    tmp_path: Path, field: str, which: int
) -> None:
    """A count is checked against what the root block can hold, naming that block."""
    data = HUDI_NONE.read_bytes()
    root = [b for b in blocks_of(data) if b.kind == "ROOT_INDEX"][which]
    bad = save(tmp_path / f"{field}.hfile", patch_trailer(data, **{field: 1 << 40}))
    with pytest.raises(CorruptFileError, match="root index claims 1099511627776 entries") as e:
        hbase.read_hfile(bad)
    assert bad in str(e.value) and f"at offset {root.offset}" in str(e.value)


def test_damaged_mid_key_metadata_is_dropped(tmp_path: Path) -> None:
    """Mid-key metadata is never used to read; a forged one must not make the file fail."""
    path, data = _multi_level(tmp_path)
    root = first(data, "ROOT_INDEX")
    reader = hbase.open_hfile(save(path, data))
    assert reader.mid_key is not None
    count = reader.trailer.data_index_count
    pos = root.payload
    for _ in range(count):
        klen = data[pos + 12]  # keys here are short: a one-byte VInt
        pos += 13 + klen
    put(data, pos, "q", 1 << 50)
    rechecksum(data, root.offset)
    reader = hbase.open_hfile(save(path, data))
    assert reader.mid_key is None
    assert reader.read().num_rows == 3000


def test_non_root_index_secondary_offsets_are_checked(tmp_path: Path) -> None:
    path, data = _multi_level(tmp_path)
    leaf = first(data, "LEAF_INDEX")
    put(data, leaf.payload + 8, "i", -1000)  # secondary offset of entry 1
    rechecksum(data, leaf.offset)
    bad = save(path, data)
    with pytest.raises(CorruptFileError, match="secondary offsets") as e:
        hbase.read_hfile(bad)
    assert f"LEAF_INDEX block at offset {leaf.offset}" in str(e.value)


def test_index_entry_size_must_match_the_block_header(tmp_path: Path) -> None:
    data = bytearray(HUDI_NONE.read_bytes())
    root = first(data, "ROOT_INDEX")
    real = block_at(data, 0).header.on_disk_size
    put(data, root.payload + 8, "i", real - 100)  # inside the file, but not the block's size
    rechecksum(data, root.offset)
    path = save(tmp_path / "size-mismatch.hfile", data)
    with pytest.raises(CorruptFileError, match=f"its index entry says {real - 100}") as e:
        hbase.read_hfile(path)
    assert path in str(e.value)


# --------------------------------------------------------------------------- writer
def test_write_hfile_wrongly_typed_columns_are_bad_cells(tmp_path: Path) -> None:
    """int64 rows leaked ArrowNotImplementedError, string timestamps ArrowInvalid."""
    good = cells(3)
    rows = good.set_column(0, "row", pa.array([1, 2, 3], pa.int64()))
    with pytest.raises(BadCellError, match="'row'") as e:
        hbase.write_hfile(str(tmp_path / "a.hfile"), rows)
    assert e.value.field == "row"
    ts = good.set_column(3, "ts", pa.array(["now", "then", "later"]))
    with pytest.raises(BadCellError, match="'ts'") as e:
        hbase.write_hfile(str(tmp_path / "b.hfile"), ts)
    assert e.value.field == "ts"
    nulls = good.set_column(4, "type", pa.array([4, None, 4], pa.int8()))
    with pytest.raises(BadCellError, match="cell 1: type is null") as e:
        hbase.write_hfile(str(tmp_path / "c.hfile"), nulls)
    assert e.value.field == "type"
    assert not (tmp_path / "a.hfile").exists()
    assert hbase.read_hfile(hbase.write_hfile(str(tmp_path / "ok.hfile"), good).path).num_rows == 3


def test_a_block_without_cells_gathers_to_an_empty_table() -> None:
    """Found by the fuzzer: gathering the cells of an empty block (which the reader does
    for each block when a batch's gather fails) raised numpy's ValueError."""
    import numpy as np

    from cellstore.storefiles.hfile.cells import PAD, CellFlags, cells_to_table

    flags = CellFlags(tags=True, mvcc=True, mvcc_one_byte=True)
    for dictionary in (False, True):
        table = cells_to_table(
            np.zeros(PAD, np.uint8),
            np.zeros(0, np.int64),
            flags=flags,
            with_seq_id=True,
            with_tags=True,
            dictionary=dictionary,
        )
        assert table.num_rows == 0


# --------------------------------------------------------------------------- verify goes on
def test_verify_walks_the_blocks_of_a_file_whose_index_root_is_damaged(tmp_path: Path) -> None:
    """A damaged data-index root leaves no cell to find, but verify still checks every
    block (from the trailer alone) and says which are damaged and why nothing was read."""
    data = bytearray(HUDI_NONE.read_bytes())
    root = first(data, "ROOT_INDEX")
    data[root.payload] ^= 0xFF  # checksum left as it was: the block no longer verifies
    bad = save(tmp_path / "root-damaged.hfile", data)
    with pytest.raises(CorruptFileError, match=f"offset {root.offset}"):
        hbase.read_hfile(bad)
    report = hbase.verify_hfile(bad)
    assert not report.ok and report.cells == 0
    assert report.blocks == len(blocks_of(data))  # every block was walked
    offsets = [p.offset for p in report.problems]
    assert root.offset in offsets  # the damaged block, named by its offset
    assert offsets[-1] == -1 and "index cannot be read" in report.problems[-1].message
    sound = hbase.verify_hfile(HUDI_NONE)
    assert sound.ok and sound.blocks == report.blocks
    out = CliRunner().invoke(cli, ["hfile", "verify", bad])
    assert out.exit_code == 9, out.output
    assert "UNREADABLE" not in out.output and f"offset {root.offset}" in out.output


def test_verify_of_a_file_whose_trailer_is_damaged_is_unreadable(tmp_path: Path) -> None:
    """Without a trailer no block can be found: verify raises, the CLI says UNREADABLE."""
    data = bytearray(HUDI_NONE.read_bytes())
    data[-4:] = b"\xff\xff\xff\xff"  # the version word of the trailer
    bad = save(tmp_path / "trailer-damaged.hfile", data)
    with pytest.raises(CellstoreError):
        hbase.verify_hfile(bad)
    out = CliRunner().invoke(cli, ["hfile", "verify", bad])
    assert out.exit_code == 9 and "UNREADABLE" in out.output, out.output


def test_info_lists_what_was_left_out(tmp_path: Path) -> None:
    """A Bloom meta that does not parse is left out; hfile_info says so, and why."""
    data = bytearray(_bigtable_none())
    meta = first(data, "GENERAL_BLOOM_META")
    put(data, meta.payload + 12, "i", 0x7FFFFFFF)
    rechecksum(data, meta.offset)
    bad = save(tmp_path / "bloom-left-out.hfile", data)
    info = hbase.hfile_info(bad)
    assert [p.offset for p in info.problems] == [meta.offset]
    assert "hash count 2147483647" in info.problems[0].message
    assert not hbase.hfile_info(save(tmp_path / "sound.hfile", _bigtable_none())).problems
    out = CliRunner().invoke(cli, ["hfile", "info", bad])
    assert out.exit_code == 0 and "Damaged, left out:" in out.output, out.output
    assert f"offset {meta.offset}: " in out.output
