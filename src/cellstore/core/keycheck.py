"""Row-key design checks, pure and vectorized: findings, thresholds, summary, sampling.

:func:`analyze_keys` checks sampled row keys (and family and qualifier names) against the
HBase Reference Guide's schema-design rules and returns a :class:`KeyAdvice`: a
:class:`KeySummary` and :class:`KeyFinding` objects, each with a severity and its fix.
:class:`KeySampler` keeps a bounded, evenly spread sample of keys in arrival order (the
loader's tasks use it). No I/O here: :mod:`cellstore.loader.advise` reads inputs and
store files and calls into this module.

Checks (thresholds on :class:`AdviceThresholds`):

==================  ========  ==================================================
code                severity  when
==================  ========  ==================================================
hot-region          warning   one region gets more than 50% of the sampled keys
                              (of the cells, for a table), at least 1.5x the even
                              share, with more than one region
salt-skew           warning   one salt bucket gets more than 2x the even share
monotonic-keys      warning   >= 90% of neighbouring keys (input order) increase,
                              or decrease; not on salted tables (salting is the fix)
long-row-keys       warning   any sampled row key is longer than 100 bytes
long-family-name    info      a family name is longer than 8 bytes
many-families       info      more than 3 families
long-qualifiers     info      a qualifier is longer than 16 bytes
==================  ========  ==================================================

Distribution and order checks need at least 100 sampled keys (pairs).
"""

from __future__ import annotations

from collections.abc import Mapping as MappingABC
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.core.cells import MAX_ROW_LENGTH
from cellstore.core.codecs import binary_parts
from cellstore.core.keys import to_string_binary
from cellstore.core.regions import Region, region_index, regions_from_splits
from cellstore.core.results import JsonForm
from cellstore.errors import InvalidArgumentError

__all__ = [
    "AdviceSource",
    "AdviceThresholds",
    "KeyAdvice",
    "KeyFinding",
    "KeySampler",
    "KeySummary",
    "RegionShare",
    "Severity",
    "analyze_keys",
    "quantile_split_keys",
]

Severity = Literal["info", "warning"]
AdviceSource = Literal["input", "table", "load"]

_GUIDE: Final = "HBase Reference Guide"


@dataclass(frozen=True, kw_only=True)
class AdviceThresholds:
    """When a sample is a problem (the defaults follow the HBase Reference Guide).

    Attributes:
        hot_region_share: A region holding more than this share of the sampled keys (of
            the cells, for a table) is hot. With few regions the bar rises to 1.5 times
            the even share (75% with two regions), so an even split is never flagged.
        monotonic_share: Keys are monotonic when at least this share of the distinct
            neighbouring pairs (in input order) increase, or decrease.
        min_keys: Distribution and order findings need at least this many sampled keys
            (pairs, for the order check); smaller samples say nothing reliable.
        salt_skew_factor: A salt bucket holding more than this many times the even share
            (at most halfway between the even share and 100%) is skewed.
        max_row_key_bytes: Row keys longer than this are reported (the Guide: keep them
            "as short as is reasonable"; every cell stores its row key).
        max_family_bytes: Family names longer than this are reported (the Guide:
            "preferably one character").
        max_qualifier_bytes: Qualifiers longer than this are reported (the Guide: prefer
            short attribute names such as ``via``).
        max_families: More families than this are reported (the Guide: HBase "does not do
            well with anything above two or three column families").
    """

    hot_region_share: float = 0.5
    monotonic_share: float = 0.9
    min_keys: int = 100
    salt_skew_factor: float = 2.0
    max_row_key_bytes: int = 100
    max_family_bytes: int = 8
    max_qualifier_bytes: int = 16
    max_families: int = 3

    def __post_init__(self) -> None:
        for name in ("hot_region_share", "monotonic_share"):
            value = getattr(self, name)
            if not 0.0 < value <= 1.0:
                raise InvalidArgumentError(f"{name} must be in (0, 1], got {value}")
        if self.salt_skew_factor <= 1.0:
            raise InvalidArgumentError("salt_skew_factor must be greater than 1")
        for name in (
            "min_keys",
            "max_row_key_bytes",
            "max_family_bytes",
            "max_qualifier_bytes",
            "max_families",
        ):
            if getattr(self, name) < 1:
                raise InvalidArgumentError(f"{name} must be at least 1")

    def hot_share(self, regions: int) -> float:
        """The share above which one of ``regions`` regions counts as hot."""
        return max(self.hot_region_share, min(1.0, 1.5 / regions))

    def skewed_share(self, buckets: int) -> float:
        """The share above which one of ``buckets`` salt buckets counts as skewed."""
        even = 1.0 / buckets
        return min(even * self.salt_skew_factor, (1.0 + even) / 2)


