"""HBase's filter language (``ParseFilter``), for the filters cellstore supports.

The HBase shell and Thrift/REST gateways take filters as text, e.g.::

    SingleColumnValueFilter('basic', 'views', >=, 'binary:100', true, true)
    ColumnPrefixFilter('na') AND KeyOnlyFilter()
    ValueFilter(=, 'substring:error')
    TimestampsFilter(1000, 2000)

:func:`parse_filter` turns such text into cellstore filters. Supported: the five filters of
:mod:`cellstore.core.filters`, combined with ``AND``; HBase's comparators ``binary:``,
``binaryprefix:``, ``substring:`` and ``regexstring:``; string literals in single quotes
(``''`` inside is a quote). ``OR``, ``SKIP``, ``WHILE`` and other filters are refused with
a clear error.

Our extension: typed comparators compare numbers, ``'double:120.0'``, ``'long:-5'``,
``'int:7'``, ``'short:1'``, ``'float:0.5'``, ``'boolean:true'`` (or any alias of those
types: ``int64:``, ``float64:``...; :data:`~cellstore.core.comparators.TYPED_COMPARATORS`).
``SingleColumnValueFilter('d', 'arr_delay', >, 'double:120.0')`` keeps the rows whose
``d:arr_delay``, decoded with the codec the table recorded for it, is above 120. HBase's
own comparator types are matched exactly as HBase does (``binary:`` compares bytes), and
none of them is a type name, so HBase filter text means here what it means in HBase.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from cellstore.core.comparators import TYPED_COMPARATORS
from cellstore.core.filters import (
    ColumnPrefixFilter,
    Filter,
    KeyOnlyFilter,
    SingleColumnValueFilter,
    TimestampsFilter,
    ValueFilter,
)
from cellstore.errors import InvalidArgumentError

__all__ = ["parse_filter"]

_TOKEN: Final = re.compile(
    r"""\s*(?:
        (?P<string>'(?:[^']|'')*')
      | (?P<op><=|>=|!=|=|<|>)
      | (?P<punct>[(),])
      | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<number>-?[0-9]+)
    )""",
    re.VERBOSE,
)

_COMPARATORS: Final = {
    "binary": "binary",
    "binaryprefix": "prefix",
    "substring": "substring",
    "regexstring": "regex",
}


@dataclass(frozen=True)
class _Tok:
    kind: str
    text: str
    pos: int


def _tokens(text: str) -> list[_Tok]:
    out = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise InvalidArgumentError(f"filter: cannot read {text[pos:]!r} (at {pos})")
        kind = m.lastgroup or ""
        out.append(_Tok(kind, m.group(kind), m.start(kind)))
        pos = m.end()
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokens(text)
        self.i = 0

    def peek(self) -> _Tok | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, kind: str | None = None, text: str | None = None) -> _Tok:
        tok = self.peek()
        if tok is None:
            raise InvalidArgumentError(f"filter: unexpected end of {self.text!r}")
        if (kind and tok.kind != kind) or (text and tok.text != text):
            want = text or kind
            raise InvalidArgumentError(f"filter: expected {want} at {tok.pos}, got {tok.text!r}")
        self.i += 1
        return tok

    def parse(self) -> tuple[Filter, ...]:
        filters = [self.one()]
        while (tok := self.peek()) is not None:
            word = tok.text.upper()
            if tok.kind != "word" or word != "AND":
                if word in ("OR", "SKIP", "WHILE"):
                    raise InvalidArgumentError(f"filter: {word} is not supported (only AND)")
                raise InvalidArgumentError(f"filter: expected AND at {tok.pos}, got {tok.text!r}")
            self.i += 1
            filters.append(self.one())
        return tuple(filters)

    def one(self) -> Filter:
        tok = self.peek()
        if tok is not None and tok.text == "(":
            self.take(text="(")
            inner = self.parse_until_close()
            return inner
        name = self.take("word").text
        self.take(text="(")
        args: list[_Tok] = []
        while (tok := self.peek()) is not None and tok.text != ")":
            args.append(self.take())
            if (nxt := self.peek()) is not None and nxt.text == ",":
                self.take(text=",")
        self.take(text=")")
        return _build(name, args)

    def parse_until_close(self) -> Filter:
        # Parenthesised groups hold a single filter here (AND chains are flat).
        f = self.one()
        if (tok := self.peek()) is not None and tok.kind == "word" and tok.text.upper() == "AND":
            raise InvalidArgumentError("filter: write A AND B without parentheses")
        self.take(text=")")
        return f


def _string(tok: _Tok) -> str:
    if tok.kind != "string":
        raise InvalidArgumentError(f"filter: expected a quoted string at {tok.pos}")
    return tok.text[1:-1].replace("''", "'")


def _bool(tok: _Tok) -> bool:
    word = tok.text.lower()
    if tok.kind != "word" or word not in ("true", "false"):
        raise InvalidArgumentError(f"filter: expected true or false at {tok.pos}")
    return word == "true"


def _comparator(tok: _Tok) -> tuple[str, str]:
    text = _string(tok)
    kind, sep, operand = text.partition(":")
    name = kind.lower()
    if sep and name in TYPED_COMPARATORS:
        return name, operand
    if not sep or name not in _COMPARATORS:
        raise InvalidArgumentError(
            f"filter: comparator {text!r} must start with binary:, binaryprefix:, "
            "substring: or regexstring: (HBase's), or a value type for a numeric comparison "
            "(ours): long:, int:, short:, double:, float:, boolean:"
        )
    return _COMPARATORS[name], operand


def _arity(name: str, args: list[_Tok], *counts: int) -> None:
    if len(args) not in counts:
        want = " or ".join(str(c) for c in counts)
        raise InvalidArgumentError(f"filter: {name} takes {want} arguments, got {len(args)}")


def _build(name: str, args: list[_Tok]) -> Filter:
    if name == "SingleColumnValueFilter":
        _arity(name, args, 4, 6)
        comparator, operand = _comparator(args[3])
        if args[2].kind != "op":
            raise InvalidArgumentError(f"filter: expected a compare operator at {args[2].pos}")
        return SingleColumnValueFilter(
            f"{_string(args[0])}:{_string(args[1])}",
            args[2].text,
            operand,
            comparator=comparator,
            filter_if_missing=_bool(args[4]) if len(args) == 6 else False,
            latest_version_only=_bool(args[5]) if len(args) == 6 else True,
        )
    if name == "ValueFilter":
        _arity(name, args, 2)
        comparator, operand = _comparator(args[1])
        if args[0].kind != "op":
            raise InvalidArgumentError(f"filter: expected a compare operator at {args[0].pos}")
        return ValueFilter(args[0].text, operand, comparator=comparator)
    if name == "ColumnPrefixFilter":
        _arity(name, args, 1)
        return ColumnPrefixFilter(_string(args[0]))
    if name == "KeyOnlyFilter":
        _arity(name, args, 0, 1)
        return KeyOnlyFilter(len_as_value=_bool(args[0]) if args else False)
    if name == "TimestampsFilter":
        stamps = []
        for tok in args:
            if tok.kind != "number":
                raise InvalidArgumentError(f"filter: expected a timestamp at {tok.pos}")
            stamps.append(int(tok.text))
        return TimestampsFilter(stamps)
    raise InvalidArgumentError(
        f"filter: {name} is not supported (supported: SingleColumnValueFilter, ValueFilter, "
        "ColumnPrefixFilter, KeyOnlyFilter, TimestampsFilter)"
    )


def parse_filter(text: str) -> tuple[Filter, ...]:
    """Filters from HBase filter-language text; all must pass (``AND``).

    Raises:
        InvalidArgumentError: naming the position and the problem.
    """
    if not text.strip():
        raise InvalidArgumentError("filter: empty filter text")
    return _Parser(text).parse()
