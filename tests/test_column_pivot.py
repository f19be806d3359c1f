"""The delta pivot and its decisions (reader/columnar/pivot.py), against the rules' oracle.

:func:`pivot_cells` takes each delta file's cells as read: ``row`` and ``qualifier`` as
Arrow dictionaries, one per row group (a row on both sides of a row-group boundary is in
both), or as plain binary (encoded there). :func:`decide` places them among the base's
rows and, per touched row, keeps the newest DeleteFamily and per column the newest Put by
(timestamp, sequence id), R3.3; a Put shows when above the row's newest DeleteFamily
(R5.1) and not expired (R8.1). The oracle below applies those rules cell by cell.
"""

from __future__ import annotations

import io
import random
import struct
import tempfile
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cellstore.core.cells import CellType
from cellstore.reader.columnar.pivot import Decided, Pivot, decide, pivot_cells
from cellstore.storefiles.reader import StoreFileReader
from test_column_patch import ROWS, assert_twins, load, twins

PUT = int(CellType.PUT)
DF = int(CellType.DELETE_FAMILY)
DC = int(CellType.DELETE_COLUMN)
NONE = np.iinfo(np.int64).min
BASE = [b"r%03d" % i for i in range(0, 200, 2)]  # the base's rows (even numbers)
QUALS = [b"", b"a", b"b", b"c"]


def cells_of(
    seed: int, *, kinds: str, absent: bool = False
) -> list[tuple[bytes, bytes, int, int, bytes]]:
    """A sorted delta file: (row, qualifier, ts, type, value); ``kinds`` "p", "m" or "pm"."""
    rng = random.Random(seed)
    rows = sorted(rng.sample(BASE, 30) + ([b"r001"] if absent else []))
    out = []
    for row in rows:
        if "m" in kinds and rng.random() < (1.0 if kinds == "m" else 0.3):
            out.append((row, b"", rng.choice([40, 50, 60]), DF, b""))
        if "p" in kinds:
            for q in sorted(rng.sample(QUALS, rng.randint(1, 3))):
                for ts in sorted(rng.sample([30, 45, 50, 55, 70], rng.randint(1, 2)), reverse=True):
                    out.append((row, q, ts, PUT, b"%s/%s/%d/%d" % (row, q, ts, seed)))
    out.sort(key=lambda c: (c[0], c[1], -c[2], -c[3]))
    return out


def as_run(
    cells: list[tuple[bytes, bytes, int, int, bytes]], *, kinds: str, dictionary: bool
) -> pa.Table:
    """The cells as :func:`pivot_cells` gets them: the columns ``delta_columns`` names,
    written in row groups of 7 cells (rows straddle their boundaries) and read back with
    ``row``/``qualifier`` as dictionaries, or as plain binary."""
    names = {"p": ["row", "qualifier", "ts", "value"], "m": ["row", "ts", "type"]}
    columns = names.get(kinds, ["row", "qualifier", "ts", "type", "value"])
    full = pa.table(
        {
            "row": pa.array([c[0] for c in cells], pa.binary()),
            "qualifier": pa.array([c[1] for c in cells], pa.binary()),
            "ts": pa.array([c[2] for c in cells], pa.int64()),
            "type": pa.array([c[3] for c in cells], pa.int8()),
            "value": pa.array([c[4] for c in cells], pa.binary()),
        }
    )
    sink = io.BytesIO()
    pq.write_table(full, sink, row_group_size=7)
    wanted = [c for c in ("row", "qualifier") if c in columns] if dictionary else None
    read = pq.ParquetFile(io.BytesIO(sink.getvalue()), read_dictionary=wanted)
    out = pa.concat_tables(
        [read.read_row_group(i, columns=columns) for i in range(read.num_row_groups)]
    )
    assert out.column("row").num_chunks > 1
    return out


def oracle(
    files: list[tuple[list[tuple[bytes, bytes, int, int, bytes]], int]],
    *,
    covered: frozenset[bytes] | None,
    oldest: int | None,
    present: np.ndarray,
) -> dict[str, Any]:
    """HBase's rules applied cell by cell: per touched row its newest DeleteFamily, per
    (qualifier, row) its newest Put by (ts, seq) (the first of equal ones), what shows."""
    mark: dict[bytes, int] = {}
    best: dict[tuple[bytes, bytes], tuple[int, int, bytes]] = {}
    touched = set()
    for cells, seq in files:
        for row, q, ts, kind, value in cells:
            touched.add(row)
            if kind == DF:
                mark[row] = max(mark.get(row, NONE), ts)
            elif covered is None or q in covered:
                held = best.get((q, row))
                if held is None or (ts, seq) > held[:2]:
                    best[(q, row)] = (ts, seq, value)
    shown = {}
    after = present.copy()
    for row in sorted(touched):
        at = BASE.index(row)
        hidden = row in mark
        shows = False
        for q in sorted({q for q, _ in best}):
            held = best.get((q, row))
            take = held is not None and held[0] > mark.get(row, NONE)
            take = take and (oldest is None or held[0] >= oldest)
            shows |= take
            visible = take or not (hidden or held is not None)
            shown[(q, row)] = (visible, take, held[2] if take else None)
        after[at] = shows or (not hidden and after[at])
    return {"shown": shown, "present": after, "hidden": {r: r in mark for r in touched}}


