"""Index definitions: what is indexed, what is covered, and where it is stored.

A definition is stored twice, as the same JSON document (docs/format.md, section 12): in
the data table's properties under ``index.<name>`` (so ``build`` and ``verify`` find it by
name) and in the index table's properties under ``index.definition``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from cellstore.core.codecs import Codec
from cellstore.core.keys import split_column
from cellstore.core.metadata import TableMetadata
from cellstore.core.names import TableName, validate_family_name, validate_index_name
from cellstore.core.results import JsonForm
from cellstore.core.rowkey import RowKeySpec
from cellstore.errors import CellstoreError, InvalidArgumentError
from cellstore.jobs.index.expr import (
    Column,
    Expr,
    KeyRef,
    columns_of,
    key_fields_of,
    parse_expression,
    type_of,
)
from cellstore.jobs.index.keys import IndexType

__all__ = [
    "DEFINITION_FORMAT_VERSION",
    "INDEX_FAMILY",
    "LOCAL_FAMILY",
    "MARKER_QUALIFIER",
    "PROPERTY_HIDDEN",
    "PROPERTY_BUILD",
    "PROPERTY_DEFINITION",
    "PROPERTY_PREFIX",
    "IndexDefinition",
    "IndexNotFoundError",
    "IndexPart",
    "definitions_of",
]

#: Version of the definition document written (2 added ``maintain``; version 1 documents
#: still load, as maintained indexes).
DEFINITION_FORMAT_VERSION: Final = 2
#: Definition document versions this release reads.
READABLE_FORMAT_VERSIONS: Final = (1, 2)
#: The index table's only family (Phoenix names its default family ``0``).
INDEX_FAMILY: Final = "0"
#: Qualifier of the empty cell every index row has (Phoenix's empty key value ``_0``).
MARKER_QUALIFIER: Final = b"_0"
#: The hidden family of the data table that holds local index rows.
LOCAL_FAMILY: Final = "_idx"
#: Data table property listing families ordinary scans and gets leave out.
PROPERTY_HIDDEN: Final = "hidden-families"
#: Data table property prefix: ``index.<name>`` holds a definition.
PROPERTY_PREFIX: Final = "index."
#: Index table property holding its definition.
PROPERTY_DEFINITION: Final = "index.definition"
#: Index table property describing the last build (JSON).
PROPERTY_BUILD: Final = "index.build"

_CALL: Final = re.compile(r"^\s*([A-Za-z0-9_-]+)\s*\((.*)\)\s*$", re.DOTALL)


class IndexNotFoundError(CellstoreError, LookupError):
    """No index of that name is defined on the table."""

    exit_code = 3


@dataclass(frozen=True)
class IndexPart:
    """One part of an indexed value: a column, a row-key field, or an expression of them.

    Attributes:
        kind: ``"column"``, ``"key"`` or ``"expression"`` (a functional index part,
            :mod:`cellstore.jobs.index.expr`).
        source: ``family:qualifier`` for a column, the field name for a key field, the
            canonical text of an expression (``UPPER(string(info:name))``).
        codec: How a column's value bytes decode (``bytes`` when not given); None for key
            fields (their type comes from the table's row-key spec) and expressions.
    """

    kind: Literal["column", "key", "expression"]
    source: str
    codec: Codec | None = None
    tree: Expr | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.kind == "expression":
            if self.codec is not None:
                raise InvalidArgumentError("an expression part has no codec; write CODEC(f:q)")
            tree = parse_expression(self.source)
            if not columns_of(tree) and not key_fields_of(tree):
                raise InvalidArgumentError(
                    f"index expression {self.source!r} reads no column and no key field"
                )
            object.__setattr__(self, "tree", tree)
            object.__setattr__(self, "source", str(tree))
        elif self.kind == "column":
            split_column(self.source)
            object.__setattr__(self, "codec", Codec.parse(self.codec or Codec.BYTES))
        elif self.kind == "key":
            if not self.source:
                raise InvalidArgumentError("a key part needs a row-key field name")
            if self.codec is not None:
                raise InvalidArgumentError(
                    f"key field {self.source!r}: a row-key field is typed by the row-key spec"
                )
        else:
            raise InvalidArgumentError(
                f"index part kind must be column, key or expression, not {self.kind!r}"
            )

    @classmethod
    def column(cls, name: str, *, codec: Codec | str = Codec.BYTES) -> IndexPart:
        """A column part: ``family:qualifier`` whose values decode with ``codec``."""
        return cls("column", name, Codec.parse(codec))

    @classmethod
    def key(cls, name: str) -> IndexPart:
        """A part taken from the data row key's field ``name`` (the table's row-key spec)."""
        return cls("key", name)

    @classmethod
    def expression(cls, text: str) -> IndexPart:
        """A functional part: an expression of columns and key fields.

        The grammar is in :mod:`cellstore.jobs.index.expr`; e.g.
        ``UPPER(string(info:name))``. A plain column or key field gives that kind of part.
        """
        tree = parse_expression(text)
        if isinstance(tree, Column):
            return cls.column(tree.column, codec=tree.codec)
        if isinstance(tree, KeyRef):
            return cls.key(tree.field)
        return cls("expression", str(tree))

    @classmethod
    def parse(cls, text: str | IndexPart) -> IndexPart:
        """A part from its text form.

        ``key(FIELD)`` is a row-key field, ``CODEC(family:qualifier)`` a column decoded
        with a value codec (``long(info:age)``, ``string(info:email)``), a bare
        ``family:qualifier`` a column of raw bytes, and anything else an expression
        (``UPPER(string(info:name))``, ``SUBSTR(string(info:email), 1, 3)``,
        ``string(info:first) || ' ' || string(info:last)``, ``long(s:a) * 2 + long(s:b)``).

        Raises:
            InvalidArgumentError: for text outside these forms.
        """
        if isinstance(text, IndexPart):
            return text
        if not isinstance(text, str):
            raise InvalidArgumentError(f"an index part is a string or IndexPart, not {text!r}")
        call = _CALL.match(text)
        if call is not None and ":" not in call.group(1) and "(" not in call.group(2):
            func, arg = call.group(1).lower(), call.group(2).strip()
            if func == "key":
                return cls.key(arg)
            if func in {c.value for c in Codec}:
                return cls.column(arg, codec=func)
        if "(" in text or "||" in text:
            return cls.expression(text)
        if ":" not in text:
            raise InvalidArgumentError(
                f"index part {text!r}: expected family:qualifier, CODEC(family:qualifier) or "
                "key(FIELD)"
            )
        return cls.column(text)

    @property
    def columns(self) -> tuple[Column, ...]:
        """The columns the part reads, each with its codec (none for a key field)."""
        if self.kind == "column":
            return (Column(self.source, self.codec or Codec.BYTES),)
        if self.tree is not None:
            return columns_of(self.tree)
        return ()

    @property
    def key_fields(self) -> tuple[str, ...]:
        """The row-key fields the part reads."""
        if self.kind == "key":
            return (self.source,)
        if self.tree is not None:
            return key_fields_of(self.tree)
        return ()

    @property
    def family(self) -> str:
        """The column's family (column parts only)."""
        return split_column(self.source)[0]

    @property
    def qualifier(self) -> bytes:
        """The column's qualifier bytes (column parts only)."""
        return split_column(self.source)[1]

    def __str__(self) -> str:
        if self.kind == "expression":
            return self.source
        if self.kind == "key":
            return f"key({self.source})"
        codec = self.codec or Codec.BYTES
        return f"{codec.value}({self.source})"

    def to_dict(self) -> dict[str, Any]:
        """JSON form: a column, key field or (format version 2) expression document.

        ``{"column": ..., "codec": ...}``, ``{"key-field": ...}``, ``{"expression": ...}``.
        """
        if self.kind == "expression":
            return {"expression": self.source}
        if self.kind == "key":
            return {"key-field": self.source}
        return {"column": self.source, "codec": (self.codec or Codec.BYTES).value}

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> IndexPart:
        """Inverse of :meth:`to_dict`.

        Raises:
            InvalidArgumentError: for a document that is neither form.
        """
        if set(doc) == {"key-field"}:
            return cls.key(str(doc["key-field"]))
        if set(doc) == {"expression"}:
            return cls.expression(str(doc["expression"]))
        if "column" in doc and set(doc) <= {"column", "codec"}:
            return cls.column(str(doc["column"]), codec=doc.get("codec", "bytes"))
        raise InvalidArgumentError(f"index part: unknown form {dict(doc)!r}")


