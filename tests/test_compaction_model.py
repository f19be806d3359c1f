"""Property tests: compactions (core.semantics with a CompactionSpec) agree with the literal
model of HBase's compaction matchers (tests/model.py ``compact``), hbase-semantics R13.

Random merged store files (all five cell types, equal keys across files), random family
settings (VERSIONS, MIN_VERSIONS, TTL, KEEP_DELETED_CELLS), minor (retain deletes, R13.2,
R13.7) and major (drop deletes, R13.4-R13.6) compactions, with and without
time.to.purge.deletes. The compacted cells must equal the model's exactly; and a normal read
of the compacted cells must equal the model's read of the model's compacted cells.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cellstore.core.cells import LATEST_TIMESTAMP
from cellstore.core.family import Family
from cellstore.core.semantics import CompactionSpec, ReadSpec, merge_resolve, merge_runs, resolve

try:
    import model
    from test_semantics_model import (
        MAX_TS,
        SETTINGS,
        families,
        model_read,
        read_specs,
        rows_of,
        store_runs,
        to_table,
    )
except ImportError:  # pragma: no cover - when tests/ is a package
    from tests import model
    from tests.test_semantics_model import (
        MAX_TS,
        SETTINGS,
        families,
        model_read,
        read_specs,
        rows_of,
        store_runs,
        to_table,
    )


def _model_compact(merged: list[model.Cell], family: Family, spec: CompactionSpec) -> list:
    return model.compact(
        merged,
        drop_deletes=spec.drop_deletes,
        max_versions=family.max_versions,
        min_versions=family.min_versions,
        ttl_seconds=family.ttl,
        keep_deleted_cells=family.keep_deleted_cells.value,
        now_ms=spec.now_ms,
        time_to_purge_deletes=spec.time_to_purge_deletes_ms,
    )


@st.composite
def compactions(draw: st.DrawFn, family: Family, merged: list[model.Cell]) -> CompactionSpec:
    ttl_ms = (family.ttl or 0) * 1000
    puts = [c.ts for c in merged if not c.is_delete]
    return CompactionSpec(
        now_ms=ttl_ms + draw(st.integers(-1, MAX_TS + 1)),
        drop_deletes=draw(st.booleans()),
        earliest_put_ts=min(puts) if puts else LATEST_TIMESTAMP,
        time_to_purge_deletes_ms=draw(st.sampled_from([0, 0, 0, 2, 5])),
    )


@SETTINGS
@given(data=st.data(), runs_and_seqs=store_runs(), family=families())
def test_compaction_matches_model(data: st.DataObject, runs_and_seqs, family: Family) -> None:
    runs, seqs = runs_and_seqs
    merged = model.merge(runs, seqs)
    spec = data.draw(compactions(family, merged))
    read = ReadSpec(now_ms=spec.now_ms, compaction=spec)
    expected = [c.out() for c in _model_compact(merged, family, spec)]

    got = resolve(merge_runs([to_table(r) for r in runs], seqs), family=family, spec=read)
    assert rows_of(got) == expected
    fused = merge_resolve([to_table(r) for r in runs], seqs, family=family, spec=read)
    assert rows_of(fused) == expected


@SETTINGS
@given(data=st.data(), runs_and_seqs=store_runs(), family=families())
def test_reads_after_compaction_match_model(
    data: st.DataObject, runs_and_seqs, family: Family
) -> None:
    """Compact (engine), then read (engine) == compact (model), then read (model)."""
    runs, seqs = runs_and_seqs
    merged = model.merge(runs, seqs)
    spec = data.draw(compactions(family, merged))
    compacted = resolve(
        merge_runs([to_table(r) for r in runs], seqs),
        family=family,
        spec=ReadSpec(now_ms=spec.now_ms, compaction=spec),
    )
    model_compacted = _model_compact(merged, family, spec)
    read = data.draw(read_specs(family))
    got = resolve(merge_runs([compacted], [max(seqs)]), family=family, spec=read)
    assert rows_of(got) == model_read(model.merge([model_compacted], [0]), family, read)
