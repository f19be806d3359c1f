"""Property tests: the vectorized engine (core.semantics) agrees with the literal model.

Random cells from tiny alphabets (so rows, columns, timestamps and whole keys collide),
all five cell types, several runs with possibly equal sequence numbers, random family
settings (versions, min versions, TTL, keep-deleted-cells) and random reads (versions,
time range, raw, explicit columns, per-family limit/offset). The engine's output must
equal the model's exactly, cell for cell and value for value (so equal-key tie-breaking
is checked too).
"""

from __future__ import annotations

import dataclasses

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cellstore.core.cells import CELL_SCHEMA, LATEST_TIMESTAMP, CellType
from cellstore.core.family import Family, KeepDeletedCells
from cellstore.core.semantics import MERGED_SCHEMA, ReadSpec, merge_runs, resolve
from cellstore.errors import InvalidArgumentError
from layouts import LAYOUTS, stored

try:
    import model
except ImportError:  # pragma: no cover - when tests/ is a package
    from tests import model

ROWS = [b"a", b"a\x00", b"\xff"]
QUALIFIERS = [b"", b"a", b"b", b"\x80"]
TYPES = [int(t) for t in CellType]
MAX_TS = 7

SETTINGS = settings(
    max_examples=600,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@st.composite
def cell_keys(draw: st.DrawFn) -> tuple[bytes, bytes, int, int]:
    cell_type = draw(st.sampled_from(TYPES + [int(CellType.PUT)] * 4))
    family_marker = cell_type in (CellType.DELETE_FAMILY, CellType.DELETE_FAMILY_VERSION)
    qualifier = b"" if family_marker else draw(st.sampled_from(QUALIFIERS))
    return (draw(st.sampled_from(ROWS)), qualifier, draw(st.integers(0, MAX_TS)), cell_type)


@st.composite
def store_runs(draw: st.DrawFn) -> tuple[list[list[model.Cell]], list[int]]:
    """1-4 runs, each sorted in cell order, with unique values naming (run, position)."""
    n_runs = draw(st.integers(1, 4))
    runs = []
    for r in range(n_runs):
        keys = draw(st.lists(cell_keys(), max_size=14))
        cells = [
            model.Cell(row, q, ts, t, value=f"{r}.{i}".encode())
            for i, (row, q, ts, t) in enumerate(keys)
        ]
        cells.sort(key=model.cell_key)  # stable: duplicates inside a run keep their order
        runs.append(cells)
    # -1: a file bulk-loaded without a sequence id (R14.5) ranks below all others
    seqs = draw(st.lists(st.integers(-1, 3), min_size=n_runs, max_size=n_runs))
    return runs, seqs


@st.composite
def families(draw: st.DrawFn) -> Family:
    max_versions = draw(st.integers(1, 4))
    return Family(
        name="f",
        max_versions=max_versions,
        min_versions=draw(st.integers(0, max_versions)),
        ttl=draw(st.sampled_from([None, 1, 1, 2])),
        keep_deleted_cells=draw(st.sampled_from(list(KeepDeletedCells))),
    )


@st.composite
def read_specs(draw: st.DrawFn, family: Family) -> ReadSpec:
    raw = draw(st.sampled_from([False, False, True]))
    bounded = st.tuples(st.integers(0, MAX_TS + 1), st.integers(0, MAX_TS + 1)).map(
        lambda b: (min(b), max(b))
    )
    time_range = draw(st.one_of(st.none(), st.just((0, LATEST_TIMESTAMP)), bounded, bounded))
    qualifiers = None
    if not raw and draw(st.booleans()):
        qualifiers = frozenset(draw(st.sets(st.sampled_from([*QUALIFIERS, b"zz"]), min_size=1)))
    # Put "now - ttl" inside the small timestamp range so that expiry matters.
    ttl_ms = (family.ttl or 0) * 1000
    return ReadSpec(
        now_ms=ttl_ms + draw(st.integers(-1, MAX_TS + 1)),
        max_versions=draw(st.one_of(st.none(), st.integers(1, 5))),
        time_range=time_range,
        raw=raw,
        qualifiers=qualifiers,
        max_results_per_family=draw(st.one_of(st.none(), st.integers(0, 4))),
        row_offset_per_family=draw(st.sampled_from([0, 0, 0, 1, 2])),
    )


def to_table(cells: list[model.Cell]) -> pa.Table:
    return pa.Table.from_pylist(
        [
            {"row": c.row, "qualifier": c.qualifier, "ts": c.ts, "type": c.type, "value": c.value}
            for c in cells
        ],
        schema=CELL_SCHEMA,
    )


def rows_of(table: pa.Table) -> list[tuple[object, ...]]:
    return [tuple(d.values()) for d in table.to_pylist()]


def model_read(
    merged: list[model.Cell], family: Family, spec: ReadSpec, **extra: object
) -> list[tuple]:
    return model.read(
        merged,
        max_versions=family.max_versions,
        min_versions=family.min_versions,
        ttl_seconds=family.ttl,
        keep_deleted_cells=family.keep_deleted_cells.value,
        now_ms=spec.now_ms,
        read_versions=spec.max_versions,
        time_range=spec.time_range,
        raw=spec.raw,
        qualifiers=spec.qualifiers,
        limit_per_row=spec.max_results_per_family,
        offset_per_row=spec.row_offset_per_family,
        **extra,
    )


@SETTINGS
@given(data=st.data(), runs_and_seqs=store_runs(), family=families())
def test_resolve_matches_model(data: st.DataObject, runs_and_seqs, family: Family) -> None:
    """R3-R12: every read of every family setting returns exactly the model's cells."""
    runs, seqs = runs_and_seqs
    spec = data.draw(read_specs(family))
    merged_model = model.merge(runs, seqs)
    layout = data.draw(st.sampled_from(LAYOUTS))  # the runs' store-file layout
    merged = merge_runs([stored(to_table(r), layout) for r in runs], seqs)
    expected = model_read(merged_model, family, spec)
    got = resolve(merged, family=family, spec=spec)
    assert got.schema.equals(CELL_SCHEMA)
    assert rows_of(got) == expected


@settings(max_examples=300, deadline=None)
@given(runs_and_seqs=store_runs())
def test_merge_runs_matches_model(runs_and_seqs) -> None:
    """R2.1, R3.2: cell order, equal keys newest sequence number first, file order kept."""
    runs, seqs = runs_and_seqs
    merged = merge_runs([to_table(r) for r in runs], seqs)
    assert merged.schema.equals(MERGED_SCHEMA)
    expected = [(*c.out(), c.seq) for c in model.merge(runs, seqs)]
    assert rows_of(merged) == expected


@settings(max_examples=200, deadline=None)
@given(data=st.data(), runs_and_seqs=store_runs(), family=families())
def test_puts_only_reads_match_model(data: st.DataObject, runs_and_seqs, family: Family) -> None:
    """The no-marker fast paths (only puts, one run) agree with the model too."""
    runs, _ = runs_and_seqs
    cells = [c for c in runs[0] if c.type == CellType.PUT]
    spec = data.draw(read_specs(family))
    got = resolve(merge_runs([to_table(cells)], [1]), family=family, spec=spec)
    assert rows_of(got) == model_read(model.merge([cells], [1]), family, spec)


@settings(max_examples=250, deadline=None)
@given(data=st.data(), runs_and_seqs=store_runs(), ttl=st.sampled_from([1, 2]))
def test_explicit_columns_min_versions_ttl_match_model(
    data: st.DataObject, runs_and_seqs, ttl: int
) -> None:
    """R8.4/R8.5: MIN_VERSIONS > 0 with TTL, wildcard and explicit columns, several versions.

    The combination the R8.5 quirk needs (explicit columns, fresh versions followed by
    expired ones, read versions > MIN_VERSIONS) is rare in the general property, so it is
    drawn on purpose here.
    """
    runs, seqs = runs_and_seqs
    min_versions = data.draw(st.integers(1, 3))
    family = Family(
        name="f",
        max_versions=data.draw(st.integers(min_versions + 1, 5)),
        min_versions=min_versions,
        ttl=ttl,
        keep_deleted_cells=data.draw(st.sampled_from(list(KeepDeletedCells))),
    )
    qualifiers = data.draw(
        st.one_of(st.none(), st.sets(st.sampled_from(QUALIFIERS), min_size=1).map(frozenset))
    )
    spec = ReadSpec(
        now_ms=ttl * 1000 + data.draw(st.integers(0, MAX_TS)),
        max_versions=data.draw(st.integers(2, 5)),
        qualifiers=qualifiers,
    )
    layout = data.draw(st.sampled_from(LAYOUTS))  # the runs' store-file layout
    merged = merge_runs([stored(to_table(r), layout) for r in runs], seqs)
    got = resolve(merged, family=family, spec=spec)
    assert rows_of(got) == model_read(model.merge(runs, seqs), family, spec)


@settings(max_examples=200, deadline=None)
@given(data=st.data(), runs_and_seqs=store_runs(), family=families())
def test_raw_reads_match_model(data: st.DataObject, runs_and_seqs, family: Family) -> None:
    """R10.2/R10.3: raw reads, often asking for more versions than the family keeps."""
    runs, seqs = runs_and_seqs
    bounded = st.tuples(st.integers(0, MAX_TS + 1), st.integers(0, MAX_TS + 1)).map(
        lambda b: (min(b), max(b))
    )
    spec = ReadSpec(
        now_ms=data.draw(st.integers(0, 3000)),
        max_versions=data.draw(st.integers(family.max_versions, family.max_versions + 3)),
        time_range=data.draw(st.one_of(st.none(), bounded)),
        raw=True,
    )
    layout = data.draw(st.sampled_from(LAYOUTS))  # the runs' store-file layout
    merged = merge_runs([stored(to_table(r), layout) for r in runs], seqs)
    got = resolve(merged, family=family, spec=spec)
    assert rows_of(got) == model_read(model.merge(runs, seqs), family, spec)


@settings(max_examples=200, deadline=None)
@given(data=st.data(), runs_and_seqs=store_runs(), family=families())
def test_time_travel_reads_match_model(data: st.DataObject, runs_and_seqs, family: Family) -> None:
    """R7.3 vs R9.2: which markers a time-ranged normal read applies, per KEEP_DELETED_CELLS."""
    runs, seqs = runs_and_seqs
    lo = data.draw(st.integers(0, MAX_TS))
    spec = ReadSpec(
        now_ms=(family.ttl or 0) * 1000 + data.draw(st.integers(-1, MAX_TS + 1)),
        max_versions=data.draw(st.integers(1, 5)),
        time_range=(lo, data.draw(st.integers(lo, MAX_TS + 1))),
    )
    layout = data.draw(st.sampled_from(LAYOUTS))  # the runs' store-file layout
    merged = merge_runs([stored(to_table(r), layout) for r in runs], seqs)
    got = resolve(merged, family=family, spec=spec)
    assert rows_of(got) == model_read(model.merge(runs, seqs), family, spec)


@pytest.mark.parametrize("cell_type", [CellType.DELETE_FAMILY, CellType.DELETE_FAMILY_VERSION])
def test_family_marker_with_qualifier_is_rejected(cell_type: CellType) -> None:
    """R1.3: family markers carry an empty qualifier; anything else is refused, not guessed."""
    cells = to_table([model.Cell(b"r", b"q", 5, int(cell_type))])
    with pytest.raises(InvalidArgumentError, match="empty qualifier"):
        resolve(merge_runs([cells], [1]), family=Family(name="f"), spec=ReadSpec(now_ms=0))


# ------------------------------------------------------------------------------------------
# Whole tables: per-family time ranges (R7.1) and loads without a sequence id (R14.5),
# through Table.load_cells / Table.scan (planning, file pruning, merge) against the model.

FAMILIES = ("a", "b")


@st.composite
def table_loads(draw: st.DrawFn) -> list[tuple[list[tuple[str, tuple]], bool]]:
    """1-3 loads over two families: unique keys per load, some without a sequence id."""
    loads = []
    for _ in range(draw(st.integers(1, 3))):
        keys = draw(
            st.lists(st.tuples(st.sampled_from(FAMILIES), cell_keys()), max_size=12, unique=True)
        )
        loads.append((keys, draw(st.booleans())))
    return loads


def _bounded() -> st.SearchStrategy[tuple[int, int]]:
    return st.tuples(st.integers(0, MAX_TS + 1), st.integers(0, MAX_TS + 1)).map(
        lambda b: (min(b), max(b))
    )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), loads=table_loads(), family=families())
