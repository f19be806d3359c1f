"""HBase's own compaction and read test cases, replayed as named scenarios (hbase-semantics
R5-R10, R13).

Every test names the HBase test it replays (class#method, from ``hbase-server/src/test``)
and the rules it exercises, and asserts the cells (values or counts) that HBase's test
asserts. The HBase tests were read, not copied: the scenarios are rewritten here in terms
of cellstore's model.

How HBase's operations map to ours
----------------------------------

:class:`Region` plays one HBase region (one row range, one store per family):

* ``region.put(Put)`` / ``region.delete(Delete)`` append one mutation to the region's
  memstore. Every mutation takes the next sequence id (HBase's mvcc), so later writes win
  exact key ties (R3.2). Timestamps are always explicit: where HBase's test lets the server
  pick the time (``new Delete(row)``, ``Delete#addColumns(f, q)``) we write the time the
  server would have given, and a version delete without a timestamp
  (``Delete#addColumn(f, q)``) gets the timestamp of the newest version (R1.5). A whole-row
  delete is one DeleteFamily per family (R1.4).
* ``region.flush()`` writes one store file per family whose memstore holds cells. A flush
  is HBase's retain-deletes pass over the memstore snapshot (R13.1): the flushed cells are
  computed by our engine, ``resolve(merge_runs(mutations, seqs), family=f,
  spec=ReadSpec(now_ms=now, compaction=CompactionSpec(now_ms=now, drop_deletes=False)))``,
  and become the new file.
* ``region.compact(true)`` (major) compacts every file of every store, dropping deletes
  (R13.4, R13.5). ``region.compact(false)`` asks for HBase's default minor selection: below
  ``hbase.hstore.compaction.min`` = 3 files it selects nothing (the TestKeepDeletes cases
  call it on one file), and a selection of every file drops deletes (R13.3).
  ``HStore#compactRecentForTestingAssumingDefaultPolicy(n)`` is :meth:`Region.compact_recent`:
  the newest ``n`` files, dropping deletes only when that is every file.
  ``EARLIEST_PUT_TS`` (R9.4) is the smallest Put timestamp of the compacted files.
* ``region.get(Get)`` / ``region.getScanner(Scan)`` read the store files and the memstore
  (each mutation a run with its sequence id) through ``resolve`` with a ``ReadSpec``
  (max versions, time range, raw, explicit columns). HBase's ``countDeleteMarkers``
  helper is a raw scan with the store's VERSIONS as max versions (R10.2): that limit, not
  a compaction, is why a newer put can "push out" markers from its count.
* "Now" is :attr:`Region.now`. HBase's tests shift time with an injected clock or sleeps;
  ours set the clock. Families with TTL use ``ts = now - 2000`` as HBase's tests do.

Three backends play the same region (the ``make_region`` fixture):

* ``engine`` keeps the store files as Arrow tables and works with the pure functions
  (``merge_runs``/``resolve`` with a ``ReadSpec``, with a ``CompactionSpec`` for flushes and
  compactions);
* ``table`` keeps them in a real cellstore table: a flush is ``Table.load_cells`` of the
  flushed cells (explicit ``ts``/``type``), compactions are
  ``cellstore.jobs.compact.compact(...)`` (so the job's file selection, ``EARLIEST_PUT_TS``
  from file footers and sequence numbers are exercised), and reads with an empty memstore
  are ``Table.get``/``Table.scan`` (while the memstore holds cells, reads merge the table's
  store files with the memstore through the engine, as HBase's region scanner does);
* ``model`` runs the same scenario through the literal matcher model of ``tests/model.py``
  (``model.compact`` for flushes and compactions, ``model.read`` for reads), so HBase's
  expectations are checked against the oracle too.

Cells are ``(family, row, qualifier, ts, type, value)`` with ``type`` an HBase type name.
HBase's TestStoreScanner cases build scanners with a 500 ms TTL; our TTL is whole seconds,
so those scenarios double every time offset (every comparison HBase makes is unchanged).

Not replayed (no cellstore counterpart): TestCompactionScanQueryMatcher#
testMatch_PartialRangeDropDeletes (stripe compactions dropping deletes in a row range);
TestMajorCompaction#testTimeBasedMajorCompaction (its periodic part),
#testNonUserMajorCompactionRequest,
#testUserMajorCompactionRequest (periodic/system compaction scheduling) and
#testDataBlockEncoding* (HFile block encodings: the same scenario as #testMajorCompaction);
TestCompaction's interrupt, corrupt-file, queue-priority and tracker tests (compaction
machinery; the clean-up at the end of #testInterruptCompaction is replayed); read-point
(mvcc) behaviour of scanners opened before a flush or compaction; coprocessor hooks.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import cellstore
from cellstore.core.cells import CELL_SCHEMA, LATEST_TIMESTAMP, CellType, sort_indices
from cellstore.core.family import Family, KeepDeletedCells
from cellstore.core.filters import FilterPlan, apply_filters, filtered_read
from cellstore.core.semantics import CompactionSpec, ReadSpec, merge_runs, resolve
from cellstore.errors import InvalidArgumentError
from cellstore.filters import TimestampsFilter
from cellstore.jobs.compact import compact
from cellstore.storefiles import StoreFileReader

try:
    import model
except ImportError:  # pragma: no cover - when tests/ is a package
    from tests import model

Cell = tuple[str, bytes, bytes, int, str, bytes]

PUT = "Put"
DELETE = "Delete"
DELETE_COLUMN = "DeleteColumn"
DELETE_FAMILY = "DeleteFamily"
MARKERS = frozenset({DELETE, DELETE_COLUMN, DELETE_FAMILY, "DeleteFamilyVersion"})

#: HBase's ``HBaseTestingUtility.COLUMNS`` (fam1, fam2, fam3); TestKeepDeletes and
#: TestMinVersions use ``c0 = fam1`` and ``c1 = fam2`` both as family and as qualifier.
FAM1, FAM2, FAM3 = "fam1", "fam2", "fam3"
C0, C1 = b"fam1", b"fam2"
#: Values (and rows) T0..T6 of TestKeepDeletes / TestMinVersions.
T0, T1, T2, T3, T4, T5, T6 = (str(i).encode() for i in range(7))
#: HBase's ``HConstants.FOREVER`` and ``Integer.MAX_VALUE`` versions.
ALL_VERSIONS = 2**31 - 1

#: Timestamp base for tests without TTL (HBase starts an incrementing clock at the wall
#: clock; only the offsets from it matter).
TS = 1_000
#: "Now" for tests with TTL: HBase puts cells 2 s in the past with a 1 s TTL.
NOW = 10_000_000


def families(
    *names: str,
    max_versions: int = 3,
    min_versions: int = 0,
    ttl: int | None = None,
    kdc: KeepDeletedCells = KeepDeletedCells.FALSE,
) -> list[Family]:
    """HBase's ``createTableDescriptor(name, minVersions, versions, ttl, keepDeleted)``:
    the same settings on each family (fam1, fam2, fam3 by default)."""
    return [
        Family(
            name=n,
            max_versions=max_versions,
            min_versions=min_versions,
            ttl=ttl,
            keep_deleted_cells=kdc,
        )
        for n in (names or (FAM1, FAM2, FAM3))
    ]


def _run(cells: Iterable[Cell]) -> pa.Table:
    """One family's cells as a store-file run in cell order (stable for equal keys)."""
    table = pa.Table.from_pylist(
        [
            {"row": r, "qualifier": q, "ts": ts, "type": int(CellType.parse(t)), "value": v}
            for _, r, q, ts, t, v in cells
        ],
        schema=CELL_SCHEMA,
    )
    return table.take(sort_indices(table))


def _cells_of(family: str, table: pa.Table) -> list[Cell]:
    return [
        (family, d["row"], d["qualifier"], d["ts"], CellType(d["type"]).hbase_name, d["value"])
        for d in table.to_pylist()
    ]


def _table_cells(table: pa.Table) -> list[Cell]:
    return [
        (d["family"], d["row"], d["qualifier"], d["ts"], CellType(d["type"]).hbase_name, d["value"])
        for d in table.to_pylist()
    ]


def _earliest_put(tables: Sequence[pa.Table]) -> int:
    puts = [
        ts
        for t in tables
        for ts, typ in zip(t.column("ts").to_pylist(), t.column("type").to_pylist(), strict=True)
        if typ == int(CellType.PUT)
    ]
    return min(puts) if puts else LATEST_TIMESTAMP


def _model_merge(runs: Sequence[pa.Table], seqs: Sequence[int]) -> list[model.Cell]:
    """tests/model.py's merge of store-file runs."""
    cells = [
        [
            model.Cell(d["row"], d["qualifier"], d["ts"], d["type"], d["value"])
            for d in run.to_pylist()
        ]
        for run in runs
    ]
    return model.merge(cells, seqs)


