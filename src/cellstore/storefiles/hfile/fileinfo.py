"""The FileInfo block: a sorted byte map, plus decoding of HBase's well-known keys.

Source: HBase ``io/hfile/HFileInfo.java`` (``read``, ``parsePB``, ``parseWritable``,
``loadMetaInfo``), ``HStoreFile`` (the store-file keys) and ``TimeRangeTracker``.

* v3 and v2.2+: ``"PBUF" | varint length | FileInfoProto { repeated BytesBytesPair }``.
* v2.0 (0.94): Writable ``i32 count`` then per entry ``VInt klen | key | u8 class code |
  VInt vlen | value``.

:func:`decode_file_info` turns the raw map into readable values (ints, booleans, keys,
time ranges). Pure: no I/O.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Final

from cellstore.errors import CorruptFileError
from cellstore.storefiles.hfile.keys import parse_key
from cellstore.storefiles.hfile.trailer import iter_pb_fields
from cellstore.storefiles.hfile.varint import read_pb_varint, read_vlong

__all__ = [
    "BOOL_KEYS",
    "INT_KEYS",
    "LONG_KEYS",
    "PB_MAGIC",
    "decode_file_info",
    "decode_time_range",
    "parse_file_info",
]

#: ``ProtobufMagic.PB_MAGIC``.
PB_MAGIC: Final = b"PBUF"
#: Keys holding a big-endian i64 (``Bytes.toBytes(long)``).
LONG_KEYS: Final = frozenset(
    {
        b"hfile.CREATE_TIME_TS",
        b"hfile.LEN_OF_BIGGEST_CELL",
        b"MAX_MEMSTORE_TS_KEY",
        b"MAX_SEQ_ID_KEY",
        b"EARLIEST_PUT_TS",
        b"DELETE_FAMILY_COUNT",
        b"BULKLOAD_TIMESTAMP",
        b"MOB_CELLS_COUNT",
    }
)
#: Keys holding a big-endian i32.
INT_KEYS: Final = frozenset(
    {
        b"hfile.AVG_KEY_LEN",
        b"hfile.AVG_VALUE_LEN",
        b"hfile.MAX_TAGS_LEN",
        b"KEY_VALUE_VERSION",
        b"BLOOM_FILTER_PARAM",
    }
)
#: Keys holding a one-byte boolean.
BOOL_KEYS: Final = frozenset(
    {
        b"hfile.TAGS_COMPRESSED",
        b"MAJOR_COMPACTION_KEY",
        b"EXCLUDE_FROM_MINOR_COMPACTION",
        b"HISTORICAL",
        b"SKIP_RESET_SEQ_ID",
    }
)
#: Keys holding a serialized KeyValue key.
_KEY_KEYS: Final = frozenset({b"hfile.LASTKEY", b"hfile.KEY_OF_BIGGEST_CELL"})
#: Keys holding ASCII text.
_TEXT_KEYS: Final = frozenset(
    {
        b"DATA_BLOCK_ENCODING",
        b"BLOOM_FILTER_TYPE",
        b"BULKLOAD_SOURCE_TASK",
        b"INDEX_BLOCK_ENCODING",
    }
)


def parse_file_info(payload: bytes, *, where: str) -> dict[bytes, bytes]:
    """Parse a FILE_INFO payload (protobuf or legacy Writable) into a byte map.

    Every count and length is checked against the payload before it is used.

    Raises:
        CorruptFileError: if the payload does not parse (naming ``where``).
    """
    out: dict[bytes, bytes] = {}
    try:
        if payload[:4] == PB_MAGIC:
            n, pos = read_pb_varint(payload, 4)
            if pos + n > len(payload):
                raise CorruptFileError(
                    f"{where}: FileInfo protobuf of {n} bytes overruns the {len(payload)}-byte "
                    "block"
                )
            for field, pair in iter_pb_fields(payload[pos : pos + n], what=f"{where}: FileInfo"):
                if field != 1 or not isinstance(pair, bytes):
                    continue
                key = value = b""
                for sub, part in iter_pb_fields(pair, what=f"{where}: FileInfo entry"):
                    if isinstance(part, bytes):
                        if sub == 1:
                            key = part
                        elif sub == 2:
                            value = part
                out[key] = value
            return out
        (count,) = struct.unpack_from(">i", payload, 0)
        # An entry takes at least 3 bytes (two 1-byte lengths and the class code).
        if count < 0 or count > (len(payload) - 4) // 3:
            raise CorruptFileError(
                f"{where}: FileInfo claims {count} entries, a {len(payload)}-byte block holds "
                f"at most {(len(payload) - 4) // 3}"
            )
        pos = 4
        for _ in range(count):
            klen, pos = read_vlong(payload, pos)
            if klen < 0 or pos + klen + 1 > len(payload):
                raise CorruptFileError(f"{where}: FileInfo entry overruns the block")
            key = payload[pos : pos + klen]
            pos += klen + 1  # skip the Writable class code
            vlen, pos = read_vlong(payload, pos)
            if vlen < 0 or pos + vlen > len(payload):
                raise CorruptFileError(f"{where}: FileInfo entry overruns the block")
            out[key] = payload[pos : pos + vlen]
            pos += vlen
    except struct.error as e:
        raise CorruptFileError(f"{where}: FileInfo does not parse: {e}") from e
    except CorruptFileError as e:
        if str(e).startswith(where):
            raise
        raise CorruptFileError(f"{where}: FileInfo does not parse: {e}") from None
    return out


def decode_time_range(value: bytes) -> tuple[int, int] | None:
    """``TIMERANGE``: 16 (or 0.94's 32) bytes ``i64 min | i64 max``, or ``PBUF`` + proto.

    Returns None for a value that is neither (callers show it as hex).
    """
    if value[:4] == PB_MAGIC:
        lo, hi = 0, (1 << 63) - 1
        try:
            for field, v in iter_pb_fields(value[4:], what="TIMERANGE"):
                if isinstance(v, int):
                    v = v - (1 << 64) if v >= 1 << 63 else v
                    if field == 1:
                        lo = v
                    elif field == 2:
                        hi = v
        except CorruptFileError:
            return None
        return lo, hi
    if len(value) >= 16:
        lo, hi = struct.unpack_from(">qq", value, 0)
        return int(lo), int(hi)
    return None


def decode_file_info(raw: Mapping[bytes, bytes]) -> dict[str, object]:
    """HBase's well-known keys decoded to Python values; unknown keys as text or hex.

    Returns:
        ``{key: value}`` with keys as text. ``hfile.LASTKEY`` becomes HBase's printable
        key (``row/family:qualifier/ts/Type``), ``TIMERANGE`` a ``[min, max]`` pair, numbers
        ints, flags booleans; other values are text when printable UTF-8, else hex.
    """
    out: dict[str, object] = {}
    for key, value in sorted(raw.items()):
        name = key.decode("utf-8", "replace")
        decoded: object
        if key in LONG_KEYS and len(value) == 8:
            decoded = struct.unpack(">q", value)[0]
        elif key in INT_KEYS and len(value) == 4:
            decoded = struct.unpack(">i", value)[0]
        elif key in BOOL_KEYS and len(value) == 1:
            decoded = value != b"\x00"
        elif key in _KEY_KEYS:
            try:
                decoded = str(parse_key(value))
            except CorruptFileError:
                decoded = value.hex()
        elif key == b"TIMERANGE":
            span = decode_time_range(value)
            decoded = list(span) if span is not None else value.hex()
        elif key in _TEXT_KEYS:
            decoded = value.decode("ascii", "replace")
        else:
            try:
                text = value.decode("utf-8")
                decoded = text if text.isprintable() else value.hex()
            except UnicodeDecodeError:
                decoded = value.hex()
        out[name] = decoded
    return out
