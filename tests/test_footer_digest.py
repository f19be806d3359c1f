"""Footer digests (issue 12): a damaged or replaced Parquet footer is refused before parsing.

Every manifest entry a writer path builds records ``footer-digest``: XXH3-64 of the file's
last ``footer_len + 8`` bytes. Readers compare it before pyarrow parses the footer (some
damaged footers abort pyarrow), so any change to the footer is a
:class:`~cellstore.errors.CorruptFileError` on scan, get and verify; entries without one
(older tables) read as before; a truncated or garbled tail is a CorruptFileError even then.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import fsspec
import numpy as np
import pyarrow as pa
import pytest
import xxhash

import cellstore
from cellstore.core.family import Family
from cellstore.core.metadata import FileEntry, TableMetadata
from cellstore.errors import CorruptFileError
from cellstore.jobs import clone, compact, merge, snapshot, split, verify
from cellstore.storefiles import check
from cellstore.storefiles.reader import StoreFileReader, clear_footer_cache
from cellstore.storefiles.writer import write_store_file

PUT = 4
LOCAL = fsspec.filesystem("file")


def grid(prefix: str, rows: int, *, quals: int = 2, ts: int = 7) -> pa.Table:
    """``rows`` x ``quals`` Put cells with fixed-width rows."""
    n = rows * quals
    r = np.repeat(np.arange(rows), quals)
    q = np.tile(np.arange(quals), rows)
    return pa.table(
        {
            "row": [f"{prefix}{i:05d}".encode() for i in r],
            "family": ["f"] * n,
            "qualifier": [f"q{j}".encode() for j in q],
            "ts": np.full(n, ts, dtype=np.int64),
            "type": np.full(n, PUT, dtype=np.int8),
            "value": [f"v{i:05d}-{j}".encode() for i, j in zip(r, q, strict=True)],
        }
    )


def tail_digest(data: bytes) -> str:
    """The footer digest computed independently: XXH3-64 of the last footer_len + 8 bytes."""
    assert data[:4] == data[-4:] == b"PAR1"
    footer_len = int.from_bytes(data[-8:-4], "little")
    return xxhash.xxh3_64(data[-(footer_len + 8) :]).hexdigest()


def footer_range(data: bytes) -> range:
    """Byte positions of the serialized FileMetaData (without the 8-byte trailer)."""
    footer_len = int.from_bytes(data[-8:-4], "little")
    return range(len(data) - 8 - footer_len, len(data) - 8)


@pytest.fixture
def table(tmp_path: Path) -> Any:
    """ns:t with regions [-, m) and [m, -): one load, one file per region."""
    clear_footer_cache()
    wh = cellstore.connect(str(tmp_path / "wh"))
    t = wh.create_table("ns:t", families=[Family(name="f", compression="none")], splits=["m"])
    t.load_cells(pa.concat_tables([grid("a", 300), grid("n", 300)]))
    yield t
    clear_footer_cache()


@pytest.fixture
def table_v1(tmp_path: Path) -> Any:
    """As ``table``, at metadata format version 1 (file entries in the JSON document)."""
    clear_footer_cache()
    wh = cellstore.connect(str(tmp_path / "wh"))
    t = wh.create_table(
        "ns:t", families=[Family(name="f", compression="none")], splits=["m"], format_version=1
    )
    t.load_cells(pa.concat_tables([grid("a", 300), grid("n", 300)]))
    yield t
    clear_footer_cache()


def reopen(t: Any) -> Any:
    clear_footer_cache()
    return cellstore.connect(t.warehouse.root).table(t.name)


def entry_of(t: Any, prefix: bytes) -> FileEntry:
    return next(f for f in t.files if f.first_row.startswith(prefix))


# ------------------------------------------------------------------------ recording
def test_writer_records_the_digest_of_the_footer_it_wrote(tmp_path: Path) -> None:
    path = str(tmp_path / "one.parquet")
    info = write_store_file(
        LOCAL, path, grid("a", 50), family=Family(name="f"), seq=1, load_id="l1"
    )
    data = Path(path).read_bytes()
    assert info.footer_digest == tail_digest(data)
    assert info.size == len(data)
    with StoreFileReader(LOCAL, path) as reader:
        assert reader.info.footer_digest == info.footer_digest


def test_a_footer_longer_than_the_first_tail_read_is_digested_whole(tmp_path: Path) -> None:
    """Thousands of row groups: the footer is > 64 KiB, read in two parts, hashed whole."""
    path = str(tmp_path / "big.parquet")
    info = write_store_file(
        LOCAL,
        path,
        grid("a", 1500),
        family=Family(name="f"),
        seq=1,
        load_id="l1",
        row_group_cells=1,
    )
    data = Path(path).read_bytes()
    assert int.from_bytes(data[-8:-4], "little") > 1 << 16
    assert info.footer_digest == tail_digest(data)
    entry = FileEntry(
        path="big.parquet",
        region="r",
        family="f",
        seq=1,
        cells=info.cells,
        delete_markers=0,
        size=info.size,
        first_row=info.first_row,
        last_row=info.last_row,
        min_ts=info.min_ts,
        max_ts=info.max_ts,
        load_id="l1",
        footer_digest=info.footer_digest,
    )
    with StoreFileReader(LOCAL, path, entry=entry) as reader:
        assert reader.read().num_rows == 3000
    pos = footer_range(data)[10]  # far before the last 64 KiB
    Path(path).write_bytes(data[:pos] + bytes([data[pos] ^ 4]) + data[pos + 1 :])
    with pytest.raises(CorruptFileError, match="footer digest mismatch"):
        StoreFileReader(LOCAL, path, entry=entry)


def test_every_entry_has_its_files_digest_after_load_compaction_split_merge_clone(
    table: Any,
) -> None:
    table.load_cells(grid("a", 40, ts=9))
    table.load_cells(grid("p", 40, ts=9))
    compact(table, major=True)
    table.refresh()
    split(table, at=["g", "t"])
    table.refresh()
    versions = [table.metadata]
    moved = {f.path: f.footer_digest for f in table.files}
    merge(table, regions=[r.id for r in table.regions[:2]])
    table.refresh()
    versions.append(table.metadata)
    # Re-assigned entries keep their digest (same file, same bytes).
    assert {f.path: f.footer_digest for f in table.files} == moved
    snapshot(table, "s1")
    clone(table.refresh(), "s1", "ns:c")
    c = cellstore.connect(table.warehouse.root).table("ns:c")
    versions.append(c.metadata)
    # Cloned entries link to the source's files and keep their digests.
    assert len(c.files) == len(moved)
    for f in c.files:
        (source,) = [p for p in moved if f.path.endswith("/" + p)]
        assert f.footer_digest == moved[source]
    for meta, handle in zip(versions, (table, table, c), strict=True):
        assert meta.files
        for f in meta.files:
            assert f.footer_digest is not None, f
            assert f.footer_digest == tail_digest(Path(handle.file_path(f)).read_bytes())
    assert verify(table).ok and verify(c).ok


# ---------------------------------------------------------------------- the JSON
def test_footer_digest_in_the_entry_json_only_when_recorded(table: Any) -> None:
    entry = table.files[0]
    doc = entry.to_dict()
    assert doc["footer-digest"] == entry.footer_digest
    assert FileEntry.from_dict(doc) == entry
    old = dataclasses.replace(entry, footer_digest=None)
    assert "footer-digest" not in old.to_dict()
    assert FileEntry.from_dict(old.to_dict()).footer_digest is None


@pytest.mark.parametrize("bad", [7, None, "ABCDEF0123456789", "0123", "0123456789abcdeg", []])
def test_a_malformed_footer_digest_makes_the_metadata_corrupt(table_v1: Any, bad: Any) -> None:
    table = table_v1
    doc = table.metadata.to_dict()
    doc["files"][0]["footer-digest"] = bad
    with pytest.raises(CorruptFileError, match="footer-digest"):
        TableMetadata.from_dict(doc, source="v.json")


def test_unknown_entry_keys_are_ignored(table_v1: Any) -> None:
    """What lets a release without footer digests read tables that record them."""
    table = table_v1
    doc = table.metadata.to_dict()
    doc["files"][0]["x-future-field"] = {"any": 1}
    assert TableMetadata.from_dict(doc).files == table.metadata.files


# ------------------------------------------------------------------- detection
def test_a_flipped_footer_bit_fails_scan_get_and_verify(table: Any) -> None:
    before = table.scan().to_arrow()  # warms the footer cache: the check must still run
    entry = entry_of(table, b"n")
    path = Path(table.file_path(entry))
    data = path.read_bytes()
    pos = footer_range(data)[len(footer_range(data)) // 2]
    path.write_bytes(data[:pos] + bytes([data[pos] ^ 0x10]) + data[pos + 1 :])
    for read in (lambda: table.scan().to_arrow(), lambda: table.get("n00001")):
        with pytest.raises(CorruptFileError, match="footer digest mismatch") as info:
            read()
        assert entry.path in str(info.value) and f"version {table.version}" in str(info.value)
        assert entry.footer_digest is not None and entry.footer_digest in str(info.value)
    report = verify(table)
    assert [p.path for p in report.problems] == [entry.path]
    assert "footer digest mismatch" in report.problems[0].message
    assert table.get("a00001")  # the other region's file still reads
    path.write_bytes(data)
    assert table.scan().to_arrow() == before


def test_every_single_bit_flip_in_the_footer_is_refused_before_parsing(table: Any) -> None:
    """Each footer byte and the trailer, one bit each: CorruptFileError, never a crash."""
    entry = entry_of(table, b"a")
    path = Path(table.file_path(entry))
    data = path.read_bytes()
    start = footer_range(data).start
    for pos in range(start, len(data)):
        path.write_bytes(data[:pos] + bytes([data[pos] ^ (1 << pos % 8)]) + data[pos + 1 :])
        with pytest.raises(CorruptFileError):
            StoreFileReader(LOCAL, str(path), entry=entry)


def test_a_same_size_file_with_another_footer_is_caught_only_by_the_digest(
    table: Any,
) -> None:
    """A footer change every other check accepts: the load id inside the footer JSON."""
    entry = entry_of(table, b"a")
    path = Path(table.file_path(entry))
    data = path.read_bytes()
    load_id = entry.load_id.encode()
    assert data.count(load_id) == 1
    forged = data.replace(load_id, load_id[:-1] + (b"0" if load_id[-1:] != b"0" else b"1"))
    assert len(forged) == len(data) and forged != data
    path.write_bytes(forged)
    clear_footer_cache()
    with pytest.raises(CorruptFileError, match="footer digest mismatch"):
        StoreFileReader(LOCAL, str(path), entry=entry)
    # Honest: without the digest the same file passes every other check.
    with StoreFileReader(LOCAL, str(path), entry=dataclasses.replace(entry, footer_digest=None)):
        pass
    report = check(LOCAL, str(path), entry=entry)
    assert any("footer digest mismatch" in p for p in report.problems)
    assert check(LOCAL, str(path), entry=dataclasses.replace(entry, footer_digest=None)).ok


def test_entries_without_a_digest_still_read(table_v1: Any) -> None:
    """A table written before footer digests (no ``footer-digest`` keys) reads as before."""
    table = table_v1
    expected = table.scan(raw=True).to_arrow()
    vfile = Path(table.log.version_path(table.version))
    doc = json.loads(vfile.read_bytes())
    for f in doc["files"]:
        del f["footer-digest"]
    vfile.write_bytes(json.dumps(doc).encode())
    t = reopen(table)
    assert all(f.footer_digest is None for f in t.files)
    assert t.scan(raw=True).to_arrow() == expected
    assert t.get("n00002")
    assert verify(t).ok


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda d: b"", id="empty"),
        pytest.param(lambda d: d[:11], id="11-bytes"),
        pytest.param(lambda d: d[:-1], id="last-byte-cut"),
        pytest.param(lambda d: d[: len(d) // 2], id="half"),
        pytest.param(
            lambda d: d[:-8] + (len(d)).to_bytes(4, "little") + b"PAR1",
            id="footer-length-beyond-the-file",
        ),
        pytest.param(
            lambda d: d[:-8] + (2**32 - 1).to_bytes(4, "little") + b"PAR1", id="footer-length-huge"
        ),
        pytest.param(lambda d: b"XAR1" + d[4:], id="head-magic"),
        pytest.param(lambda d: d[:-4] + b"PARE", id="tail-magic"),
    ],
)
def test_a_truncated_or_garbled_tail_is_corrupt_without_a_digest(
    tmp_path: Path, damage: Any
) -> None:
    path = tmp_path / "one.parquet"
    write_store_file(LOCAL, str(path), grid("a", 20), family=Family(name="f"), seq=1, load_id="l1")
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(CorruptFileError, match=r"one\.parquet"):
        StoreFileReader(LOCAL, str(path))
    assert not check(LOCAL, str(path)).ok


@pytest.mark.parametrize("backend", ["memory", "s3"])
def test_remote_files_are_checked_at_both_ends(
    backend: str, request: pytest.FixtureRequest
) -> None:
    """A file larger than the tail read: the leading magic and the digest, remotely too."""
    clear_footer_cache()
    if backend == "s3":
        root = request.getfixturevalue("s3_root")
        wh = cellstore.connect(root, storage_options=request.getfixturevalue("s3_options"))
    else:
        wh = cellstore.connect(request.getfixturevalue("memory_root"))
    t = wh.create_table("ns:t", families=[Family(name="f", compression="none")])
    t.load_cells(grid("a", 4000))
    (entry,) = t.files
    assert entry.size > 1 << 17 and entry.footer_digest is not None
    path = t.file_path(entry)
    data = t.fs.cat_file(path)
    assert entry.footer_digest == tail_digest(data)
    pos = footer_range(data)[5]
    for damaged, message in [
        (data[:pos] + bytes([data[pos] ^ 1]) + data[pos + 1 :], "footer digest mismatch"),
        (b"PAR2" + data[4:], "no Parquet magic at the start"),
    ]:
        t.fs.pipe_file(path, damaged)
        t.fs.invalidate_cache()
        with pytest.raises(CorruptFileError, match=message):
            t.scan().to_arrow()
    t.fs.pipe_file(path, data)
    t.fs.invalidate_cache()
    assert t.scan().to_arrow().num_rows == 8000
    clear_footer_cache()
