"""Builders of HBase data for tests and benchmarks: the real vectors unpacked, synthetic roots.

* :func:`unpack_vector`: one of ``../shared/testdata/hbase-hfiles`` unpacked into a temporary
  directory (the vectors are used in place, never copied into the project).
* :func:`write_root2`: a synthetic HBase 2.x root directory of one table: descriptor with
  family attributes, region directories with ``.regioninfo``, and HFiles written by
  ``write_hfile`` with chosen names, cell sequence ids and ``MAX_SEQ_ID_KEY``.
* :func:`root2_links`: the 2.x root with a bulk-loaded pair of files, an HFileLink and a
  Reference (the same shape as ``test_hbase_tables._root2``).
"""

from __future__ import annotations

import struct
import tarfile
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from cellstore.hbase import write_hfile
from cellstore.hbasefiles.descriptors import encoded_region_name

VECTORS = Path(__file__).resolve().parents[2] / "shared" / "testdata" / "hbase-hfiles"
BIGTABLE = VECTORS / "google-bigtable-hbase" / "EndToEndIT-snapshot.zip"
NS_UPGRADE = VECTORS / "apache-hbase" / "TestNamespaceUpgrade.0.98.tgz"
META_MIGRATION = VECTORS / "apache-hbase" / "TestMetaMigrationConvertToPB.tgz"


def unpack_vector(src: Path, dest: Path) -> Path:
    """Unpack a ``.zip`` or ``.tgz`` vector into ``dest``; returns ``dest``."""
    if src.suffix == ".zip":
        with zipfile.ZipFile(src) as z:
            z.extractall(dest)
    else:
        with tarfile.open(src) as t:
            t.extractall(dest, filter="data")
    return dest


# --------------------------------------------------------------------------- protobuf
def varint(n: int) -> bytes:
    """A protobuf varint."""
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def pb_field(num: int, value: bytes | int) -> bytes:
    """A protobuf field: varint for ints, length-delimited for bytes."""
    if isinstance(value, int):
        return varint(num << 3) + varint(value)
    return varint(num << 3 | 2) + varint(len(value)) + value


def _pair(k: str, v: str) -> bytes:
    return pb_field(1, k.encode()) + pb_field(2, v.encode())


def _table_name(ns: str, q: str) -> bytes:
    return pb_field(1, ns.encode()) + pb_field(2, q.encode())


def region_info(ns: str, table: str, rid: int, start: bytes, end: bytes) -> bytes:
    """A ``.regioninfo`` file (``PBUF`` + a varint-delimited ``RegionInfo``)."""
    msg = pb_field(1, rid) + pb_field(2, _table_name(ns, table)) + pb_field(3, start)
    msg += pb_field(4, end)
    return b"PBUF" + varint(len(msg)) + msg


def table_schema(ns: str, table: str, families: Mapping[str, Mapping[str, str]]) -> bytes:
    """A ``.tableinfo`` file: ``PBUF`` + ``TableSchema`` with the families' attributes."""
    body = pb_field(1, _table_name(ns, table))
    for name, attrs in families.items():
        fam = pb_field(1, name.encode())
        for k, v in attrs.items():
            fam += pb_field(2, _pair(k, v))
        body += pb_field(3, fam)
    return b"PBUF" + body


# --------------------------------------------------------------------------- cells
def cells(rows: Sequence[tuple[str, str, int, int, str]]) -> pa.Table:
    """Cells from ``(row, qualifier, ts, type, value)`` tuples."""
    return pa.table(
        {
            "row": pa.array([r[0].encode() for r in rows], pa.binary()),
            "qualifier": pa.array([r[1].encode() for r in rows], pa.binary()),
            "ts": pa.array([r[2] for r in rows], pa.int64()),
            "type": pa.array([r[3] for r in rows], pa.int8()),
            "value": pa.array([r[4].encode() for r in rows], pa.binary()),
        }
    )


def bench_cells(
    rows: int, *, offset: int = 0, seed: int = 0, versions: int = 2, ts_base: int = 0
) -> pa.Table:
    """``rows`` rows x 5 qualifiers x ``versions`` Puts (16-byte rows, 8-byte values).

    Timestamps are ``1_600_000_000_000 + ts_base + 1000 * v`` for ``v = versions .. 1``.
    """
    rng = np.random.default_rng(seed)
    per_row = 5 * versions
    n = rows * per_row
    r = np.repeat(np.arange(offset, offset + rows), per_row)
    row = pa.array(np.char.mod("user%012d", r).astype("S16").astype(object), pa.binary())
    q = np.tile(np.repeat(np.arange(5), versions), rows)
    qual = pa.array(np.char.mod("c%d", q).astype("S2").astype(object), pa.binary())
    newest_first = 1000 * np.arange(versions, 0, -1, dtype=np.int64)
    ts = np.tile(1_600_000_000_000 + ts_base + newest_first, rows * 5)
    vals = rng.integers(0, 1 << 62, n, dtype=np.int64).astype(">i8").view("S8").astype(object)
    return pa.table(
        {
            "row": row,
            "qualifier": qual,
            "ts": ts,
            "type": pa.array(np.full(n, 4, np.int8)),
            "value": pa.array(vals, pa.binary()),
        }
    )


