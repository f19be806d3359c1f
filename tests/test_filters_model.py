"""Property test: cell filters on top of the semantics agree with the literal model (R12.8).

The model (tests/model.py) merges a filter's answer into HBase's matcher exactly as
``UserScanQueryMatcher#mergeFilterResponse`` does: versions are checked up to the family's
``max_versions`` (every version for raw reads), a rejected cell turns INCLUDE into SKIP and
INCLUDE_AND_SEEK_NEXT_COL into SEEK_NEXT_COL, and accepted cells per column are capped at
``versionsAfterFilter``; the per-family limit/offset then count what was included (R12.7).
The engine does a semantics pass followed by vectorized filters; both must agree cell for
cell.
"""

from __future__ import annotations

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cellstore.core.family import Family
from cellstore.core.filters import (
    ColumnPrefixFilter,
    FilterPlan,
    TimestampsFilter,
    ValueFilter,
    apply_filters,
    filtered_read,
)
from cellstore.core.semantics import merge_runs, resolve
from test_semantics_model import (
    MAX_TS,
    QUALIFIERS,
    families,
    model,
    model_read,
    read_specs,
    store_runs,
    to_table,
)


@st.composite
def cell_filters(draw: st.DrawFn):
    kind = draw(st.sampled_from(["ts", "prefix", "value"]))
    if kind == "ts":
        listed = draw(st.sets(st.integers(0, MAX_TS), max_size=4))
        return TimestampsFilter(sorted(listed)), (lambda c: c.ts in listed)
    if kind == "prefix":
        prefix = draw(st.sampled_from([b"", b"a", b"b", b"\x80", b"zz"]))
        return ColumnPrefixFilter(prefix), (lambda c: c.qualifier.startswith(prefix))
    run = draw(st.sampled_from(["0.", "1.", "2."]))  # values are b"<run>.<position>"
    return (
        ValueFilter("==", run, comparator="prefix"),
        (lambda c: c.value.startswith(run.encode())),
    )


@settings(
    max_examples=500,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data(), runs_and_seqs=store_runs(), family=families())
def test_cell_filters_match_model(data: st.DataObject, runs_and_seqs, family: Family) -> None:
    runs, seqs = runs_and_seqs
    spec = data.draw(read_specs(family))
    flt, predicate = data.draw(cell_filters())
    expected = model_read(model.merge(runs, seqs), family, spec, cell_filter=predicate)
    engine_spec, cap, window = filtered_read(spec, family)
    visible = resolve(
        merge_runs([to_table(r) for r in runs], seqs), family=family, spec=engine_spec
    )
    visible = visible.add_column(1, "family", pa.array(["f"] * visible.num_rows, pa.string()))
    plan = FilterPlan(
        filters=(flt,),
        version_caps={"f": cap},
        windows={"f": window} if window is not None else {},
    )
    got = apply_filters(visible, plan).drop_columns(["family"])
    assert [tuple(d.values()) for d in got.to_pylist()] == expected


def test_qualifier_alphabet_is_shared() -> None:
    # The prefixes drawn above must hit real qualifiers of the generator.
    assert {b"a", b"b", b"\x80"} <= set(QUALIFIERS)
