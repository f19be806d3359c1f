"""HBase's read semantics over sorted cells, vectorized (hbase-semantics.md sections 3-12).

Two pure functions make up the engine:

* :func:`merge_runs` merges the cell tables of several store files of one family into one
  table in cell order, tagging each cell with its file's sequence number (R3.1, R3.2).
* :func:`resolve` applies one read to the merged cells: equal-key resolution (R3.3), delete
  markers (R5), versions (R6), time range (R7), TTL and MIN_VERSIONS (R8),
  KEEP_DELETED_CELLS (R9), raw reads (R10), column selection (R11) and the per-family
  limit/offset (R12.7).

Given a :class:`CompactionSpec` in the read spec, :func:`resolve` returns what a compaction
writes instead (R13, :mod:`.compaction`).

HBase decides cell by cell, walking a row in cell order with a delete tracker and a column
tracker (``ScanQueryMatcher``). Here every decision is a whole-array pass over the sorted
cells: boundaries come from comparing neighbours, per-row and per-column state becomes a
segmented reduction (max of marker timestamps, a set of marker keys), and "skip the rest of
the column" becomes a segmented running count. There are no per-cell Python loops. The
test suite checks this engine against a literal cell-by-cell model of HBase's trackers
(``tests/model.py``).

Why whole-row/whole-column reductions agree with HBase's order-dependent walk (each point
is checked by the property tests):

* Markers only ever mask cells that sort after them (R2.2): a DeleteFamily/
  DeleteFamilyVersion (empty qualifier) precedes every cell it can mask, and so does a
  DeleteColumn/Delete within its column. So "the set of markers seen so far" can be replaced
  by "the set of markers of the row / column".
* R5.2 (markers at or below the family stamp are ignored) never changes a result: every put
  such a marker could mask is already masked by the stamp.
* R5.4/R5.6 (one held column marker; a Delete after a DeleteColumn of the same column is
  ignored; a put with another timestamp clears a held Delete): a held Delete@T can only
  mask puts at T, which directly follow it, and a DeleteColumn masks a superset of what a
  later Delete of its column could, so the single held marker behaves exactly like "some
  applicable DeleteColumn of the column has ts >= put.ts, or some applicable Delete of the
  column has ts == put.ts".
* Every "skip the rest of the column" in HBase (masked by DeleteFamily/DeleteColumn, older
  than the time range, expired, past the version limit) is issued for a cell all of whose
  successors in the column would be rejected for the same reason, so it is the same as
  rejecting those successors one by one. HBase never skips markers of the empty-qualifier
  column this way (``ScanQueryMatcher#getKeyForNextColumn``, HBASE-18471), so family markers
  always apply.

Precondition: DeleteFamily and DeleteFamilyVersion markers carry an empty qualifier, as every
HBase writer produces them (R1.3). :func:`resolve` raises for markers that do not.
"""

from cellstore.core.semantics.arrays import MERGED_SCHEMA
from cellstore.core.semantics.compaction import CompactionSpec
from cellstore.core.semantics.merge import merge_resolve, merge_runs
from cellstore.core.semantics.resolve import resolve
from cellstore.core.semantics.spec import ReadSpec

__all__ = [
    "CompactionSpec",
    "MERGED_SCHEMA",
    "ReadSpec",
    "merge_resolve",
    "merge_runs",
    "resolve",
]
