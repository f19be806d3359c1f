"""Fuzzing the HFile reader (issue 26): damaged and hostile variants of real and own files.

The corpus holds real HBase-written vectors (Hudi's NONE, GZ and 3-level files, the empty
file, HBase's own corrupt-block file, the Bigtable export's NONE and SNAPPY files, HBase
0.94 v2.0 files without checksums) and files our writer builds with every codec (NONE,
GZ, SNAPPY, LZ4, ZSTD) and every encoding (NONE, PREFIX, DIFF, FAST_DIFF, ROW_INDEX_V1),
small blocks and multi-level indexes, plus one big block per codec for decompression
bombs. Each example damages one file:

* without fixing checksums: bit flips, random bytes, truncations, cut-out ranges;
* with the block's checksums recomputed (so the parser meets the field): a flipped bit,
  an absurd block header field, an absurd value inside an index, FileInfo or Bloom meta
  payload, an absurd ``unencodedDataSize``, a decompression bomb in place of a payload;
* absurd trailer fields (the trailer carries no checksum).

Every read (open, a strict read, a skipping read, Bloom lookups, ``verify_hfile``:
``hfile_patch.read_everything``) runs in a :class:`~fuzzing.BoundedWorker`, a child
process under an address-space and a time limit, and must end in a result or a
:class:`~cellstore.errors.CellstoreError`: never another exception, a dead child or a
hang. Damage the checksums do not hide (anywhere in the blocks of a file with HBase
checksums) must be noticed: a read that raised, or a problem ``verify`` or the skipping
read reported; reading the damaged file as if nothing happened is a failure.
CI runs ``FUZZ_SETTINGS``' bounded number of examples; ``bench/fuzz_long.sh`` many more.
"""

from __future__ import annotations

import functools
import gzip
import os
import struct
import tarfile
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cramjam
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from cellstore.hbase import open_hfile
from cellstore.storefiles.hfile.writer import build_hfile
from fuzzing import FUZZ_SETTINGS, BoundedWorker
from hbase_fixtures import BIGTABLE, NS_UPGRADE, VECTORS
from hfile_patch import (
    TRAILER_FIELDS,
    BlockAt,
    blocks_of,
    patch_trailer,
    read_everything,
    resum,
    trailer_of,
    zstd_rle_bomb,
)

HUDI = VECTORS / "apache-hudi"
HBASE = VECTORS / "apache-hbase"

pytestmark = pytest.mark.needs(
    need="vectors", present=VECTORS.is_dir(), reason="HBase test vectors not present"
)

CODECS = ("none", "gz", "snappy", "lz4", "zstd")
ENCODINGS = ("none", "prefix", "diff", "fast_diff", "row_index_v1")
#: Values a forged field takes: edges of Java ints and longs, and near-misses.
ABSURD = (0, 1, 2, 7, 12, 33, 255, 4096, 65535, 1 << 20, (1 << 31) - 1, 0x7FFFFFF0, 1 << 32)
INDEX_KINDS = frozenset(
    {
        "ROOT_INDEX",
        "LEAF_INDEX",
        "INTERMEDIATE_INDEX",
        "FILE_INFO",
        "GENERAL_BLOOM_META",
        "DELETE_FAMILY_BLOOM_META",
        "ENCODED_DATA",
        "DATA",
    }
)


@dataclass(frozen=True, repr=False)
class CorpusFile:
    """One file to damage."""

    name: str
    data: bytes
    codec: str
    checksums: bool  # HBase checksums on every block (v3, or v2 with minor >= 1)
    blocks: tuple[BlockAt, ...]
    blocks_end: int  # where the trailer starts

    def kind(self, *kinds: str) -> list[BlockAt]:
        return [b for b in self.blocks if b.kind in kinds]

    def __repr__(self) -> str:
        return f"<{self.name}: {len(self.data)} bytes>"


