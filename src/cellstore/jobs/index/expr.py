"""Functional index expressions: a small, safe parser and a vectorized evaluator.

An expression computes one index part from a data row's columns and row-key fields, as a
Phoenix functional index does (``CREATE INDEX ... ON t (UPPER(name))``). The grammar (no
``eval``: a recursive-descent parser over this grammar only)::

    expr     := additive ( "||" additive )*          concatenation (lowest precedence)
    additive := term ( ("+" | "-") term )*
    term     := unary ( ("*" | "/") unary )*
    unary    := "-" unary | primary
    primary  := NUMBER | 'text' | "(" expr ")"
              | CODEC "(" family:qualifier ")"        a column decoded with a value codec
              | KEY "(" field ")"                     a row-key field (the row-key spec)
              | UPPER "(" expr ")" | LOWER "(" expr ")"
              | SUBSTR "(" expr "," INTEGER [ "," INTEGER ] ")"

Function and codec names are case-insensitive; ``''`` inside a text literal is a quote.
Types (:class:`~cellstore.jobs.index.keys.IndexType`): ``UPPER``/``LOWER`` take and give
``string``; ``SUBSTR(s, start, length)`` takes ``string`` or ``bytes`` and gives the same
(``start`` is 1-based as in Phoenix and SQL, 0 counts as 1, a negative ``start``
counts from the end, -1 being the last; the window ``length`` long from there is cut to
the text; characters for strings, bytes for bytes); ``||`` joins strings (numbers in decimal form,
booleans as ``true``/``false``) and gives ``string`` (``bytes`` when any operand is bytes);
``+``, ``-``, ``*`` on integers give ``int64`` (wrapping like Java ``long``), on any float
``float64``; ``/`` always gives ``float64``. A null input (absent column, undecodable
value) gives null: the row is not indexed.

Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import pyarrow as pa
import pyarrow.compute as pc

from cellstore.core.codecs import Codec
from cellstore.core.keys import split_column
from cellstore.errors import InvalidArgumentError
from cellstore.jobs.index.keys import IndexType

__all__ = [
    "FUNCTIONS",
    "Call",
    "Column",
    "Expr",
    "KeyRef",
    "Literal",
    "Operator",
    "columns_of",
    "env_key",
    "evaluate",
    "key_fields_of",
    "parse_expression",
    "type_of",
]

#: Functions an expression may call.
FUNCTIONS: Final = ("UPPER", "LOWER", "SUBSTR")
_NUMERIC: Final = frozenset(
    t for t in IndexType if t not in (IndexType.STRING, IndexType.BYTES, IndexType.BOOLEAN)
)
_FLOATS: Final = frozenset({IndexType.FLOAT32, IndexType.FLOAT64})
_TOKEN: Final = re.compile(
    r"\s*(?:(?P<num>\d+\.\d*(?:[eE][-+]?\d+)?|\d+(?:[eE][-+]?\d+)?)|(?P<str>'(?:[^']|'')*')"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<op>\|\||[-+*/(),]))"
)


@dataclass(frozen=True)
class Column:
    """A column decoded with a value codec: ``CODEC(family:qualifier)``."""

    column: str
    codec: Codec

    def __str__(self) -> str:
        return f"{self.codec.value}({self.column})"


@dataclass(frozen=True)
class KeyRef:
    """A field of the data table's row-key spec: ``key(field)``."""

    field: str

    def __str__(self) -> str:
        return f"key({self.field})"


@dataclass(frozen=True)
class Literal:
    """A text, integer or float constant."""

    value: str | int | float

    def __str__(self) -> str:
        if isinstance(self.value, str):
            return "'" + self.value.replace("'", "''") + "'"
        return repr(self.value)


@dataclass(frozen=True)
class Call:
    """A function call (:data:`FUNCTIONS`)."""

    func: str
    args: tuple[Expr, ...]

    def __str__(self) -> str:
        return f"{self.func}({', '.join(map(str, self.args))})"


@dataclass(frozen=True)
class Operator:
    """A binary operator: ``||``, ``+``, ``-``, ``*`` or ``/``."""

    op: str
    left: Expr
    right: Expr

    def __str__(self) -> str:
        def side(e: Expr) -> str:
            return f"({e})" if isinstance(e, Operator) else str(e)

        return f"{side(self.left)} {self.op} {side(self.right)}"


Expr = Column | KeyRef | Literal | Call | Operator


