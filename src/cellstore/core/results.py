"""What frozen result dataclasses share: their JSON form, and ``ok`` of a problem list.

Job reports, load and import reports, table reports and key advice all print as JSON
(``--output json``, report files) through ``to_dict()``. :class:`JsonForm` writes that
method once: a class says only what differs from the rule (key order when it shows
properties, digits of a float, one value of its own form). :class:`Checked` is a check's
result that is ``ok`` when its ``problems`` are empty.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import Any, ClassVar, Final, overload

from cellstore.core.keys import to_string_binary

__all__ = ["Checked", "JsonForm", "Total", "json_value"]

#: Types whose values are their own JSON form (a fast path: most fields are these).
_PLAIN: Final = frozenset({str, int, float, bool, type(None)})


def json_value(value: Any) -> Any:
    """The JSON-ready form of one value.

    Args:
        value: A field's value.

    Returns:
        ``bytes`` as HBase's ``Bytes.toStringBinary``; a tuple or list as a list of the
        JSON-ready forms of its items; a mapping as a plain ``dict`` (the same entries);
        an object with ``to_dict()`` as that dict; anything else as it is.
    """
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is tuple or kind is list:
        return [json_value(v) for v in value]
    if kind is dict:
        return dict(value)
    if isinstance(value, bytes):
        return to_string_binary(value)
    if isinstance(value, tuple | list):
        return [json_value(v) for v in value]
    if isinstance(value, Mapping):
        return dict(value)
    to_dict = getattr(value, "to_dict", None)
    return value if to_dict is None else to_dict()


class JsonForm:
    """Mixin for a frozen dataclass: ``to_dict()`` from its fields, kebab-case keys.

    The keys are the names of ``json_keys`` (default: the dataclass fields, in their
    order), ``_`` written ``-`` (``key=name`` gives a key of its own to attribute
    ``name``); the values are :func:`json_value` of each attribute,
    except that a float named in ``json_digits`` is rounded to that many digits (by
    default ``seconds`` to milliseconds). A class whose form differs in one value
    overrides ``_json_value(name)`` for that name and defers to this one for the rest.

    Attributes:
        json_keys: Space-separated attribute names (fields or properties), in key order,
            each ``name`` or ``key=name``; empty: the fields.
        json_digits: Digits to round a float attribute to, by name.
    """

    json_keys: ClassVar[str] = ""
    json_digits: ClassVar[Mapping[str, int]] = {"seconds": 3}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (kebab-case keys, in the order the class gives)."""
        return {key: self._json_value(name) for key, name in _entries(type(self))}

    def _json_value(self, name: str) -> Any:
        value = getattr(self, name)
        digits = self.json_digits.get(name)
        if digits is not None and isinstance(value, float):
            return round(value, digits)
        return json_value(value)


_ENTRIES: dict[type[JsonForm], tuple[tuple[str, str], ...]] = {}


def _entries(cls: type[JsonForm]) -> tuple[tuple[str, str], ...]:
    """``(key, attribute)`` pairs of a :class:`JsonForm` class, in key order (cached)."""
    found = _ENTRIES.get(cls)
    if found is None:
        names = cls.json_keys.split() or [f.name for f in fields(cls)]  # type: ignore[arg-type]
        pairs = (entry.rpartition("=") for entry in names)
        found = tuple((key or name.replace("_", "-"), name) for key, _, name in pairs)
        _ENTRIES[cls] = found
    return found


class Checked:
    """Mixin for the result of a check: ``ok`` when its ``problems`` field is empty.

    Attributes:
        problems: What the check found wrong (a field of the dataclass), in any form.
    """

    problems: Sequence[object]

    @property
    def ok(self) -> bool:
        """Whether no problem was found."""
        return not self.problems


class Total:
    """A read-only attribute: the sum of one attribute over the items of a sequence field.

    ``files = Total("regions", "files", "Store files over all regions.")`` in a class body
    is the property ``sum(r.files for r in self.regions)`` with that docstring.
    """

    def __init__(self, items: str, attribute: str, doc: str) -> None:
        self.items = items
        self.attribute = attribute
        self.__doc__ = doc

    @overload
    def __get__(self, obj: None, owner: type[Any] | None = None) -> Total: ...

    @overload
    def __get__(self, obj: object, owner: type[Any] | None = None) -> int: ...

    def __get__(self, obj: object, owner: type[Any] | None = None) -> int | Total:
        if obj is None:
            return self
        total: int = sum(getattr(item, self.attribute) for item in getattr(obj, self.items))
        return total
