r"""Parameter types: family specs, printable keys and ``key=value`` pairs.

Family specs use the names an HBase shell user knows::

    cf
    cf:VERSIONS=5,TTL=86400,BLOOMFILTER=NONE,COMPRESSION=SNAPPY
    cf:ttl=forever,keep_deleted_cells=ttl
    cf:VERSIONS=1,LAYOUT=columns      (cellstore's store-file layout: auto, cells, columns)

Keys are case-insensitive. Row and split keys are typed in HBase's printable form
(``Bytes.toStringBinary``): ``\xHH`` escapes for any byte, everything else as UTF-8.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import click

from cellstore.core.family import LAYOUTS, Family, KeepDeletedCells
from cellstore.core.keys import from_string_binary
from cellstore.core.names import validate_load_id
from cellstore.errors import InvalidArgumentError

__all__ = [
    "FAMILY",
    "FAMILY_CHANGE",
    "FAMILY_TIME_RANGE",
    "KEY_VALUE",
    "LOAD_ID",
    "PRINTABLE_KEY",
    "SECRETS_META_KEY",
    "STORAGE_OPTION",
    "FamilyChange",
    "FamilyChangeType",
    "FamilyTimeRangeType",
    "FamilyType",
    "KeyValueType",
    "LoadIdType",
    "PrintableKeyType",
    "SpecError",
    "StorageOptionType",
    "option_values",
    "other_storage_options",
    "parse_family_spec",
    "redact",
]

if TYPE_CHECKING:
    _ParamType = click.ParamType
else:

    class _ParamType(click.ParamType):
        # click < 8.4 has no generic ParamType; make ``_ParamType[X]`` work there too.
        def __class_getitem__(cls, item: object) -> type:
            return cls


class SpecError(ValueError):
    """A family spec cannot be parsed; the message says why."""


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _int(key: str, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise SpecError(f"{key} must be an integer, not {text!r}") from None


def _ttl(key: str, text: str) -> int | None:
    if text.upper() == "FOREVER":
        return None
    return _int(key, text)


def _keep_deleted(key: str, text: str) -> KeepDeletedCells:
    try:
        return KeepDeletedCells.parse(text)
    except InvalidArgumentError:
        raise SpecError(f"{key} must be TRUE, FALSE or TTL, not {text!r}") from None


#: HBase codec names that differ from the Parquet codec names cellstore stores.
_COMPRESSION_ALIASES: Final = {"gz": "gzip", "uncompressed": "none"}


def _compression(key: str, text: str) -> str:
    name = text.lower()
    return _COMPRESSION_ALIASES.get(name, name)


def _bloom(key: str, text: str) -> bool:
    upper = text.upper()
    if upper in ("ROW", "TRUE"):
        return True
    if upper in ("NONE", "FALSE"):
        return False
    raise SpecError(f"{key} must be ROW or NONE (cellstore keeps row Bloom filters), not {text!r}")


def _layout(key: str, text: str) -> str:
    value = text.strip().lower()
    if value not in LAYOUTS:
        raise SpecError(
            f"{key} must be one of {', '.join(LAYOUTS)} (store-file layout), not {text!r}"
        )
    return value


#: Spec key (upper case) -> (Family attribute, value parser). HBase's names first, then
#: the Python attribute names as aliases.
_SETTINGS: Final[dict[str, tuple[str, Callable[[str, str], Any]]]] = {
    "VERSIONS": ("max_versions", _int),
    "MIN_VERSIONS": ("min_versions", _int),
    "TTL": ("ttl", _ttl),
    "KEEP_DELETED_CELLS": ("keep_deleted_cells", _keep_deleted),
    "COMPRESSION": ("compression", _compression),
    "BLOOMFILTER": ("bloom_filter", _bloom),
    "BLOCKSIZE": ("block_size", _int),
    "LAYOUT": ("layout", _layout),
    "MAX_VERSIONS": ("max_versions", _int),
    "BLOOM_FILTER": ("bloom_filter", _bloom),
    "BLOCK_SIZE": ("block_size", _int),
}
_HBASE_KEYS: Final = (
    "VERSIONS, MIN_VERSIONS, TTL, KEEP_DELETED_CELLS, COMPRESSION, BLOOMFILTER, BLOCKSIZE, LAYOUT"
)


def parse_family_spec(text: str) -> tuple[str, dict[str, Any]]:
    """Split ``NAME[:KEY=VALUE,...]`` into the family name and :class:`Family` settings.

    Args:
        text: The spec, e.g. ``cf:VERSIONS=5,TTL=FOREVER``.

    Returns:
        The name and a dict of :class:`~cellstore.core.family.Family` keyword arguments
        (values parsed, not yet range-checked).

    Raises:
        SpecError: empty name, an item without ``=``, an unknown or repeated key, or a value
            of the wrong kind.

    >>> parse_family_spec("cf:versions=5,TTL=FOREVER,BLOOMFILTER=NONE")
    ('cf', {'max_versions': 5, 'ttl': None, 'bloom_filter': False})
    """
    name, _, rest = text.partition(":")
    name = name.strip()
    if not name:
        raise SpecError("the family name is empty")
    settings: dict[str, Any] = {}
    for item in rest.split(","):
        if not item.strip():
            continue
        key, eq, value = item.partition("=")
        key = key.strip().upper()
        if not eq:
            raise SpecError(f"expected KEY=VALUE, got {item.strip()!r}")
        if key not in _SETTINGS:
            raise SpecError(f"unknown family setting {key!r} (known: {_HBASE_KEYS})")
        attr, parse = _SETTINGS[key]
        if attr in settings:
            raise SpecError(f"family setting {key} given twice")
        settings[attr] = parse(key, _unquote(value))
    return name, settings


@dataclass(frozen=True)
class FamilyChange:
    """Settings to change on an existing family (``alter --set``).

    Attributes:
        name: The family.
        settings: :class:`~cellstore.core.family.Family` keyword arguments to change.
    """

    name: str
    settings: dict[str, Any] = field(default_factory=dict)


class FamilyType(_ParamType[Family]):
    """``NAME[:KEY=VALUE,...]`` -> a validated :class:`~cellstore.core.family.Family`."""

    name = "family"

    def get_metavar(self, param: click.Parameter, ctx: click.Context) -> str:
        """Metavar shown in help."""
        return "SPEC"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> Family:
        """Parse and validate a family spec (fails with :class:`click.BadParameter`)."""
        if isinstance(value, Family):
            return value
        try:
            name, settings = parse_family_spec(str(value))
            return Family(name=name, **settings)
        except (SpecError, InvalidArgumentError) as e:
            self.fail(f"{value!r}: {e}", param, ctx)


class FamilyChangeType(_ParamType[FamilyChange]):
    """``NAME:KEY=VALUE,...`` -> a :class:`FamilyChange` (at least one setting)."""

    name = "family change"

    def get_metavar(self, param: click.Parameter, ctx: click.Context) -> str:
        """Metavar shown in help."""
        return "SPEC"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> FamilyChange:
        """Parse a family spec that must carry settings."""
        if isinstance(value, FamilyChange):
            return value
        try:
            name, settings = parse_family_spec(str(value))
        except SpecError as e:
            self.fail(f"{value!r}: {e}", param, ctx)
        if not settings:
            self.fail(f"{value!r}: nothing to set; use NAME:KEY=VALUE,...", param, ctx)
        return FamilyChange(name, settings)


class PrintableKeyType(_ParamType[bytes]):
    r"""A row or split key in HBase's printable form (``\x00`` escapes) -> bytes."""

    name = "key"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> bytes:
        r"""Decode ``\xHH`` escapes (``Bytes.toBytesBinary``)."""
        if isinstance(value, bytes):
            return value
        return from_string_binary(str(value))


