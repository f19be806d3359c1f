"""A Hypothesis state machine over a real table: loads (puts and all four marker kinds),
minor and major compactions, TTL purges, region splits and merges, snapshots and restores.

The model keeps, for every live store file, the cells it must hold, and derives what each
job must write from the literal model of HBase (tests/model.py): a compaction's output is
``model.compact`` of its inputs (R13), a split keeps every cell in the child that owns its
row with its sequence number, a merge moves files, a TTL purge drops expired cells (R8), a
restore brings back the snapshot's files. After every step: each new file holds exactly
what the model says, reads (normal, all versions, time range, raw) equal ``model.read``
over the model's files region by region, and ``verify`` finds no problem.
"""

from __future__ import annotations

import shutil
import tempfile
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import cellstore
from cellstore.core.family import Family, KeepDeletedCells
from cellstore.jobs.compact import compact
from cellstore.jobs.purge import purge_ttl
from cellstore.jobs.regions import merge, split
from cellstore.jobs.snapshots import restore, snapshot
from cellstore.jobs.verify import verify

try:
    import model
except ImportError:  # pragma: no cover
    from tests import model

NOW = 10_000_000
ROWS = [b"a", b"b", b"c", b"d", b"e"]
QUALIFIERS = [b"", b"q", b"r"]
STAMPS = [NOW - 1500, NOW - 1200, NOW - 900, NOW - 500, NOW - 100, NOW]
TYPES = ["Put", "Put", "Put", "Delete", "DeleteColumn", "DeleteFamily", "DeleteFamilyVersion"]
CODES = {"Put": 4, "Delete": 8, "DeleteFamilyVersion": 10, "DeleteColumn": 12, "DeleteFamily": 14}

Key = tuple[str, str, str]  # (path, region, family)


@st.composite
def load_batches(draw: st.DrawFn) -> list[tuple[bytes, bytes, int, str]]:
    keys = draw(
        st.lists(
            st.tuples(
                st.sampled_from(ROWS),
                st.sampled_from(QUALIFIERS),
                st.sampled_from(STAMPS),
                st.sampled_from(TYPES),
            ),
            min_size=1,
            max_size=8,
        )
    )
    out = {}
    for row, qual, ts, typ in keys:
        if typ in ("DeleteFamily", "DeleteFamilyVersion"):
            qual = b""
        out[(row, qual, ts, CODES[typ])] = (row, qual, ts, typ)
    return list(out.values())


class TableMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = tempfile.mkdtemp(prefix="cellstore-sm-")
        self.files: dict[Key, tuple[int, list[model.Cell]]] = {}
        self.snapshots: dict[str, dict[Key, tuple[int, list[model.Cell]]]] = {}
        self.loads = 0

    def teardown(self) -> None:
        """Each run's warehouse is removed (tests clean their temp dirs)."""
        shutil.rmtree(self.root, ignore_errors=True)

    @initialize(
        versions=st.integers(1, 3),
        min_versions=st.integers(0, 1),
        ttl=st.sampled_from([None, 1]),
        kdc=st.sampled_from(list(KeepDeletedCells)),
    )
    def create(
        self, versions: int, min_versions: int, ttl: int | None, kdc: KeepDeletedCells
    ) -> None:
        self.family = Family(
            name="f",
            max_versions=versions,
            min_versions=min(min_versions, versions),
            ttl=ttl,
            keep_deleted_cells=kdc,
        )
        self.table = cellstore.connect(self.root).create_table(
            "t", families=[self.family], splits=[b"c"]
        )

    # ------------------------------------------------------------------ helpers
    def _file_cells(self, path: str, seq: int) -> list[model.Cell]:
        t = pq.read_table(f"{self.table.path}/{path}")
        return [
            model.Cell(r["row"], r["qualifier"], r["ts"], r["type"], r["value"], seq)
            for r in t.to_pylist()
        ]

    def _entries(self) -> dict[Key, Any]:
        return {(e.path, e.region, e.family): e for e in self.table.refresh().files}

    def _sync(self, expected_per_region: dict[str, list[tuple]] | None = None) -> None:
        """Adopt the new manifest: check new files against ``expected_per_region`` (cells
        per region in key order, for the regions whose files a job rewrote)."""
        entries = self._entries()
        new = {k: e for k, e in entries.items() if k not in self.files}
        by_region: dict[str, list[tuple[Any, list[model.Cell]]]] = {}
        for key, e in new.items():
            cells = self._file_cells(e.path, e.seq)
            by_region.setdefault(e.region, []).append((e, cells))
            self.files[key] = (e.seq, cells)
        for key in [k for k in self.files if k not in entries]:
            del self.files[key]
        for region, expected in (expected_per_region or {}).items():
            got = sorted(
                (c for _, cells in by_region.get(region, []) for c in cells), key=model.cell_key
            )
            assert [c.out() for c in got] == expected, region

    def _store(self, region: str) -> list[tuple[Key, int, list[model.Cell]]]:
        return [(k, seq, cells) for k, (seq, cells) in self.files.items() if k[1] == region]

    # -------------------------------------------------------------------- rules
    @rule(batch=load_batches())
    def load(self, batch: list[tuple[bytes, bytes, int, str]]) -> None:
        self.loads += 1
        self.table.load_cells(
            pa.table(
                {
                    "row": [b[0] for b in batch],
                    "family": ["f"] * len(batch),
                    "qualifier": [b[1] for b in batch],
                    "ts": [b[2] for b in batch],
                    "type": [b[3] for b in batch],
                    "value": [b"v%d" % self.loads if b[3] == "Put" else b"" for b in batch],
                }
            )
        )
        self._sync()

    @rule(major=st.booleans())
    def compact(self, major: bool) -> None:
        before = dict(self.files)
        compact(self.table, major=major, now_ms=NOW, min_files=2)
        after = self._entries()
        removed = [k for k in before if k not in after]
        expected: dict[str, list[tuple]] = {}
        for region in {k[1] for k in removed}:
            store = [(k, seq, cells) for k, (seq, cells) in before.items() if k[1] == region]
            gone = [s for s in store if s[0] in removed]
            fam = self.family
            expired = []
            if fam.ttl is not None and fam.min_versions == 0:
                expired = [s for s in gone if max(c.ts for c in s[2]) < NOW - fam.ttl * 1000]
            inputs = [s for s in gone if s not in expired]
            if not inputs:
                expected[region] = []
                continue
            live = [s for s in store if s not in expired]
            merged = model.merge([s[2] for s in inputs], [s[1] for s in inputs])
            out = model.compact(
                merged,
                drop_deletes=len(inputs) == len(live),
                max_versions=fam.max_versions,
                min_versions=fam.min_versions,
                ttl_seconds=fam.ttl,
                keep_deleted_cells=fam.keep_deleted_cells.value,
                now_ms=NOW,
            )
            expected[region] = [c.out() for c in out]
        self._sync(expected)

    @rule()
    def purge(self) -> None:
        if self.family.min_versions > 0:
            return  # covered by compact (purge runs a major compaction there)
        before = dict(self.files)
        purge_ttl(self.table, now_ms=NOW)
        after = self._entries()
        removed = [k for k in before if k not in after]
        expected: dict[str, list[tuple]] = {}
        oldest = NOW - (self.family.ttl or 0) * 1000
        for k in removed:
            kept = [c.out() for c in before[k][1] if c.ts >= oldest]
            expected.setdefault(k[1], []).extend(kept)
        self._sync(
            {
                r: sorted(v, key=lambda o: model.cell_key(model.Cell(*o[:4])))
                for r, v in expected.items()
            }
        )

    @rule(at=st.sampled_from([b"b", b"b\x00", b"d", b"e"]))
    def split(self, at: bytes) -> None:
        before = {k: v for k, v in self.files.items()}
        split(self.table, at=at)
        self._sync()

        # Every cell is still there, once, with its sequence number, in the region owning it.
        def cells_of(files: dict[Key, tuple[int, list[model.Cell]]]) -> list[tuple]:
            return sorted((c.seq, *c.out()) for _, cells in files.values() for c in cells)

        assert cells_of(self.files) == cells_of(before)
        regions = {r.id: r for r in self.table.regions}
        for (_, region, _), (_, cells) in self.files.items():
            assert all(regions[region].contains(c.row) for c in cells)

    @precondition(lambda self: len(self.table.regions) > 1)
    @rule(data=st.data())
    def merge(self, data: st.DataObject) -> None:
        regions = self.table.regions
        i = data.draw(st.integers(0, len(regions) - 2))
        before = {(k[0], k[2]): v for k, v in self.files.items()}
        merge(self.table, regions=[regions[i].id, regions[i + 1].id])
        self._sync()
        assert {(k[0], k[2]): v for k, v in self.files.items()} == before

    @rule()
    def take_snapshot(self) -> None:
        name = f"s{len(self.snapshots)}"
        snapshot(self.table, name)
        self.table.refresh()
        self.snapshots[name] = dict(self.files)

    @precondition(lambda self: bool(self.snapshots))
    @rule(data=st.data())
    def restore(self, data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(sorted(self.snapshots)))
        restore(self.table, name)
        self.table.refresh()
        self.files = {}
        self._sync()
        assert self.files.keys() == self.snapshots[name].keys()

    # --------------------------------------------------------------- invariants
    def _model_read(self, **read: Any) -> list[tuple]:
        out: list[tuple] = []
        for region in self.table.regions:
            store = self._store(region.id)
            merged = model.merge([s[2] for s in store], [s[1] for s in store])
            out.extend(
                model.read(
                    merged,
                    max_versions=self.family.max_versions,
                    min_versions=self.family.min_versions,
                    ttl_seconds=self.family.ttl,
                    keep_deleted_cells=self.family.keep_deleted_cells.value,
                    now_ms=NOW,
                    **read,
                )
            )
        return out

    @invariant()
    def reads_match_model(self) -> None:
        if not hasattr(self, "table"):
            return
        reads: list[dict[str, Any]] = [
            {},
            {"read_versions": 5},
            {"read_versions": 5, "time_range": (NOW - 1000, NOW - 200)},
            {"read_versions": 5, "raw": True},
        ]
        for read in reads:
            options: dict[str, Any] = {"now_ms": NOW, "max_versions": read.get("read_versions")}
            if "time_range" in read:
                options["time_range"] = read["time_range"]
            if read.get("raw"):
                options["raw"] = True
            got = self.table.scan(**options).to_arrow()
            rows = [
                (r["row"], r["qualifier"], r["ts"], r["type"], r["value"]) for r in got.to_pylist()
            ]
            assert rows == self._model_read(**read), read

    @invariant()
    def verify_passes(self) -> None:
        if hasattr(self, "table"):
            report = verify(self.table)
            assert report.ok, report.to_dict()


TableMachine.TestCase.settings = settings(
    max_examples=25,
    stateful_step_count=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_table_state_machine = TableMachine.TestCase
