"""Features this reader refuses: index-block encodings and ZSTD dictionaries (crafted files).

Both are refused with ``UnsupportedFormatError`` naming the file and the feature, never
read as wrong cells (``shared/hbase-hfile-format.md`` §5 and §7: ``INDEX_BLOCK_ENCODING``
other than NONE, HBASE-27314; a zstd frame whose header names a ``Dictionary_ID``,
RFC 8878 §3.1.1.1, as HBase's ``ZstdCodec`` writes with
``hbase.io.compress.zstd.dictionary``).
"""

from __future__ import annotations

from pathlib import Path

import cramjam
import pyarrow as pa
import pytest

from cellstore import hbase
from cellstore.errors import UnsupportedFormatError
from cellstore.storefiles.hfile.codecs import decompress, zstd_dictionary_id
from cellstore.storefiles.hfile.writer import build_hfile

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def cells(n: int = 500) -> pa.Table:
    return pa.table(
        {
            "row": [b"row%05d" % i for i in range(n)],
            "family": [b"f"] * n,
            "qualifier": [b"q"] * n,
            "ts": [1] * n,
            "type": [4] * n,
            "value": [b"value-%d" % i for i in range(n)],
        }
    )


def test_index_block_encoding_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "prefix-tree-index.hfile"
    data, _ = build_hfile(cells(), file_info={b"INDEX_BLOCK_ENCODING": b"PREFIX_TREE"})
    path.write_bytes(data)
    for call in (hbase.read_hfile, hbase.hfile_info):
        with pytest.raises(UnsupportedFormatError, match="index block encoding PREFIX_TREE") as e:
            call(str(path))
        assert str(path) in str(e.value)
    ok = tmp_path / "none-index.hfile"
    ok.write_bytes(build_hfile(cells(), file_info={b"INDEX_BLOCK_ENCODING": b"NONE"})[0])
    assert hbase.read_hfile(str(ok)).num_rows == 500


def with_dictionary_id(frame: bytes, dictionary_id: int) -> bytes:
    """``frame`` with a 4-byte Dictionary_ID field added to its header."""
    assert frame[:4] == ZSTD_MAGIC
    fhd = frame[4]
    at = 5 if fhd & 0x20 else 6
    assert fhd & 3 == 0
    return (
        frame[:4]
        + bytes([fhd | 3])
        + frame[5:at]
        + dictionary_id.to_bytes(4, "little")
        + frame[at:]
    )


def test_zstd_dictionary_frames_are_refused() -> None:
    raw = b"cells " * 1000
    frame = bytes(cramjam.zstd.compress(raw))
    assert zstd_dictionary_id(frame) == 0
    assert decompress("ZSTD", frame, size=len(raw), where="f@0") == raw
    dict_frame = with_dictionary_id(frame, 0x1234ABCD)
    assert zstd_dictionary_id(dict_frame) == 0x1234ABCD
    with pytest.raises(UnsupportedFormatError, match=r"f@0: ZSTD .*dictionary id 305441741"):
        decompress("ZSTD", dict_frame, size=len(raw), where="f@0")
    framed = len(raw).to_bytes(4, "big") + len(dict_frame).to_bytes(4, "big") + dict_frame
    with pytest.raises(UnsupportedFormatError, match="dictionaries are not supported"):
        decompress("ZSTD", framed, size=len(raw), where="f@0")


def test_zstd_dictionary_file_is_refused(tmp_path: Path) -> None:
    """A whole file whose first data block names a dictionary (no checksums to fix up)."""
    data, _ = build_hfile(cells(), compression="zstd", checksum="none", bloom="none")
    path = tmp_path / "zstd.hfile"
    path.write_bytes(data)
    assert hbase.read_hfile(str(path)).num_rows == 500
    at = data.index(ZSTD_MAGIC)  # first data block: [u32 raw][u32 comp][frame]
    fhd = data[at + 4]
    did_at = at + (5 if fhd & 0x20 else 6)
    assert fhd & 3 == 0 and data[did_at] != 0
    # Claim a 1-byte Dictionary_ID: the next header byte (non-zero) becomes the id.
    patched = data[: at + 4] + bytes([fhd | 1]) + data[at + 5 :]
    bad = tmp_path / "zstd-dict.hfile"
    bad.write_bytes(patched)
    with pytest.raises(UnsupportedFormatError, match="dictionar") as e:
        hbase.read_hfile(str(bad))
    assert str(bad) in str(e.value)
