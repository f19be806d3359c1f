"""HBase's small metadata files: snapshot infos, manifests, table descriptors, region infos.

Everything here is a pure decoder of bytes (no I/O), following ``docs/hbase.md`` and the
layout reference (hbase-layout.md sections 1-3 and 7):

* protobuf messages (0.96+): ``SnapshotDescription`` (``.snapshotinfo``),
  ``SnapshotDataManifest`` (``data.manifest``), ``SnapshotRegionManifest``, ``TableSchema``
  (``.tableinfo.*`` after the ``PBUF`` magic), ``RegionInfo`` (``.regioninfo``: ``PBUF`` +
  a varint-delimited message) and ``Reference``;
* Hadoop Writables (0.94): ``HRegionInfo``, ``HTableDescriptor``/``HColumnDescriptor`` and
  ``Reference``.

The protobuf wire format is read with the HFile trailer's decoder
(:func:`~cellstore.storefiles.hfile.trailer.iter_pb_fields`).

The bytes are untrusted: every length and count is checked against the bytes that are
left before it is used (a forged varint or count cannot allocate or loop more than the
input holds), names must be UTF-8, and whatever goes wrong while decoding is a
:class:`~cellstore.errors.CorruptFileError` naming the file (``where``).
"""

from __future__ import annotations

import functools
import hashlib
import struct
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Final, ParamSpec, TypeVar

from cellstore.core.family import FOREVER, Family, KeepDeletedCells
from cellstore.errors import CorruptFileError, InvalidFamilyError
from cellstore.storefiles.hfile.trailer import iter_pb_fields
from cellstore.storefiles.hfile.varint import read_pb_varint, read_vlong

__all__ = [
    "PBUF_MAGIC",
    "FamilyDescriptor",
    "HBaseRegionInfo",
    "ReferenceInfo",
    "SnapshotInfo",
    "StoreFileList",
    "StoreFileListing",
    "TableDescriptor",
    "encoded_region_name",
    "parse_data_manifest",
    "parse_meta_region_info",
    "parse_reference",
    "parse_region_info",
    "parse_region_manifest",
    "parse_snapshot_info",
    "parse_store_file_list",
    "parse_table_descriptor",
]

#: The ``PBUF`` magic before protobuf files (``ProtobufMagic``).
PBUF_MAGIC: Final = b"PBUF"

#: 2.x defaults of the family attributes that change reads (layout section 7): an absent
#: key takes these, whatever version wrote the descriptor.
_DEFAULTS: Final[Mapping[str, str]] = {
    "VERSIONS": "1",
    "MIN_VERSIONS": "0",
    "TTL": str(FOREVER),
    "KEEP_DELETED_CELLS": "FALSE",
    "BLOOMFILTER": "ROW",
    "COMPRESSION": "NONE",
    "BLOCKSIZE": "65536",
}
_CODECS: Final = {"NONE": "none", "GZ": "gzip", "SNAPPY": "snappy", "LZ4": "lz4", "ZSTD": "zstd"}