class Region:
    """One HBase region: a memstore and the store files of each family (see module doc)."""

    def __init__(
        self,
        fams: Sequence[Family],
        *,
        now: int,
        backend: str,
        root: Path,
        time_to_purge_deletes_ms: int = 0,
    ) -> None:
        self.fams = {f.name: f for f in fams}
        self.now = now
        self.backend = backend
        self.time_to_purge_deletes_ms = time_to_purge_deletes_ms
        self.seq = 0
        #: (sequence id, cells) per mutation, in write order.
        self.memstore: list[tuple[int, list[Cell]]] = []
        #: engine backend: (cells, sequence id) per family, oldest first.
        self.files: dict[str, list[tuple[pa.Table, int]]] = {name: [] for name in self.fams}
        self.table: Any = None
        if backend == "table":
            wh = cellstore.connect(str(root / "wh"))
            self.table = wh.create_table("t", families=list(fams))

    # ------------------------------------------------------------------------- writes
    def mutate(self, *cells: Cell) -> None:
        """One mutation (a Put or a Delete with several cells): one sequence id."""
        for c in cells:
            assert c[0] in self.fams, c
        self.seq += 1
        self.memstore.append((self.seq, list(cells)))

    def put(self, row: bytes, ts: int, *columns: tuple[str, bytes, bytes]) -> None:
        """``Put(row, ts)`` with ``addColumn(family, qualifier, value)`` per column."""
        self.mutate(*[(f, row, q, ts, PUT, v) for f, q, v in columns])

    def delete_row(self, row: bytes, ts: int) -> None:
        """``new Delete(row, ts)``: a DeleteFamily in every family (R1.4)."""
        self.mutate(*[(f, row, b"", ts, DELETE_FAMILY, b"") for f in sorted(self.fams)])

    def delete_family(self, row: bytes, family: str, ts: int) -> None:
        """``Delete#addFamily(family, ts)``."""
        self.mutate((family, row, b"", ts, DELETE_FAMILY, b""))

    def delete_columns(self, row: bytes, family: str, qualifier: bytes, ts: int) -> None:
        """``Delete#addColumns(family, qualifier, ts)``: a DeleteColumn."""
        self.mutate((family, row, qualifier, ts, DELETE_COLUMN, b""))

    def delete_column(self, row: bytes, family: str, qualifier: bytes, ts: int) -> None:
        """``Delete#addColumn(family, qualifier, ts)``: a version Delete."""
        self.mutate((family, row, qualifier, ts, DELETE, b""))

    # ------------------------------------------------------------------- store files
    def _memstore_runs(self, family: str) -> tuple[list[pa.Table], list[int]]:
        runs, seqs = [], []
        for seq, cells in self.memstore:
            mine = [c for c in cells if c[0] == family]
            if mine:
                runs.append(_run(mine))
                seqs.append(seq)
        return runs, seqs

    def _file_runs(self, family: str) -> tuple[list[pa.Table], list[int]]:
        if self.backend != "table":
            return [t for t, _ in self.files[family]], [s for _, s in self.files[family]]
        runs, seqs = [], []
        for entry in sorted(self.table.metadata.files_of(_REGION, family), key=lambda e: e.seq):
            with StoreFileReader(self.table.fs, self.table.file_path(entry)) as reader:
                runs.append(reader.read())
            seqs.append(entry.seq)
        return runs, seqs

    def file_count(self, family: str) -> int:
        if self.backend != "table":
            return len(self.files[family])
        return len(self.table.metadata.files_of(_REGION, family))

    def stored_cells(self, family: str) -> list[Cell]:
        """Every cell physically in the family's store files (HBase's HFileScanner)."""
        runs, _ = self._file_runs(family)
        return [c for run in runs for c in _cells_of(family, run)]

    def flush(self) -> None:
        """``region.flush(true)``: one file per family with memstore cells (R13.1)."""
        flushed: list[Cell] = []
        for name, fam in self.fams.items():
            runs, seqs = self._memstore_runs(name)
            if not runs:
                continue
            spec = CompactionSpec(now_ms=self.now, drop_deletes=False)
            out = self._compaction_pass(fam, runs, seqs, spec)
            if self.backend != "table":
                self.files[name].append((out, max(seqs)))
            else:
                flushed.extend(_cells_of(name, out))
        if flushed:
            self.table.load_cells(
                pa.Table.from_pylist(
                    [
                        {"row": r, "family": f, "qualifier": q, "ts": ts, "type": t, "value": v}
                        for f, r, q, ts, t, v in flushed
                    ]
                )
            )
        self.memstore = []

    def _compact_files(self, family: str, first: int, drop_deletes: bool) -> None:
        fam = self.fams[family]
        chosen = self.files[family][first:]
        runs = [t for t, _ in chosen]
        spec = CompactionSpec(
            now_ms=self.now,
            drop_deletes=drop_deletes,
            earliest_put_ts=_earliest_put(runs),
            time_to_purge_deletes_ms=self.time_to_purge_deletes_ms,
        )
        out = self._compaction_pass(fam, runs, [s for _, s in chosen], spec)
        self.files[family][first:] = [(out, max(s for _, s in chosen))]

    def _compaction_pass(
        self, fam: Family, runs: list[pa.Table], seqs: list[int], spec: CompactionSpec
    ) -> pa.Table:
        """What a flush or compaction of ``runs`` writes: our engine, or the literal model."""
        if self.backend != "model":
            read = ReadSpec(now_ms=spec.now_ms, compaction=spec)
            return resolve(merge_runs(runs, seqs), family=fam, spec=read)
        out = model.compact(
            _model_merge(runs, seqs),
            drop_deletes=spec.drop_deletes,
            max_versions=fam.max_versions,
            min_versions=fam.min_versions,
            ttl_seconds=fam.ttl,
            keep_deleted_cells=fam.keep_deleted_cells.value,
            now_ms=spec.now_ms,
            time_to_purge_deletes=spec.time_to_purge_deletes_ms,
        )
        return _run([(fam.name, *c.out()[:3], CellType(c.type).hbase_name, c.value) for c in out])

    def compact(self, major: bool) -> None:
        """``region.compact(major)`` (see the module doc for the minor selection)."""
        if self.backend == "table":
            compact(
                self.table,
                major=major,
                now_ms=self.now,
                time_to_purge_deletes_ms=self.time_to_purge_deletes_ms,
            )
            return
        for name, files in self.files.items():
            if files and (major or len(files) >= 3):
                self._compact_files(name, 0, drop_deletes=True)

    def compact_recent(self, family: str, n: int) -> None:
        """``HStore#compactRecentForTestingAssumingDefaultPolicy(n)``: the newest n files."""
        total = self.file_count(family)
        assert total >= n
        if self.backend == "table":
            report = compact(
                self.table,
                families=[family],
                now_ms=self.now,
                min_files=n,
                max_files=n,
                ratio=1e9,
                time_to_purge_deletes_ms=self.time_to_purge_deletes_ms,
            )
            (store,) = report.stores
            assert store["input-files"] == n
            assert store["drop-deletes"] is (n == total)
            return
        self._compact_files(family, total - n, drop_deletes=n == total)

    def set_family(self, family: str, **settings: Any) -> None:
        """Change a family's settings (HBase's tests swap the store's ScanInfo)."""
        self.fams[family] = self.fams[family].replace(**settings)
        if self.table is not None:
            self.table = self.table.warehouse.alter_table("t", modify_families={family: settings})

    # -------------------------------------------------------------------------- reads
    def read(
        self,
        *,
        row: bytes | None = None,
        start_row: bytes | None = None,
        fams: Sequence[str] | None = None,
        columns: Sequence[tuple[str, bytes]] | None = None,
        time_range: tuple[int, int] | None = None,
        max_versions: int | None = None,
        raw: bool = False,
        timestamps: Sequence[int] | None = None,
    ) -> list[Cell]:
        """A Get (``row``) or Scan (from ``start_row``) over files and memstore.

        ``timestamps`` adds a ``TimestampsFilter``. Results are in HBase's result order:
        rows, then families, then qualifiers, then newest first.
        """
        if raw and columns:  # every backend refuses it as HBase does (R10.4)
            ReadSpec(now_ms=self.now, raw=True, qualifiers=frozenset(q for _, q in columns))
        if self.backend == "table" and not self.memstore:
            return self._table_read(
                row=row,
                start_row=start_row,
                fams=fams,
                columns=columns,
                time_range=time_range,
                max_versions=max_versions,
                raw=raw,
                timestamps=timestamps,
            )
        wanted = sorted(fams or ({f for f, _ in columns} if columns else self.fams))
        out: list[Cell] = []
        for name in wanted:
            fam = self.fams[name]
            quals = frozenset(q for f, q in columns if f == name) if columns else None
            spec = ReadSpec(
                now_ms=self.now,
                max_versions=max_versions,
                time_range=time_range,
                raw=raw,
                qualifiers=quals,
            )
            runs, seqs = self._file_runs(name)
            mem_runs, mem_seqs = self._memstore_runs(name)
            # The memstore is newer than every file (its sequence ids are larger).
            offset = 1 + max(seqs, default=0)
            runs, seqs = runs + mem_runs, seqs + [offset + s for s in mem_seqs]
            if not runs:
                continue
            merged = merge_runs(runs, seqs)
            if row is not None:
                merged = merged.filter(pc.equal(merged.column("row"), pa.scalar(row)))
            elif start_row is not None:
                merged = merged.filter(pc.greater_equal(merged.column("row"), pa.scalar(start_row)))
            if self.backend == "model":
                got = self._model_read(name, runs, seqs, spec, row, start_row, timestamps)
            elif timestamps is None:
                got = _cells_of(name, resolve(merged, family=fam, spec=spec))
            else:
                engine_spec, cap, _ = filtered_read(spec, fam)
                visible = resolve(merged, family=fam, spec=engine_spec)
                visible = visible.add_column(1, "family", pa.array([name] * visible.num_rows))
                plan = FilterPlan(filters=(TimestampsFilter(timestamps),), version_caps={name: cap})
                got = _table_cells(apply_filters(visible, plan))
            out.extend(got)
        out.sort(key=lambda c: (c[1], c[0]))  # stable: rows, then families
        return out

    def _model_read(
        self,
        name: str,
        runs: list[pa.Table],
        seqs: list[int],
        spec: ReadSpec,
        row: bytes | None,
        start_row: bytes | None,
        timestamps: Sequence[int] | None,
    ) -> list[Cell]:
        fam = self.fams[name]
        merged = [
            c
            for c in _model_merge(runs, seqs)
            if (row is None or c.row == row) and (start_row is None or c.row >= start_row)
        ]
        listed = set(timestamps) if timestamps is not None else None
        got = model.read(
            merged,
            max_versions=fam.max_versions,
            min_versions=fam.min_versions,
            ttl_seconds=fam.ttl,
            keep_deleted_cells=fam.keep_deleted_cells.value,
            now_ms=spec.now_ms,
            read_versions=spec.max_versions,
            time_range=spec.time_range,
            raw=spec.raw,
            qualifiers=spec.qualifiers,
            cell_filter=(lambda c: c.ts in listed) if listed is not None else None,
        )
        return [(name, r, q, ts, CellType(t).hbase_name, v) for r, q, ts, t, v in got]

    def _table_read(
        self,
        *,
        row: bytes | None,
        start_row: bytes | None,
        fams: Sequence[str] | None,
        columns: Sequence[tuple[str, bytes]] | None,
        time_range: tuple[int, int] | None,
        max_versions: int | None,
        raw: bool,
        timestamps: Sequence[int] | None,
    ) -> list[Cell]:
        names = [f"{f}:{q.decode()}" for f, q in columns] if columns else None
        filt = TimestampsFilter(timestamps) if timestamps is not None else None
        if row is not None and not raw:
            got = self.table.get(
                row,
                columns=names,
                families=fams,
                time_range=time_range,
                max_versions=max_versions,
                filter=filt,
                now_ms=self.now,
            )
        else:
            got = self.table.scan(
                start_row=row if row is not None else start_row,
                stop_row=row + b"\x00" if row is not None else None,
                columns=names,
                families=fams,
                time_range=time_range,
                max_versions=max_versions,
                raw=raw,
                filter=filt,
                now_ms=self.now,
            ).to_arrow()
        return _table_cells(got)

    def get(self, row: bytes, **options: Any) -> list[Cell]:
        return self.read(row=row, **options)

    def scan(self, **options: Any) -> list[Cell]:
        return self.read(**options)

    def first_row(self, **options: Any) -> list[Cell]:
        """``scanner.next(kvs)`` once: the cells of the first row the scan returns."""
        cells = self.read(**options)
        return [c for c in cells if c[1] == cells[0][1]] if cells else []

    def closest_row_before(self, row: bytes, family: str) -> list[Cell]:
        """``getClosestRowBefore(row, family)``: the newest cells of the last row <= row,
        as the reversed scan HBase runs for it (one row, one version)."""
        if self.backend == "table" and not self.memstore:
            got = self.table.scan(
                start_row=row, reversed=True, limit=1, families=[family], now_ms=self.now
            ).to_arrow()
            return _table_cells(got)
        cells = [c for c in self.read(fams=[family]) if c[1] <= row]
        last = max((c[1] for c in cells), default=None)
        return [c for c in cells if c[1] == last]

    def count_delete_markers(self) -> int:
        """TestKeepDeletes#countDeleteMarkers: a raw scan with the store's VERSIONS."""
        versions = next(iter(self.fams.values())).max_versions
        return sum(c[4] in MARKERS for c in self.scan(raw=True, max_versions=versions))