def test_table_reads_with_family_time_ranges_and_unassigned_seqs_match_model(
    data: st.DataObject, loads, family: Family
) -> None:
    """R7.1 per-family ranges and R14.5/R3.1 unassigned sequence ids, end to end.

    Each family's matcher takes its own range, else the read-wide one (R7.1), before
    version counting and for the markers it applies (R7.2, R7.3), raw reads included; a
    load with ``assign_seq_id=False`` ranks below every load with a sequence id (R14.5),
    so at equal keys its cells lose (R3.2, R3.3). The store-file pruning by each family's
    range must not change any result.
    """
    import tempfile

    from cellstore import connect

    settings_b = data.draw(families())
    fams = [
        dataclasses.replace(family, name="a"),
        dataclasses.replace(settings_b, name="b", ttl=family.ttl),
    ]
    layout = data.draw(st.sampled_from(LAYOUTS))  # every load writes column files
    fams = [dataclasses.replace(f, layout=layout) for f in fams]
    raw = data.draw(st.sampled_from([False, False, True]))
    time_range = data.draw(st.one_of(st.none(), _bounded()))
    ranges = data.draw(st.dictionaries(st.sampled_from(FAMILIES), _bounded(), max_size=2))
    max_versions = data.draw(st.one_of(st.none(), st.integers(1, 5)))
    now_ms = (family.ttl or 0) * 1000 + data.draw(st.integers(-1, MAX_TS + 1))

    runs: dict[str, list[list[model.Cell]]] = {f: [] for f in FAMILIES}
    seqs: list[int] = []
    next_seq = 1
    with tempfile.TemporaryDirectory() as root:
        table = connect(root).create_table("t", families=fams)
        for i, (keys, assign) in enumerate(loads):
            cells = [
                (fam, model.Cell(row, q, ts, t, value=f"{i}.{j}".encode() if t == 4 else b""))
                for j, (fam, (row, q, ts, t)) in enumerate(keys)
            ]
            for fam in FAMILIES:
                run = [c for f, c in cells if f == fam]
                runs[fam].append(sorted(run, key=model.cell_key))
            seqs.append(model.bulk_load_seq(next_seq=next_seq, assign=assign))
            next_seq += assign and bool(cells)
            if cells:
                table.load_cells(
                    pa.table(
                        {
                            "row": [c.row for _, c in cells],
                            "family": [f for f, _ in cells],
                            "qualifier": [c.qualifier for _, c in cells],
                            "ts": pa.array([c.ts for _, c in cells], pa.int64()),
                            "type": pa.array([c.type for _, c in cells], pa.int8()),
                            "value": [c.value for _, c in cells],
                        }
                    ),
                    load_id=f"load-{i:03d}",  # path order = load order among equal seqs
                    assign_seq_id=assign,
                )
        got = table.scan(
            time_range=time_range,
            family_time_ranges=ranges,
            max_versions=max_versions,
            raw=raw,
            now_ms=now_ms,
        ).to_arrow()
    expected = []
    for fam_settings in fams:
        out = model.read(
            model.merge(runs[fam_settings.name], seqs),
            max_versions=fam_settings.max_versions,
            min_versions=fam_settings.min_versions,
            ttl_seconds=fam_settings.ttl,
            keep_deleted_cells=fam_settings.keep_deleted_cells.value,
            now_ms=now_ms,
            read_versions=max_versions,
            time_range=time_range,
            raw=raw,
            family=fam_settings.name,
            family_time_ranges=ranges,
        )
        expected += [(c[0], fam_settings.name, i, c) for i, c in enumerate(out)]
    expected.sort(key=lambda e: e[:3])
    want = [(row, fam, q, ts, t, v) for row, fam, _, (_, q, ts, t, v) in expected]
    assert rows_of(got) == want
