"""Column-family settings, validated as HBase's ``ColumnFamilyDescriptorBuilder`` does.

A :class:`Family` is frozen and carries every setting that changes what a read returns
(versions, min versions, TTL, keep-deleted-cells) or how its store files are written
(compression, row bloom filter, block size).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from cellstore.core.names import validate_family_name
from cellstore.errors import InvalidFamilyError

__all__ = [
    "COMPRESSIONS",
    "FOREVER",
    "LAYOUTS",
    "Family",
    "KeepDeletedCells",
]

#: HBase's ``HConstants.FOREVER`` (TTL in seconds that means "never expires", R1.6).
FOREVER: Final = 2**31 - 1

#: Store-file compressions cellstore writes (Parquet codecs). ``none`` means uncompressed.
COMPRESSIONS: Final = ("zstd", "snappy", "lz4", "gzip", "none")
#: Store-file layouts a family may ask for (docs/format.md section 14): ``auto`` writes
#: column files where the family's qualifiers are few enough to be columns.
LAYOUTS: Final = ("auto", "cells", "columns")


class KeepDeletedCells(StrEnum):
    """``KEEP_DELETED_CELLS`` (R9.1): FALSE (default), TRUE or TTL."""

    FALSE = "false"
    TRUE = "true"
    TTL = "ttl"

    @classmethod
    def parse(cls, value: bool | str | KeepDeletedCells) -> KeepDeletedCells:
        """Parse ``True``/``False``/``"true"``/``"false"``/``"ttl"`` (any case).

        Raises:
            InvalidFamilyError: for anything else.
        """
        if isinstance(value, KeepDeletedCells):
            return value
        if isinstance(value, bool):
            return cls.TRUE if value else cls.FALSE
        try:
            return cls(str(value).strip().lower())
        except ValueError:
            raise InvalidFamilyError(
                f"keep_deleted_cells must be false, true or ttl, not {value!r}"
            ) from None


@dataclass(frozen=True, kw_only=True)
class Family:
    r"""A column family and its settings.

    Defaults follow the HBase schema-design guides our users learn from: ``max_versions``
    is 3 (HBase 0.94's default; HBase 0.96+ creates families with 1 unless
    ``hbase.column.max.version`` says otherwise, R15.1). Everything else matches HBase 2.

    Attributes:
        name: Family name (R15.3: non-empty, no leading '.', no ':', '\\', '/', no control
            characters, not ``recovered.edits``, at most 127 bytes of UTF-8).
        max_versions: ``VERSIONS``: versions of a column a normal read may return (> 0).
        min_versions: ``MIN_VERSIONS``: versions kept and returned even when TTL-expired
            (0 <= min_versions <= max_versions).
        ttl: ``TTL`` in seconds; None means forever. Cells with ts < now - ttl*1000 expire.
        keep_deleted_cells: ``KEEP_DELETED_CELLS`` (R9).
        compression: Store-file codec: one of :data:`COMPRESSIONS`.
        bloom_filter: Write a row Bloom filter in each store file (HBase's ``ROW`` type).
        block_size: Target Parquet data-page size in bytes (HBase's ``BLOCKSIZE``).
        layout: Store-file layout: ``auto`` (default: a load into an empty region-family
            and a major compaction write column files when the family's qualifiers are
            few enough to be columns), ``cells`` (never), ``columns`` (every load and
            major compaction writes column files for the newest Puts, the rest as cells).
            Reads return the same cells in every layout (docs/format.md section 14).
    """

    name: str
    max_versions: int = 3
    min_versions: int = 0
    ttl: int | None = None
    keep_deleted_cells: KeepDeletedCells = KeepDeletedCells.FALSE
    compression: str = "zstd"
    bloom_filter: bool = True
    block_size: int = 65536
    layout: str = "auto"

    def __post_init__(self) -> None:
        validate_family_name(self.name)
        kdc = KeepDeletedCells.parse(self.keep_deleted_cells)
        object.__setattr__(self, "keep_deleted_cells", kdc)
        for attr in ("max_versions", "min_versions", "block_size"):
            value = getattr(self, attr)
            if isinstance(value, bool) or not isinstance(value, int):
                raise InvalidFamilyError(
                    f"family {self.name!r}: {attr} must be an integer, not {value!r}"
                )
        if self.max_versions <= 0:
            raise InvalidFamilyError(
                f"family {self.name!r}: max_versions must be > 0, got {self.max_versions}"
            )
        if self.min_versions < 0:
            raise InvalidFamilyError(
                f"family {self.name!r}: min_versions must be >= 0, got {self.min_versions}"
            )
        if self.min_versions > self.max_versions:
            raise InvalidFamilyError(
                f"family {self.name!r}: max_versions ({self.max_versions}) must be >= "
                f"min_versions ({self.min_versions})"
            )
        ttl = self.ttl
        if ttl is not None:
            if isinstance(ttl, bool) or not isinstance(ttl, int):
                raise InvalidFamilyError(
                    f"family {self.name!r}: ttl must be whole seconds or None, not {ttl!r}"
                )
            if ttl in (FOREVER, -1):
                object.__setattr__(self, "ttl", None)
            elif ttl <= 0:
                raise InvalidFamilyError(
                    f"family {self.name!r}: ttl must be > 0 seconds (or None for forever), "
                    f"got {ttl}"
                )
        comp = str(self.compression).lower()
        if comp == "uncompressed":
            comp = "none"
        if comp not in COMPRESSIONS:
            raise InvalidFamilyError(
                f"family {self.name!r}: compression must be one of {', '.join(COMPRESSIONS)}, "
                f"not {self.compression!r}"
            )
        object.__setattr__(self, "compression", comp)
        if not isinstance(self.bloom_filter, bool):
            raise InvalidFamilyError(
                f"family {self.name!r}: bloom_filter must be true or false, "
                f"not {self.bloom_filter!r}"
            )
        layout = str(self.layout).lower()
        if layout not in LAYOUTS:
            raise InvalidFamilyError(
                f"family {self.name!r}: layout must be one of {', '.join(LAYOUTS)}, "
                f"not {self.layout!r}"
            )
        object.__setattr__(self, "layout", layout)
        if self.block_size < 1024 or self.block_size > 16 * 1024 * 1024:
            raise InvalidFamilyError(
                f"family {self.name!r}: block_size must be between 1 KiB and 16 MiB, "
                f"got {self.block_size}"
            )

    @property
    def ttl_ms(self) -> int | None:
        """TTL in milliseconds, or None for forever."""
        return None if self.ttl is None else self.ttl * 1000

    def replace(self, **changes: Any) -> Family:
        """A copy with some settings changed (validated again)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form used in table metadata (docs/format.md; ``layout`` unless auto)."""
        doc: dict[str, Any] = {
            "name": self.name,
            "max-versions": self.max_versions,
            "min-versions": self.min_versions,
            "ttl": self.ttl,
            "keep-deleted-cells": self.keep_deleted_cells.value,
            "compression": self.compression,
            "bloom-filter": "row" if self.bloom_filter else "none",
            "block-size": self.block_size,
        }
        if self.layout != "auto":
            doc["layout"] = self.layout
        return doc

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Family:
        """Inverse of :meth:`to_dict`."""
        return cls(
            name=data["name"],
            max_versions=data["max-versions"],
            min_versions=data["min-versions"],
            ttl=data["ttl"],
            keep_deleted_cells=KeepDeletedCells.parse(data["keep-deleted-cells"]),
            compression=data["compression"],
            bloom_filter=data["bloom-filter"] == "row",
            block_size=data["block-size"],
            layout=data.get("layout", "auto"),
        )