_REGION = "r000001"


@pytest.fixture(params=["engine", "table", "model"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_region(backend: str, tmp_path: Path) -> Any:
    def make(fams: Sequence[Family], *, now: int = TS + 100, **options: Any) -> Region:
        return Region(fams, now=now, backend=backend, root=tmp_path, **options)

    return make


def values(
    cells: Sequence[Cell], family: str | None = None, qualifier: bytes | None = None
) -> list[bytes]:
    """The values of the (put) cells of one column, newest first."""
    return [
        c[5]
        for c in cells
        if (family is None or c[0] == family) and (qualifier is None or c[2] == qualifier)
    ]


def check_result(cells: Sequence[Cell], family: str, qualifier: bytes, *vals: bytes) -> None:
    """TestKeepDeletes#checkResult: the Result holds exactly ``vals`` in that column."""
    assert len(cells) == len(vals), cells
    assert values(cells, family, qualifier) == list(vals), cells


# ------------------------------------------------------------------------------------------
# TestKeepDeletes (hbase-server .../regionserver/TestKeepDeletes.java)


def test_keep_deletes_basic_scenario(make_region: Any) -> None:
    """TestKeepDeletes#testBasicScenario: KEEP_DELETED_CELLS=TRUE, VERSIONS=3.

    Deleted cells stay readable by time-ranged reads before the marker (R9.2); a flush
    counts deleted puts as versions (R9.3: T1 falls out); a major compaction keeps the one
    DeleteFamily that still has older puts and drops the two of the empty families
    (R9.4); once newer puts push the deleted ones past VERSIONS, the marker goes too.
    """
    region = make_region(families(kdc=KeepDeletedCells.TRUE))
    ts = TS
    for offset, value in ((0, T1), (1, T2), (2, T3), (4, T4)):
        region.put(T1, ts + offset, (FAM1, C0, value))
    region.delete_row(T1, ts + 2)  # one DeleteFamily per family
    assert region.count_delete_markers() == 3

    before_marker = {"max_versions": ALL_VERSIONS, "time_range": (0, ts + 2)}
    check_result(region.get(T1, **before_marker), FAM1, C0, T2, T1)

    region.flush()
    check_result(region.get(T1, **before_marker), FAM1, C0, T2)  # T1 was the 4th version

    region.compact(True)
    region.compact(True)
    assert region.count_delete_markers() == 1
    check_result(region.get(T1, **before_marker), FAM1, C0, T2)
    # A range that includes the marker does not see past it.
    assert region.get(T1, max_versions=ALL_VERSIONS, time_range=(0, ts + 4)) == []

    region.put(T1, ts + 5, (FAM1, C0, T5))
    region.put(T1, ts + 6, (FAM1, C0, T6))
    region.put(T1, ts, (FAM1, C0, T1))  # an old put again, past VERSIONS
    assert region.get(T1, max_versions=ALL_VERSIONS, time_range=(0, ts + 4)) == []

    region.flush()
    region.compact(True)
    region.compact(True)
    # The marker was collected: the old put, written again, is visible.
    region.put(T1, ts, (FAM1, C0, T1))
    check_result(region.get(T1, max_versions=ALL_VERSIONS, time_range=(0, ts + 4)), FAM1, C0, T1)
    assert region.count_delete_markers() == 0


def test_keep_deletes_raw_scan_without_keeping_deletes(make_region: Any) -> None:
    """TestKeepDeletes#testRawScanWithoutKeepingDeletes: KEEP_DELETED_CELLS=FALSE.

    A raw scan returns the put and the version marker that masks it (R10.1); flush plus
    major compaction removes both (R13.1, R13.4).
    """
    region = make_region(families())
    ts = TS
    region.put(T1, ts, (FAM1, C0, T1))
    region.delete_column(T1, FAM1, C0, ts)
    assert len(region.first_row(raw=True, max_versions=ALL_VERSIONS)) == 2

    region.flush()
    region.compact(True)
    assert region.first_row(raw=True, max_versions=ALL_VERSIONS) == []


def test_keep_deletes_without_keeping_deletes(make_region: Any) -> None:
    """TestKeepDeletes#testWithoutKeepingDeletes: KEEP_DELETED_CELLS=FALSE.

    A "past" Get/Scan does not see the cell behind a marker (R7.3); flush and a minor
    compaction keep the marker (R13.1, R13.2: one file, nothing selected), a major
    compaction removes it (R13.4).
    """
    region = make_region(families())
    ts = TS
    region.put(T1, ts, (FAM1, C0, T1))
    past = {"max_versions": ALL_VERSIONS, "time_range": (0, ts + 1)}
    assert region.get(T1, **past) != []

    region.delete_column(T1, FAM1, C0, ts)  # Delete(T1, ts+2).addColumn(c0, c0, ts)
    assert region.get(T1, **past) == []
    assert region.scan(**past) == []

    region.flush()
    region.compact(False)
    assert region.count_delete_markers() == 1
    region.compact(True)
    assert region.count_delete_markers() == 0


def test_keep_deletes_raw_scan_with_columns(make_region: Any) -> None:
    """TestKeepDeletes#testRawScanWithColumns: a raw scan may not name columns (R10.4)."""
    region = make_region(families(kdc=KeepDeletedCells.TRUE))
    region.put(T1, TS, (FAM1, C0, T1))
    region.flush()
    with pytest.raises(InvalidArgumentError, match="raw"):
        region.scan(raw=True, max_versions=ALL_VERSIONS, columns=[(FAM1, C0)])
    with pytest.raises(InvalidArgumentError, match="raw"):
        ReadSpec(now_ms=TS, raw=True, qualifiers=frozenset({C0}))


def test_keep_deletes_raw_scan(make_region: Any) -> None:
    """TestKeepDeletes#testRawScan: KEEP_DELETED_CELLS=TRUE, all markers in the memstore.

    A raw scan returns markers and deleted puts in cell order (R10.1, R2.1); its time range
    applies to markers too (R10.3).
    """
    region = make_region(families(kdc=KeepDeletedCells.TRUE))
    ts = TS
    region.put(T1, ts, (FAM1, C0, T1))
    region.put(T1, ts + 2, (FAM1, C0, T2))
    region.put(T1, ts + 4, (FAM1, C0, T3))
    region.delete_row(T1, ts + 1)
    region.delete_column(T1, FAM1, C0, ts + 2)
    region.delete_columns(T1, FAM1, C0, ts + 3)

    kvs = region.first_row(raw=True, max_versions=ALL_VERSIONS)
    assert [(c[0], c[4], c[5]) for c in kvs] == [
        (FAM1, DELETE_FAMILY, b""),
        (FAM1, PUT, T3),
        (FAM1, DELETE_COLUMN, b""),
        (FAM1, DELETE, b""),
        (FAM1, PUT, T2),
        (FAM1, PUT, T1),
        (FAM2, DELETE_FAMILY, b""),  # three families, three DeleteFamily markers
        (FAM3, DELETE_FAMILY, b""),
    ]
    # Nothing in [0, 1), not even markers.
    assert region.first_row(raw=True, max_versions=ALL_VERSIONS, time_range=(0, 1)) == []
    # Newer markers filtered out.
    kvs = region.first_row(raw=True, max_versions=ALL_VERSIONS, time_range=(0, ts + 2))
    assert [(c[0], c[4], c[5]) for c in kvs] == [
        (FAM1, DELETE_FAMILY, b""),
        (FAM1, PUT, T1),
        (FAM2, DELETE_FAMILY, b""),
        (FAM3, DELETE_FAMILY, b""),
    ]
    # Older markers filtered out.
    kvs = region.first_row(raw=True, max_versions=ALL_VERSIONS, time_range=(ts + 3, ts + 5))
    assert [(c[4], c[5]) for c in kvs] == [(PUT, T3), (DELETE_COLUMN, b"")]


def test_keep_deletes_delete_marker_expiration_empty_store(make_region: Any) -> None:
    """TestKeepDeletes#testDeleteMarkerExpirationEmptyStore: KEEP_DELETED_CELLS=TRUE,
    VERSIONS=1, markers and no puts.

    Neither the flush nor a minor compaction removes a marker (R13.1, R13.2); a major
    compaction removes them all, every one being older than the (absent) earliest put
    (R9.4).
    """
    region = make_region(families(max_versions=1, kdc=KeepDeletedCells.TRUE))
    ts = TS
    region.delete_columns(T1, FAM1, C0, ts)
    region.delete_family(T1, FAM1, ts)  # Delete(T1, ts).addFamily(c0): the delete's ts
    region.delete_column(T1, FAM1, C0, ts + 1)
    region.delete_column(T1, FAM1, C0, ts + 2)
    assert region.count_delete_markers() == 4  # 1 family, 1 column, 2 version markers

    region.flush()
    assert region.count_delete_markers() == 4
    region.compact(False)
    assert region.count_delete_markers() == 4
    region.compact(True)
    assert region.count_delete_markers() == 0


def test_keep_deletes_delete_marker_expiration(make_region: Any) -> None:
    """TestKeepDeletes#testDeleteMarkerExpiration: KEEP_DELETED_CELLS=TRUE, VERSIONS=1.

    Markers survive a major compaction while a put they affect exists (R9.4: not older
    than EARLIEST_PUT_TS, counted in place within VERSIONS); once that put is pushed out by
    a newer one, the next major compaction finds every marker older than the earliest put
    and drops them. A put in another family has no effect (per-store EARLIEST_PUT_TS).
    """
    region = make_region(families(max_versions=1, kdc=KeepDeletedCells.TRUE))
    ts = TS
    region.put(T1, ts, (FAM1, C0, T1))
    region.put(T1, ts - 10, (FAM2, C0, T1))  # another store
    region.delete_columns(T1, FAM1, C0, ts)
    region.delete_family(T1, FAM1, ts)
    region.delete_column(T1, FAM1, C0, ts + 1)
    region.delete_column(T1, FAM1, C0, ts + 2)
    assert region.count_delete_markers() == 4

    region.flush()
    assert region.count_delete_markers() == 4
    region.compact(False)
    assert region.count_delete_markers() == 4

    region.put(T1, ts + 3, (FAM1, C0, T1))  # pushes out the earlier put
    region.flush()
    region.compact(True)
    assert region.count_delete_markers() == 4  # the affected put was still there
    region.compact(True)
    assert region.count_delete_markers() == 0


def test_keep_deletes_with_old_row(make_region: Any) -> None:
    """TestKeepDeletes#testWithOldRow: KEEP_DELETED_CELLS=TRUE, VERSIONS=1, and an older
    row in the same store keeps EARLIEST_PUT_TS low (R9.4).

    The markers then survive every major compaction. A newer put (still in the memstore)
    hides the column markers from the raw count, whose version limit is the store's
    VERSIONS (R10.2); the DeleteFamily stays "forever" ("THIS IS A PROBLEM" in HBase).
    """
    region = make_region(families(max_versions=1, kdc=KeepDeletedCells.TRUE))
    ts = TS
    region.put(T1, ts, (FAM1, C0, T1))
    region.put(T2, ts - 10, (FAM1, C0, T1))  # an older row in the same store
    region.delete_columns(T1, FAM1, C0, ts)
    region.delete_family(T1, FAM1, ts)
    region.delete_column(T1, FAM1, C0, ts + 1)
    region.delete_column(T1, FAM1, C0, ts + 2)
    assert region.count_delete_markers() == 4

    region.flush()
    assert region.count_delete_markers() == 4
    region.compact(False)
    assert region.count_delete_markers() == 4

    region.put(T1, ts + 3, (FAM1, C0, T1))
    region.flush()
    region.compact(True)
    assert region.count_delete_markers() == 4
    region.compact(True)  # the older row keeps every marker
    assert region.count_delete_markers() == 4

    region.put(T1, ts + 4, (FAM1, C0, T1))  # not flushed
    region.compact(True)
    assert region.count_delete_markers() == 1
    region.compact(True)
    assert region.count_delete_markers() == 1


def test_keep_deletes_ranges(make_region: Any) -> None:
    """TestKeepDeletes#testRanges: KEEP_DELETED_CELLS=TRUE, VERSIONS=3, two families.

    A Get whose range ends at a marker's ts sees what the marker deletes; one whose range
    includes it does not (R9.2). A DeleteFamily older than every put changes nothing.
    """
    region = make_region(families(FAM1, FAM2, kdc=KeepDeletedCells.TRUE))
    ts = TS
    cols = [(FAM1, C0), (FAM1, C1), (FAM2, C0), (FAM2, C1)]
    for row in (T1, T2):
        region.put(row, ts, *[(f, q, T1) for f, q in cols])
    for row in (T1, T2):
        region.put(row, ts + 1, *[(f, q, T2) for f, q in cols])
    region.delete_columns(T1, FAM1, C0, ts + 2)
    region.delete_family(T1, FAM2, ts + 2)
    region.delete_family(T2, FAM1, ts + 2)
    region.delete_family(T1, FAM2, ts - 10)  # older than every put

    def check_get(row: bytes, fam: str, qual: bytes, time: int, *vals: bytes) -> None:
        got = region.get(
            row, columns=[(fam, qual)], max_versions=ALL_VERSIONS, time_range=(0, time)
        )
        check_result(got, fam, qual, *vals)

    for row in (T1, T2):
        for fam, qual in cols:  # ts + 2 does NOT include the markers at ts + 2
            check_get(row, fam, qual, ts + 2, T2, T1)
    check_get(T1, FAM1, C0, ts + 3)
    check_get(T1, FAM1, C1, ts + 3, T2, T1)
    check_get(T1, FAM2, C0, ts + 3)
    check_get(T1, FAM2, C1, ts + 3)
    check_get(T2, FAM1, C0, ts + 3)
    check_get(T2, FAM1, C1, ts + 3)
    check_get(T2, FAM2, C0, ts + 3, T2, T1)
    check_get(T2, FAM2, C1, ts + 3, T2, T1)


def test_keep_deletes_delete_marker_versioning(make_region: Any) -> None:
    """TestKeepDeletes#testDeleteMarkerVersioning: KEEP_DELETED_CELLS=TRUE, VERSIONS=1.

    Column and version markers are versioned with the puts of their column: they are not
    counted as versions, but a compaction (or a raw read, R10.2) that has seen VERSIONS+1
    puts skips the rest of the column, markers included (R9.4). An older put in another
    column keeps EARLIEST_PUT_TS low, so no marker goes by age.
    """
    region = make_region(families(max_versions=1, kdc=KeepDeletedCells.TRUE))
    ts = TS
    region.put(T1, ts, (FAM1, C0, T1))
    region.put(T1, ts - 10, (FAM1, C1, T1))  # prevents collection by earliest put
    region.delete_columns(T1, FAM1, C0, ts)  # same ts as the put
    region.delete_column(T1, FAM1, C0, ts + 1)
    region.delete_column(T1, FAM1, C0, ts + 3)
    region.flush()
    region.compact(True)
    region.compact(True)
    assert region.count_delete_markers() == 3

    region.put(T1, ts + 2, (FAM1, C0, T2))
    assert region.count_delete_markers() == 3  # delete, put, delete, delete, put
    region.put(T1, ts + 3, (FAM1, C0, T3))
    assert region.count_delete_markers() == 1  # delete, put, put | delete, delete

    region.flush()  # the flush drops the 2nd memstore put (VERSIONS=1)
    assert region.count_delete_markers() == 3  # delete, put, delete, delete
    region.compact(True)
    assert region.count_delete_markers() == 3

    region.put(T1, ts + 4, (FAM1, C0, T4))
    region.flush()
    assert region.count_delete_markers() == 1  # markers do not count as versions
    region.compact(True)
    region.compact(True)
    assert region.count_delete_markers() == 1


def test_keep_deletes_with_mixed_families(make_region: Any) -> None:
    """TestKeepDeletes#testWithMixedCFs (not annotated @Test in HBase, replayed anyway):
    KEEP_DELETED_CELLS=TRUE; a whole-row delete puts a DeleteFamily in each family (R1.4),
    and a scan whose range ends at the marker sees the row's four cells (R9.2)."""
    region = make_region(families(FAM1, FAM2, max_versions=1, kdc=KeepDeletedCells.TRUE))
    ts = TS
    cols = [(FAM1, C0), (FAM1, C1), (FAM2, C0), (FAM2, C1)]
    region.put(T1, ts, *[(f, q, T1) for f, q in cols])
    region.put(T2, ts + 1, *[(f, q, T2) for f, q in cols])
    region.delete_row(T1, ts + 1)
    region.delete_row(T2, ts + 2)
    assert len(region.first_row(start_row=T1, time_range=(0, ts + 1))) == 4
    assert len(region.first_row(start_row=T2, time_range=(0, ts + 2))) == 4


def test_keep_deletes_with_min_versions(make_region: Any) -> None:
    """TestKeepDeletes#testWithMinVersions: KEEP_DELETED_CELLS=TRUE, MIN_VERSIONS=3,
    VERSIONS=1000, TTL=1 s, every put already expired.

    MIN_VERSIONS keeps the 3 newest versions of the range visible (R8.4); the flush drops the
    4th (expired, beyond MIN_VERSIONS) and keeps every marker (R13.1, R9.3). A major
    compaction drops the DeleteFamily markers of the empty families and keeps the fam1
    markers (in place within MIN_VERSIONS, R9.4); the next one, whose EARLIEST_PUT_TS was
    raised by the first, drops them too.
    """
    region = make_region(
        families(min_versions=3, max_versions=1000, ttl=1, kdc=KeepDeletedCells.TRUE), now=NOW
    )
    ts = NOW - 2000
    region.put(T1, ts, (FAM1, C0, T3))
    region.put(T1, ts - 1, (FAM1, C0, T2))
    region.put(T1, ts - 3, (FAM1, C0, T1))
    region.put(T1, ts - 4, (FAM1, C0, T0))
    region.delete_row(T1, ts - 1)  # a DeleteFamily per family
    region.delete_columns(T1, FAM1, C0, ts - 1)  # Delete(T1, ts-2).addColumns(c0, c0, ts-1)

    past = {"max_versions": ALL_VERSIONS, "time_range": (0, ts - 2)}
    check_result(region.get(T1, **past), FAM1, C0, T1, T0)
    assert region.count_delete_markers() == 4  # 3 families + 1 column marker

    region.flush()
    assert region.count_delete_markers() == 4
    check_result(region.get(T1, **past), FAM1, C0, T1)

    region.put(T1, ts + 1, (FAM1, C0, T4))
    region.flush()
    assert region.count_delete_markers() == 4
    check_result(region.get(T1, **past), FAM1, C0, T1)

    region.put(T1, ts + 2, (FAM1, C0, T5))  # pushes out the last put before the marker
    region.flush()
    region.compact(True)
    assert region.count_delete_markers() == 2  # the markers of the empty families went
    region.compact(True)
    assert region.count_delete_markers() == 0


def test_keep_deletes_with_ttl(make_region: Any) -> None:
    """TestKeepDeletes#testWithTTL: KEEP_DELETED_CELLS=TTL, MIN_VERSIONS=1, TTL=1 s.

    Before the flush a time-ranged read ignores the (expired) marker outside its range
    (R9.2, R9.5); an expired marker is applied by the flush, which drops the put but keeps
    the marker (R13.1); the major compaction drops every expired marker (R9.5).
    """
    region = make_region(
        families(min_versions=1, max_versions=1000, ttl=1, kdc=KeepDeletedCells.TTL), now=NOW
    )
    ts = NOW - 2000
    region.put(T1, ts, (FAM1, C0, T3))
    region.put(T2, ts - 10, (FAM1, C0, T1))  # an old row, so the marker expires anyway

    def check_get(*vals: bytes) -> None:
        got = region.get(
            T1, columns=[(FAM1, C0)], max_versions=ALL_VERSIONS, time_range=(0, ts + 1)
        )
        check_result(got, FAM1, C0, *vals)

    check_get(T3)
    region.delete_row(T1, ts + 2)
    check_get(T3)
    assert region.count_delete_markers() == 3

    region.flush()
    assert region.count_delete_markers() == 3
    check_get()  # the put is gone

    region.compact(True)
    assert region.count_delete_markers() == 0


# ------------------------------------------------------------------------------------------
# TestMinVersions (hbase-server .../regionserver/TestMinVersions.java, HBase 2.x/3.x version:
# one family per descriptor, HBASE-17125 filter semantics)


def _min_versions_family(
    min_versions: int, *names: str, kdc: KeepDeletedCells = KeepDeletedCells.FALSE
) -> list[Family]:
    return families(
        *(names or (FAM1,)), min_versions=min_versions, max_versions=1000, ttl=1, kdc=kdc
    )


def test_min_versions_get_closest_before(make_region: Any) -> None:
    """TestMinVersions#testGetClosestBefore: MIN_VERSIONS=1, TTL=1 s, every put expired.

    ``getClosestRowBefore`` (a one-row reversed scan, R12.5) still finds rows whose cells
    expired, newest version first (R8.4), before and after flush + major compaction.
    """
    region = make_region(_min_versions_family(1), now=NOW)
    ts = NOW - 2000
    region.put(T1, ts, (FAM1, C0, T1))
    region.put(T1, ts + 1, (FAM1, C0, T4))
    region.put(T3, ts, (FAM1, C0, T3))
    for _ in range(2):
        assert values(region.closest_row_before(T1, FAM1)) == [T4]
        assert values(region.closest_row_before(T2, FAM1)) == [T4]
        region.flush()
        region.compact(True)


def test_min_versions_store_mem_store(make_region: Any) -> None:
    """TestMinVersions#testStoreMemStore: MIN_VERSIONS=3, TTL=1 s, versions split between a
    compacted store file and the memstore, with a duplicate of the oldest (R3.3).

    Family-wide and explicit-column Gets both return the 3 newest versions (R8.4, R8.5).
    """
    region = make_region(_min_versions_family(3), now=NOW)
    ts = NOW - 2000
    region.put(T1, ts - 1, (FAM1, C0, T2))
    region.put(T1, ts - 3, (FAM1, C0, T0))
    region.flush()
    region.compact(True)
    region.put(T1, ts, (FAM1, C0, T3))
    region.put(T1, ts - 2, (FAM1, C0, T1))
    region.put(T1, ts - 3, (FAM1, C0, T0))
    check_result(region.get(T1, max_versions=ALL_VERSIONS), FAM1, C0, T3, T2, T1)
    got = region.get(T1, max_versions=ALL_VERSIONS, columns=[(FAM1, C0)])
    check_result(got, FAM1, C0, T3, T2, T1)


def test_min_versions_delete(make_region: Any) -> None:
    """TestMinVersions#testDelete: MIN_VERSIONS=3, TTL=1 s; MIN_VERSIONS never protects a
    cell from a marker (R8.4), before and after flush + major compaction (R13.4)."""
    region = make_region(_min_versions_family(3), now=NOW)
    ts = NOW - 2000
    region.put(T1, ts - 2, (FAM1, C0, T1))
    region.put(T1, ts - 1, (FAM1, C0, T2))
    region.put(T1, ts, (FAM1, C0, T3))
    region.delete_row(T1, ts - 1)
    for _ in range(2):
        check_result(region.get(T1, max_versions=ALL_VERSIONS), FAM1, C0, T3)
        got = region.get(T1, max_versions=ALL_VERSIONS, columns=[(FAM1, C0)])
        check_result(got, FAM1, C0, T3)
        region.flush()
        region.compact(True)


def test_min_versions_mem_store(make_region: Any) -> None:
    """TestMinVersions#testMemStore: MIN_VERSIONS=2, TTL=1 s; a backdated put in the
    memstore does not displace the two newest versions of the store file (R8.4); a newer
    one does."""
    region = make_region(_min_versions_family(2), now=NOW)
    ts = NOW - 2000
    region.put(T1, ts - 2, (FAM1, C0, T2))
    region.put(T1, ts - 1, (FAM1, C0, T3))
    region.put(T1, ts, (FAM1, C0, T4))
    region.flush()
    region.compact(True)
    region.put(T1, ts - 3, (FAM1, C0, T1))  # backdated

    check_result(region.get(T1), FAM1, C0, T4)
    check_result(region.get(T1, max_versions=ALL_VERSIONS), FAM1, C0, T4, T3)
    got = region.get(T1, max_versions=ALL_VERSIONS, columns=[(FAM1, C0)])
    check_result(got, FAM1, C0, T4, T3)

    region.put(T1, ts + 1, (FAM1, C0, T5))
    check_result(region.get(T1, max_versions=ALL_VERSIONS), FAM1, C0, T5, T4)
    got = region.get(T1, max_versions=ALL_VERSIONS, columns=[(FAM1, C0)])
    check_result(got, FAM1, C0, T5, T4)


def test_min_versions_base_case(make_region: Any) -> None:
    """TestMinVersions#testBaseCase: MIN_VERSIONS=2, TTL=1 s, four expired versions.

    Before the flush a narrow range still reaches the oldest version (R7.2, R8.4: counted
    inside the range); the flush eliminates the expired versions beyond MIN_VERSIONS
    (R13.1, "HBASE-4241"); after a major compaction the two newest remain.
    """
    region = make_region(_min_versions_family(2), now=NOW)
    ts = NOW - 2000
    for offset, value in ((-3, T1), (-2, T2), (-1, T3), (0, T4)):
        region.put(T1, ts + offset, (FAM1, C0, value))

    check_result(region.get(T1), FAM1, C0, T4)
    check_result(region.get(T1, time_range=(0, ts + 1)), FAM1, C0, T4)
    check_result(region.get(T1, time_range=(0, ts - 2)), FAM1, C0, T1)  # oldest still there
    check_result(region.get(T1, max_versions=ALL_VERSIONS), FAM1, C0, T4, T3)
    got = region.get(T1, max_versions=ALL_VERSIONS, columns=[(FAM1, C0)])
    check_result(got, FAM1, C0, T4, T3)

    region.flush()
    assert region.get(T1, time_range=(0, ts - 2)) == []

    region.compact(True)
    check_result(region.get(T1, time_range=(0, ts + 1)), FAM1, C0, T4)
    check_result(region.get(T1, time_range=(0, ts)), FAM1, C0, T3)
    assert region.get(T1, time_range=(0, ts - 1)) == []


def test_min_versions_filters(make_region: Any) -> None:
    """TestMinVersions#testFilters (HBase 2+ expectations): MIN_VERSIONS=2, TTL=1 s, a
    TimestampsFilter on versions ts-1 and ts-2.

    Versions are counted before the filter judges them (R12.8, HBASE-17125): only the two
    newest versions survive MIN_VERSIONS+TTL, so the filter finds ts-1 only, before and
    after flush + major compaction. (HBase 1.x, filtering before counting, returned
    T2 and T1 here.)
    """
    region = make_region(_min_versions_family(2, FAM1, FAM2), now=NOW)
    ts = NOW - 2000
    for offset, value in ((-3, T0), (-2, T1), (-1, T2), (0, T3)):
        region.put(T1, ts + offset, (FAM1, C0, value), (FAM2, C1, value))
    for _ in range(2):
        for fam, qual in ((FAM2, C1), (FAM1, C0)):
            got = region.get(
                T1, columns=[(fam, qual)], max_versions=ALL_VERSIONS, timestamps=[ts - 1, ts - 2]
            )
            check_result(got, fam, qual, T2)
        region.flush()
        region.compact(True)


def test_min_versions_with_keep_deleted_cells_ttl(make_region: Any) -> None:
    """TestMinVersions#testMinVersionsWithKeepDeletedCellsTTL: MIN_VERSIONS=2, VERSIONS=max,
    TTL=4 s, KEEP_DELETED_CELLS=TTL (HBase builds it twice, with
    ``setVersionsWithTimeToLive(4, 2)`` and with the explicit settings: the same family).

    Nothing is purged while unexpired; after the clock moves past the TTL a flush + major
    compaction keeps exactly the two newest versions (R8.4, R13.4); time-ranged reads then
    count MIN_VERSIONS inside their range.
    """
    fam = Family(
        name=FAM1,
        min_versions=2,
        max_versions=ALL_VERSIONS,
        ttl=4,
        keep_deleted_cells=KeepDeletedCells.TTL,
    )
    start = NOW
    region = make_region([fam], now=start)
    ts = start - 2000
    for offset, value in ((-4, T1), (-3, T2), (-2, T3), (-1, T4)):
        region.put(T1, ts + offset, (FAM1, C0, value))

    def check(vals: Sequence[bytes], **options: Any) -> None:
        check_result(region.get(T1, max_versions=ALL_VERSIONS, **options), FAM1, C0, *vals)

    check([T4, T3, T2, T1], time_range=(0, ts))
    region.flush()
    region.compact(True)
    check([T4, T3, T2, T1], time_range=(0, ts))
    check([T3, T2, T1], time_range=(0, ts - 1))
    check([T2, T1], time_range=(0, ts - 2))
    check([T1], time_range=(0, ts - 3))

    region.now = start + 4 * 1000
    region.flush()
    region.compact(True)
    check([T4, T3], time_range=(0, ts))
    check([T3], time_range=(0, ts - 1))
    check([T3], time_range=(ts - 2, ts - 1))  # setTimestamp(ts - 2)
    check([], time_range=(ts - 3, ts - 2))  # setTimestamp(ts - 3): T2 was purged
    check([], time_range=(0, ts - 2))


# ------------------------------------------------------------------------------------------
# TestMinorCompaction (hbase-server .../regionserver/TestMinorCompaction.java)

FIRST_ROW, SECOND_ROW = b"aaa", b"aab"  # START_KEY and the next row; addContent stops
COL1, COL2 = b"column1", b"column2"  # before the third row "aac"
#: The server's clock when the delete is written (after the puts at ts 0..3).
DELETE_TIME = 5_000


@pytest.mark.parametrize(
    ("delete", "expected"),
    [
        # testMinorCompactionWithDeleteRow: new Delete(secondRow)
        (("row", None, DELETE_TIME), 0),
        # testMinorCompactionWithDeleteColumn1: addColumns(fam2, col2), the delete's time
        (("columns", COL2, DELETE_TIME), 0),
        # testMinorCompactionWithDeleteColumn2: addColumn(fam2, col2) = the newest version, 3
        # ("HBase ... gives us 0, 1 and 2": R6.3)
        (("column", COL2, 3), 3),
        # testMinorCompactionWithDeleteColumnFamily: addFamily(fam2)
        (("family", None, DELETE_TIME), 0),
        # testMinorCompactionWithDeleteVersion1: addColumns(fam2, col2, 2)
        (("columns", COL2, 2), 1),
        # testMinorCompactionWithDeleteVersion2: addColumn(fam2, col2, 1)
        (("column", COL2, 1), 3),
    ],
    ids=[
        "delete-row",
        "delete-column-1",
        "delete-column-2",
        "delete-column-family",
        "delete-version-1",
        "delete-version-2",
    ],
)
def test_minor_compaction_with_delete(
    make_region: Any, delete: tuple[str, bytes | None, int], expected: int
) -> None:
    """TestMinorCompaction#testMinorCompactionWith* (via testMinorCompactionWithDelete):
    VERSIONS=3, four flushes of versions 0..3 in fam1/fam2 x column1/column2 of two rows,
    then a delete of row 2's fam2:column2, flushed, then a minor compaction of the 3 newest
    fam2 files. The delete masks what R5.x say, the flush and the minor compaction keep the
    marker and change no read (R13.1, R13.2), and masked versions free VERSIONS slots
    (R6.3)."""
    region = make_region(families())
    for ts in range(4):
        for row in (FIRST_ROW, SECOND_ROW):
            region.put(
                row,
                ts,
                (FAM1, COL1, row),
                (FAM1, COL2, row),
                (FAM2, COL1, row),
                (FAM2, COL2, row),
            )
        region.flush()

    def check(after_delete: int) -> None:
        got = region.get(SECOND_ROW, columns=[(FAM2, COL2)], max_versions=100)
        assert len(got) == after_delete, got
        got = region.get(FIRST_ROW, columns=[(FAM1, COL1)], max_versions=100)
        assert len(got) == 3, got

    check(3)
    kind, qualifier, ts = delete
    if kind == "row":
        region.delete_row(SECOND_ROW, ts)
    elif kind == "family":
        region.delete_family(SECOND_ROW, FAM2, ts)
    elif kind == "columns":
        assert qualifier is not None
        region.delete_columns(SECOND_ROW, FAM2, qualifier, ts)
    else:
        assert qualifier is not None
        region.delete_column(SECOND_ROW, FAM2, qualifier, ts)
    check(expected)
    region.flush()
    check(expected)

    files_before = region.file_count(FAM2)
    assert files_before > 3
    region.compact_recent(FAM2, 3)
    files_after = region.file_count(FAM2)
    assert files_before > files_after > 1  # compacted, and not a major compaction
    check(expected)
    # The minor compaction kept the marker (R13.2).
    assert any(c[4] in MARKERS for c in region.stored_cells(FAM2))


# ------------------------------------------------------------------------------------------
# TestMajorCompaction (hbase-server .../regionserver/TestMajorCompaction.java), scaled down:
# HBaseTestCase#addContent writes every 3-letter row from "aaa" with the server's time; here
# rows aaa..aac (and bbb..bbc for the "smaller" file) and increasing timestamps.

CONTENT_ROWS = (b"aaa", b"aab", b"aac")
SMALLER_ROWS = (b"bbb", b"bbc")


def _add_content(region: Region, ts: int, rows: Sequence[bytes] = CONTENT_ROWS) -> None:
    """HBaseTestCase#addContent(table, "fam1"): each row's fam1 column with the row as value."""
    for row in rows:
        region.put(row, ts, (FAM1, b"", row))


def test_major_compaction_cleans_up_deletes_and_expired_cells(make_region: Any) -> None:
    """TestMajorCompaction#testMajorCompaction (majorCompaction): VERSIONS=3.

    Five versions per column show 3 (R6.1); a major compaction keeps 3; a DeleteFamily of
    the second row hides it through flush, a later flush and a major compaction, after
    which the store holds one file with 3 cells of the first row and none of the second
    (R13.4). A 1 s TTL then lets a major compaction remove everything (R8.3).
    """
    region = make_region(families(), now=100)
    for ts in range(1, 5):  # createStoreFile x 4
        _add_content(region, ts)
        region.flush()
    _add_content(region, 5)  # more content, in the memstore
    start, second = CONTENT_ROWS[0], CONTENT_ROWS[1]
    assert len(region.get(start, fams=[FAM1], max_versions=100)) == 3

    region.flush()
    region.compact(True)
    assert len(region.get(second, fams=[FAM1], max_versions=100)) == 3

    region.delete_family(second, FAM1, 50)  # Delete(secondRow, currentTime).addFamily(fam1)
    assert region.get(second, fams=[FAM1], max_versions=100) == []
    region.flush()
    assert region.get(second, fams=[FAM1], max_versions=100) == []
    _add_content(region, 60, SMALLER_ROWS)  # createSmallerStoreFile
    region.flush()
    assert region.get(second, fams=[FAM1], max_versions=100) == []

    region.compact(True)
    assert region.file_count(FAM1) == 1
    assert region.get(second, fams=[FAM1], max_versions=100) == []
    stored = region.stored_cells(FAM1)  # verifyCounts(3, 0)
    assert sum(c[1] == start for c in stored) == 3
    assert sum(c[1] == second for c in stored) == 0

    region.set_family(FAM1, ttl=1)  # a 1000 ms TTL, then sleep(1000)
    region.now = 60 + 1000 + 1
    region.compact(True)
    assert region.stored_cells(FAM1) == []


@pytest.mark.parametrize("reversed_scan", [False, True], ids=["forward", "reversed"])
def test_major_compacting_to_no_output(make_region: Any, reversed_scan: bool) -> None:
    """TestMajorCompaction#testMajorCompactingToNoOutput (and ...WithReverseScan): every row
    deleted with a whole-row delete (R1.4), flushed and major compacted: the compaction
    writes nothing and a scan returns no row (R4.4, R13.4)."""
    region = make_region(families(), now=100)
    for ts in range(1, 5):
        _add_content(region, ts)
        region.flush()
    rows = sorted({c[1] for c in region.scan()}, reverse=reversed_scan)
    assert rows == sorted(CONTENT_ROWS, reverse=reversed_scan)
    for row in rows:
        region.delete_row(row, 50)
    region.flush()
    region.compact(True)
    assert region.scan() == []
    assert region.stored_cells(FAM1) == []
    if region.backend == "table":
        assert region.table.scan(reversed=True, now_ms=region.now).to_arrow().num_rows == 0


def test_major_compaction_then_minor_below_threshold(make_region: Any) -> None:
    """TestMajorCompaction#testTimeBasedMajorCompaction, its first half: two files major
    compacted into one, one more file, and a regular (minor) compaction request selects
    nothing with 2 files (hbase.hstore.compaction.min = 3), so the store keeps 2 files and
    every version (R13.2). The periodic, time-based major compaction is scheduling and not
    replayed."""
    region = make_region(families(), now=100)
    for ts in (1, 2):
        _add_content(region, ts)
        region.flush()
    region.compact(True)
    assert region.file_count(FAM1) == 1
    _add_content(region, 3)
    region.flush()
    region.compact(False)
    assert region.file_count(FAM1) == 2
    assert len(region.get(CONTENT_ROWS[0], max_versions=ALL_VERSIONS)) == 3


# ------------------------------------------------------------------------------------------
# TestCompaction (hbase-server .../regionserver/TestCompaction.java)


def test_compaction_seq_id_duplicate_across_files(make_region: Any) -> None:
    """TestCompaction#testCompactionSeqId: VERSIONS=65536; a first file with versions
    10000..10009, a second with 10018 down to 10009, so ts 10009 is in both files. HBase
    asserts the major compaction succeeds (HBASE-16931); we also check its output: every
    version once, the duplicate resolved to the newer file (R3.2, R3.3)."""
    region = make_region(families("cf", max_versions=65536), now=20_000)
    for i in range(10):
        region.put(b"row", 10_000 + i, ("cf", b"qualifier", f"v{i}".encode()))
    region.flush()
    for i in range(18, 8, -1):
        region.put(b"row", 10_000 + i, ("cf", b"qualifier", f"v{i}".encode()))
    region.flush()
    region.compact(True)
    stored = region.stored_cells("cf")
    assert [c[3] for c in stored] == list(range(10_018, 9_999, -1))
    assert [c[5] for c in stored] == [f"v{i}".encode() for i in range(18, -1, -1)]


def test_compaction_cleanup_after_interrupt(make_region: Any) -> None:
    """TestCompaction#testInterruptCompaction, its clean-up: the rows deleted with
    DeleteFamily markers and flushed, then a 1 s TTL and a major compaction leave no cell
    (R13.4, R8.3). (The interrupt itself is compaction machinery, not semantics.)"""
    region = make_region(families(), now=100)
    rows = [b"aaa" + bytes([0, 0, 0, i]) for i in range(3)]  # Bytes.add(STARTROW, toBytes(i))
    for i, row in enumerate(rows):
        _add_content(region, i + 1)
        region.put(row, i + 1, *[(FAM1, bytes([0, 0, 0, j]), b"x" * 10) for j in range(5)])
        region.flush()
    for row in rows:
        region.delete_family(row, FAM1, 50)
    region.flush()
    region.set_family(FAM1, ttl=1)
    region.now = 50 + 1000 + 1
    region.compact(True)
    assert region.stored_cells(FAM1) == []


# ------------------------------------------------------------------------------------------
# TestStoreScanner (hbase-server .../regionserver/TestStoreScanner.java). HBase builds a
# StoreScanner over one sorted list of KeyValues with an explicit ScanInfo whose TTL is
# 500 ms; our TTL is whole seconds, so every time offset is doubled (TTL 1 s = 1000 ms,
# time.to.purge.deletes 200 ms -> 400 ms): every comparison HBase makes is unchanged.

LONGEVITY_NOW = 10_000_000


def _scanner_cells() -> list[Cell]:
    """TestStoreScanner#testDeleteMarkerLongevity's 16 KeyValues (offsets doubled)."""
    now = LONGEVITY_NOW
    return [
        ("cf", b"R1", b"", now - 200, DELETE_FAMILY, b""),  # 0 live
        ("cf", b"R1", b"", now - 2000, DELETE_FAMILY, b""),  # 1 expired
        ("cf", b"R1", b"a", now - 100, PUT, b"v3"),  # 2 live
        ("cf", b"R1", b"a", now - 110, DELETE, b""),  # 3 live
        ("cf", b"R1", b"a", now - 110, PUT, b"deleted-version v2"),  # 4 deleted
        ("cf", b"R1", b"a", now - 120, PUT, b"v1"),  # 5 live
        ("cf", b"R1", b"a", now - 130, PUT, b"v0"),  # 6 max-version reached
        ("cf", b"R1", b"a", now - 200, DELETE_COLUMN, b""),  # 7 max-version
        ("cf", b"R1", b"b", now - 1200, DELETE_COLUMN, b""),  # 8 expired
        ("cf", b"R1", b"b", now - 140, PUT, b"v2"),  # 9 live
        ("cf", b"R1", b"b", now - 1500, PUT, b"v1"),  # 10 expired
        ("cf", b"R1", b"c", now - 1000, DELETE, b""),  # 11 expired
        ("cf", b"R1", b"c", now - 1200, PUT, b"v1"),  # 12 expired
        ("cf", b"R1", b"c", now - 2000, DELETE, b""),  # 13 expired
        ("cf", b"R1", b"d", now - 120, PUT, b"expired put"),  # 14 live
        ("cf", b"R1", b"d", now - 200, DELETE, b""),  # 15 live
    ]


@pytest.mark.parametrize("backend", ["engine", "table", "model"])
def test_store_scanner_delete_marker_longevity(backend: str, tmp_path: Path) -> None:
    """TestStoreScanner#testDeleteMarkerLongevity: a COMPACT_DROP_DELETES scan (a major
    compaction) with VERSIONS=2, TTL, KEEP_DELETED_CELLS=FALSE and time.to.purge.deletes.

    Expired markers and puts go (R8.3, R5.11); markers younger than the purge delay stay
    (R13.6) and still mask (the put at the version marker's ts); the DeleteColumn past
    VERSIONS goes with the rest of its column (R13.4). HBase expects exactly kvs 0, 2, 3,
    5, 9, 14 and 15.
    """
    fam = Family(name="cf", max_versions=2, ttl=1)
    kvs = _scanner_cells()
    expected = [kvs[i] for i in (0, 2, 3, 5, 9, 14, 15)]
    ordered = _run(kvs)
    if backend == "engine":
        spec = CompactionSpec(now_ms=LONGEVITY_NOW, drop_deletes=True, time_to_purge_deletes_ms=400)
        out = resolve(
            merge_runs([ordered], [1]),
            family=fam,
            spec=ReadSpec(now_ms=LONGEVITY_NOW, compaction=spec),
        )
        got = _cells_of("cf", out)
    elif backend == "table":
        table = cellstore.connect(str(tmp_path / "wh")).create_table("t", families=[fam])
        table.load_cells(
            pa.Table.from_pylist(
                [
                    {"row": r, "family": f, "qualifier": q, "ts": ts, "type": t, "value": v}
                    for f, r, q, ts, t, v in kvs
                ]
            )
        )
        compact(table, major=True, now_ms=LONGEVITY_NOW, time_to_purge_deletes_ms=400)
        got = _table_cells(table.scan(raw=True, max_versions=ALL_VERSIONS).to_arrow())
    else:
        merged = model.merge(
            [
                [
                    model.Cell(r, q, ts, int(CellType.parse(t)), v)
                    for _, r, q, ts, t, v in _cells_of("cf", ordered)
                ]
            ],
            [1],
        )
        out_cells = model.compact(
            merged,
            drop_deletes=True,
            max_versions=2,
            min_versions=0,
            ttl_seconds=1,
            keep_deleted_cells="false",
            now_ms=LONGEVITY_NOW,
            time_to_purge_deletes=400,
        )
        got = [
            ("cf", c.row, c.qualifier, c.ts, CellType(c.type).hbase_name, c.value)
            for c in out_cells
        ]
    # Markers carry no value in cellstore; HBase's markers carried "dontcare".
    assert got == expected


def test_store_scanner_expired_delete_family(backend: str, tmp_path: Path) -> None:
    """TestStoreScanner#testExpiredDeleteFamily: an expired DeleteFamily does not mask a
    live put (R5.11, R8.3): a user scan with VERSIONS=1 and TTL returns the put only."""
    fam = Family(name="cf", max_versions=1, ttl=1)
    now = LONGEVITY_NOW
    kvs = [
        ("cf", b"R1", b"", now - 2000, DELETE_FAMILY, b""),
        ("cf", b"R1", b"a", now - 20, PUT, b"dont-care"),
    ]
    region = Region([fam], now=now, backend=backend, root=tmp_path)
    region.put(b"R1", now - 20, ("cf", b"a", b"dont-care"))
    region.delete_family(b"R1", "cf", now - 2000)
    if backend == "table":
        region.flush()  # read from a store file (the flush keeps the put, R5.11)
    assert region.scan(max_versions=1) == [kvs[1]]


# ------------------------------------------------------------------------------------------
# FromClientSideTest* (hbase-server .../client/)


def test_client_purge_future_deletes(make_region: Any) -> None:
    """FromClientSideTest1#testPurgeFutureDeletes (HBASE-10118): a version Delete dated in
    the future masks the future put (R5.9); flush + major compaction with the default
    time.to.purge.deletes = 0 purges the marker and the put (R13.6, R5.8), so the same put
    written again is visible."""
    now = 1_700_000_000_000
    region = make_region(families("family", max_versions=1), now=now)
    ts = now * 2  # a future timestamp
    region.put(b"row", ts, ("family", b"column", b"value"))
    assert values(region.get(b"row")) == [b"value"]
    region.delete_column(b"row", "family", b"column", ts)
    assert region.get(b"row") == []

    region.flush()
    region.compact(True)
    assert region.count_delete_markers() == 0
    region.put(b"row", ts, ("family", b"column", b"value"))
    assert values(region.get(b"row")) == [b"value"]


def test_client_future_deletes_kept_by_time_to_purge(make_region: Any) -> None:
    """FromClientSideTest1#testPurgeFutureDeletes, counterpart with
    hbase.hstore.time.to.purge.deletes > 0 (derived from
    DropDeletesCompactionScanQueryMatcher#tryDropDelete, not asserted by HBase's test): a
    future marker is younger than any delay, so the major compaction keeps it and the
    written-again put stays masked (R13.6, R5.9)."""
    now = 1_700_000_000_000
    region = make_region(
        families("family", max_versions=1), now=now, time_to_purge_deletes_ms=1_000
    )
    ts = now * 2
    region.put(b"row", ts, ("family", b"column", b"value"))
    region.delete_column(b"row", "family", b"column", ts)
    region.flush()
    region.compact(True)
    assert region.count_delete_markers() == 1
    region.put(b"row", ts, ("family", b"column", b"value"))
    assert region.get(b"row") == []


def test_client_keep_deleted_cells(make_region: Any) -> None:
    """FromClientSideTest1#testKeepDeletedCells (HBASE-4536): KEEP_DELETED_CELLS=TRUE,
    VERSIONS=3. A Get/Scan whose range ends at the markers sees the deleted versions (R9.2);
    a raw scan returns the DeleteFamily, T3, the DeleteColumn, T2 and T1 (R10.1)."""
    region = make_region(families("family", kdc=KeepDeletedCells.TRUE))
    ts = TS
    c0 = b"c0"
    region.put(b"T1", ts, ("family", c0, b"T1"))
    region.put(b"T1", ts + 2, ("family", c0, b"T2"))
    region.put(b"T1", ts + 4, ("family", c0, b"T3"))
    region.delete_row(b"T1", ts + 3)
    region.delete_columns(b"T1", "family", c0, ts + 3)
    for _ in range(2):  # the memstore, then (ours) the flushed store file
        assert values(region.get(b"T1", time_range=(0, ts + 3))) == [b"T2"]
        got = region.first_row(start_row=b"T1", time_range=(0, ts + 3), max_versions=ALL_VERSIONS)
        assert values(got) == [b"T2", b"T1"]
        got = region.first_row(start_row=b"T1", raw=True, max_versions=ALL_VERSIONS)
        assert [(c[4], c[5]) for c in got] == [
            (DELETE_FAMILY, b""),
            (PUT, b"T3"),
            (DELETE_COLUMN, b""),
            (PUT, b"T2"),
            (PUT, b"T1"),
        ]
        region.flush()


def test_client_versions(make_region: Any) -> None:
    """FromClientSideTest1#testVersions: VERSIONS=10, versions spread over the memstore and
    two flushed files.

    Exact-timestamp Gets reach every stored version (R7.4, R6.5); a read's max versions caps
    the result (R6.1); the family's 10 versions cap it after more writes; deleting two of the
    ten newest versions (one in a file, one in the memstore) brings the two oldest back
    (R6.3, R5.6).
    """
    region = make_region(families("family", max_versions=10))
    stamps = list(range(20))
    vals = [f"value{i}".encode() for i in range(20)]

    def put(*indexes: int) -> None:  # one Put with several versions of the column
        region.mutate(*[("family", b"row", b"qualifier", stamps[i], PUT, vals[i]) for i in indexes])

    def versions(**options: Any) -> list[bytes]:
        return values(region.get(b"row", columns=[("family", b"qualifier")], **options))

    def check_each(present: Sequence[int], missing: Sequence[int]) -> None:
        for i in present:
            assert versions(time_range=(stamps[i], stamps[i] + 1), max_versions=ALL_VERSIONS) == [
                vals[i]
            ]
            got = region.scan(
                start_row=b"row",
                columns=[("family", b"qualifier")],
                time_range=(stamps[i], stamps[i] + 1),
                max_versions=ALL_VERSIONS,
            )
            assert values(got) == [vals[i]]
        for i in missing:
            assert versions(time_range=(stamps[i], stamps[i] + 1), max_versions=ALL_VERSIONS) == []
            got = region.scan(
                start_row=b"row",
                columns=[("family", b"qualifier")],
                time_range=(stamps[i], stamps[i] + 1),
                max_versions=ALL_VERSIONS,
            )
            assert got == []

    def newest_first(*indexes: int) -> list[bytes]:
        return [vals[i] for i in sorted(indexes, reverse=True)]

    put(1, 2, 4, 5)
    for _ in range(2):  # the memstore, then the flushed file
        check_each([1, 2, 4, 5], [0, 3, 6])
        assert versions(max_versions=2) == newest_first(4, 5)
        region.flush()

    put(3, 6, 7, 8)
    assert versions(max_versions=ALL_VERSIONS) == newest_first(*range(1, 9))
    assert values(region.get(b"row", max_versions=ALL_VERSIONS)) == newest_first(*range(1, 9))
    check_each([1, 2, 4, 7], [0, 9])

    region.flush()
    put(9, 11, 13, 15)
    assert versions(max_versions=ALL_VERSIONS) == newest_first(3, 4, 5, 6, 7, 8, 9, 11, 13, 15)

    # Delete a version in the memstore (11) and one in a store file (7): one mutation.
    region.mutate(
        ("family", b"row", b"qualifier", stamps[11], DELETE, b""),
        ("family", b"row", b"qualifier", stamps[7], DELETE, b""),
    )
    assert versions(max_versions=ALL_VERSIONS) == newest_first(1, 2, 3, 4, 5, 6, 8, 9, 13, 15)


def test_client_version_limits(make_region: Any) -> None:
    """FromClientSideTest1#testVersionLimits: three families with VERSIONS 1, 3 and 5, each
    given VERSIONS+1 (or more) versions: every read form returns the family's limit (R6.1),
    9 cells in all. We check the same after flush + major compaction (R13.4), which must
    not change any read."""
    fams = [Family(name=f"family{i}", max_versions=v) for i, v in enumerate((1, 3, 5))]
    region = make_region(fams)
    q = b"qualifier"
    written = {"family0": 2, "family1": 4, "family2": 7}
    region.mutate(
        *[
            (f, b"row", q, ts, PUT, f"value{ts}".encode())
            for f, n in written.items()
            for ts in range(n)
        ]
    )
    expected = {
        "family0": [b"value1"],
        "family1": [b"value3", b"value2", b"value1"],
        "family2": [b"value6", b"value5", b"value4", b"value3", b"value2"],
    }
    for _ in range(2):
        for fam, vals in expected.items():
            for options in (
                {"columns": [(fam, q)]},
                {"fams": [fam]},
            ):
                assert values(region.get(b"row", max_versions=ALL_VERSIONS, **options)) == vals
                got = region.scan(start_row=b"row", max_versions=ALL_VERSIONS, **options)
                assert values(got) == vals
        all_columns = [(f, q) for f in expected]
        for options in ({}, {"fams": list(expected)}, {"columns": all_columns}):
            assert len(region.get(b"row", max_versions=ALL_VERSIONS, **options)) == 9
            assert len(region.scan(start_row=b"row", max_versions=ALL_VERSIONS, **options)) == 9
        region.flush()
        region.compact(True)


def test_store_scanner_wild_card_ttl_scan(backend: str, tmp_path: Path) -> None:
    """TestStoreScanner#testWildCardTtlScan: a family-wide scan with VERSIONS=1 and a TTL
    ("as should be triggered in a major compaction"): expired cells vanish (R8.1, R8.3), and
    a major compaction of the same cells leaves exactly what the scan returned (R13.4).
    HBase's TTL of 500 ms is scaled to 1 s (offsets doubled)."""
    now = LONGEVITY_NOW
    fam = Family(name="cf", max_versions=1, ttl=1)
    kvs = [
        ("cf", b"R1", b"a", now - 2000, PUT, b"dont-care"),
        ("cf", b"R1", b"b", now - 20, PUT, b"dont-care"),
        ("cf", b"R1", b"c", now - 400, PUT, b"dont-care"),
        ("cf", b"R1", b"d", now - 20000, PUT, b"dont-care"),
        ("cf", b"R2", b"a", now, PUT, b"dont-care"),
        ("cf", b"R2", b"b", now - 20, PUT, b"dont-care"),
        ("cf", b"R2", b"c", now - 400, PUT, b"dont-care"),
        ("cf", b"R2", b"c", now - 2000, PUT, b"dont-care"),
    ]
    region = Region([fam], now=now, backend=backend, root=tmp_path)
    for _, row, qual, ts, _, value in kvs:
        region.put(row, ts, ("cf", qual, value))
    region.flush()
    expected = [kvs[1], kvs[2], kvs[4], kvs[5], kvs[6]]
    assert region.scan() == expected
    region.compact(True)
    assert region.stored_cells("cf") == expected


def test_minor_compaction_skips_redundant_delete_markers(make_region: Any) -> None:
    """R13.7 (HBASE-30036; TestCompactionScanQueryMatcher#testSkipsRedundantDeleteMarkers
    names it, but that test's text was not available to replay, so this scenario is built
    from the rule): a flush (a retain-deletes pass) drops markers covered by a newer
    DeleteFamily of the row, and column markers covered by a newer DeleteColumn of their
    column; uncovered markers stay. Normal reads are unchanged; raw reads see the difference.
    """
    region = make_region(families("cf", max_versions=5))
    row = b"r"
    region.put(row, 1, ("cf", b"a", b"a1"), ("cf", b"b", b"b1"))
    region.put(row, 20, ("cf", b"a", b"a20"), ("cf", b"b", b"b20"))
    region.delete_family(row, "cf", 10)
    region.delete_family(row, "cf", 7)  # covered by the DeleteFamily@10
    region.mutate(("cf", row, b"", 10, "DeleteFamilyVersion", b""))  # covered
    region.delete_columns(row, "cf", b"a", 8)  # covered by the family stamp
    region.delete_columns(row, "cf", b"b", 15)  # kept: newer than the family stamp
    region.delete_column(row, "cf", b"b", 15)  # covered by DeleteColumn b@15
    region.delete_column(row, "cf", b"b", 16)  # kept: newer than DeleteColumn b@15
    reads_before = region.get(row, max_versions=5)
    assert values(reads_before) == [b"a20", b"b20"]

    region.flush()
    assert region.get(row, max_versions=5) == reads_before
    raw = region.scan(raw=True, max_versions=5)
    assert [(c[2], c[3], c[4]) for c in raw] == [
        (b"", 10, DELETE_FAMILY),
        (b"a", 20, PUT),
        (b"b", 20, PUT),
        (b"b", 16, DELETE),
        (b"b", 15, DELETE_COLUMN),
    ]


@pytest.mark.parametrize(
    "backend",
    [
        "engine",
        "model",
        "table",
    ],
)
def test_major_compaction_applies_changed_family_versions(backend: str, tmp_path: Path) -> None:
    """TestMajorCompaction#majorCompaction ends by swapping the store's ScanInfo (a new TTL)
    and expecting the next major compaction to apply it. The same with VERSIONS lowered from
    3 to 1 on a store already major compacted to one file: HBase's forced (user) major
    compaction selects that single file (SortedCompactionPolicy: forceMajor && all files)
    and rewrites it, so only the newest version is stored and an exact-timestamp Get of an
    older one finds nothing (R13.4, R6.5)."""
    region = Region([Family(name=FAM1, max_versions=3)], now=100, backend=backend, root=tmp_path)
    for ts in (1, 2, 3):
        region.put(b"aaa", ts, (FAM1, b"", f"v{ts}".encode()))
        region.flush()
    region.compact(True)
    assert [c[3] for c in region.stored_cells(FAM1)] == [3, 2, 1]
    assert values(region.get(b"aaa", time_range=(1, 2))) == [b"v1"]  # R6.5 before

    region.set_family(FAM1, max_versions=1)
    region.compact(True)
    assert [c[3] for c in region.stored_cells(FAM1)] == [3]
    assert region.get(b"aaa", time_range=(1, 2)) == []


def test_ttl_cleanup_with_purge_ttl(tmp_path: Path) -> None:
    """TestCompaction#testInterruptCompaction / TestMajorCompaction#majorCompaction clean-up
    with cellstore.jobs.purge.purge_ttl instead of a major compaction: once a 1 s TTL has
    passed every cell (puts and DeleteFamily markers) is expired and invisible (R8.3, R5.11),
    and purge_ttl removes them all, dropping wholly expired files unread (R8.7)."""
    from cellstore.jobs.purge import purge_ttl

    region = Region(families(FAM1), now=100, backend="table", root=tmp_path)
    for ts in (1, 2, 3):
        _add_content(region, ts)
        region.flush()
    for row in CONTENT_ROWS[:2]:
        region.delete_family(row, FAM1, 50)
    region.flush()
    assert values(region.scan()) == [CONTENT_ROWS[2]]
    region.set_family(FAM1, ttl=1)
    region.now = 50 + 1000 + 1
    assert region.scan() == []
    purge_ttl(region.table, now_ms=region.now)
    assert region.stored_cells(FAM1) == []
    assert region.file_count(FAM1) == 0