# ------------------------------------------------------------------------------ parsing
class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, what: str) -> InvalidArgumentError:
        return InvalidArgumentError(
            f"index expression {self.text!r}: {what} at position {self.pos}"
        )

    def peek(self) -> tuple[str, str] | None:
        m = _TOKEN.match(self.text, self.pos)
        if m is None or m.lastgroup is None:
            return None
        return m.lastgroup, m.group(m.lastgroup)

    def take(self) -> tuple[str, str]:
        m = _TOKEN.match(self.text, self.pos)
        if m is None or m.lastgroup is None:
            rest = self.text[self.pos :].strip()
            raise self.fail("unexpected text" if rest else "unexpected end")
        self.pos = m.end()
        return m.lastgroup, m.group(m.lastgroup)

    def expect(self, op: str) -> None:
        kind, tok = self.take()
        if (kind, tok) != ("op", op):
            raise self.fail(f"expected {op!r}, found {tok!r}")

    def at_op(self, *ops: str) -> str | None:
        tok = self.peek()
        if tok is not None and tok[0] == "op" and tok[1] in ops:
            return tok[1]
        return None

    def done(self) -> bool:
        return not self.text[self.pos :].strip()

    # grammar
    def expr(self) -> Expr:
        return self.left_assoc(("||",), self.additive)

    def additive(self) -> Expr:
        return self.left_assoc(("+", "-"), self.term)

    def term(self) -> Expr:
        return self.left_assoc(("*", "/"), self.unary)

    def left_assoc(self, ops: tuple[str, ...], operand: Callable[[], Expr]) -> Expr:
        """``operand (op operand)*`` for ``op`` in ``ops``, grouped from the left."""
        node = operand()
        while (op := self.at_op(*ops)) is not None:
            self.take()
            node = Operator(op, node, operand())
        return node

    def unary(self) -> Expr:
        if self.at_op("-"):
            self.take()
            inner = self.unary()
            if isinstance(inner, Literal) and not isinstance(inner.value, str):
                return Literal(-inner.value)
            return Operator("-", Literal(0), inner)
        return self.primary()

    def raw_argument(self) -> str:
        """The text up to the next ``)`` (a column or field name), consuming the ``)``."""
        end = self.text.find(")", self.pos)
        if end < 0:
            raise self.fail("missing ')'")
        arg = self.text[self.pos : end].strip()
        self.pos = end + 1
        return arg

    def primary(self) -> Expr:
        kind, tok = self.take()
        if kind == "num":
            return Literal(float(tok) if any(c in tok for c in ".eE") else int(tok))
        if kind == "str":
            return Literal(tok[1:-1].replace("''", "'"))
        if kind == "op" and tok == "(":
            node = self.expr()
            self.expect(")")
            return node
        if kind != "name":
            raise self.fail(f"unexpected {tok!r}")
        name = tok.upper()
        self.expect("(")
        if name == "KEY":
            field = self.raw_argument()
            if not field:
                raise self.fail("key() needs a row-key field name")
            return KeyRef(field)
        if name in FUNCTIONS:
            args = [self.expr()]
            while self.at_op(","):
                self.take()
                args.append(self.expr())
            self.expect(")")
            return _check_call(Call(name, tuple(args)), self)
        try:
            codec = Codec.parse(tok.lower())
        except (InvalidArgumentError, ValueError):
            have = ", ".join([*FUNCTIONS, "KEY", *(c.value for c in Codec)])
            raise self.fail(f"unknown function {tok!r} (known: {have})") from None
        fam, qual = split_column(self.raw_argument())
        return Column(f"{fam}:{qual.decode('utf-8')}", codec)


def _check_call(call: Call, parser: _Parser) -> Call:
    n = len(call.args)
    if call.func in ("UPPER", "LOWER") and n != 1:
        raise parser.fail(f"{call.func} takes one argument")
    if call.func == "SUBSTR":
        if n not in (2, 3):
            raise parser.fail("SUBSTR takes (text, start[, length])")
        for arg in call.args[1:]:
            if not isinstance(arg, Literal) or not isinstance(arg.value, int):
                raise parser.fail("SUBSTR's start and length are integer constants")
        if n == 3 and isinstance(call.args[2], Literal) and int(call.args[2].value) < 0:
            raise parser.fail("SUBSTR's length cannot be negative")
    return call


def parse_expression(text: str) -> Expr:
    """Parse an index expression (grammar in the module docs).

    Raises:
        InvalidArgumentError: text outside the grammar, naming the position.
    """
    if not isinstance(text, str) or not text.strip():
        raise InvalidArgumentError("an index expression cannot be empty")
    parser = _Parser(text)
    node = parser.expr()
    if not parser.done():
        raise parser.fail(f"unexpected {parser.text[parser.pos :].strip()!r}")
    return node


def columns_of(node: Expr) -> tuple[Column, ...]:
    """The column references of ``node``, in order of appearance (no duplicates)."""
    if isinstance(node, Column):
        return (node,)
    if isinstance(node, Call):
        return tuple(dict.fromkeys(c for a in node.args for c in columns_of(a)))
    if isinstance(node, Operator):
        return tuple(dict.fromkeys([*columns_of(node.left), *columns_of(node.right)]))
    return ()


def key_fields_of(node: Expr) -> tuple[str, ...]:
    """The row-key fields ``node`` reads, in order of appearance (no duplicates)."""
    if isinstance(node, KeyRef):
        return (node.field,)
    if isinstance(node, Call):
        return tuple(dict.fromkeys(f for a in node.args for f in key_fields_of(a)))
    if isinstance(node, Operator):
        return tuple(dict.fromkeys([*key_fields_of(node.left), *key_fields_of(node.right)]))
    return ()