def _cells(n: int, *, seed: int, big: int = 0) -> pa.Table:
    """Varied cells: rows of 3-40 bytes, 1-3 qualifiers, some deletes and DeleteFamily."""
    rng = np.random.default_rng(seed)
    rows, quals, ts, types, values = [], [], [], [], []
    for i in range(n):
        row = b"r%05d" % i + b"x" * int(rng.integers(0, 35))
        for q in range(int(rng.integers(1, 4))):
            kind = int(rng.choice([4, 4, 4, 8, 12, 14]))
            rows.append(row)
            quals.append(b"" if kind == 14 else b"q%d" % q)
            ts.append(int(rng.integers(1, 1 << 40)))
            types.append(kind)
            values.append(
                os.urandom(big) if big else b"v" * int(rng.integers(0, 60)) if kind == 4 else b""
            )
    return pa.table(
        {
            "row": pa.array(rows, pa.binary()),
            "family": [b"f"] * len(rows),
            "qualifier": pa.array(quals, pa.binary()),
            "ts": pa.array(ts, pa.int64()),
            "type": pa.array(types, pa.int8()),
            "value": pa.array(values, pa.binary()),
        }
    )


def _corpus_file(name: str, data: bytes) -> CorpusFile:
    t = trailer_of(data)
    return CorpusFile(
        name=name,
        data=data,
        codec=t.codec,
        checksums=t.has_checksums,
        blocks=tuple(blocks_of(data)),
        blocks_end=len(data) - t.size,
    )


def _build_corpus() -> list[CorpusFile]:
    out: list[CorpusFile] = []
    for name in (
        "hudi_1_0_hbase_2_4_9_16KB_NONE_5000.hfile",
        "hudi_1_0_hbase_2_4_9_16KB_GZ_200_20_non_unique.hfile",
        "hudi_1_0_hbase_2_4_13_1KB_GZ_10000_large_keys_deep_index.hfile",
        "hudi_1_0_hbase_2_4_9_no_entry.hfile",
    ):
        out.append(_corpus_file(name, (HUDI / name).read_bytes()))
    master = gzip.decompress(
        (HBASE / "TestCompaction_HFileWithCorruptBlock.master.gz").read_bytes()
    )
    out.append(_corpus_file("hbase-master-corrupt-block", master))
    with zipfile.ZipFile(BIGTABLE) as z:
        for table in ("test-table", "test-snappy-table"):
            member = next(
                n
                for n in sorted(z.namelist())
                if f"/{table}/" in n and "/cf/" in n and not n.endswith("/")
            )
            out.append(_corpus_file(f"bigtable-{table}", z.read(member)))
    with tarfile.open(NS_UPGRADE) as t:
        for member in (
            "hbase/foo/b882ec3d98ebbbf4851594c8787273ce/f/298e0d87145c4df19c7dd436e856677c",
            "hbase/-ROOT-/70236052/info/68a8ecd739764436a97a2b8a98124c6c",
        ):
            f = t.extractfile(member)
            assert f is not None
            out.append(_corpus_file(f"hbase-0.94-{member.split('/')[1]}", f.read()))
    for i, codec in enumerate(CODECS):
        for j, encoding in enumerate(ENCODINGS):
            data, _ = build_hfile(
                _cells(120, seed=10 * i + j),
                compression=codec,  # type: ignore[arg-type]
                encoding=encoding,  # type: ignore[arg-type]
                block_size=512,
                index_block_max_size=384,
                index_min_entries=4,
                bloom="rowcol" if j % 2 else "row",
                bytes_per_checksum=512 if j == 4 else 16384,
            )
            out.append(_corpus_file(f"ours-{codec}-{encoding}", data))
        # One big block per codec, room for a decompression bomb in its payload.
        data, _ = build_hfile(_cells(3, seed=i, big=40 << 10), compression=codec, bloom="none")  # type: ignore[arg-type]
        out.append(_corpus_file(f"ours-{codec}-big-block", data))
    return out


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> list[CorpusFile]:
    """The corpus; each file reads cleanly as it is (but HBase's deliberately corrupt one)."""
    files = _build_corpus()
    where = tmp_path_factory.mktemp("corpus")
    for f in files:
        path = where / f.name
        path.write_bytes(f.data)
        result = read_everything(str(path))
        damaged = f.name == "hbase-master-corrupt-block"
        assert bool(result["errors"] or result["problems"]) == damaged, (f.name, result)
    return files