class FamilyTimeRangeType(_ParamType[tuple[str, tuple[int, int]]]):
    """``FAMILY:MIN:MAX`` -> ``(family, (min, max))``: one family's own time range (R7.1)."""

    name = "family time range"

    def get_metavar(self, param: click.Parameter, ctx: click.Context) -> str:
        """Metavar shown in help."""
        return "FAMILY:MIN:MAX"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> tuple[str, tuple[int, int]]:
        """Split on the last two ``:``; MIN and MAX are integers (ms)."""
        if isinstance(value, tuple):
            return value
        parts = str(value).rsplit(":", 2)
        try:
            if len(parts) != 3 or not parts[0]:
                raise ValueError
            return parts[0], (int(parts[1]), int(parts[2]))
        except ValueError:
            self.fail(f"{value!r}: expected FAMILY:MIN:MAX, e.g. b:0:15", param, ctx)


def _split_pair(value: object) -> tuple[str, str] | None:
    key, eq, raw = str(value).partition("=")
    key = key.strip()
    if not eq or not key:
        return None
    return key, raw


class KeyValueType(_ParamType[tuple[str, str]]):
    """``KEY=VALUE`` -> ``(key, value)``, split on the first ``=``."""

    name = "key=value"

    def get_metavar(self, param: click.Parameter, ctx: click.Context) -> str:
        """Metavar shown in help."""
        return "KEY=VALUE"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> tuple[str, str]:
        """Split on the first ``=``."""
        if isinstance(value, tuple):
            return value
        pair = _split_pair(value)
        if pair is None:
            self.fail(f"expected KEY=VALUE, got {value!r}", param, ctx)
        return pair