# ------------------------------------------------------------------------------- typing
def type_of(node: Expr, key_types: Mapping[str, IndexType]) -> IndexType:
    """The type of ``node``'s value (rules in the module docs).

    Args:
        node: The expression.
        key_types: The type of every row-key field.

    Raises:
        InvalidArgumentError: an operand of the wrong type, or an unknown key field.
    """
    if isinstance(node, Column):
        return IndexType.of_codec(node.codec)
    if isinstance(node, KeyRef):
        if node.field not in key_types:
            raise InvalidArgumentError(f"key field {node.field!r} is not in the row key")
        return key_types[node.field]
    if isinstance(node, Literal):
        if isinstance(node.value, str):
            return IndexType.STRING
        return IndexType.INT64 if isinstance(node.value, int) else IndexType.FLOAT64
    if isinstance(node, Call):
        arg = type_of(node.args[0], key_types)
        if node.func in ("UPPER", "LOWER"):
            if arg is not IndexType.STRING:
                raise InvalidArgumentError(f"{node}: {node.func} takes a string, not {arg.value}")
            return IndexType.STRING
        if not arg.is_text:
            raise InvalidArgumentError(f"{node}: SUBSTR takes a string or bytes, not {arg.value}")
        return arg
    left, right = type_of(node.left, key_types), type_of(node.right, key_types)
    if node.op == "||":
        if IndexType.BYTES in (left, right):
            return IndexType.BYTES
        return IndexType.STRING
    for side in (left, right):
        if side not in _NUMERIC:
            raise InvalidArgumentError(f"{node}: {node.op} takes numbers, not {side.value}")
    if node.op == "/" or left in _FLOATS or right in _FLOATS:
        return IndexType.FLOAT64
    return IndexType.INT64


# ----------------------------------------------------------------------------- evaluation
def env_key(ref: Column | KeyRef) -> str:
    """The name an input of :func:`evaluate` goes by: ``CODEC(f:q)`` or ``key(field)``."""
    return str(ref)


def _as_text(values: pa.Array, typ: IndexType, want_bytes: bool) -> pa.Array:
    if typ is IndexType.BOOLEAN:
        values = pc.if_else(values, "true", "false")
    elif typ is not IndexType.STRING and typ is not IndexType.BYTES:
        values = pc.cast(values, pa.string())
    target = pa.binary() if want_bytes else pa.string()
    if values.type != target:
        values = pc.cast(values, target)
    return values


def _substr(values: pa.Array, typ: IndexType, start: int, length: int | None) -> pa.Array:
    begin = start - 1 if start > 0 else start  # 1-based; 0 is the first, as in Phoenix
    stop: int | None = None
    if length is not None:
        stop = begin + length
        if begin < 0 <= stop:
            stop = None
    if typ is IndexType.STRING:
        out: pa.Array = pc.utf8_slice_codeunits(values, start=begin, stop=stop)
    else:
        out = pc.binary_slice(values, start=begin, stop=stop)
    return out


def evaluate(
    node: Expr, inputs: Mapping[str, pa.Array], key_types: Mapping[str, IndexType], n: int
) -> pa.Array:
    """The value of ``node`` for ``n`` rows, vectorized (null where an input is null).

    Args:
        node: The expression.
        inputs: Per :func:`env_key`, the decoded values of every column and key field the
            expression reads (arrays of length ``n``).
        key_types: The type of every row-key field.
        n: The number of rows.

    Returns:
        An array of :func:`type_of`'s Arrow type.
    """
    typ = type_of(node, key_types)
    if isinstance(node, Column | KeyRef):
        return pc.cast(inputs[env_key(node)], typ.arrow_type)
    if isinstance(node, Literal):
        return pa.array([node.value] * n, typ.arrow_type)
    if isinstance(node, Call):
        arg_type = type_of(node.args[0], key_types)
        arg = evaluate(node.args[0], inputs, key_types, n)
        if node.func == "UPPER":
            return pc.utf8_upper(arg)
        if node.func == "LOWER":
            return pc.utf8_lower(arg)
        ints = [a.value for a in node.args[1:] if isinstance(a, Literal)]
        return _substr(arg, arg_type, int(ints[0]), int(ints[1]) if len(ints) > 1 else None)
    lt, rt = type_of(node.left, key_types), type_of(node.right, key_types)
    left = evaluate(node.left, inputs, key_types, n)
    right = evaluate(node.right, inputs, key_types, n)
    if node.op == "||":
        want_bytes = typ is IndexType.BYTES
        sep: Any = b"" if want_bytes else ""
        joined: pa.Array = pc.binary_join_element_wise(
            _as_text(left, lt, want_bytes), _as_text(right, rt, want_bytes), sep
        )
        return joined
    left, right = pc.cast(left, typ.arrow_type), pc.cast(right, typ.arrow_type)
    func = {"+": pc.add, "-": pc.subtract, "*": pc.multiply, "/": pc.divide}[node.op]
    out: pa.Array = func(left, right)
    return out