@dataclass(frozen=True, kw_only=True)
class KeyFinding(JsonForm):
    """One problem found in the sampled keys, with the fix.

    Attributes:
        code: Stable identifier: ``hot-region``, ``salt-skew``, ``monotonic-keys``,
            ``long-row-keys``, ``long-family-name``, ``long-qualifiers``,
            ``many-families``.
        severity: ``warning`` (will hurt: hot-spotting, long keys) or ``info`` (worth
            knowing: names that cost space in HBase).
        message: What was found, with the numbers.
        fix: The suggested fix.
        details: The numbers behind the finding (JSON scalars and lists).
    """

    code: str
    severity: Severity
    message: str
    fix: str
    details: MappingABC[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class RegionShare(JsonForm):
    """How much of the sample (or of the table's cells) one region gets.

    Attributes:
        region: Region id (``planned-<n>`` for regions a ``--create`` would make).
        start: First row key (inclusive; empty = first).
        end: Row key after the region (exclusive; empty = last).
        keys: Sampled keys in the region.
        cells: The region's cells in the table (table advice), or None.
        share: Share of the sampled keys, or of the cells when ``cells`` is known.
    """

    json_digits: ClassVar[MappingABC[str, int]] = {"share": 4}

    region: str
    start: bytes
    end: bytes
    keys: int
    cells: int | None
    share: float


@dataclass(frozen=True, kw_only=True)
class KeySummary(JsonForm):
    """What was sampled.

    Attributes:
        sampled_keys: Row keys in the sample (with repeats).
        distinct_keys: Distinct row keys in the sample.
        min_length: Shortest key, in bytes (salt byte included).
        mean_length: Mean key length.
        max_length: Longest key.
        ordered_pairs: Neighbouring pairs of distinct keys in input order (None when the
            sample has no input order: store files are sorted). On a salted table the
            keys are compared without their salt byte.
        increasing_share: Share of those pairs that increase (None as above).
        regions: Distribution per region, in key order.
        salt_buckets: Share of sampled keys per salt bucket (salted tables), else empty.
        records_read: Input records read (input advice), or None.
        complete: Whether the sample covers the whole input (input advice).
    """

    json_keys = (
        "sampled_keys distinct_keys key_length ordered_pairs increasing_share regions "
        "salt_buckets records_read complete"
    )
    json_digits: ClassVar[MappingABC[str, int]] = {"increasing_share": 4}

    sampled_keys: int
    distinct_keys: int
    min_length: int
    mean_length: float
    max_length: int
    ordered_pairs: int | None
    increasing_share: float | None
    regions: tuple[RegionShare, ...]
    salt_buckets: tuple[float, ...] = ()
    records_read: int | None = None
    complete: bool = False

    def _json_value(self, name: str) -> Any:
        if name == "key_length":
            mean = round(self.mean_length, 2)
            return {"min": self.min_length, "mean": mean, "max": self.max_length}
        if name == "salt_buckets":
            return [round(s, 4) for s in self.salt_buckets]
        return super()._json_value(name)


@dataclass(frozen=True, kw_only=True)
class KeyAdvice(JsonForm):
    """The result of a key-design check.

    Attributes:
        table: The table the keys are for, if any.
        source: ``input`` (keys built from input records), ``table`` (sampled from store
            files) or ``load`` (sampled during a load).
        summary: What was sampled.
        findings: Problems, warnings first.
    """

    json_keys = "table source summary findings warnings"

    table: str | None
    source: AdviceSource
    summary: KeySummary
    findings: tuple[KeyFinding, ...]

    @property
    def warnings(self) -> tuple[KeyFinding, ...]:
        """The findings of severity ``warning``."""
        return tuple(f for f in self.findings if f.severity == "warning")

    def _json_value(self, name: str) -> Any:
        return len(self.warnings) if name == "warnings" else super()._json_value(name)


# ------------------------------------------------------------------------------ sampling
class KeySampler:
    """A systematic sample of row keys in arrival order, of bounded size.

    Keeps every ``stride``-th key (by position among all keys added); when more than twice
    ``capacity`` are held, the stride doubles and every other kept key goes. The sample
    stays in arrival order and evenly spread over everything added, whatever its length.
    Cost per batch: one ``take``.

    Args:
        capacity: Keys to keep (at least ``capacity``, at most twice it, once that many
            were added); 0 keeps nothing.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = max(0, int(capacity))
        self.stride = 1
        self.seen = 0
        self._keys: list[pa.Array] = []
        self._positions: list[np.ndarray] = []
        self._held = 0

    def add(self, keys: pa.Array | pa.ChunkedArray) -> None:
        """Offer the next keys (in arrival order)."""
        n = len(keys)
        if self.capacity == 0 or n == 0:
            self.seen += n
            return
        first = (-self.seen) % self.stride
        pos = np.arange(first, n, self.stride, dtype=np.int64)
        arr = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
        self._keys.append(arr.take(pa.array(pos)))
        self._positions.append(pos + self.seen)
        self._held += len(pos)
        self.seen += n
        if self._held > 2 * self.capacity:
            self._thin()

    def _thin(self) -> None:
        keys = pa.concat_arrays(self._keys)
        pos = np.concatenate(self._positions)
        while len(pos) > 2 * self.capacity:
            self.stride *= 2
            keep = np.flatnonzero(pos % self.stride == 0)
            keys, pos = keys.take(pa.array(keep)), pos[keep]
        self._keys, self._positions, self._held = [keys], [pos], len(pos)

    def sample(self) -> pa.Array:
        """The kept keys, in arrival order (binary)."""
        if not self._keys:
            return pa.array([], pa.binary())
        return pa.concat_arrays(self._keys) if len(self._keys) > 1 else self._keys[0]


def quantile_split_keys(keys: pa.Array, regions: int) -> list[bytes]:
    """Split keys cutting ``keys`` into ``regions`` ranges of equal numbers of distinct keys.

    Returns:
        Sorted, distinct split keys; fewer than ``regions - 1`` when the keys have fewer
        distinct values.
    """
    if regions <= 1 or len(keys) == 0:
        return []
    distinct = pc.unique(keys)
    ordered = distinct.take(pc.sort_indices(distinct))
    n = len(ordered)
    if n < 2:
        return []
    idx = np.unique((np.arange(1, regions) * n) // regions)
    return sorted({ordered[int(i)].as_py() for i in idx if 0 < i < n})


# ------------------------------------------------------------------------------ analysis
def _pct(x: float) -> str:
    return f"{x:.0%}" if x >= 0.1 else f"{x:.1%}"


def _order_counts(runs: Sequence[pa.Array]) -> tuple[int, int]:
    """Increasing and decreasing neighbouring pairs over every run (vectorized per run)."""
    inc = dec = 0
    for run in runs:
        n = len(run)
        if n < 2:
            continue
        later, earlier = run.slice(1), run.slice(0, n - 1)
        inc += int(pc.sum(pc.greater(later, earlier)).as_py() or 0)
        dec += int(pc.sum(pc.less(later, earlier)).as_py() or 0)
    return inc, dec


def _salt_fix(buckets: int | None) -> str:
    n = "N (e.g. 16)" if buckets is None else str(buckets)
    return (
        f"salt the row key (salt_buckets = {n}: a leading hash byte, one region per bucket), "
        'put a hash prefix on the leading field (hash = "md5_prefix"), reverse it if its '
        "fast-changing end is last (reverse = true), or lead time-series keys with an entity "
        f'id (user + reverse_timestamp) — {_GUIDE}, "Monotonically Increasing Row '
        'Keys/Timeseries Data"'
    )


def _monotonic_finding(
    inc: int, dec: int, thresholds: AdviceThresholds, salt: int | None
) -> KeyFinding | None:
    pairs = inc + dec
    if pairs < thresholds.min_keys:
        return None
    up, down = inc / pairs, dec / pairs
    if max(up, down) < thresholds.monotonic_share:
        return None
    increasing = up >= down
    share = up if increasing else down
    where = "last" if increasing else "first"
    what = "sequence numbers or timestamps" if increasing else "reverse timestamps"
    return KeyFinding(
        code="monotonic-keys",
        severity="warning",
        message=(
            f"row keys {'increase' if increasing else 'decrease'} in input order "
            f"({_pct(share)} of {pairs} neighbouring sampled pairs): if new records keep "
            f"getting {'larger' if increasing else 'smaller'} keys ({what}), every write "
            f"lands in the {where} region, which becomes a hot spot while the others idle"
        ),
        fix=_salt_fix(salt),
        details={
            "direction": "increasing" if increasing else "decreasing",
            "pairs": pairs,
            "share": round(share, 4),
        },
    )


def _region_shares(
    keys: pa.Array,
    regions: Sequence[Region],
    region_cells: Sequence[int] | None,
) -> tuple[RegionShare, ...]:
    idx = region_index(keys, [r.start for r in regions[1:]])
    counts = np.bincount(idx, minlength=len(regions)) if len(idx) else np.zeros(len(regions))
    if region_cells is not None:
        total = float(sum(region_cells))
        weights = [float(c) for c in region_cells]
    else:
        total = float(counts.sum())
        weights = [float(c) for c in counts]
    return tuple(
        RegionShare(
            region=r.id,
            start=r.start,
            end=r.end,
            keys=int(counts[i]),
            cells=None if region_cells is None else int(region_cells[i]),
            share=weights[i] / total if total else 0.0,
        )
        for i, r in enumerate(regions)
    )


def _hot_region_finding(
    shares: Sequence[RegionShare],
    measured: int,
    thresholds: AdviceThresholds,
    *,
    salt: int | None,
    monotonic: bool,
    of_cells: bool,
) -> KeyFinding | None:
    if len(shares) < 2 or measured < thresholds.min_keys:
        return None
    hot = max(shares, key=lambda s: s.share)
    limit = thresholds.hot_share(len(shares))
    if hot.share <= limit:
        return None
    what = "the table's cells" if of_cells else "the sampled row keys"
    span = f"[{to_string_binary(hot.start) or '-inf'}, {to_string_binary(hot.end) or '+inf'})"
    if monotonic or salt is None:
        fix = (
            "pre-split where the keys are: 'cellstore load --create --regions N' splits a "
            "new table at sampled key quantiles; split the hot region at its median key; "
            "or, if new keys keep landing in one place, " + _salt_fix(salt)
        )
    else:
        fix = (
            "a few salt buckets hold most keys: check for heavily repeated keys, or "
            "split the hot region at its median key"
        )
    return KeyFinding(
        code="hot-region",
        severity="warning",
        message=(
            f"{_pct(hot.share)} of {what} fall in region {hot.region} {span}, one of "
            f"{len(shares)} regions (hot above {_pct(limit)}): that region does most of "
            "the work of loads, compactions and scans"
        ),
        fix=fix,
        details={
            "region": hot.region,
            "share": round(hot.share, 4),
            "regions": len(shares),
            "limit": round(limit, 4),
        },
    )


def _salt_shares(keys: pa.Array, buckets: int) -> tuple[float, ...]:
    offsets, data = binary_parts(keys)
    starts = offsets[:-1][np.diff(offsets) > 0]
    if len(starts) == 0:
        return tuple(0.0 for _ in range(buckets))
    counts = np.bincount(data[starts], minlength=256)[:buckets]
    return tuple(float(c) / len(starts) for c in counts)


def _salt_finding(
    shares: Sequence[float], sampled: int, thresholds: AdviceThresholds
) -> KeyFinding | None:
    buckets = len(shares)
    if buckets < 2 or sampled < max(thresholds.min_keys, 10 * buckets):
        return None
    worst = int(np.argmax(shares))
    limit = thresholds.skewed_share(buckets)
    if shares[worst] <= limit:
        return None
    return KeyFinding(
        code="salt-skew",
        severity="warning",
        message=(
            f"salt bucket {worst} gets {_pct(shares[worst])} of the sampled keys "
            f"(even share {_pct(1 / buckets)}): the salt hashes the whole key, so a "
            "key that repeats often always lands in the same bucket"
        ),
        fix=(
            "make heavily repeated keys distinct (add a field that varies, e.g. a "
            "sequence or time field after the entity id), or pre-split the hot bucket's "
            "region further"
        ),
        details={
            "bucket": worst,
            "share": round(shares[worst], 4),
            "buckets": buckets,
            "limit": round(limit, 4),
        },
    )


def _long_keys_finding(
    lengths: np.ndarray, thresholds: AdviceThresholds, salt: int | None
) -> KeyFinding | None:
    limit = thresholds.max_row_key_bytes
    over = int((lengths > limit).sum())
    if over == 0:
        return None
    n = len(lengths)
    salt_note = " (the 1-byte salt included)" if salt is not None else ""
    return KeyFinding(
        code="long-row-keys",
        severity="warning",
        message=(
            f"{over} of {n} sampled row keys ({_pct(over / n)}) are longer than {limit} "
            f"bytes{salt_note}, the longest {int(lengths.max())} bytes: every cell stores "
            "its row key, so long keys cost storage, memory and comparisons"
        ),
        fix=(
            "keep row keys short: replace long fields by a fixed 16-byte hash "
            '(hash = "md5") or a hash prefix, encode numbers as fixed-width integers '
            "instead of text, and move descriptive data into columns — "
            f'{_GUIDE}, "Try to minimize row and column sizes"'
        ),
        details={"over": over, "sampled": n, "limit": limit, "max": int(lengths.max())},
    )


def _name_findings(
    families: Sequence[str], qualifiers: Sequence[bytes], thresholds: AdviceThresholds
) -> list[KeyFinding]:
    out: list[KeyFinding] = []
    long_families = [f for f in families if len(f.encode("utf-8")) > thresholds.max_family_bytes]
    if long_families:
        out.append(
            KeyFinding(
                code="long-family-name",
                severity="info",
                message=(
                    f"family name(s) {', '.join(repr(f) for f in long_families)} are longer "
                    f"than {thresholds.max_family_bytes} bytes: HBase repeats the family name "
                    "in every cell's key (cellstore keeps it in the directory name, so here "
                    "it costs nothing, but not in HBase or an export to it)"
                ),
                fix=(
                    f"use short family names, preferably one character (e.g. 'd') — "
                    f'{_GUIDE}, "Try to minimize row and column sizes"'
                ),
                details={"families": list(long_families), "limit": thresholds.max_family_bytes},
            )
        )
    if len(families) > thresholds.max_families:
        out.append(
            KeyFinding(
                code="many-families",
                severity="info",
                message=(
                    f"{len(families)} column families: HBase flushes and compacts a region's "
                    "families together, so more than two or three cost I/O there (in cellstore "
                    "every family is a separate set of files per region)"
                ),
                fix=(
                    "group columns that are read together into one family; keep a second or "
                    f'third only for data read on its own — {_GUIDE}, "On the number of '
                    'column families"'
                ),
                details={"families": len(families), "limit": thresholds.max_families},
            )
        )
    limit = thresholds.max_qualifier_bytes
    long_quals = sorted({q for q in qualifiers if len(q) > limit}, key=lambda q: (-len(q), q))
    if long_quals:
        examples = [to_string_binary(q) for q in long_quals[:5]]
        out.append(
            KeyFinding(
                code="long-qualifiers",
                severity="info",
                message=(
                    f"{len(long_quals)} qualifier(s) are longer than {limit} bytes (e.g. "
                    f"{', '.join(repr(e) for e in examples)}): every cell stores its qualifier "
                    "(Parquet's dictionary encoding keeps repeated ones cheap here; HBase "
                    "stores it in full in every cell)"
                ),
                fix=(
                    f"prefer short qualifiers (e.g. 'via' rather than "
                    f"'myVeryImportantAttribute') — {_GUIDE}, \"Try to minimize row and "
                    'column sizes"'
                ),
                details={"count": len(long_quals), "limit": limit, "examples": examples},
            )
        )
    return out


def analyze_keys(
    samples: Sequence[pa.Array],
    *,
    input_order: bool,
    regions: Sequence[Region] = (),
    region_cells: Sequence[int] | None = None,
    salt_buckets: int | None = None,
    families: Sequence[str] = (),
    qualifiers: Sequence[bytes] = (),
    thresholds: AdviceThresholds | None = None,
    table: str | None = None,
    source: AdviceSource = "input",
    records_read: int | None = None,
    complete: bool = False,
) -> KeyAdvice:
    """Check sampled row keys (and names) against the row-key design rules; pure.

    Args:
        samples: Row keys (binary, salt byte included), one array per run of input order
            (a part of the input); keys of different runs are never compared as
            neighbours.
        input_order: Whether each sample is in input order (False for keys read from
            sorted store files: the monotonic check is skipped). On a salted table the
            order is measured without the salt byte and not reported as a problem:
            salting is the fix (each bucket's region takes its share of the appends).
        regions: The regions keys are routed to (empty: one region).
        region_cells: Cells per region (a table's exact distribution); the hot-region
            check then judges cells instead of sampled keys.
        salt_buckets: The table's salt buckets (the first key byte is the bucket).
        families: Family names to check.
        qualifiers: Qualifiers to check (distinct or not).
        thresholds: When a sample is a problem (default :class:`AdviceThresholds`).
        table: Table name for the report.
        source: Where the keys came from (for the report).
        records_read: Input records read, for the summary.
        complete: Whether the sample is the whole input.

    Returns:
        The advice: summary and findings, warnings first.
    """
    th = thresholds or AdviceThresholds()
    runs = [s.cast(pa.binary()) for s in samples if len(s)]
    keys = pa.concat_arrays(runs) if runs else pa.array([], pa.binary())
    n = len(keys)
    lengths = (
        np.asarray(pc.binary_length(keys).to_numpy(zero_copy_only=False), dtype=np.int64)
        if n
        else np.zeros(0, dtype=np.int64)
    )
    distinct = len(pc.unique(keys)) if n else 0
    salted = salt_buckets is not None and salt_buckets > 1
    inc = dec = 0
    if input_order:  # under the salt byte: the salt is the fix, not part of the order
        inc, dec = _order_counts(
            [pc.binary_slice(r, 1, MAX_ROW_LENGTH + 1) for r in runs] if salted else runs
        )
    pairs = inc + dec
    regs = tuple(regions) or regions_from_splits([])
    shares = _region_shares(keys, regs, region_cells)
    buckets = _salt_shares(keys, salt_buckets) if salt_buckets and salt_buckets > 1 else ()
    summary = KeySummary(
        sampled_keys=n,
        distinct_keys=distinct,
        min_length=int(lengths.min()) if n else 0,
        mean_length=float(lengths.mean()) if n else 0.0,
        max_length=int(lengths.max()) if n else 0,
        ordered_pairs=pairs if input_order else None,
        increasing_share=(inc / pairs if pairs else None) if input_order else None,
        regions=shares,
        salt_buckets=buckets,
        records_read=records_read,
        complete=complete,
    )
    findings: list[KeyFinding] = []
    monotonic = (
        _monotonic_finding(inc, dec, th, salt_buckets) if input_order and not salted else None
    )
    measured = int(sum(region_cells)) if region_cells is not None else n
    candidates = [
        _hot_region_finding(
            shares,
            measured,
            th,
            salt=salt_buckets,
            monotonic=monotonic is not None,
            of_cells=region_cells is not None,
        ),
        _salt_finding(buckets, n, th),
        monotonic,
        _long_keys_finding(lengths, th, salt_buckets) if n else None,
    ]
    findings += [f for f in candidates if f is not None]
    findings += _name_findings(families, qualifiers, th)
    findings.sort(key=lambda f: f.severity != "warning")
    return KeyAdvice(table=table, source=source, summary=summary, findings=tuple(findings))
