"""PREFIX, DIFF and FAST_DIFF batches decoded straight to columns (issue 29, ``deltacols``).

The fused path must give exactly the table the block-by-block path gives (the same cells
written NONE are the oracle), in every read option, and leave every unusual batch to that
path: the errors, skipped blocks and bounds stay those of the block-by-block decoder.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fsspec
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cellstore.errors import CorruptFileError
from cellstore.storefiles.hfile import batches
from cellstore.storefiles.hfile.reader import HFileReader
from cellstore.storefiles.hfile.writer import build_hfile
from test_hfile_fast_paths import _cells, cell_rows

FS = fsspec.filesystem("file")


@contextlib.contextmanager
def fused_answers() -> Iterator[list[bool]]:
    """Whether each fused attempt gave a table (True) or left the batch (False): a spy."""
    seen: list[bool] = []
    real = batches.fused_table

    lock = threading.Lock()  # the decode threads call it

    def spy(*args: Any, **kwargs: Any) -> Any:
        got = real(*args, **kwargs)
        with lock:
            seen.append(got is not None)
        return got

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(batches, "fused_table", spy)
        yield seen


def _write(path: Path, cells: pa.Table, **kwargs: Any) -> HFileReader:
    data, _ = build_hfile(cells, **kwargs)
    path.write_bytes(data)
    return HFileReader(FS, str(path))


#: A file's settings: (compression, encoding, tags, memstore timestamps, block size).
settings_of = st.tuples(
    st.sampled_from(["none", "gz", "snappy"]),
    st.sampled_from(["prefix", "diff", "fast_diff"]),
    st.booleans(),
    st.booleans(),
    st.sampled_from([64, 512, 65536]),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=cell_rows, setting=settings_of)
def test_fused_equals_block_by_block(
    tmp_path_factory: pytest.TempPathFactory,
    rows: list[tuple[bytes, bytes, int, int, bytes, int]],
    setting: tuple[str, str, bool, bool, int],
) -> None:
    codec, encoding, tags, mvcc, block_size = setting
    cells = _cells(rows, tags)
    d = tmp_path_factory.mktemp("fused")
    common = {
        "compression": codec,
        "include_tags": tags,
        "include_mvcc": mvcc,
        "block_size": block_size,
    }
    oracle = _write(d / "none.hfile", cells, encoding="none", **common)
    reader = _write(d / "enc.hfile", cells, encoding=encoding, **common)
    lo, hi = sorted([rows[0][0], rows[-1][0]])
    options: list[dict[str, Any]] = [
        {},
        {"with_seq_id": True, "with_tags": True},
        {"dictionary": True},
        {"dictionary": True, "with_seq_id": True, "columns": ["row", "qualifier", "seq_id"]},
        {"columns": ["value", "family"]},
        {"start_row": lo, "stop_row": hi},
        {"start_row": lo, "stop_row": hi, "dictionary": True, "columns": ["ts"]},
        {"batch_bytes": 1},  # one block per batch
    ]
    with fused_answers() as seen:
        for o in options:
            got = reader.read(**o)
            want = oracle.read(**o)
            assert got.schema == want.schema, o
            assert got.equals(want), o
    assert seen and all(seen)


def test_a_big_expansion_is_left_to_the_block_decoder(tmp_path: Path) -> None:
    """FAST_DIFF "same value" cells expand over 64x: the fused path leaves the block."""
    n = 256
    rows = [(b"r%04d" % i, b"q", 5, 4, b"v" * 4096, 0) for i in range(n)]
    cells = _cells(rows, False)
    reader = _write(tmp_path / "f.hfile", cells, encoding="fast_diff", block_size=1 << 20)
    oracle = _write(tmp_path / "n.hfile", cells, encoding="none", block_size=1 << 20)
    with fused_answers() as seen:
        got = reader.read()
    assert seen == [False]
    assert got.equals(oracle.read())


@pytest.mark.parametrize("codec", ["none", "snappy"])
def test_damaged_blocks_raise_or_skip_as_before(tmp_path: Path, codec: str) -> None:
    """A flipped bit: the same error (naming the block) and the same skipped cells."""
    rows = [(b"row%05d" % i, b"q", 7, 4, bytes([i % 251]) * 40, 0) for i in range(3000)]
    reader = _write(
        tmp_path / "f.hfile", _cells(rows, False), encoding="fast_diff", compression=codec
    )
    blocks = reader.data_blocks()
    victim = blocks[len(blocks) // 2]
    data = bytearray((tmp_path / "f.hfile").read_bytes())
    data[victim.offset + 40] ^= 0x10
    bad = tmp_path / "bad.hfile"
    bad.write_bytes(bytes(data))
    damaged = HFileReader(FS, str(bad))
    with fused_answers() as seen, pytest.raises(CorruptFileError) as e:
        damaged.read()
    assert f"offset {victim.offset}" in str(e.value) and "checksum mismatch" in str(e.value)
    assert seen and not seen[0]
    skipped = damaged.read(on_corrupt="skip")
    whole = reader.read()
    assert 0 < whole.num_rows - skipped.num_rows < 3000
    kept = set(skipped.column("row").to_pylist())
    assert kept < set(whole.column("row").to_pylist())