def seen(decided: Decided, pivot: Pivot) -> dict[str, Any]:
    """What ``decided`` says, in the oracle's terms."""
    rows = [BASE[i] for i in decided.where]
    shown = {}
    for q, (visible, taking, src) in decided.shown.items():
        raw = decided.raw[q].to_pylist()
        for t, row in enumerate(rows):
            shown[(q, row)] = (
                bool(visible[t]),
                bool(taking[t]),
                raw[src[t]] if taking[t] else None,
            )
    hidden = {row: bool(h) for row, h in zip(rows, decided.hidden, strict=True)}
    assert list(pivot.qualifiers) == sorted(decided.shown)
    return {"shown": shown, "present": decided.present, "hidden": hidden}


@pytest.mark.parametrize("dictionary", [True, False], ids=["dictionaries", "plain"])
@pytest.mark.parametrize("seed", range(6))
def test_decisions_follow_the_rules_from_dictionary_chunks(seed: int, dictionary: bool) -> None:
    """Three delta files (Puts, markers, both; sequence ids 5, 6, 7) in row groups of 7
    cells, read as dictionaries or plain: the decisions equal the oracle's, with a TTL
    and a covered-qualifier set, and rows the base does not show made shown by a Put."""
    rng = random.Random(seed)
    made = [(cells_of(seed * 3 + i, kinds=k), k) for i, k in enumerate(["p", "m", "pm"])]
    seqs = [5, 6, 7] if seed % 2 else [6, 5, 6]  # (equal sequence ids: the first wins)
    runs = [as_run(c, kinds=k, dictionary=dictionary) for c, k in made]
    covered = None if seed % 3 else frozenset(QUALS[1:])
    oldest = None if seed % 2 else 45
    present = np.array([rng.random() < 0.8 for _ in BASE])
    pivot = pivot_cells(runs, seqs, qualifiers=covered)
    assert pivot is not None
    rows = pa.array(BASE, pa.binary())
    decided = decide(present, rows, pivot, oldest=oldest)
    assert decided is not None
    files = [(c, s) for (c, _), s in zip(made, seqs, strict=True)]
    want = oracle(files, covered=covered, oldest=oldest, present=present)
    got = seen(decided, pivot)
    assert got["shown"] == want["shown"]
    assert got["hidden"] == want["hidden"]
    assert got["present"].tolist() == want["present"].tolist()


@pytest.mark.parametrize("seed", range(4))
def test_files_of_one_timestamp_read_without_ts_decide_alike(seed: int) -> None:
    """Delta files whose cells share one timestamp each (as a load stamps them), given
    to :func:`pivot_cells` without their ``ts`` column and with that timestamp instead
    (``stamps``), decide exactly what the same files with the column decide, and what
    the oracle does (R3.3: of equal timestamps the higher sequence id; R5.1: a marker
    hides Puts of its timestamp and older)."""
    made = []
    for i, (kinds, stamp) in enumerate([("p", 50), ("m", 50), ("pm", 60)]):
        seen_keys: set[tuple[bytes, bytes, int]] = set()
        cells = []
        for row, q, _, kind, value in cells_of(seed * 3 + i, kinds=kinds):
            if (row, q, kind) not in seen_keys:  # (one stamp: one cell per key)
                seen_keys.add((row, q, kind))
                cells.append((row, q, stamp, kind, value))
        made.append((cells, kinds, stamp))
    seqs = [5, 6, 7]
    runs = [as_run(c, kinds=k, dictionary=True) for c, k, _ in made]
    bare = [r.drop_columns(["ts"]) for r in runs]
    stamps = [stamp for _, _, stamp in made]
    present = np.array([i % 3 != 0 for i in range(len(BASE))])
    rows = pa.array(BASE, pa.binary())
    full = pivot_cells(runs, seqs, qualifiers=None)
    one = pivot_cells(bare, seqs, qualifiers=None, stamps=stamps)
    assert full is not None and one is not None
    assert all(len(f.ts) == 1 for f in one.files)  # (no column built for them)
    want = oracle(
        [(c, s) for (c, _, _), s in zip(made, seqs, strict=True)],
        covered=None,
        oldest=None,
        present=present,
    )
    for pivot in (full, one):
        decided = decide(present, rows, pivot, oldest=None)
        assert decided is not None
        got = seen(decided, pivot)
        assert got["shown"] == want["shown"]
        assert got["hidden"] == want["hidden"]
        assert got["present"].tolist() == want["present"].tolist()