@pytest.fixture(scope="module")
def worker() -> Iterator[BoundedWorker]:
    w = BoundedWorker()
    yield w
    w.close()


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz-hfile") / "damaged.hfile"


def _check(
    worker: BoundedWorker, path: Path, data: bytes | bytearray, *, must_notice: bool
) -> dict[str, Any]:
    """Read the damaged file every way; assert a clean outcome (and a noticed damage)."""
    path.write_bytes(bytes(data))
    outcome = worker.call("hfile_patch:read_everything", str(path))
    assert outcome.kind == "ok", outcome
    result: dict[str, Any] = outcome.value
    noticed = not result["opened"] or bool(result["errors"]) or bool(result["problems"])
    event("noticed" if noticed else "read as sound")
    if must_notice:
        assert noticed, "damage under the checksums was read as a sound file"
    for message in result["errors"]:
        assert str(path) in message, message  # every error names the file
    return result


# --------------------------------------------------------------------------- unsummed damage
@st.composite
def unsummed_damage(draw: st.DrawFn, corpus: list[CorpusFile]) -> tuple[CorpusFile, bytes, bool]:
    """A file with bit flips, random bytes, a truncation or a cut, checksums untouched.

    Returns the file, the damaged bytes, and whether the damage lies in checksummed
    blocks (and so must be noticed).
    """
    f = draw(st.sampled_from(corpus))
    data = bytearray(f.data)
    op = draw(st.sampled_from(["flip", "flip-in-blocks", "random", "truncate", "cut"]))
    event(f"unsummed: {op}")
    in_blocks = False
    if op in ("flip", "flip-in-blocks"):
        top = f.blocks_end if op == "flip-in-blocks" else len(data)
        positions = draw(st.lists(st.integers(0, top - 1), min_size=1, max_size=3))
        for pos in positions:
            data[pos] ^= 1 << draw(st.integers(0, 7))
        in_blocks = all(p < f.blocks_end for p in positions)
    elif op == "random":
        start = draw(st.integers(0, len(data) - 1))
        stop = min(len(data), start + draw(st.integers(1, 64)))
        noise = draw(st.binary(min_size=stop - start, max_size=stop - start))
        in_blocks = stop <= f.blocks_end and noise != bytes(data[start:stop])
        data[start:stop] = noise
    elif op == "truncate":
        data = data[: draw(st.integers(0, len(data) - 1))]
    else:
        start = draw(st.integers(0, len(data) - 1))
        del data[start : start + draw(st.integers(1, 4096))]
    return f, bytes(data), in_blocks and bytes(data) != f.data


@FUZZ_SETTINGS
@given(case=st.data())
def test_unsummed_damage_is_noticed_or_refused(
    corpus: list[CorpusFile], worker: BoundedWorker, scratch: Path, case: st.DataObject
) -> None:
    f, data, in_blocks = case.draw(unsummed_damage(corpus))
    event(f"file: {f.name}")
    _check(worker, scratch, data, must_notice=in_blocks and f.checksums)


# --------------------------------------------------------------------------- hostile fields
HEADER_FIELDS = {  # name -> (offset in the header, struct format)
    "onDiskSizeWithoutHeader": (8, "i"),
    "uncompressedSizeWithoutHeader": (12, "i"),
    "prevBlockOffset": (16, "q"),
    "checksumType": (24, "b"),
    "bytesPerChecksum": (25, "i"),
    "onDiskDataSizeWithHeader": (29, "i"),
}


def _absurd(draw: st.DrawFn, fmt: str, near: int = 0) -> int:
    """A forged value for a field of struct format ``fmt`` (edges, near the real one)."""
    bits = {"b": 8, "h": 16, "i": 32, "q": 64}[fmt]
    value = draw(
        st.one_of(
            st.sampled_from(ABSURD),
            st.integers(-16, 16).map(lambda d: near + d),
            st.integers(-(1 << (bits - 1)), (1 << (bits - 1)) - 1),
        )
    )
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