def _parts(
    column: str | None, codec: Codec | str | None, expression: Sequence[str | IndexPart] | None
) -> tuple[IndexPart, ...]:
    if (column is None) == (expression is None):
        raise InvalidArgumentError("give either column= (with codec=) or expression=")
    if column is not None:
        return (IndexPart.column(column, codec=codec or Codec.BYTES),)
    if codec is not None:
        raise InvalidArgumentError("codec= goes with column=; in an expression write CODEC(f:q)")
    if isinstance(expression, str | IndexPart):
        expression = [expression]
    parts = tuple(IndexPart.parse(p) for p in expression or ())
    if not parts:
        raise InvalidArgumentError("an index expression needs at least one part")
    return parts


def _column_list(names: Iterable[str] | str) -> tuple[str, ...]:
    if isinstance(names, str):
        names = [names]
    out = []
    for name in names:
        fam, qual = split_column(name)
        out.append(f"{fam}:{qual.decode('utf-8')}")
    return tuple(dict.fromkeys(out))


def default_index_table(table: str | TableName, name: str) -> str:
    """``<namespace>:<table>_idx_<name>`` (HBase naming rules apply to the result)."""
    tname = TableName.parse(table)
    return TableName.parse(f"{tname.namespace}:{tname.qualifier}_idx_{name}").full