#: ``click.Context.meta`` key (shared by every context of one invocation) holding the
#: storage-option values given on the command line, so error messages can hide them.
SECRETS_META_KEY: Final = "cellstore.option_values"
#: Values shorter than this are not hidden (``true``, ``1``; no secret is that short).
_MIN_HIDDEN: Final = 4


def option_values(value: Any) -> set[str]:
    """The text of every string (and the JSON form of every container) inside ``value``.

    >>> sorted(option_values({"key": "AKIAX", "n": 1, "kw": {"token": "s3cr3t"}}))
    ['AKIAX', 's3cr3t']
    """
    out: set[str] = set()
    if isinstance(value, str):
        if len(value) >= _MIN_HIDDEN:
            out.add(value)
    elif isinstance(value, dict):
        for v in value.values():
            out |= option_values(v)
    elif isinstance(value, list | tuple):
        for v in value:
            out |= option_values(v)
    return out


def redact(text: str, values: Iterable[str]) -> str:
    """``text`` with every occurrence of ``values`` replaced by ``***`` (longest first).

    >>> redact("bad token 's3cr3t'", {"s3cr3t"})
    "bad token '***'"
    """
    for value in sorted(set(values), key=len, reverse=True):
        if value:
            text = text.replace(value, "***")
    return text


class StorageOptionType(_ParamType[tuple[str, Any]]):
    """``KEY=VALUE`` -> ``(key, value)`` with the value parsed as JSON when it parses.

    ``anon=true`` gives ``True``, ``client_kwargs={"endpoint_url": "http://..."}`` a dict;
    anything that is not JSON stays a string (``profile=dev``). Values may be secrets:
    they never appear in an error message (a malformed option is not echoed, and the
    root group hides every value given, see :data:`SECRETS_META_KEY`).
    """

    name = "storage option"

    def get_metavar(self, param: click.Parameter, ctx: click.Context) -> str:
        """Metavar shown in help."""
        return "KEY=VALUE"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> tuple[str, Any]:
        """Split on the first ``=`` and try JSON on the value."""
        if isinstance(value, tuple):
            return value
        pair = _split_pair(value)
        if pair is None:
            # Not echoed: a mistyped option (``secretVALUE``) is probably a secret.
            self.fail("expected KEY=VALUE (the value given is not shown)", param, ctx)
        key, raw = pair
        try:
            parsed: Any = json.loads(raw)
        except ValueError:
            parsed = raw
        if ctx is not None:
            hidden = ctx.meta.setdefault(SECRETS_META_KEY, set())
            hidden |= option_values(raw) | option_values(parsed)
        return key, parsed


class LoadIdType(_ParamType[str]):
    """A load id (or job id): ASCII letters, digits, '_', '-', '.'; it names files."""

    name = "load id"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        """Validate with :func:`~cellstore.core.names.validate_load_id`."""
        try:
            return validate_load_id(str(value))
        except InvalidArgumentError as e:
            self.fail(str(e), param, ctx)


FAMILY: Final = FamilyType()
FAMILY_CHANGE: Final = FamilyChangeType()
PRINTABLE_KEY: Final = PrintableKeyType()
FAMILY_TIME_RANGE: Final = FamilyTimeRangeType()
KEY_VALUE: Final = KeyValueType()
LOAD_ID: Final = LoadIdType()
STORAGE_OPTION: Final = StorageOptionType()


def other_storage_options(
    flag: str, dest: str, target: str, *, root: str = "the root's"
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A repeatable ``flag`` of fsspec options for another URL's filesystem (``target``).

    The command resolves them: the options given, else ``--storage-option`` when
    ``target`` has ``root`` protocol.
    """
    return click.option(
        flag,
        dest,
        type=STORAGE_OPTION,
        multiple=True,
        help=f"fsspec option for {target}'s filesystem (repeatable; default: --storage-option "
        f"when {target} has {root} protocol).",
    )


def parse_column_types(column_types: Sequence[str], *, shape: str) -> dict[str, str]:
    """``--column-type FAMILY:QUALIFIER=CODEC`` options as a name -> codec mapping.

    ``--column-type table`` (any case) stands for the codecs the table's mapping-based loads
    recorded, as ``column_types="table"`` in Python; it comes back as the key ``"table"``
    with the value ``"table"``, for the caller to resolve with the table (the other items
    then override the recorded codec of their column).

    Raises:
        click.BadParameter: without ``--shape wide``, or for an item without ``=``.
    """
    if column_types and shape != "wide":
        raise click.BadParameter("needs --shape wide", param_hint="'--column-type'")
    types = {}
    for item in column_types:
        if item.strip().lower() == "table":
            types["table"] = "table"
            continue
        name, sep, codec = item.rpartition("=")
        if not sep or not name:
            raise click.BadParameter(
                f"{item!r} is not FAMILY:QUALIFIER=CODEC or 'table'", param_hint="'--column-type'"
            )
        types[name] = codec
    return types