@st.composite
def summed_damage(draw: st.DrawFn, corpus: list[CorpusFile]) -> tuple[CorpusFile, bytes]:
    """A file with one hostile field and the block's checksums recomputed."""
    op = draw(st.sampled_from(["flip", "header", "payload-field", "encoded-size", "bomb"]))
    candidates = {
        "encoded-size": [c for c in corpus if c.codec == "NONE" and c.kind("ENCODED_DATA")],
        "bomb": [c for c in corpus if c.name.endswith("big-block") and c.codec != "NONE"],
    }.get(op, [c for c in corpus if c.checksums])
    f = draw(st.sampled_from(candidates))
    data = bytearray(f.data)
    event(f"summed: {op}")
    block = draw(st.sampled_from(f.blocks))
    if op == "flip":
        pos = draw(st.integers(block.offset, block.data_end - 1))
        data[pos] ^= 1 << draw(st.integers(0, 7))
    elif op == "header":
        name = draw(st.sampled_from(sorted(HEADER_FIELDS)))
        at, fmt = HEADER_FIELDS[name]
        (real,) = struct.unpack_from(">" + fmt, data, block.offset + at)
        struct.pack_into(">" + fmt, data, block.offset + at, _absurd(draw, fmt, real))
        event(f"header field: {name}")
    elif op == "payload-field":
        # An absurd int at any position of an index, FileInfo, Bloom meta or cell payload:
        # on NONE files the parser reads it as a count, a length, an offset or a size.
        candidates = [b for b in f.blocks if b.kind in INDEX_KINDS] or list(f.blocks)
        block = draw(st.sampled_from(candidates))
        fmt = draw(st.sampled_from(["b", "h", "i", "q"]))
        width = struct.calcsize(">" + fmt)
        if block.data_end - block.payload >= width:
            pos = draw(st.integers(block.payload, block.data_end - width))
            (real,) = struct.unpack_from(">" + fmt, data, pos)
            struct.pack_into(">" + fmt, data, pos, _absurd(draw, fmt, real))
        event(f"payload field in {block.kind}")
    elif op == "encoded-size":
        block = draw(st.sampled_from(f.kind("ENCODED_DATA")))
        (real,) = struct.unpack_from(">i", data, block.payload + 2)
        struct.pack_into(">i", data, block.payload + 2, _absurd(draw, "i", real))
    else:
        block = draw(st.sampled_from(f.kind("DATA", "ENCODED_DATA")))
        bomb = _bomb(draw, f.codec, block.data_end - block.payload)
        if bomb is not None:
            data[block.payload : block.data_end] = bomb
            if draw(st.booleans()):  # and a stated size to go with it
                struct.pack_into(">i", data, block.offset + 12, _absurd(draw, "i"))
        event(f"bomb in {f.codec}{'' if bomb is not None else ' did not fit'}")
    resum(data, block)
    return f, bytes(data)


def _bomb(draw: st.DrawFn, codec: str, room: int) -> bytes | None:
    """A payload of ``room`` bytes that decompresses to far more than a block holds."""
    mib = draw(st.sampled_from([1, 4, 64, 512, 4096]))
    claim = draw(st.sampled_from([1 << 20, 0xFFFFFFF0, min(mib << 20, 0xFFFFFFFF)]))
    bomb = _bomb_bytes(codec, mib, claim)
    if bomb is None or len(bomb) > room:
        return None
    return bomb + bytes(room - len(bomb))


@functools.cache
def _bomb_bytes(codec: str, mib: int, claim: int) -> bytes | None:
    """zstd: RLE blocks of ``mib`` MiB; GZ: a gzip member of up to 4 MiB of zeros; LZ4 and
    SNAPPY: Hadoop framing claiming ``claim`` raw bytes around 1 MiB (256 KiB) of zeros."""
    if codec == "ZSTD":
        return zstd_rle_bomb(mib << 20)
    if codec == "GZ":
        c = zlib.compressobj(9, zlib.DEFLATED, 31)
        return c.compress(bytes(min(mib, 4) << 20)) + c.flush()
    if codec == "LZ4":
        block = bytes(cramjam.lz4.compress_block(bytes(1 << 20), store_size=False))
        return struct.pack(">II", claim, len(block)) + block
    if codec == "SNAPPY":  # at most 21:1, so 256 KiB fit a 40 KiB block
        raw = bytes(cramjam.snappy.compress_raw(bytes(256 << 10)))
        return struct.pack(">II", claim, len(raw)) + raw
    return None