# --------------------------------------------------------------------------- roots
@dataclass(frozen=True)
class HFileSpec:
    """One HFile of a synthetic store.

    Attributes:
        name: File name (``<hex>`` for a flushed file, ``<hex>_SeqId_N_`` for a bulk load).
        cells: The cells; a ``seq_id`` column gives each cell's memstore timestamp.
        max_seq_id: ``MAX_SEQ_ID_KEY`` to record (None: not recorded).
        keep_cell_seq_ids: Record ``SKIP_RESET_SEQ_ID`` so the cells' own sequence ids
            count (a flushed file's behaviour; otherwise the file counts as bulk-loaded).
        compression: HFile codec.
    """

    name: str
    cells: pa.Table
    max_seq_id: int | None = None
    keep_cell_seq_ids: bool = False
    compression: str = "none"


@dataclass(frozen=True)
class Root2:
    """A synthetic 2.x root: its path, table name and region encoded names."""

    root: Path
    table: str
    regions: tuple[str, ...]
    extra: Mapping[str, str] = field(default_factory=dict)


def write_root2(
    tmp: Path,
    *,
    ns: str = "default",
    table: str = "t",
    families: Mapping[str, Mapping[str, str]],
    splits: Sequence[bytes] = (),
    stores: Mapping[tuple[int, str], Sequence[HFileSpec]],
) -> Root2:
    """Write an HBase 2.x root directory holding one table.

    Args:
        tmp: Directory to create ``hbase/`` in.
        ns: Namespace.
        table: Table qualifier.
        families: Family name to its descriptor attributes (``VERSIONS``...).
        splits: Split keys (N keys, N + 1 regions).
        stores: ``(region index, family)`` to its HFiles.
    """
    root = tmp / "hbase"
    tdir = root / "data" / ns / table
    (tdir / ".tabledesc").mkdir(parents=True)
    (root / "hbase.version").write_bytes(b"PBUF" + pb_field(1, b"8"))
    (tdir / ".tabledesc" / ".tableinfo.0000000001").write_bytes(table_schema(ns, table, families))
    bounds = [b"", *splits, b""]
    encoded = []
    for i in range(len(bounds) - 1):
        start, end = bounds[i], bounds[i + 1]
        enc = encoded_region_name(table if ns == "default" else f"{ns}:{table}", start, 2)
        encoded.append(enc)
        (tdir / enc).mkdir()
        (tdir / enc / ".regioninfo").write_bytes(region_info(ns, table, 2, start, end))
        for fam in families:
            (tdir / enc / fam).mkdir()
    for (i, fam), specs in stores.items():
        for spec in specs:
            info: dict[bytes, bytes] = {}
            if spec.max_seq_id is not None:
                info[b"MAX_SEQ_ID_KEY"] = struct.pack(">q", spec.max_seq_id)
            if spec.keep_cell_seq_ids:
                info[b"SKIP_RESET_SEQ_ID"] = b"\x01"
            write_hfile(
                str(tdir / encoded[i] / fam / spec.name),
                spec.cells,
                family=fam.encode(),
                compression=spec.compression,  # type: ignore[arg-type]
                file_info=info,
            )
    name = table if ns == "default" else f"{ns}:{table}"
    return Root2(root, name, tuple(encoded))


def root2_links(tmp: Path) -> Root2:
    """A 2.x root: table t, regions ['', 'm') and ['m', ''), with a bulk-loaded pair of
    files (an equal key in both: ``_SeqId_7_`` wins, R14.5), a DeleteColumn, an HFileLink
    and a Reference (TOP half at 'm') into the archive."""
    root = tmp / "hbase"
    tdir = root / "data" / "default" / "t"
    (tdir / ".tabledesc").mkdir(parents=True)
    (root / "hbase.version").write_bytes(b"PBUF" + pb_field(1, b"8"))
    (tdir / ".tabledesc" / ".tableinfo.0000000001").write_bytes(
        table_schema("default", "t", {"f": {"VERSIONS": "2", "MIN_VERSIONS": "0"}})
    )
    r1 = encoded_region_name("t", b"", 2)
    r2 = encoded_region_name("t", b"m", 2)
    parent = encoded_region_name("t", b"", 1)
    for enc, start, end in [(r1, b"", b"m"), (r2, b"m", b"")]:
        (tdir / enc / "f").mkdir(parents=True)
        (tdir / enc / ".regioninfo").write_bytes(region_info("default", "t", 2, start, end))
    f1 = tdir / r1 / "f"
    write_hfile(
        str(f1 / "aaaa_SeqId_5_"),
        cells([("a", "q", 5, 4, "old"), ("b", "q", 3, 4, "b3")]),
        family=b"f",
    )
    write_hfile(
        str(f1 / "bbbb_SeqId_7_"),
        cells([("a", "q", 5, 4, "new"), ("b", "q", 4, 12, "")]),
        family=b"f",
    )
    arch = root / "archive" / "data" / "default" / "t" / parent / "f"
    arch.mkdir(parents=True)
    letters = [(chr(c), "q", 1, 4, f"v{chr(c)}") for c in range(ord("a"), ord("z") + 1)]
    write_hfile(str(arch / "cccc"), cells(letters), family=b"f")
    f2 = tdir / r2 / "f"
    (f2 / f"t={parent}-cccc").write_bytes(b"")  # link: the whole parent file
    ref = pb_field(1, b"\x00\x01m\x00" + b"\x7f" + b"\xff" * 7 + b"\xff") + pb_field(2, 0)
    (f2 / f"cccc.{parent}").write_bytes(b"PBUF" + ref)  # TOP half at 'm'
    return Root2(root, "t", (r1, r2), {"parent": parent})
