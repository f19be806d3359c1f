"""Plain-text rendering shared by ``describe()``'s ``str`` and the CLI's text output.

HBase-shell conventions: families as ``{NAME => 'cf', VERSIONS => '3', ...}``, TTLs as
``PrettyPrinter`` shows them, timestamps as ISO-8601 UTC, byte counts for people.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from cellstore.core.family import FOREVER, Family


def plural(n: int, word: str, plural_form: str | None = None) -> str:
    """``n`` with ``word``, in the plural unless ``n`` is 1.

    >>> plural(1, "file"), plural(2, "family", "families")
    ('1 file', '2 families')
    """
    return f"{n} {word}" if n == 1 else f"{n} {plural_form or word + 's'}"


def human_bytes(n: float) -> str:
    """A byte count for people: ``512 B``, ``1.5 KiB`` ... ``3.2 GiB``."""
    value = float(n)
    for unit in ("B", "KiB", "MiB"):
        if value < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


def human_ttl(seconds: int | None) -> str:
    """A TTL as HBase's ``PrettyPrinter`` shows it.

    >>> human_ttl(None)
    'FOREVER'
    >>> human_ttl(90061)
    '90061 SECONDS (1 DAY 1 HOUR 1 MINUTE 1 SECOND)'
    """
    if seconds is None or seconds == FOREVER:
        return "FOREVER"
    if seconds < 60:
        return f"{seconds} SECOND" + ("" if seconds == 1 else "S")
    parts = []
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    for n, unit in ((days, "DAY"), (hours, "HOUR"), (minutes, "MINUTE"), (secs, "SECOND")):
        if n:
            parts.append(f"{n} {unit}" + ("" if n == 1 else "S"))
    return f"{seconds} SECONDS ({' '.join(parts)})"


def family_text(family: Family) -> str:
    """A family as ``describe`` in the HBase shell prints it.

    >>> family_text(Family(name="cf"))  # doctest: +NORMALIZE_WHITESPACE
    "{NAME => 'cf', VERSIONS => '3', MIN_VERSIONS => '0', TTL => 'FOREVER',
      KEEP_DELETED_CELLS => 'FALSE', COMPRESSION => 'ZSTD', BLOOMFILTER => 'ROW',
      BLOCKSIZE => '65536'}"
    """
    items = {
        "NAME": family.name,
        "VERSIONS": str(family.max_versions),
        "MIN_VERSIONS": str(family.min_versions),
        "TTL": human_ttl(family.ttl),
        "KEEP_DELETED_CELLS": family.keep_deleted_cells.value.upper(),
        "COMPRESSION": family.compression.upper(),
        "BLOOMFILTER": "ROW" if family.bloom_filter else "NONE",
        "BLOCKSIZE": str(family.block_size),
    }
    if family.layout != "auto":  # cellstore's store-file layout (docs/format.md 14.1)
        items["LAYOUT"] = family.layout.upper()
    return hbase_map(items)


def hbase_map(items: Mapping[str, str]) -> str:
    """``{K => 'v', ...}`` as the HBase shell prints attribute maps."""
    return "{" + ", ".join(f"{k} => '{v}'" for k, v in items.items()) + "}"


def format_ts(ms: int) -> str:
    """Milliseconds since the epoch as ISO-8601 UTC.

    >>> format_ts(0)
    '1970-01-01T00:00:00.000Z'
    """
    when = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def summary_text(summary: Mapping[str, Any]) -> str:
    """A commit summary as ``key=value, ...`` (non-strings as compact JSON)."""
    parts = []
    for k, v in summary.items():
        text = v if isinstance(v, str) else json.dumps(v, separators=(",", ":"))
        parts.append(f"{k}={text}")
    return ", ".join(parts)


def grid(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    """Left-aligned columns separated by two spaces, a header line first.

    >>> grid(["A", "BB"], [["x", 1]])
    ['A  BB', 'x  1']
    """
    cells = [[str(h) for h in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]


def shorten(text: str, width: int = 40) -> str:
    """``text`` quoted as ``repr`` does, cut to ``width`` characters with an ellipsis.

    For error messages that show an offending value without flooding the line.

    >>> shorten("517.0")
    "'517.0'"
    >>> shorten("x" * 50, width=10)
    "'xxxxxxxxx…'"
    """
    if len(text) > width:
        text = text[: width - 1] + "…"
    return repr(text)


def did_you_mean(word: str, known: Iterable[str], *, cutoff: float = 0.6) -> str:
    """``" (did you mean 'x'?)"`` naming the closest of ``known`` to ``word``, or ``""``.

    >>> did_you_mean("demo:webtabel", ["demo:webtable", "demo:users"])
    " (did you mean 'demo:webtable'?)"
    >>> did_you_mean("zzz", ["demo:users"])
    ''
    """
    close = difflib.get_close_matches(word, list(known), n=1, cutoff=cutoff)
    return f" (did you mean {close[0]!r}?)" if close else ""