# --------------------------------------------------------------------------- results
@dataclass(frozen=True)
class FamilyDescriptor:
    """One column family as the HBase table descriptor states it.

    Attributes:
        name: Family name.
        attributes: The stored attributes (``VERSIONS``, ``TTL``...), as strings.
        configuration: Per-family ``hbase.*`` configuration overrides.
    """

    name: str
    attributes: Mapping[str, str] = field(default_factory=dict)
    configuration: Mapping[str, str] = field(default_factory=dict)

    def setting(self, key: str) -> str:
        """The attribute ``key``, or its HBase 2.x default (layout section 7)."""
        return self.attributes.get(key, _DEFAULTS.get(key, ""))

    @property
    def is_mob(self) -> bool:
        """Whether the family stores MOB references (``IS_MOB=true``)."""
        return self.attributes.get("IS_MOB", "false").strip().lower() == "true"

    @property
    def is_encrypted(self) -> bool:
        """Whether the family's files are encrypted (``ENCRYPTION`` set)."""
        return bool(self.attributes.get("ENCRYPTION", "").strip())

    @property
    def new_version_behavior(self) -> bool:
        """``NEW_VERSION_BEHAVIOR=true`` (not supported, R17.1)."""
        return self.attributes.get("NEW_VERSION_BEHAVIOR", "false").strip().lower() == "true"

    def to_family(self, *, where: str) -> Family:
        """The core :class:`Family` with the settings that decide reads (R15.1).

        ``VERSIONS``, ``MIN_VERSIONS``, ``TTL`` (seconds; ``2147483647`` = forever) and
        ``KEEP_DELETED_CELLS`` come from the descriptor; compression, Bloom and block size
        only matter for writing and are mapped to their nearest cellstore equivalent.

        Raises:
            CorruptFileError: a setting does not parse (names ``where``).
        """
        try:
            ttl = int(self.setting("TTL"))
            block = int(self.setting("BLOCKSIZE"))
            return Family(
                name=self.name,
                max_versions=int(self.setting("VERSIONS")),
                min_versions=int(self.setting("MIN_VERSIONS")),
                ttl=None if ttl in (FOREVER, -1) else ttl,
                keep_deleted_cells=KeepDeletedCells.parse(self.setting("KEEP_DELETED_CELLS")),
                compression=_CODECS.get(self.setting("COMPRESSION").upper(), "none"),
                bloom_filter=self.setting("BLOOMFILTER").upper() != "NONE",
                block_size=min(max(block, 1024), 16 * 1024 * 1024),
            )
        except (ValueError, InvalidFamilyError) as e:
            raise CorruptFileError(
                f"{where}: family {self.name!r} has settings cellstore cannot read: {e}"
            ) from e

    def to_dict(self) -> dict[str, object]:
        """JSON-ready form."""
        return {
            "name": self.name,
            "attributes": dict(self.attributes),
            "configuration": dict(self.configuration),
        }


@dataclass(frozen=True)
class TableDescriptor:
    """An HBase table descriptor: name, attributes and families in name order."""

    namespace: str
    qualifier: str
    attributes: Mapping[str, str]
    families: tuple[FamilyDescriptor, ...]

    @property
    def name(self) -> str:
        """``ns:qualifier``, or just the qualifier in the default namespace."""
        return (
            self.qualifier if self.namespace == "default" else f"{self.namespace}:{self.qualifier}"
        )


@dataclass(frozen=True)
class HBaseRegionInfo:
    """A region as ``RegionInfo``/``HRegionInfo`` describes it."""

    region_id: int
    namespace: str
    qualifier: str
    start: bytes
    end: bytes
    offline: bool = False
    split: bool = False
    replica_id: int = 0
    encoded: str = ""

    @property
    def is_split_parent(self) -> bool:
        """``offline && split``: a split parent HBase skips (layout section 8.4)."""
        return self.offline and self.split


@dataclass(frozen=True)
class ReferenceInfo:
    """A Reference: a half of a parent file, split at ``split_row``."""

    split_row: bytes
    top: bool


@dataclass(frozen=True)
class StoreFileListing:
    """One store file named by a manifest (or found in a family directory)."""

    name: str
    reference: ReferenceInfo | None = None
    size: int | None = None


@dataclass(frozen=True)
class StoreFileList:
    """A ``.filelist/f1.*``/``f2.*`` file: the store's live files at ``timestamp``."""

    timestamp: int
    files: tuple[StoreFileListing, ...]


@dataclass(frozen=True)
class SnapshotInfo:
    """``.snapshotinfo``: the snapshot's name, table and manifest version."""

    name: str
    table: str
    creation_time: int
    type: int
    version: int


# --------------------------------------------------------------------------- protobuf
_P = ParamSpec("_P")
_R = TypeVar("_R")


