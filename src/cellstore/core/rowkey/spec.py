"""The row-key spec: how input columns become a table's row keys, and back.

A :class:`RowKeySpec` is stored with the table (:meth:`RowKeySpec.to_dict`); its encoding
is normative (docs/format.md, section 11), so other tools can compute the same keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, overload

import numpy as np
import pyarrow as pa

from cellstore.core.cells import MAX_ROW_LENGTH
from cellstore.core.codecs import (
    ArrayLike,
    Encoded,
    Problems,
    as_array,
    binary_from_parts,
    binary_parts,
    valid_mask,
)
from cellstore.core.regions import MAX_SALT_BUCKETS
from cellstore.core.rowkey.decode import decode_keys
from cellstore.core.rowkey.fields import KeyField, Parts, concat_parts, encode_pieces
from cellstore.core.rowkey.hashing import salt_parts
from cellstore.core.rowkey.onepass import encode_one_pass
from cellstore.core.rowkey.ranges import (
    KeyRange,
    bucket_ranges,
    logical_range,
    salt_of,
    scalar_array,
)
from cellstore.errors import InvalidArgumentError

__all__ = ["RowKeySpec"]


@dataclass(frozen=True, kw_only=True)
class RowKeySpec:
    """A composite row key: fields in key order, and an optional salt byte in front.

    Example: a salted, time-ordered key per user, newest first::

        RowKeySpec(
            fields=(KeyField(name="user", type="string"),
                    KeyField(name="ts", type="int64", reverse_timestamp=True)),
            salt_buckets=16,
        )

    Attributes:
        fields: The key fields, in key order (at least one, unique names). Dicts in
            :meth:`KeyField.to_dict` form are accepted.
        salt_buckets: Phoenix-style salting: the key starts with one byte
            ``0 .. salt_buckets - 1``, a hash of the rest of the key (Apache Phoenix
            ``SaltingUtil.getSaltingByte``), matching a table pre-split on the salt byte
            (``core.regions.salt_split_keys``). None: no salt.
    """

    fields: tuple[KeyField, ...]
    salt_buckets: int | None = None

    def __post_init__(self) -> None:
        raw = self.fields
        if isinstance(raw, KeyField | Mapping | str) or not hasattr(raw, "__iter__"):
            raise InvalidArgumentError("fields must be a sequence of KeyField")
        fields = tuple(KeyField.from_dict(f) if isinstance(f, Mapping) else f for f in raw)
        if not fields:
            raise InvalidArgumentError("a row-key spec needs at least one field")
        for f in fields:
            if not isinstance(f, KeyField):
                raise InvalidArgumentError(f"row-key fields must be KeyField, not {f!r}")
        names = [f.name for f in fields]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise InvalidArgumentError(f"duplicate row-key field(s): {', '.join(dupes)}")
        object.__setattr__(self, "fields", fields)
        b = self.salt_buckets
        if b is not None and (
            isinstance(b, bool) or not isinstance(b, int) or not 1 <= b <= MAX_SALT_BUCKETS
        ):
            raise InvalidArgumentError(
                f"salt_buckets must be None or an integer in 1..{MAX_SALT_BUCKETS}, got {b!r}"
            )
        sizes = [f.fixed_size for f in fields]
        if all(s is not None for s in sizes):
            total = sum(s or 0 for s in sizes) + (1 if b is not None else 0)
            if total > MAX_ROW_LENGTH:
                raise InvalidArgumentError(
                    f"fixed-size row keys of {total} bytes exceed {MAX_ROW_LENGTH} bytes"
                )

    # -- description and JSON ----------------------------------------------------------

    @property
    def columns(self) -> tuple[str, ...]:
        """Names of the input columns the key is built from, in key order."""
        return tuple(f.name for f in self.fields)

    @property
    def decodable_columns(self) -> tuple[str, ...]:
        """Names of the fields :meth:`decode` returns (all but ``md5`` fields)."""
        return tuple(f.name for f in self.fields if f.decodable)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form (docs/format.md, section 11)."""
        return {
            "salt-buckets": self.salt_buckets,
            "fields": [f.to_dict() for f in self.fields],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RowKeySpec:
        """Inverse of :meth:`to_dict`; also accepts ``salt_buckets`` and ``_`` in field keys.

        Raises:
            InvalidArgumentError: if the document is not a valid spec, or has unknown keys
                (which could change the encoding).
        """
        if not isinstance(d, Mapping):
            raise InvalidArgumentError(f"a row-key spec must be a mapping, not {d!r}")
        doc = {str(k).replace("_", "-"): v for k, v in d.items()}
        unknown = sorted(set(doc) - {"fields", "salt-buckets"})
        if unknown:
            raise InvalidArgumentError(f"row-key spec: unknown key(s) {', '.join(unknown)}")
        raw = doc.get("fields")
        if not isinstance(raw, list | tuple):
            raise InvalidArgumentError("row-key spec: 'fields' must be a list of key fields")
        fields = tuple(KeyField.from_dict(f) for f in raw)
        return cls(fields=fields, salt_buckets=doc.get("salt-buckets"))

    def describe(self) -> str:
        """A readable, multi-line description (for the CLI's ``describe``)."""
        lines = [f"row key: {self}"]
        if self.salt_buckets is not None:
            lines.append(
                f"  salt: 1 byte, Phoenix hash of the rest of the key mod {self.salt_buckets}"
            )
        last = len(self.fields) - 1
        for i, f in enumerate(self.fields):
            lines.append(f"  {i + 1}. {f.describe(last=i == last)}")
        return "\n".join(lines)

    def __str__(self) -> str:
        tokens = [] if self.salt_buckets is None else [f"salt({self.salt_buckets})"]
        for f in self.fields:
            flags = []
            if f.hash is not None:
                flags.append("md5" if f.hash.value == "md5" else f"md5_prefix={f.hash_bytes}")
            if f.width is not None:
                flags.append(f"width={f.width}")
            flags += [
                name for name in ("reverse", "reverse_timestamp", "descending") if getattr(f, name)
            ]
            tokens.append(f"{f.name}:{f.type.value}" + (f"[{','.join(flags)}]" if flags else ""))
        return " + ".join(tokens)

    # -- encoding ----------------------------------------------------------------------

    def _encode_parts(self, table: pa.Table, *, one_pass: bool = True) -> tuple[Parts, Problems]:
        """The keys' ``(offsets, data)`` and the bad records.

        ``one_pass``: try :func:`~cellstore.core.rowkey.onepass.encode_one_pass` first
        (False: the field-by-field encoder, which it must agree with byte for byte).
        """
        missing = [name for name in self.columns if name not in table.column_names]
        if missing:
            raise InvalidArgumentError(
                f"row key needs column(s) {', '.join(map(repr, missing))}; "
                f"input has {', '.join(map(repr, table.column_names))}"
            )
        problems = Problems(table.num_rows)
        last = len(self.fields) - 1
        given = [table.column(f.name) for f in self.fields]
        salted = self.salt_buckets is not None
        fast = encode_one_pass(self.fields, given, salted=salted) if one_pass else None
        if fast is not None:  # typed, no null, nothing to check: one kernel pass
            offsets, data = fast
        else:
            columns = [as_array(c) for c in given]
            pieces = [
                piece
                for i, (f, col) in enumerate(zip(self.fields, columns, strict=True))
                for piece in encode_pieces(f, col, last=i == last, problems=problems)
            ]
            offsets, data = concat_parts(pieces)
            lengths = np.diff(offsets)
            problems.add(lengths == 0, "row", "empty row key")
            problems.add(
                lengths + int(salted) > MAX_ROW_LENGTH,
                "row",
                f"row key longer than {MAX_ROW_LENGTH}",
            )
        if self.salt_buckets is not None:
            salt = salt_parts(offsets, data, self.salt_buckets)
            n = len(salt)
            salt_col = (np.arange(n + 1, dtype=np.int64), salt)
            offsets, data = concat_parts([salt_col, (offsets, data)])
        return (offsets, data), problems

    @overload
    def encode(self, table: pa.Table, *, errors: Literal["raise"] = "raise") -> pa.Array: ...

    @overload
    def encode(self, table: pa.Table, *, errors: Literal["mask"]) -> Encoded: ...

    def encode(self, table: pa.Table, *, errors: Literal["raise", "mask"] = "raise") -> Any:
        """Row keys for every record of ``table``, vectorized over all fields.

        On a salted spec the keys are stored keys: each starts with its salt byte (docs/
        format.md, 11.4). ``Table.get``, ``Table.scan`` and, by default,
        ``Table.load_cells`` take logical keys (without it): load these with
        ``load_cells(..., keys="physical")`` (by default ``load_cells`` refuses keys that
        all carry their salt byte); ``dataclasses.replace(spec, salt_buckets=None).encode``
        gives the logical keys.

        Args:
            table: A table (or record batch) with a column per key field.
            errors: ``"raise"`` raises on the first bad record; ``"mask"`` returns an
                :class:`~cellstore.core.codecs.Encoded` ``(values, bad, reasons)`` with
                null keys for the bad records.

        Returns:
            A binary array of row keys (``errors="raise"``), or an ``Encoded``.

        Raises:
            BadCellError: (``errors="raise"``) naming the first bad record and its field:
                a null key field, a 0x00 byte in a terminated or fixed-width field, a value
                longer than its width, out of range for its type or not valid for it
                (``"4x2"`` as int64), or a key that is empty or longer than 32767 bytes.
            InvalidArgumentError: a key column is missing or has an unusable type.
        """
        if errors not in ("raise", "mask"):
            raise InvalidArgumentError(f"errors must be 'raise' or 'mask', not {errors!r}")
        (offsets, data), problems = self._encode_parts(table)
        keep = None if problems.clean else ~problems.bad
        out = binary_from_parts(offsets, data, keep)
        if errors == "mask":
            return Encoded(out, problems.bad, problems.reasons())

        def show(i: int, field: str) -> str:
            if field in table.column_names:
                return repr(table.column(field)[i].as_py())[:80]
            return ", ".join(f"{c}={table.column(c)[i].as_py()!r}" for c in self.columns)[:120]

        problems.raise_first(show)
        return out

    def parse_values(self, texts: Mapping[str, str], *, partial: bool = False) -> dict[str, Any]:
        r"""Typed field values from text (the CLI's ``--key field=value``), in key order.

        ``string`` fields take the text as it is, ``bytes`` fields HBase's printable form
        (``\x00`` escapes), integer and float fields a number.

        Args:
            texts: ``{field: text}``.
            partial: Allow a leading subset of the fields (a key prefix, for scans).

        Returns:
            ``{field: value}`` in key order.

        Raises:
            InvalidArgumentError: an unknown field (with the closest name and the key's
                fields), a missing field (``partial=False``) or a gap in the leading fields
                (``partial=True``), or a text that is not a number of the field's type.
        """
        from cellstore.core.keys import from_string_binary
        from cellstore.core.text import did_you_mean

        names = self.columns
        for name in texts:
            if name not in names:
                raise InvalidArgumentError(
                    f"unknown row-key field {name!r}{did_you_mean(name, names)}; "
                    f"the key's fields are {', '.join(names)}"
                )
        given = [n for n in names if n in texts]
        if partial:
            if given != list(names[: len(given)]):
                raise InvalidArgumentError(
                    f"key fields must be leading fields of the key, in order "
                    f"({', '.join(names)}); got {', '.join(texts)}"
                )
        elif len(given) != len(names):
            missing = [n for n in names if n not in texts]
            raise InvalidArgumentError(
                f"the row key needs every field ({', '.join(names)}); missing {', '.join(missing)}"
            )
        out: dict[str, Any] = {}
        for f in self.fields:
            if f.name not in texts:
                continue
            text = texts[f.name]
            try:
                if f.type.value == "string":
                    out[f.name] = text
                elif f.type.value == "bytes":
                    out[f.name] = from_string_binary(text)
                elif f.type.is_float:
                    out[f.name] = float(text)
                else:
                    out[f.name] = int(text, 10)
            except ValueError:
                raise InvalidArgumentError(
                    f"row-key field {f.name!r} is {f.type.value}: {text!r} is not a number"
                ) from None
        return out

    def key_for(self, values: Mapping[str, Any]) -> bytes:
        """The row key of one record given as ``{field: value}`` (for point gets).

        Raises:
            InvalidArgumentError: naming the field, if a value is missing or bad.
        """
        missing = [name for name in self.columns if name not in values]
        if missing:
            raise InvalidArgumentError(f"row key needs value(s) for {', '.join(missing)}")
        if any(values[c] is None for c in self.columns):
            none = [c for c in self.columns if values[c] is None]
            raise InvalidArgumentError(f"row key field(s) {', '.join(none)} cannot be null")
        table = pa.table({c: scalar_array(c, values[c]) for c in self.columns})
        (_, data), problems = self._encode_parts(table)
        if problems.bad[0]:
            field, reason = problems.reason(0)
            raise InvalidArgumentError(f"row key field {field!r}: {reason}")
        return bytes(data)

    # -- decoding ----------------------------------------------------------------------

    def decode(self, rows: ArrayLike, *, errors: Literal["raise", "null"] = "raise") -> pa.Table:
        """Typed field values of encoded row keys (``md5`` fields and the salt omitted).

        Args:
            rows: Binary row keys made with this spec.
            errors: ``"raise"`` raises on the first key that does not parse; ``"null"``
                gives null values for such keys (and for null keys).

        Returns:
            A table with one column per decodable field, named and typed by the field
            (``string`` → string, ``bytes`` → binary, numbers → their Arrow type).

        Raises:
            BadCellError: (``errors="raise"``) naming the first bad key (field ``row`` or
                the field that does not parse).
        """
        if errors not in ("raise", "null"):
            raise InvalidArgumentError(f"errors must be 'raise' or 'null', not {errors!r}")
        arr = as_array(rows)
        valid = valid_mask(arr)
        problems = Problems(len(arr))
        problems.add(~valid, "row", "null row key")
        offsets, data = binary_parts(arr.fill_null(b"") if arr.null_count else arr)
        columns = decode_keys(self.fields, self.salt_buckets, offsets, data, problems)
        if errors == "raise":
            problems.raise_first(lambda i, _: repr(arr[i].as_py())[:80])
        names = self.decodable_columns
        return pa.table([columns[n] for n in names], names=list(names))

    # -- ranges ------------------------------------------------------------------------

    def salt_of(self, logical_key: bytes) -> int:
        """The salt bucket of a key without its salt byte.

        Raises:
            InvalidArgumentError: if the spec is not salted.
        """
        if self.salt_buckets is None:
            raise InvalidArgumentError("this row-key spec is not salted")
        return salt_of(self.salt_buckets, logical_key)

    def key_ranges(
        self,
        *,
        equals: Mapping[str, Any] | None = None,
        field: str | None = None,
        lower: Any = None,
        upper: Any = None,
        lower_inclusive: bool = True,
        upper_inclusive: bool = False,
        prefix: str | bytes | None = None,
    ) -> list[KeyRange]:
        """Raw row-key ranges ``[start, stop)`` holding exactly the matching keys.

        The predicate is: the leading key fields equal ``equals`` (a prefix of the fields,
        in key order), and optionally the *next* field lies between ``lower`` and
        ``upper`` or starts with ``prefix`` (strings and bytes). Bounds outside a numeric
        type's range are clamped; string bounds longer than a field's width, or holding
        0x00, are cut to what the field can hold; float ranges exclude NaN.

        Args:
            equals: ``{field: value}`` for the first fields of the key.
            field: The ranged field; must be the one after the ``equals`` fields
                (defaults to it).
            lower: Lower bound of the ranged field, or None.
            upper: Upper bound of the ranged field, or None.
            lower_inclusive: Whether ``lower`` itself matches.
            upper_inclusive: Whether ``upper`` itself matches.
            prefix: Select values of a string/bytes field that start with this.

        Returns:
            Sorted, non-overlapping ranges (``b""`` = unbounded). Salted specs give one
            range per bucket, each under its bucket byte, or a single range when
            ``equals`` fixes every field (so the salt is known). Empty when nothing can
            match.

        Raises:
            InvalidArgumentError: unknown fields, gaps in the equality prefix, a range on a
                hashed or reversed field, or a value the field cannot encode.
        """
        rng, exact = logical_range(
            self.fields,
            equals=dict(equals or {}),
            field=field,
            lower=lower,
            upper=upper,
            lower_inclusive=lower_inclusive,
            upper_inclusive=upper_inclusive,
            prefix=prefix,
        )
        if rng is None:
            return []
        if self.salt_buckets is not None and exact is not None:
            salt = bytes([self.salt_of(exact)])
            return [KeyRange(salt + rng.start, salt + rng.stop)]
        return self.bucket_ranges(*rng)

    def bucket_ranges(self, start: bytes, stop: bytes) -> list[KeyRange]:
        """Fan a logical (unsalted) key range out over the salt buckets.

        Args:
            start: Inclusive start of the range over keys without their salt byte.
            stop: Exclusive stop (``b""``: unbounded).

        Returns:
            One ``[bucket + start, bucket + stop)`` per bucket (an unbounded stop ends at
            the next bucket), or ``[(start, stop)]`` when unsalted; empty if
            ``start >= stop``.
        """
        return bucket_ranges(self.salt_buckets, bytes(start), bytes(stop))