@dataclass(frozen=True)
class IndexDefinition(JsonForm):
    """A global secondary index on one data table.

    Attributes:
        name: The index name: letters, digits, ``_``, ``-``, ``.`` (not starting with
            ``-`` or ``.``).
        table: The data table (``namespace:qualifier``).
        parts: The indexed value, part by part (a single column is one part).
        covered: ``family:qualifier`` columns copied into every index row.
        index_table: The index table (``namespace:qualifier``).
        family: The index table's family.
        maintain: Whether every load into the data table keeps the index current (writes
            its index rows before the data commit, docs/format.md 12.4); False for a
            batch-built index that only :func:`build_index` updates.
        local: A local index: its rows live in the data table's own regions, in the
            hidden family :data:`LOCAL_FAMILY`, keyed by region start key + index name +
            value + data row key (docs/format.md 12.5); ``index_table`` is the data table.
    """

    json_keys = "format_version name table index_table family parts covered maintain local"

    name: str
    table: str
    parts: tuple[IndexPart, ...]
    covered: tuple[str, ...] = ()
    index_table: str = ""
    family: str = INDEX_FAMILY
    maintain: bool = True
    local: bool = False
    format_version: int = field(default=DEFINITION_FORMAT_VERSION, repr=False, compare=False)

    def __post_init__(self) -> None:
        validate_index_name(self.name)
        if PROPERTY_PREFIX + self.name in (PROPERTY_DEFINITION, PROPERTY_BUILD):
            raise InvalidArgumentError(f"index name {self.name!r} is reserved")
        object.__setattr__(self, "table", TableName.parse(self.table).full)
        parts = tuple(IndexPart.parse(p) for p in self.parts)
        if not parts:
            raise InvalidArgumentError(f"index {self.name}: needs at least one indexed part")
        object.__setattr__(self, "parts", parts)
        object.__setattr__(self, "covered", _column_list(self.covered))
        indexed = set(_column_list([p.source for p in parts if p.kind == "column"]))
        both = [c for c in self.covered if c in indexed]
        if both:
            raise InvalidArgumentError(
                f"index {self.name}: {both[0]} is indexed; its value is in the index row key, "
                "so it cannot also be covered"
            )
        if not isinstance(self.local, bool):
            raise InvalidArgumentError(f"index {self.name}: local must be true or false")
        if self.local:
            if self.index_table and TableName.parse(self.index_table).full != self.table:
                raise InvalidArgumentError(
                    f"index {self.name}: a local index lives in its data table, not in "
                    f"{self.index_table}"
                )
            object.__setattr__(self, "index_table", self.table)
            if self.family == INDEX_FAMILY:
                object.__setattr__(self, "family", LOCAL_FAMILY)
            if self.family != LOCAL_FAMILY:
                raise InvalidArgumentError(
                    f"index {self.name}: a local index's family is {LOCAL_FAMILY}"
                )
        index_table = self.index_table or default_index_table(self.table, self.name)
        object.__setattr__(self, "index_table", TableName.parse(index_table).full)
        if self.index_table == self.table and not self.local:
            raise InvalidArgumentError(f"index {self.name}: the index table is the data table")
        validate_family_name(self.family)
        if self.format_version not in READABLE_FORMAT_VERSIONS:
            raise InvalidArgumentError(
                f"index {self.name}: definition format version {self.format_version} is not "
                f"supported (this release reads {', '.join(map(str, READABLE_FORMAT_VERSIONS))})"
            )
        object.__setattr__(self, "format_version", DEFINITION_FORMAT_VERSION)
        if not isinstance(self.maintain, bool):
            raise InvalidArgumentError(f"index {self.name}: maintain must be true or false")

    @classmethod
    def build(
        cls,
        table: str | TableName,
        *,
        name: str,
        column: str | None = None,
        codec: Codec | str | None = None,
        expression: Sequence[str | IndexPart] | None = None,
        covered: Iterable[str] | str = (),
        index_table: str | None = None,
        maintain: bool = True,
        local: bool = False,
    ) -> IndexDefinition:
        """A definition from the keyword form ``build_index`` and the CLI take.

        Args:
            table: The data table.
            name: The index name.
            column: One indexed ``family:qualifier`` column (with ``codec``).
            codec: The column's value codec (default ``bytes``).
            expression: Instead of ``column``: parts in order, each ``key(FIELD)``,
                ``CODEC(family:qualifier)``, a bare ``family:qualifier`` or an
                :class:`IndexPart`.
            covered: Columns copied into the index rows.
            index_table: The index table (default ``<namespace>:<table>_idx_<name>``).
            maintain: Keep the index current on every load (default), or only by builds.
            local: A local index (rows in the data table's regions) instead of a global one.

        Raises:
            InvalidArgumentError: for a bad name, part, column or table name.
        """
        return cls(
            name=name,
            table=TableName.parse(table).full,
            parts=_parts(column, codec, expression),
            covered=_column_list(covered),
            index_table=index_table or "",
            maintain=maintain,
            local=local,
        )

    # ------------------------------------------------------------------ derived
    @property
    def column_parts(self) -> tuple[IndexPart, ...]:
        """The parts that read a column (plain columns and expressions over columns)."""
        return tuple(p for p in self.parts if p.columns)

    @property
    def indexed_columns(self) -> tuple[str, ...]:
        """The ``family:qualifier`` columns the indexed value reads (no duplicates)."""
        return tuple(dict.fromkeys(c.column for p in self.parts for c in p.columns))

    @property
    def whole_row(self) -> bool:
        """Whether the value comes from the row key alone, so every row is indexed."""
        return not self.column_parts

    @property
    def part_names(self) -> tuple[str, ...]:
        """Names of the parts: ``family:qualifier`` or the key field name."""
        return tuple(p.source for p in self.parts)

    @property
    def watched_columns(self) -> tuple[str, ...]:
        """Columns the index reads: column parts then covered columns (no duplicates)."""
        return tuple(dict.fromkeys([*self.indexed_columns, *self.covered]))

    @property
    def property_key(self) -> str:
        """The data table property holding this definition."""
        return PROPERTY_PREFIX + self.name

    def part_types(self, spec: RowKeySpec | None) -> tuple[IndexType, ...]:
        """The type of each part, key fields typed by the data table's row-key spec.

        Raises:
            InvalidArgumentError: a key part names no field of ``spec`` (or there is no
                spec), or a field that is not decodable (``md5``).
        """
        key_types = self.key_types(spec)
        out = []
        for p in self.parts:
            if p.kind == "column":
                out.append(IndexType.of_codec(p.codec or Codec.BYTES))
            elif p.kind == "key":
                out.append(key_types[p.source])
            else:
                assert p.tree is not None
                try:
                    out.append(type_of(p.tree, key_types))
                except InvalidArgumentError as e:
                    raise InvalidArgumentError(f"index {self.name}: {e}") from None
        return tuple(out)

    def key_types(self, spec: RowKeySpec | None) -> dict[str, IndexType]:
        """The type of every row-key field the parts read.

        Raises:
            InvalidArgumentError: a field not in ``spec`` (or no spec), or one that is not
                decodable (``md5``).
        """
        fields = {f.name: f for f in spec.fields} if spec is not None else {}
        out: dict[str, IndexType] = {}
        for name in dict.fromkeys(f for p in self.parts for f in p.key_fields):
            f = fields.get(name)
            if f is None:
                have = ", ".join(fields) if fields else "no row-key spec"
                raise InvalidArgumentError(
                    f"index {self.name}: key field {name!r} is not in the row key of "
                    f"{self.table} ({have})"
                )
            if not f.decodable:
                raise InvalidArgumentError(
                    f"index {self.name}: key field {name!r} is hashed (md5) and cannot be "
                    "read back from the row key"
                )
            out[name] = IndexType.of_key_type(f.type)
        return out

    # -------------------------------------------------------------------- JSON

    def to_json(self) -> str:
        """:meth:`to_dict` as compact, key-sorted JSON."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> IndexDefinition:
        """Inverse of :meth:`to_dict`.

        Raises:
            InvalidArgumentError: for a malformed or unsupported document.
        """
        try:
            return cls(
                name=doc["name"],
                table=doc["table"],
                parts=tuple(IndexPart.from_dict(p) for p in doc["parts"]),
                covered=tuple(doc.get("covered", ())),
                index_table=doc["index-table"],
                family=doc.get("family", INDEX_FAMILY),
                maintain=doc.get("maintain", True),
                local=doc.get("local", False),
                format_version=doc.get("format-version", DEFINITION_FORMAT_VERSION),
            )
        except (KeyError, TypeError) as e:
            raise InvalidArgumentError(f"malformed index definition {dict(doc)!r}: {e}") from None

    @classmethod
    def from_json(cls, text: str) -> IndexDefinition:
        """Parse a stored definition.

        Raises:
            InvalidArgumentError: for text that is not a valid definition.
        """
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            raise InvalidArgumentError(f"index definition is not JSON: {e}") from None
        if not isinstance(doc, dict):
            raise InvalidArgumentError("index definition must be a JSON object")
        return cls.from_dict(doc)


def definitions_of(meta: TableMetadata) -> dict[str, IndexDefinition]:
    """The index definitions stored in a data table's properties, by name."""
    out = {}
    for key, value in sorted(meta.properties.items()):
        if key.startswith(PROPERTY_PREFIX) and key != PROPERTY_DEFINITION and key != PROPERTY_BUILD:
            definition = IndexDefinition.from_json(value)
            out[definition.name] = definition
    return out
