"""What a compaction writes: HBase's compaction matchers over merged cells, vectorized (R13).

A compaction merges some store files of one region and family and writes the cells that
HBase's ``CompactionScanQueryMatcher`` keeps:

* **retain deletes** (a minor compaction of a strict subset of the store's files, R13.2):
  every delete marker is kept (so it still masks cells in files outside the compaction),
  except markers already covered by a tracked DeleteFamily or, for column markers, by a
  tracked DeleteColumn of the same column (R13.7); Puts masked by markers are dropped, and
  so are versions past the family's VERSIONS and expired cells beyond MIN_VERSIONS (R8);
* **drop deletes** (a major compaction, or any compaction of all files, R13.3, R13.4):
  as above, and the markers themselves go, unless ``time_to_purge_deletes_ms`` keeps recent
  ones (R13.6); with KEEP_DELETED_CELLS TRUE (or TTL and an unexpired marker) markers are
  not applied but counted in place with the versions, and dropped once older than every
  Put of the compaction (R9.3-R9.5).

As in :mod:`~cellstore.core.semantics.resolve`, HBase's walk (a delete tracker, a wildcard
column tracker, "seek to the next column") becomes whole-array passes; ``tests/model.py``
(``compact``) is the literal cell-by-cell oracle the property tests compare with. The
equivalences used (each covered by those tests):

* markers precede every cell they mask (R2.2), so "tracked so far" is "tracked in the
  row/column", as for reads;
* a "next column" seek drops every later cell of a (non-empty) column, markers included; in
  a retain-deletes compaction every marker so dropped is also covered (R13.7), so elision
  alone decides markers; from the empty qualifier a seek only moves past the current key
  (HBASE-18471), so there each cell is decided on its own;
* equal keys (R3.3) are written once: the first (newest file's) cell is kept. HBase's minor
  compaction would write both of two equal markers; raw reads collapse them (R10.2), so no
  read can tell.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cellstore.core.cells import LATEST_TIMESTAMP, count_in_segments
from cellstore.core.family import Family, KeepDeletedCells
from cellstore.core.semantics.arrays import (
    _DELETE,
    _DELETE_COLUMN,
    _DELETE_FAMILY,
    _DELETE_FAMILY_VERSION,
    _INT64_MIN,
    _PUT,
    _BoolArray,
    _IntArray,
    _seen_before,
    masked_by_group_max,
    same_group_and_ts,
)
from cellstore.errors import InvalidArgumentError

__all__ = ["CompactionSpec"]


@dataclass(frozen=True, kw_only=True)
class CompactionSpec:
    """One compaction of one family's files.

    Attributes:
        now_ms: "Now" for TTL expiry (R8.1) and ``time_to_purge_deletes_ms``.
        drop_deletes: Drop delete markers (major compaction, or all files selected: R13.3).
        earliest_put_ts: Smallest Put timestamp in any compacted file (HBase's
            EARLIEST_PUT_TS); markers older than it can no longer mask anything (R9.4).
            ``LATEST_TIMESTAMP`` when there is no Put.
        time_to_purge_deletes_ms: ``hbase.hstore.time.to.purge.deletes``: a dropping
            compaction keeps markers with ``now - ts <= this`` (R13.6); 0 drops all.
        elide_redundant: Drop markers covered by a tracked DeleteFamily/DeleteColumn in
            retain-deletes compactions (R13.7, HBASE-30036); False keeps every marker as
            HBase releases before it did.
    """

    now_ms: int
    drop_deletes: bool
    earliest_put_ts: int = LATEST_TIMESTAMP
    time_to_purge_deletes_ms: int = 0
    elide_redundant: bool = True

    def __post_init__(self) -> None:
        if self.time_to_purge_deletes_ms < 0:
            raise InvalidArgumentError(
                f"time_to_purge_deletes_ms must be >= 0, got {self.time_to_purge_deletes_ms}"
            )


def compaction_include(
    *,
    ts: _IntArray,
    typ: _IntArray,
    col_start: _BoolArray,
    row_start: _BoolArray,
    empty_qualifier: _BoolArray,
    family: Family,
    spec: CompactionSpec,
) -> _BoolArray:
    """Per cell (first-of-equal-key cells, in cell order): whether the compaction keeps it.

    Args:
        ts: Timestamps.
        typ: Type codes.
        col_start: Where a column (row, qualifier) starts.
        row_start: Where a row starts.
        empty_qualifier: Which cells have the empty qualifier.
        family: The family's settings.
        spec: The compaction.
    """
    n = ts.size
    is_put = typ == _PUT
    is_marker = ~is_put
    ttl_ms = family.ttl_ms
    oldest = spec.now_ms - ttl_ms if ttl_ms is not None else None
    if oldest is not None and oldest <= _INT64_MIN:
        oldest = None
    expired = ts < oldest if oldest is not None else np.zeros(n, dtype=bool)
    min_versions = family.min_versions

    # preCheck: with MIN_VERSIONS = 0 every expired cell goes (R8.3, R5.11, R8.7).
    alive = ~expired if min_versions == 0 else np.ones(n, dtype=bool)

    # trackDelete: which markers mask (R9.3, R9.5).
    kdc = family.keep_deleted_cells
    if kdc is KeepDeletedCells.FALSE:
        tracked = is_marker & alive
    elif kdc is KeepDeletedCells.TTL:
        tracked = is_marker & alive & expired
    else:
        tracked = np.zeros(n, dtype=bool)

    # Family stamp (R5.1) and column DeleteColumn presence, over tracked markers.
    row_id = np.cumsum(row_start, dtype=np.int64) - 1
    col_id = np.cumsum(col_start, dtype=np.int64) - 1
    tracked_family = tracked & (typ == _DELETE_FAMILY)
    by_family = masked_by_group_max(ts, row_id, np.flatnonzero(tracked_family))
    tracked_column = tracked & (typ == _DELETE_COLUMN)
    by_column = masked_by_group_max(ts, col_id, np.flatnonzero(tracked_column))

    masked_seek = np.zeros(n, dtype=bool)  # FAMILY_DELETED / COLUMN_DELETED: next column
    masked_skip = np.zeros(n, dtype=bool)  # FAMILY_VERSION_DELETED / VERSION_DELETED
    if tracked.any():
        version_family = same_group_and_ts(
            ts, row_id, np.flatnonzero(tracked & (typ == _DELETE_FAMILY_VERSION))
        )
        version_column = same_group_and_ts(ts, col_id, np.flatnonzero(tracked & (typ == _DELETE)))
        candidate = is_put & alive
        masked_seek = candidate & (by_family | (by_column & ~version_family))
        masked_skip = candidate & ~masked_seek & (version_family | version_column)

    counted = is_put & alive & ~masked_seek & ~masked_skip
    count = count_in_segments(counted, col_start)
    max_versions = family.max_versions
    trigger = masked_seek | (counted & (count > max_versions))
    if min_versions > 0:
        trigger |= counted & expired & (count > min_versions)

    keep_marker = is_marker & alive
    if spec.drop_deletes:
        purge_later = np.zeros(n, dtype=bool)
        if spec.time_to_purge_deletes_ms > 0:
            purge_later = (spec.now_ms - ts) <= spec.time_to_purge_deletes_ms
        counted_in_place = is_marker & alive & ~tracked & ~purge_later
        if kdc is KeepDeletedCells.FALSE:
            counted_in_place[:] = False
        # KEEP_DELETED_CELLS TRUE/TTL (unexpired): a marker older than every put ends its
        # column; otherwise it is kept while the column's versions allow (R9.4).
        too_old = counted_in_place & (ts < spec.earliest_put_ts)
        # checkVersions for a marker: not a version itself, but past the column's limit
        # (reachable in the empty-qualifier column, whose seeks do not skip, HBASE-18471).
        marker_trigger = too_old | (counted_in_place & (count > max_versions))
        if min_versions > 0:
            marker_trigger |= counted_in_place & expired & (count > min_versions)
        trigger |= marker_trigger
        keep_marker &= purge_later | (counted_in_place & ~marker_trigger)
    elif spec.elide_redundant and tracked.any():
        first_family = tracked_family & ~_seen_before(tracked_family, row_start)
        redundant = tracked & by_family & ~first_family
        column_kind = (typ == _DELETE_COLUMN) | (typ == _DELETE)
        redundant |= tracked & column_kind & _seen_before(tracked_column, col_start)
        keep_marker &= ~redundant

    # A trigger in a non-empty column drops it and the rest of the column (SEEK_NEXT_COL);
    # in the empty-qualifier column only the cell itself (HBASE-18471).
    seek = trigger & ~empty_qualifier
    after_seek = (count_in_segments(seek, col_start) > 0) & ~empty_qualifier
    keep_put = counted & ~trigger
    keep: _BoolArray = (keep_put | keep_marker) & ~after_seek & ~trigger
    return keep