@FUZZ_SETTINGS
@given(case=st.data())
def test_hostile_fields_with_valid_checksums_fail_cleanly(
    corpus: list[CorpusFile], worker: BoundedWorker, scratch: Path, case: st.DataObject
) -> None:
    f, data = case.draw(summed_damage(corpus))
    event(f"file: {f.name}")
    _check(worker, scratch, data, must_notice=False)


# --------------------------------------------------------------------------- trailer
@FUZZ_SETTINGS
@given(case=st.data())
def test_absurd_trailer_fields_fail_cleanly(
    corpus: list[CorpusFile], worker: BoundedWorker, scratch: Path, case: st.DataObject
) -> None:
    f = case.draw(st.sampled_from([c for c in corpus if trailer_of(c.data).size == 4096]))
    fields = case.draw(
        st.dictionaries(
            st.sampled_from(sorted(set(TRAILER_FIELDS) - {"comparator", "codec"})),
            st.one_of(st.sampled_from(ABSURD), st.integers(0, (1 << 64) - 1)),
            min_size=1,
            max_size=3,
        )
    )
    event(f"trailer fields: {', '.join(sorted(fields))}")
    _check(worker, scratch, patch_trailer(f.data, **fields), must_notice=False)


# --------------------------------------------------------------------------- kernels
@pytest.fixture(scope="module")
def payloads(corpus: list[CorpusFile], tmp_path_factory: pytest.TempPathFactory) -> list[Any]:
    """Uncompressed data block payloads of our files (every encoding, tags and memstore
    timestamps on and off), with the flags to decode them."""
    where = tmp_path_factory.mktemp("payloads")
    out = []
    for options in ({}, {"include_tags": False}, {"include_mvcc": False}):
        for encoding in ENCODINGS:
            data, _ = build_hfile(
                _cells(40, seed=7), encoding=encoding, block_size=2048, bloom="none", **options
            )  # type: ignore[arg-type]
            path = where / f"{encoding}-{len(out)}.hfile"
            path.write_bytes(data)
            reader = open_hfile(str(path))
            fl = reader.flags
            for entry in reader.data_blocks()[:2]:
                payload = reader.read_block(entry.offset, entry.size).payload
                out.append((encoding, payload, fl.tags, fl.mvcc, fl.mvcc_one_byte))
    return out


@FUZZ_SETTINGS
@given(case=st.data())
def test_forged_cell_payloads_decode_or_fail_cleanly(
    payloads: list[Any], worker: BoundedWorker, case: st.DataObject
) -> None:
    """The compiled decoders and the cell walk, straight on damaged payloads (no checksum
    or codec in front): a result or a CorruptFileError, never an out-of-bounds read, a
    crash or another exception."""
    encoding, payload, tags, mvcc, one_byte = case.draw(st.sampled_from(payloads))
    data = bytearray(payload)
    op = case.draw(st.sampled_from(["flip", "int", "truncate", "random"]))
    event(f"payload {encoding}: {op}")
    if op == "flip":
        for pos in case.draw(st.lists(st.integers(0, len(data) - 1), min_size=1, max_size=4)):
            data[pos] ^= 1 << case.draw(st.integers(0, 7))
    elif op == "int":  # a forged length, count or cint byte anywhere
        fmt = case.draw(st.sampled_from(["b", "h", "i"]))
        pos = case.draw(st.integers(0, len(data) - struct.calcsize(">" + fmt)))
        struct.pack_into(">" + fmt, data, pos, _absurd(case.draw, fmt))
    elif op == "truncate":
        data = data[: case.draw(st.integers(0, len(data) - 1))]
    else:
        start = case.draw(st.integers(0, len(data) - 1))
        stop = min(len(data), start + case.draw(st.integers(1, 32)))
        data[start:stop] = case.draw(st.binary(min_size=stop - start, max_size=stop - start))
    outcome = worker.call("hfile_patch:decode_payload", bytes(data), tags, mvcc, one_byte)
    assert outcome.kind == "ok" or outcome.bounded_failure, outcome
    event("decoded" if outcome.kind == "ok" else "refused")