def _named(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """Make every decoding failure of ``fn`` a :class:`CorruptFileError` naming ``where``.

    A ``CorruptFileError`` from a lower layer that does not name the file yet (a varint
    decoder) gets ``where`` in front; a ``UnicodeDecodeError``, ``struct.error``,
    ``IndexError``, ``OverflowError`` or other ``ValueError`` becomes one.
    """

    @functools.wraps(fn)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        where = str(kwargs.get("where", ""))
        try:
            return fn(*args, **kwargs)
        except CorruptFileError as e:
            if where in str(e):
                raise
            raise CorruptFileError(f"{where}: {e}") from e
        except UnicodeDecodeError as e:
            raise CorruptFileError(f"{where}: a name or value is not UTF-8 ({e})") from e
        except (struct.error, IndexError, OverflowError, ValueError) as e:
            raise CorruptFileError(f"{where}: does not parse ({type(e).__name__}: {e})") from e

    return wrapper


def _fields(buf: bytes, what: str) -> Iterator[tuple[int, int | bytes]]:
    """The fields of a protobuf message, one at a time (nothing is collected)."""
    try:
        yield from iter_pb_fields(buf, what=what)
    except CorruptFileError as e:
        if what in str(e):
            raise
        raise CorruptFileError(f"{what}: does not parse as protobuf ({e})") from e


def _bytes(v: int | bytes, what: str) -> bytes:
    if not isinstance(v, bytes):
        raise CorruptFileError(f"{what}: expected a length-delimited protobuf field")
    return v


def _int(v: int | bytes, what: str) -> int:
    if isinstance(v, bytes):
        raise CorruptFileError(f"{what}: expected a varint protobuf field")
    return v


def _text(v: int | bytes, what: str) -> str:
    try:
        return _bytes(v, what).decode("utf-8")
    except UnicodeDecodeError as e:
        raise CorruptFileError(f"{what}: a name is not UTF-8") from e


@_named
def parse_snapshot_info(data: bytes, *, where: str) -> SnapshotInfo:
    """Decode ``.snapshotinfo`` (a raw ``SnapshotDescription``; absent version = v1).

    Raises:
        CorruptFileError: the message does not parse or has no name.
    """
    name, table, created, kind, version = None, "", 0, 1, 0
    for num, v in _fields(data, where):
        if num == 1:
            name = _text(v, where)
        elif num == 2:
            table = _text(v, where)
        elif num == 3:
            created = _int(v, where)
        elif num == 4:
            kind = _int(v, where)
        elif num == 5:
            version = _int(v, where)
    if name is None:
        raise CorruptFileError(f"{where}: snapshot description has no name")
    return SnapshotInfo(name, table, created, kind, version)


def _table_name(data: bytes, where: str) -> tuple[str, str]:
    """A ``TableName`` message: (namespace, qualifier); no namespace is ``default``."""
    return _pairs(data, where, first="default")


def _pairs(data: bytes, where: str, *, first: str = "") -> tuple[str, str]:
    """Text fields 1 and 2 of a message (a ``BytesBytesPair``, a ``NameStringPair``...)."""
    second = ""
    for num, v in _fields(data, where):
        if num == 1:
            first = _text(v, where)
        elif num == 2:
            second = _text(v, where)
    return first, second


def _pb_table_schema(data: bytes, where: str) -> TableDescriptor:
    ns, qual = "default", ""
    attrs: dict[str, str] = {}
    families: list[FamilyDescriptor] = []
    for num, v in _fields(data, where):
        if num == 1:
            ns, qual = _table_name(_bytes(v, where), where)
        elif num in (2, 4):
            key, value = _pairs(_bytes(v, where), where)
            attrs[key] = value
        elif num == 3:
            fname = ""
            fattrs: dict[str, str] = {}
            fconf: dict[str, str] = {}
            for fnum, fv in _fields(_bytes(v, where), where):
                if fnum == 1:
                    fname = _text(fv, where)
                elif fnum == 2:
                    key, value = _pairs(_bytes(fv, where), where)
                    fattrs[key] = value
                elif fnum == 3:
                    key, value = _pairs(_bytes(fv, where), where)
                    fconf[key] = value
            families.append(FamilyDescriptor(fname, fattrs, fconf))
    families.sort(key=lambda f: f.name.encode("utf-8"))
    return TableDescriptor(ns, qual, attrs, tuple(families))


def _pb_region_info(data: bytes, where: str) -> HBaseRegionInfo:
    rid, ns, qual, start, end = 0, "default", "", b"", b""
    offline = split = False
    replica = 0
    for num, v in _fields(data, where):
        if num == 1:
            rid = _int(v, where)
        elif num == 2:
            ns, qual = _table_name(_bytes(v, where), where)
        elif num == 3:
            start = _bytes(v, where)
        elif num == 4:
            end = _bytes(v, where)
        elif num == 5:
            offline = bool(_int(v, where))
        elif num == 6:
            split = bool(_int(v, where))
        elif num == 7:
            replica = _int(v, where)
    table = qual if ns == "default" else f"{ns}:{qual}"
    enc = encoded_region_name(table, start, rid)
    return HBaseRegionInfo(rid, ns, qual, start, end, offline, split, replica, enc)


def _pb_reference(data: bytes, where: str) -> ReferenceInfo:
    key, top = b"", True
    for num, v in _fields(data, where):
        if num == 1:
            key = _bytes(v, where)
        elif num == 2:
            top = _int(v, where) == 0
    return ReferenceInfo(_split_row(key, where), top)


def _split_row(key: bytes, where: str) -> bytes:
    """The row of a Reference's split key (a KeyValue key: ``u16 rowLen | row | ...``)."""
    if len(key) < 2:
        raise CorruptFileError(f"{where}: reference split key is too short")
    (n,) = struct.unpack_from(">H", key)
    if 2 + n > len(key):
        raise CorruptFileError(f"{where}: reference split key overruns its length")
    return key[2 : 2 + n]


@_named
def parse_region_manifest(
    data: bytes, *, where: str
) -> tuple[HBaseRegionInfo, dict[str, list[StoreFileListing]]]:
    """Decode a ``SnapshotRegionManifest``: the region and its files per family.

    Raises:
        CorruptFileError: the message does not parse or has no region info.
    """
    region: HBaseRegionInfo | None = None
    families: dict[str, list[StoreFileListing]] = {}
    for num, v in _fields(data, where):
        if num == 2:
            region = _pb_region_info(_bytes(v, where), where)
        elif num == 3:
            fam = ""
            files: list[StoreFileListing] = []
            for fnum, fv in _fields(_bytes(v, where), where):
                if fnum == 1:
                    fam = _text(fv, where)
                elif fnum == 2:
                    files.append(_pb_store_file(_bytes(fv, where), where))
            families.setdefault(fam, []).extend(files)
    if region is None:
        raise CorruptFileError(f"{where}: region manifest has no region info")
    return region, families


def _pb_store_file(data: bytes, where: str) -> StoreFileListing:
    name, ref, size = "", None, None
    for num, v in _fields(data, where):
        if num == 1:
            name = _text(v, where)
        elif num == 2:
            ref = _pb_reference(_bytes(v, where), where)
        elif num == 3:
            size = _int(v, where)
    if not name:
        raise CorruptFileError(f"{where}: a store file entry has no name")
    return StoreFileListing(name, ref, size)


def _pb_tracked_file(data: bytes, where: str) -> StoreFileListing:
    """A ``StoreFileEntry``: ``name`` (1), ``size`` (2), ``reference`` (3, newer HBase)."""
    name, size, ref = "", None, None
    for num, v in _fields(data, where):
        if num == 1:
            name = _text(v, where)
        elif num == 2:
            size = _int(v, where)
        elif num == 3:
            ref = _pb_reference(_bytes(v, where), where)
    if not name:
        raise CorruptFileError(f"{where}: a store file entry has no name")
    return StoreFileListing(name, ref, size)


@_named
def parse_store_file_list(data: bytes, *, where: str) -> StoreFileList | None:
    """Decode a store-file tracker file (``StoreFileListFile``, layout sections 1-2).

    The file is ``int32 BE length | StoreFileList | int32 BE CRC32 of those bytes``.
    ``StoreFileList`` holds ``timestamp`` (1), repeated ``StoreFileEntry`` (2: ``name`` 1,
    ``size`` 2, ``reference`` 3) and ``version`` (3, default 1).

    Returns:
        The list, or None for a file cut short (HBase skips those: a write in progress).

    Raises:
        CorruptFileError: a bad length, a checksum mismatch, a message that does not parse
            or a version newer than 2 (HBase refuses those too).
    """
    if len(data) < 4:
        return None
    (n,) = struct.unpack_from(">i", data)
    if n <= 0 or n > 16 * 1024 * 1024:
        raise CorruptFileError(f"{where}: store file list length {n} is out of range")
    if len(data) < 8 + n:
        return None
    body = data[4 : 4 + n]
    (stored,) = struct.unpack_from(">I", data, 4 + n)
    if zlib.crc32(body) != stored:
        raise CorruptFileError(
            f"{where}: store file list checksum mismatch (stored {stored:#010x}, "
            f"computed {zlib.crc32(body):#010x})"
        )
    timestamp, version = None, 1
    files: list[StoreFileListing] = []
    for num, v in _fields(body, where):
        if num == 1:
            timestamp = _int(v, where)
        elif num == 2:
            files.append(_pb_tracked_file(_bytes(v, where), where))
        elif num == 3:
            version = _int(v, where)
    if timestamp is None:
        raise CorruptFileError(f"{where}: store file list has no timestamp")
    if version > 2:
        raise CorruptFileError(f"{where}: store file list version {version} is not supported")
    return StoreFileList(timestamp, tuple(files))


@_named
def parse_data_manifest(
    data: bytes, *, where: str
) -> tuple[TableDescriptor, list[tuple[HBaseRegionInfo, dict[str, list[StoreFileListing]]]]]:
    """Decode ``data.manifest`` (``SnapshotDataManifest``): schema and region manifests.

    Raises:
        CorruptFileError: the message does not parse or has no table schema.
    """
    schema: TableDescriptor | None = None
    regions = []
    for num, v in _fields(data, where):
        if num == 1:
            schema = _pb_table_schema(_bytes(v, where), where)
        elif num == 2:
            regions.append(parse_region_manifest(_bytes(v, where), where=where))
    if schema is None:
        raise CorruptFileError(f"{where}: snapshot data manifest has no table schema")
    return schema, regions


# --------------------------------------------------------------------------- Writables
class _In:
    """A cursor over Hadoop ``DataOutput`` bytes."""

    def __init__(self, data: bytes, where: str) -> None:
        self.data = data
        self.pos = 0
        self.where = where

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise CorruptFileError(f"{self.where}: truncated Writable at offset {self.pos}")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def u8(self) -> int:
        return self.take(1)[0]

    def boolean(self) -> bool:
        return self.u8() != 0

    def i32(self) -> int:
        return int(struct.unpack(">i", self.take(4))[0])

    def i64(self) -> int:
        return int(struct.unpack(">q", self.take(8))[0])

    def byte_array(self) -> bytes:
        try:
            n, self.pos = read_vlong(self.data, self.pos)
        except CorruptFileError as e:
            raise CorruptFileError(f"{self.where}: {e}") from e
        return self.take(n)

    def ibw(self) -> bytes:
        return self.take(self.i32())

    def count(self, min_entry: int, what: str) -> int:
        """An ``i32`` count of entries of at least ``min_entry`` bytes each, checked."""
        at = self.pos
        n = self.i32()
        left = len(self.data) - self.pos
        if n < 0 or n * min_entry > left:
            raise CorruptFileError(
                f"{self.where}: {what} count {n} at offset {at} does not fit the {left} bytes left"
            )
        return n

    def text(self, raw: bytes, what: str) -> str:
        """``raw`` as UTF-8 (a name), else a CorruptFileError naming the file."""
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise CorruptFileError(f"{self.where}: {what} {raw[:60]!r} is not UTF-8") from e


def _writable_region_info(data: bytes, where: str) -> HBaseRegionInfo:
    r = _In(data, where)
    version = r.u8()
    if version != 1:
        raise CorruptFileError(f"{where}: HRegionInfo version {version} is not supported")
    end = r.byte_array()
    offline = r.boolean()
    rid = r.i64()
    r.byte_array()  # region name
    split = r.boolean()
    start = r.byte_array()
    table = r.text(r.byte_array(), "table name")
    enc = encoded_region_name(table, start, rid)
    if table in ("-ROOT-", ".META."):
        enc = {"-ROOT-": "70236052", ".META.": "1028785192"}[table]
    return HBaseRegionInfo(rid, "default", table, start, end, offline, split, 0, enc)


def _writable_table_descriptor(data: bytes, where: str) -> TableDescriptor:
    r = _In(data, where)
    version = r.i32()
    if version < 3:
        raise CorruptFileError(f"{where}: HTableDescriptor version {version} is not supported")
    name = r.text(r.byte_array(), "table name")
    r.boolean()  # isRoot
    r.boolean()  # isMeta
    attrs: dict[str, str] = {}
    for _ in range(r.count(8, "table attribute")):
        key = r.ibw().decode("utf-8", "replace")
        attrs[key] = r.ibw().decode("utf-8", "replace")
    families = []
    for _ in range(r.count(6, "family")):
        fversion = r.u8()
        if fversion < 6:
            raise CorruptFileError(
                f"{where}: HColumnDescriptor version {fversion} (before HBase 0.92) is not "
                "supported"
            )
        fname = r.text(r.byte_array(), "family name")
        fattrs: dict[str, str] = {}
        for _ in range(r.count(8, "family attribute")):
            key = r.ibw().decode("utf-8", "replace")
            fattrs[key] = r.ibw().decode("utf-8", "replace")
        families.append(FamilyDescriptor(fname, fattrs))
    families.sort(key=lambda f: f.name.encode("utf-8"))
    return TableDescriptor("default", name, attrs, tuple(families))


# --------------------------------------------------------------------------- public
@_named
def parse_region_info(data: bytes, *, where: str) -> HBaseRegionInfo:
    """Decode a ``.regioninfo`` file: ``PBUF`` + delimited ``RegionInfo``, or a Writable.

    Raises:
        CorruptFileError: the file does not parse.
    """
    if data.startswith(PBUF_MAGIC):
        n, pos = read_pb_varint(data, len(PBUF_MAGIC))
        if n > len(data) - pos:
            raise CorruptFileError(
                f"{where}: region info length {n} overruns the file ({len(data) - pos} bytes "
                "after it)"
            )
        return _pb_region_info(data[pos : pos + n], where)
    return _writable_region_info(data, where)


@_named
def parse_meta_region_info(data: bytes, *, where: str) -> HBaseRegionInfo:
    """Decode an ``info:regioninfo`` cell of hbase:meta.

    The value is ``PBUF`` + ``RegionInfo`` (not delimited), or a Writable ``HRegionInfo``
    (0.94 ``.META.``).

    Raises:
        CorruptFileError: the value does not parse.
    """
    if data.startswith(PBUF_MAGIC):
        return _pb_region_info(data[len(PBUF_MAGIC) :], where)
    return _writable_region_info(data, where)


@_named
def parse_table_descriptor(data: bytes, *, where: str) -> TableDescriptor:
    """Decode a ``.tableinfo.*`` file: ``PBUF`` + ``TableSchema``, or a Writable.

    HBase 1.7.0's ``TableDescriptor{schema, state}`` wrapper is unwrapped.

    Raises:
        CorruptFileError: the file does not parse.
    """
    if data.startswith(PBUF_MAGIC):
        body = data[len(PBUF_MAGIC) :]
        nums = [(num, v) for num, v in _fields(body, where)]
        if nums and {n for n, _ in nums} <= {1, 2} and isinstance(nums[0][1], bytes):
            inner = dict(nums).get(1)
            if isinstance(inner, bytes) and any(n == 2 and isinstance(v, int) for n, v in nums):
                return _pb_table_schema(inner, where)
        return _pb_table_schema(body, where)
    return _writable_table_descriptor(data, where)


@_named
def parse_reference(data: bytes, *, where: str) -> ReferenceInfo:
    """Decode a Reference file: ``PBUF`` + ``Reference``, or Writable ``bool top | key``.

    Raises:
        CorruptFileError: the file does not parse.
    """
    if data.startswith(PBUF_MAGIC):
        return _pb_reference(data[len(PBUF_MAGIC) :], where)
    r = _In(data, where)
    top = r.boolean()
    return ReferenceInfo(_split_row(r.byte_array(), where), top)


def encoded_region_name(table: str, start: bytes, region_id: int) -> str:
    """The encoded region name: hex MD5 of ``<table>,<startKey>,<regionId>`` (section 4)."""
    return hashlib.md5(
        table.encode("utf-8") + b"," + start + b"," + str(region_id).encode("ascii"),
        usedforsecurity=False,
    ).hexdigest()
