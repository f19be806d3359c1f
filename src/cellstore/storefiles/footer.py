"""The store-file footer: cellstore's key-value metadata inside the Parquet footer.

Also the footer digest (docs/format.md section 9): an XXH3-64 hash of a file's serialized
Parquet footer (the FileMetaData bytes and the 8-byte trailer: footer length and ``PAR1``)
that the writer records in the file's manifest entry, so a reader can refuse a damaged or
swapped footer before pyarrow parses it (some damaged footers abort the process).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import xxhash

from cellstore.core.columnar import MAX_COLUMNS, Aliases, ColumnSpec, check_aliases, keyed
from cellstore.core.metadata import FileEntry
from cellstore.core.rowkey import RowKeySpec
from cellstore.errors import CellstoreError, CorruptFileError, FormatVersionError

__all__ = [
    "ALIASED_FILE_FORMAT_VERSION",
    "CELL_FILE_FORMAT_VERSION",
    "CHECKED_FIELDS",
    "COLUMN_FILE_FORMAT_VERSION",
    "FOOTER_KEY",
    "KEYED_FILE_FORMAT_VERSION",
    "PARQUET_MAGIC",
    "STORE_FILE_FORMAT_VERSION",
    "StoreFileInfo",
    "digest_mismatch",
    "entry_mismatch",
    "footer_digest",
    "read_footer_bytes",
]

#: The highest store-file format version this release reads.
STORE_FILE_FORMAT_VERSION: Final = 4
#: The version cell-layout files are written with (readable by every release).
CELL_FILE_FORMAT_VERSION: Final = 1
#: The version column-layout files are written with (docs/format.md section 14).
COLUMN_FILE_FORMAT_VERSION: Final = 2
#: The version keyed column files are written with: the row key's fields as typed
#: columns in place of ``__row`` (docs/format.md 14.2).
KEYED_FILE_FORMAT_VERSION: Final = 3
#: The version keyed column files with key-field aliases are written with: value columns
#: equal to a key field are not stored (docs/format.md 14.2).
ALIASED_FILE_FORMAT_VERSION: Final = 4
#: Parquet key-value metadata key holding the footer JSON.
FOOTER_KEY: Final = b"cellstore"
#: Footer fields every open compares with the file's manifest entry (besides the size).
#: ``seq`` and ``load_id`` are not among them: the manifest's ``seq`` is authoritative
#: (R14.5) and jobs may record their own id for files their tasks wrote.
CHECKED_FIELDS: Final = (
    "layout",
    "family",
    "cells",
    "delete_markers",
    "first_row",
    "last_row",
    "min_ts",
    "max_ts",
)
#: The magic at both ends of a Parquet file.
PARQUET_MAGIC: Final = b"PAR1"
#: Bytes read from the end of a file to find (and usually hold) the Parquet footer.
TAIL_READ_BYTES: Final = 1 << 16
#: The smallest possible Parquet file: both magics and the footer length.
_MIN_PARQUET_SIZE: Final = 12


def footer_digest(footer: bytes) -> str:
    """The footer digest of ``footer`` (:func:`read_footer_bytes`'s result).

    Returns:
        XXH3-64 (seed 0) of the bytes as 16 lower-case hex digits (big-endian, the
        canonical xxHash form), e.g. ``35cfc297a4a49732``.
    """
    return xxhash.xxh3_64_hexdigest(footer)


def read_footer_bytes(
    read: Callable[[int, int], bytes], size: int, *, name: str, check_head: bool = True
) -> bytes:
    """The Parquet footer of a file of ``size`` bytes, checked structurally, unparsed.

    Reads the last 64 KiB (which holds the footer of almost every store file), then only
    what is missing: the rest of a longer footer, and the leading magic when it is not in
    the tail. Nothing is parsed, so no damage can crash the caller.

    Args:
        read: ``read(start, end)`` returns the file's bytes ``[start, end)``.
        size: The file's size.
        name: The file, for error messages.
        check_head: Also check the leading ``PAR1`` (readers do; the writer, which just
            wrote it, does not).

    Returns:
        The last ``footer_len + 8`` bytes: the serialized FileMetaData, its 4-byte
        little-endian length and ``PAR1`` (what :func:`footer_digest` hashes).

    Raises:
        CorruptFileError: the file is too short, a magic is not ``PAR1``, the footer
            length does not fit in the file, or a read returns fewer bytes than asked
            (the file is shorter than ``size``).
    """
    if size < _MIN_PARQUET_SIZE:
        raise CorruptFileError(f"{name}: {size} bytes is too short for a Parquet file")

    def read_exact(start: int, end: int) -> bytes:
        data = bytes(read(start, end))
        if len(data) != end - start:
            raise CorruptFileError(
                f"{name}: read {len(data)} bytes at offset {start}, expected {end - start} "
                f"(the file is shorter than its size {size})"
            )
        return data

    tail_len = min(size, TAIL_READ_BYTES)
    tail = read_exact(size - tail_len, size)
    if tail[-4:] != PARQUET_MAGIC:
        raise CorruptFileError(f"{name}: no Parquet magic at the end (not a Parquet file)")
    footer_len = int.from_bytes(tail[-8:-4], "little")
    if footer_len + _MIN_PARQUET_SIZE > size:
        raise CorruptFileError(
            f"{name}: Parquet footer length {footer_len} does not fit in the file "
            f"({size} bytes; truncated or damaged)"
        )
    if check_head:
        head = tail[:4] if tail_len == size else read_exact(0, 4)
        if head != PARQUET_MAGIC:
            raise CorruptFileError(f"{name}: no Parquet magic at the start")
    if footer_len + 8 <= tail_len:
        return tail[tail_len - 8 - footer_len :]
    return read_exact(size - 8 - footer_len, size - tail_len) + tail


@dataclass(frozen=True, kw_only=True)
class StoreFileInfo:
    """What a store file's footer says about its cells (docs/format.md, "Footer").

    Attributes:
        path: Where the file is (filesystem path; not part of the footer itself).
        family: The family whose cells the file holds.
        seq: Sequence number the writer assigned (the manifest's entry wins if different).
        load_id: Id of the load or job that wrote the file.
        cells: Number of cells.
        delete_markers: Number of delete markers.
        rows: Number of distinct row keys.
        first_row: Smallest row key.
        last_row: Largest row key.
        min_ts: Smallest timestamp of any cell.
        max_ts: Largest timestamp of any cell.
        earliest_put_ts: Smallest Put timestamp, or None when the file has no Put.
        row_groups: Number of Parquet row groups.
        size: File size in bytes.
        bloom_filter: Whether the row column carries a Parquet Bloom filter.
        writer_version: cellstore version that wrote the file.
        format_version: Store-file format version (1: a cell file, 2: a column file, 3: a
            keyed column file, 4: a keyed column file with aliases).
        layout: ``"cells"`` or ``"columns"`` (docs/format.md section 14).
        columns: A column file's column set, in qualifier order (empty for cells).
        group_cells: A column file's cells per row group (its records hold that many
            values; empty for cells, whose row groups hold one cell per Parquet row).
        complete: A column file whose records hold the newest Put of every (row,
            qualifier) of its write: its companion cell file holds only older Puts and
            delete markers (docs/format.md 14.3).
        row_key: A keyed column file's row-key spec: its records hold the key's fields as
            columns, not ``__row`` (None otherwise).
        group_rows: A keyed column file's first and last row of every row group.
        rows_digest: A keyed column file's digest of its rows (:func:`rows_digest`): two
            files with the same digest hold records of the same rows.
        aliases: A keyed column file's key-field aliases: ``(qualifier, field)`` pairs
            whose value column is not stored (the key field's column holds its values).
        footer_digest: The file's footer digest (:func:`footer_digest`), not part of the
            footer JSON (which cannot hold its own digest): set by the writer and by a
            reader that opened the file; None when unknown.
    """

    path: str
    family: str
    seq: int
    load_id: str
    cells: int
    delete_markers: int
    rows: int
    first_row: bytes
    last_row: bytes
    min_ts: int
    max_ts: int
    earliest_put_ts: int | None
    row_groups: int
    size: int
    bloom_filter: bool
    writer_version: str
    format_version: int = CELL_FILE_FORMAT_VERSION
    layout: str = "cells"
    columns: tuple[ColumnSpec, ...] = ()
    group_cells: tuple[int, ...] = ()
    complete: bool = False
    row_key: RowKeySpec | None = None
    group_rows: tuple[tuple[bytes, bytes], ...] = ()
    rows_digest: str | None = None
    aliases: Aliases = ()
    footer_digest: str | None = None

    def footer_dict(self) -> dict[str, Any]:
        """The footer JSON (all but ``path``, ``size``, ``row_groups``, ``footer_digest``)."""
        doc: dict[str, Any] = {
            "format-version": self.format_version,
            "writer-version": self.writer_version,
            "family": self.family,
            "seq": self.seq,
            "load-id": self.load_id,
            "cells": self.cells,
            "delete-markers": self.delete_markers,
            "rows": self.rows,
            "first-row": self.first_row.hex(),
            "last-row": self.last_row.hex(),
            "min-ts": self.min_ts,
            "max-ts": self.max_ts,
            "earliest-put-ts": self.earliest_put_ts,
            "bloom-filter": "row" if self.bloom_filter else "none",
        }
        if self.layout != "cells":
            doc["layout"] = self.layout
            doc["columns"] = [c.to_dict() for c in self.columns]
            doc["row-group-cells"] = list(self.group_cells)
            doc["complete"] = self.complete
        if self.row_key is not None:
            doc["row-key"] = self.row_key.to_dict()
            doc["row-group-rows"] = [[a.hex(), b.hex()] for a, b in self.group_rows]
            doc["rows-digest"] = self.rows_digest
        if self.aliases:
            doc["aliases"] = {q.hex(): name for q, name in self.aliases}
        return doc

    @classmethod
    def from_footer(
        cls,
        raw: bytes,
        *,
        path: str,
        size: int,
        row_groups: int,
        footer_digest: str | None = None,
    ) -> StoreFileInfo:
        """Parse the footer JSON of the file at ``path`` (``footer_digest``: the file's).

        Raises:
            FormatVersionError: if the file's format version is newer than this release.
            CorruptFileError: if the footer is missing fields or is not JSON.
        """
        try:
            d = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise CorruptFileError(f"{path}: store-file footer is not JSON ({e})") from e
        version = d.get("format-version") if isinstance(d, dict) else None
        if not isinstance(version, int):
            raise CorruptFileError(f"{path}: store-file footer has no format-version")
        if not 1 <= version <= STORE_FILE_FORMAT_VERSION:
            raise FormatVersionError(
                f"{path}: store-file format version {version} is not supported "
                f"(this release reads 1..{STORE_FILE_FORMAT_VERSION})"
            )
        try:
            for key in ("family", "load-id", "writer-version", "first-row", "last-row"):
                if not isinstance(d[key], str):
                    raise TypeError(f"{key} is not a string")
            earliest = d["earliest-put-ts"]
            if earliest is not None and type(earliest) is not int:
                raise TypeError("earliest-put-ts is not an integer")
            layout, columns = _layout_of(d, version)
            group_cells = _group_cells(d, layout, row_groups, int(d["cells"]))
            row_key, group_rows, digest = _keyed_of(d, version, row_groups)
            aliases = _aliases_of(d, version, columns, row_key)
            return cls(
                path=path,
                family=d["family"],
                seq=int(d["seq"]),
                load_id=d["load-id"],
                cells=int(d["cells"]),
                delete_markers=int(d["delete-markers"]),
                rows=int(d["rows"]),
                first_row=bytes.fromhex(d["first-row"]),
                last_row=bytes.fromhex(d["last-row"]),
                min_ts=int(d["min-ts"]),
                max_ts=int(d["max-ts"]),
                earliest_put_ts=earliest,
                row_groups=row_groups,
                size=size,
                bloom_filter=d["bloom-filter"] == "row",
                writer_version=d["writer-version"],
                format_version=version,
                layout=layout,
                columns=columns,
                group_cells=group_cells,
                complete=d.get("complete") is True,
                row_key=row_key,
                group_rows=group_rows,
                rows_digest=digest,
                aliases=aliases,
                footer_digest=footer_digest,
            )
        except (KeyError, TypeError, ValueError, CellstoreError) as e:
            raise CorruptFileError(f"{path}: store-file footer is malformed ({e!r})") from e


def _layout_of(d: dict[str, Any], version: int) -> tuple[str, tuple[ColumnSpec, ...]]:
    """A footer's layout and column set (format version 2 is the column layout's).

    Raises:
        ValueError: the layout is not the version's, or the column set is malformed (not
            a non-empty list of columns in strictly increasing qualifier order, at most
            :data:`~cellstore.core.columnar.MAX_COLUMNS`).
    """
    layout = d.get("layout", "cells")
    if layout != ("columns" if version >= COLUMN_FILE_FORMAT_VERSION else "cells"):
        raise ValueError(f"layout {layout!r} in a format-version-{version} footer")
    if layout == "cells":
        return layout, ()
    raw = d.get("columns")
    if not isinstance(raw, list) or not 1 <= len(raw) <= MAX_COLUMNS:
        raise ValueError(f"columns is not a list of 1..{MAX_COLUMNS} columns")
    columns = tuple(ColumnSpec.from_dict(c) for c in raw)
    if any(a.qualifier >= b.qualifier for a, b in itertools.pairwise(columns)):
        raise ValueError("columns are not in strictly increasing qualifier order")
    return layout, columns


#: Longest row key a footer's row-group bounds may hold (HBase's limit: Short.MAX_VALUE).
_MAX_ROW_HEX: Final = 2 * 32767


def _keyed_of(
    d: dict[str, Any], version: int, row_groups: int
) -> tuple[RowKeySpec | None, tuple[tuple[bytes, bytes], ...], str | None]:
    """A keyed column file's row-key spec, row-group bounds and rows digest.

    Raises:
        ValueError: a keyed footer in a version below 3, a spec whose fields do not all
            decode, bounds that are not ``row_groups`` pairs of ascending hex row keys, or
            a rows digest that is not 32 hex digits.
    """
    raw = d.get("row-key")
    if raw is None:
        if version >= KEYED_FILE_FORMAT_VERSION:
            raise ValueError(f"a format-version-{version} footer has no row-key")
        return None, (), None
    if version < KEYED_FILE_FORMAT_VERSION:
        raise ValueError(f"row-key in a format-version-{version} footer")
    spec = RowKeySpec.from_dict(raw)
    if keyed(spec) is None:
        raise ValueError("row-key has a field that cannot be decoded (md5)")
    bounds = d.get("row-group-rows")
    if not isinstance(bounds, list) or len(bounds) != row_groups:
        raise ValueError(f"row-group-rows is not {row_groups} pairs")
    pairs: list[tuple[bytes, bytes]] = []
    for b in bounds:
        if (
            not isinstance(b, list)
            or len(b) != 2
            or not all(isinstance(x, str) and 0 < len(x) <= _MAX_ROW_HEX for x in b)
        ):
            raise ValueError("row-group-rows holds a pair that is not two hex row keys")
        lo, hi = bytes.fromhex(b[0]), bytes.fromhex(b[1])
        if lo > hi or (pairs and lo <= pairs[-1][1]):
            raise ValueError("row-group-rows are not ascending")
        pairs.append((lo, hi))
    if pairs and (pairs[0][0].hex() != d["first-row"] or pairs[-1][1].hex() != d["last-row"]):
        raise ValueError("row-group-rows do not start at first-row and end at last-row")
    digest = d.get("rows-digest")
    if not isinstance(digest, str) or len(digest) != 32:
        raise ValueError("rows-digest is not 32 hex digits")
    int(digest, 16)
    return spec, tuple(pairs), digest


def _aliases_of(
    d: dict[str, Any], version: int, columns: tuple[ColumnSpec, ...], key: RowKeySpec | None
) -> Aliases:
    """A keyed column file's key-field aliases (format version 4).

    Raises:
        ValueError: aliases in a footer below version 4, a version-4 footer without
            them, or aliases that do not fit the column set and the row-key spec
            (:func:`~cellstore.core.columnar.check_aliases`).
    """
    raw = d.get("aliases")
    if raw is None:
        if version >= ALIASED_FILE_FORMAT_VERSION:
            raise ValueError(f"a format-version-{version} footer has no aliases")
        return ()
    if version < ALIASED_FILE_FORMAT_VERSION:
        raise ValueError(f"aliases in a format-version-{version} footer")
    if not isinstance(raw, dict) or not raw:
        raise ValueError("aliases is not a non-empty object")
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in raw.items()):
        raise ValueError("aliases is not an object of hex qualifiers to key field names")
    aliases = tuple((bytes.fromhex(k), v) for k, v in raw.items())
    check_aliases(aliases, columns, key)
    return aliases


def _group_cells(d: dict[str, Any], layout: str, row_groups: int, cells: int) -> tuple[int, ...]:
    """A column file's cells per row group: one count per row group, summing to ``cells``.

    Raises:
        ValueError: the list is missing or does not fit the file.
    """
    if layout == "cells":
        return ()
    raw = d.get("row-group-cells")
    if (
        not isinstance(raw, list)
        or len(raw) != row_groups
        or not all(type(n) is int and n >= 0 for n in raw)
        or sum(raw) != cells
    ):
        raise ValueError(f"row-group-cells is not {row_groups} counts summing to {cells}")
    return tuple(raw)


def entry_mismatch(info: StoreFileInfo, entry: FileEntry) -> str | None:
    """How a file's size and footer disagree with its manifest entry, or None if they agree.

    A file swapped for another (or damaged in its footer) shows here: the manifest recorded
    the size and footer statistics at commit. Pure and cheap: no data is read.

    The footer digest is compared only when both record one (readers compare it earlier,
    before the footer is parsed: :class:`~cellstore.storefiles.reader.StoreFileReader`).

    Returns:
        The first difference, e.g. ``size is 1234 bytes, the manifest says 1250``.
    """
    if info.size != entry.size:
        return f"size is {info.size} bytes, the manifest says {entry.size}"
    found, recorded = info.footer_digest, entry.footer_digest
    if found is not None and recorded is not None and found != recorded:
        return digest_mismatch(found, recorded)
    for key in CHECKED_FIELDS:
        found, recorded = getattr(info, key), getattr(entry, key)
        if found != recorded:
            name = key.replace("_", "-")
            return f"footer {name} is {_show(found)}, the manifest says {_show(recorded)}"
    return None


def digest_mismatch(actual: str, expected: str) -> str:
    """The words every footer digest mismatch is reported with."""
    return f"footer digest mismatch: the manifest says {expected}, the file's is {actual}"


def _show(value: object) -> str:
    if isinstance(value, bytes):
        text = repr(value[:40])
        return text + ("..." if len(value) > 40 else "")
    return repr(value)