def test_a_delta_row_the_base_lacks_declines_and_unused_dictionary_rows_do_not() -> None:
    """A cell whose row is not among the base's rows: no decision (the general merge
    reads the task). A row only in a chunk's dictionary (its cells cut off by the read's
    range, as ``slice_rows`` leaves them) does not count: the decision is made."""
    cells = cells_of(1, kinds="p", absent=True)
    run = as_run(cells, kinds="p", dictionary=True)
    pivot = pivot_cells([run], [5], qualifiers=None)
    assert pivot is not None
    rows = pa.array(BASE, pa.binary())
    assert decide(None, rows, pivot, oldest=None) is None
    cut = next(i for i, c in enumerate(cells) if c[0] > b"r001")
    sliced = run.slice(cut)  # (the first chunk's dictionary still holds r001)
    assert any(b"r001" in c.dictionary.to_pylist() for c in sliced.column("row").chunks)
    pivot = pivot_cells([sliced], [5], qualifiers=None)
    assert pivot is not None
    decided = decide(None, rows, pivot, oldest=None)
    assert decided is not None
    want = oracle([(cells[cut:], 5)], covered=None, oldest=None, present=np.ones(len(BASE), bool))
    got = seen(decided, pivot)
    # a dictionary row of the base no cell uses is touched as a no-op: the base shows
    idle = {k: v for k, v in got["shown"].items() if k not in want["shown"]}
    assert set(idle.values()) <= {(True, False, None)}
    assert {k: v for k, v in got["shown"].items() if k not in idle} == want["shown"]
    assert not any(got["hidden"][row] for _, row in idle)
    assert got["present"].tolist() == want["present"].tolist()


def test_another_marker_or_a_put_without_its_qualifier_is_not_pivoted() -> None:
    """A DeleteColumn among the cells, or Puts read without their qualifier: None."""
    cells = cells_of(2, kinds="pm")
    run = as_run(cells, kinds="pm", dictionary=True)
    types = run.column("type").to_numpy().copy()
    types[np.flatnonzero(types == DF)[0]] = DC
    other = run.set_column(run.schema.get_field_index("type"), "type", pa.array(types, pa.int8()))
    assert pivot_cells([other], [5], qualifiers=None) is None
    assert pivot_cells([run.drop_columns(["qualifier"])], [5], qualifiers=None) is None


def test_a_delta_of_one_timestamp_is_read_without_its_ts_column(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A delta cell file whose cells share one timestamp (its entry's smallest and
    largest agree) is read without ``ts`` (the entry's timestamp stands for it); one of
    two timestamps is read with it. The reads equal the cells twin's: R5.1, the
    DeleteFamily (of one timestamp, 30) hides the older Puts (20, 25) and not the newer
    (40); R3.3, the newer Put wins."""
    asked: list[tuple[str, ...]] = []
    real = StoreFileReader.read

    def read(self: StoreFileReader, **k: Any) -> pa.Table:
        if self.info.layout == "cells" and k.get("encoded"):
            asked.append(tuple(k["columns"]))
        return real(self, **k)

    monkeypatch.setattr(StoreFileReader, "read", read)
    with tempfile.TemporaryDirectory() as root:
        cells, auto = twins(root)
        puts = [(ROWS[1], "f", b"dep", 20, PUT, struct.pack(">d", -1.0))]
        markers = [(ROWS[i], "f", b"", 30, DF, b"") for i in (1, 3)]
        later = [(ROWS[1], "f", b"tail", 40, PUT, b"later")]
        later += [(ROWS[2], "f", b"dep", 50, PUT, struct.pack(">d", -2.0))]
        later += [(ROWS[2], "f", b"", 45, DF, b"")]
        later += [(ROWS[3], "f", b"tail", 25, PUT, b"hidden")]  # (below the marker's 30)
        for t in (cells, auto):
            for cells_of_load in (puts, markers, later):
                load(t, cells_of_load)
        got = assert_twins(cells, auto)
    assert {("row", "qualifier", "value"), ("row", "type")} <= set(asked)  # (one stamp)
    assert ("row", "qualifier", "ts", "type", "value") in asked  # (two)
    by_row = {r["row"]: r for r in got}
    assert (by_row[ROWS[1]]["f:dep"], by_row[ROWS[1]]["f:tail"]) == (None, "later")
    assert (by_row[ROWS[2]]["f:dep"], by_row[ROWS[2]]["f:tail"]) == (-2.0, None)
    assert (by_row[ROWS[3]]["f:dep"], by_row[ROWS[3]]["f:tail"]) == (None, None)


def test_located_rows_of_sliced_arrays_read_their_stored_offsets() -> None:
    """``locate_in`` takes keys' offsets as stored (no rebased copy): sliced haystacks and
    needles (offsets not starting at 0, of binary and large binary arrays) place every
    needle where a Python search does, absent ones at -1."""
    from cellstore.reader.rowmerge import locate_in, sorted_parts

    keys = [b"k%04d" % i for i in range(0, 400, 3)] + [b"k9", b"k9\x00"]
    for kind in (pa.binary(), pa.large_binary()):
        hay = pa.array([b"pad"] * 5 + keys, kind).slice(5)
        wanted = [b"k0000", b"k0001", b"k0150", b"k0300", b"k9", b"k9\x00", b"z"]
        needles = pa.array([b"x"] * 3 + wanted, kind).slice(3)
        got = locate_in(needles, sorted_parts(hay)).tolist()
        assert got == [keys.index(w) if w in keys else -1 for w in wanted]
