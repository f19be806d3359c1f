r"""HFile commands, like ``hbase hfile``: ``cellstore hfile info | cat | verify``.

* ``info FILE``: trailer, FileInfo (HBase's keys decoded), index and Bloom summary
  (``hbase hfile -m``); ``--output json`` prints :class:`~cellstore.hbase.HFileInfo`.
* ``cat FILE``: the cells in the HBase shell's ``scan`` format (``--limit``,
  ``--start-row``/``--stop-row`` in printable form, ``\x00`` escapes).
* ``verify FILE...``: every block checksum, the key order, the cell count and the last
  key; exits with 9 when any file is damaged or unreadable.
* ``write IN OUT`` / ``write --table NS:T OUT``: cells from a Parquet/CSV/JSON-lines
  cells file (``load-cells``'s format) or a table's raw cells to one HFile
  (:func:`cellstore.hbase.write_hfile`); ``--output json`` reports cells, bytes, blocks.

FILE is a local path or an fsspec URL (the global ``--storage-option`` values apply to
URLs). :mod:`cellstore.hbase` (and with it pyarrow) is imported inside command bodies
only, so ``cellstore --help`` stays fast.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import click

from cellstore.cli.context import CliContext, pass_cli_context
from cellstore.cli.optionkit import READ_THREADS_HELP, WRITE_THREADS_HELP, threads_option
from cellstore.cli.output import JsonOutput
from cellstore.core.keys import from_string_binary
from cellstore.errors import CellstoreError, InputNotFoundError, VerifyError

if TYPE_CHECKING:
    import pyarrow as pa

    from cellstore.hbase import HFileInfo, HFileVerifyReport

__all__ = ["COMMANDS", "cat_cmd", "hfile_group", "info_cmd", "verify_cmd", "write_cmd"]


@click.group("hfile")
def hfile_group() -> None:
    """Read HBase HFiles (v2 and v3) directly: summary, cells, integrity.

    \b
    Example:
      cellstore hfile info /hbase/data/default/t1/<region>/cf/<hfile>
      cellstore hfile cat FILE --start-row row10 --limit 20
      cellstore hfile verify FILE [FILE ...]
      cellstore hfile write cells.parquet out.hfile --compression snappy
      cellstore hfile write --table ns:t --family cf out.hfile
    """  # noqa: D301 (click's \b marker)


def _options(cli_ctx: CliContext, path: str) -> dict[str, Any] | None:
    """Global storage options apply to URLs, not to local paths."""
    return dict(cli_ctx.storage_options) if "://" in path else None


def _emit(cli_ctx: CliContext, doc: object, lines: Sequence[str]) -> None:
    if isinstance(cli_ctx.output, JsonOutput):
        click.echo(json.dumps(doc, indent=2, default=str))
    else:
        click.echo("\n".join(lines))


def _info_lines(info: HFileInfo) -> list[str]:
    t = info.trailer
    lines = [
        f"HFile {info.path}",
        "Trailer:",
        f"    fileinfoOffset={t.file_info_offset}, loadOnOpenDataOffset={t.load_on_open_offset}, "
        f"dataIndexCount={t.data_index_count}, metaIndexCount={t.meta_index_count}, "
        f"totalUncompressedBytes={t.total_uncompressed_bytes}, entryCount={t.entry_count}, "
        f"compressionCodec={t.codec}, uncompressedDataIndexSize={t.uncompressed_data_index_size}"
        f", numDataIndexLevels={t.num_data_index_levels}, firstDataBlockOffset="
        f"{t.first_data_block_offset}, lastDataBlockOffset={t.last_data_block_offset}, "
        f"comparatorClassName={t.comparator}, majorVersion={t.major_version}, "
        f"minorVersion={t.minor_version}",
        "Fileinfo:",
        *(f"    {k} = {_value_text(v)}" for k, v in info.file_info.items()),
        "Summary:",
        f"    version={info.version}, size={info.size}, compression={info.compression}, "
        f"encoding={info.data_block_encoding}, checksum={info.checksum}",
        f"    entries={info.entry_count}, dataBlocks={info.data_block_count}, "
        f"indexLevels={info.index_levels}, rootIndexEntries={info.root_index_entries}",
        f"    firstKey={info.first_key}",
        f"    lastKey={info.last_key}",
        f"    tags={'yes' if info.has_tags else 'no'}, "
        f"seqIds={'yes' if info.has_seq_ids else 'no'}, "
        f"metaBlocks={', '.join(info.meta_blocks) or '(none)'}",
        "Bloom filter:",
    ]
    if info.bloom_type == "NONE":
        lines.append("    Not present")
    elif info.bloom_hash is None:  # present but its meta block is damaged
        lines.append(f"    type={info.bloom_type}, damaged (cellstore hfile verify says why)")
    else:
        lines.append(f"    type={info.bloom_type}, hash={info.bloom_hash}, keys={info.bloom_keys}")
    lines.append("Delete Family Bloom filter:")
    lines.append("    Present" if info.delete_family_bloom else "    Not present")
    if info.problems:
        lines.append("Damaged, left out:")
        lines.extend(f"    offset {p.offset}: {p.message}" for p in info.problems)
    return lines


def _value_text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value)


@contextlib.contextmanager
def _named_file(path: str) -> Iterator[None]:
    """A missing FILE is ``not-found`` (exit 3), as every file a user names to read."""
    try:
        yield
    except FileNotFoundError as e:
        if isinstance(e, CellstoreError):
            raise
        raise InputNotFoundError(f"HFile {path} does not exist") from e


@hfile_group.command("info")
@click.argument("path", metavar="FILE")
@pass_cli_context
def info_cmd(cli_ctx: CliContext, *, path: str) -> None:
    """Show FILE's trailer, FileInfo, index and Bloom summary (like ``hbase hfile -m``)."""
    from cellstore.hbase import hfile_info

    with _named_file(path):
        info = hfile_info(path, storage_options=_options(cli_ctx, path))
    _emit(cli_ctx, info.to_dict(), _info_lines(info))


def _limited(batches: Iterator[pa.Table], limit: int | None) -> Iterator[pa.Table]:
    left = limit
    for batch in batches:
        if left is None:
            yield batch
            continue
        if left <= 0:
            return
        yield batch.slice(0, left)
        left -= min(left, batch.num_rows)


@hfile_group.command("cat")
@click.argument("path", metavar="FILE")
@click.option("--limit", type=click.IntRange(min=0), default=None, help="At most N cells.")
@click.option("--start-row", default=None, help=r"First row (printable form, \x00 escapes).")
@click.option("--stop-row", default=None, help="Row to stop before (exclusive).")
@threads_option(help=READ_THREADS_HELP)
@pass_cli_context
def cat_cmd(
    cli_ctx: CliContext,
    *,
    path: str,
    limit: int | None,
    start_row: str | None,
    stop_row: str | None,
    threads: int | None,
) -> None:
    """Print FILE's cells in the HBase shell's scan format."""
    from cellstore.hbase import HFileReadOptions, iter_hfile_batches
    from cellstore.storefiles.hfile.readoptions import DEFAULT_THREADS

    started = time.perf_counter()
    options = HFileReadOptions(
        start_row=from_string_binary(start_row) if start_row is not None else None,
        stop_row=from_string_binary(stop_row) if stop_row is not None else None,
        batch_bytes=1 << 20,
        threads=DEFAULT_THREADS if threads is None else threads,
    )
    batches = iter_hfile_batches(path, options, storage_options=_options(cli_ctx, path))
    with _named_file(path):
        first = next(batches, None)  # a missing FILE fails before anything is printed
    rest = batches if first is None else itertools.chain([first], batches)
    with _named_file(path):
        cli_ctx.output.scan_cells(path, _limited(rest, limit), started=started)


def _verify_lines(report: HFileVerifyReport) -> list[str]:
    if report.ok:
        return [f"{report.path}: OK ({report.blocks} blocks, {report.cells} cells)"]
    lines = [f"{report.path}: DAMAGED ({report.blocks} blocks, {report.cells} cells readable)"]
    for problem in report.problems:
        at = f"offset {problem.offset}: " if problem.offset >= 0 else ""
        lines.append(f"    {at}{problem.message}")
    return lines


@hfile_group.command("verify")
@click.argument("paths", metavar="FILE...", nargs=-1, required=True)
@pass_cli_context
def verify_cmd(cli_ctx: CliContext, *, paths: tuple[str, ...]) -> None:
    """Check every checksum and the key order of each FILE; exit 9 on damage."""
    from cellstore.hbase import verify_hfile

    docs: list[dict[str, Any]] = []
    lines: list[str] = []
    damaged = 0
    for path in paths:
        try:
            report = verify_hfile(path, storage_options=_options(cli_ctx, path))
        except (CellstoreError, OSError) as e:
            damaged += 1
            docs.append({"path": path, "ok": False, "problems": [{"message": str(e)}]})
            lines.append(f"{path}: UNREADABLE: {e}")
            continue
        damaged += not report.ok
        docs.append(
            {
                "path": report.path,
                "ok": report.ok,
                "blocks": report.blocks,
                "cells": report.cells,
                "problems": [{"offset": p.offset, "message": p.message} for p in report.problems],
            }
        )
        lines.extend(_verify_lines(report))
    lines.append(f"{len(paths) - damaged} of {len(paths)} file(s) OK")
    _emit(cli_ctx, {"files": docs, "damaged": damaged}, lines)
    if damaged:
        click.get_current_context().exit(VerifyError.exit_code)


def _type_codes(table: pa.Table) -> pa.Table:
    """``type`` as int8 codes: names (``Put``, ``DeleteColumn``) or codes as text."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from cellstore.core.cells import parse_type_names
    from cellstore.errors import BadCellError

    if "type" not in table.column_names:
        return table
    col = table.column("type")
    if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
        return table
    text = col.combine_chunks()
    codes = parse_type_names(text)
    bad = pc.and_(codes.is_null(), text.is_valid()).to_numpy(zero_copy_only=False)
    if bad.any():
        i = int(bad.nonzero()[0][0])
        raise BadCellError(f"cell {i}: unknown cell type {text[i].as_py()!r}", record=i)
    return table.set_column(table.column_names.index("type"), "type", codes)


def _table_cells(
    cli_ctx: CliContext,
    name: str,
    *,
    start_row: str | None,
    stop_row: str | None,
    family: str | None,
) -> pa.Table:
    """A table's raw cells (markers included, every version) in a row range."""
    scan = (
        cli_ctx.warehouse()
        .table(name)
        .scan(
            start_row=from_string_binary(start_row) if start_row is not None else None,
            stop_row=from_string_binary(stop_row) if stop_row is not None else None,
            families=family,
            raw=True,
            max_versions=2**31 - 1,
        )
    )
    return scan.to_arrow()


@hfile_group.command("write")
@click.argument("paths", metavar="[IN] OUT", nargs=-1, required=True)
@click.option("--table", "table_name", default=None, help="Read the cells of this table (NS:T).")
@click.option("--start-row", default=None, help="With --table: first row (printable form).")
@click.option("--stop-row", default=None, help="With --table: row to stop before.")
@click.option("--family", default=None, help="With --table: the family to write (one per file).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["csv", "parquet", "jsonl"]),
    default=None,
    help="IN's format (default: from the extension).",
)
@click.option(
    "--compression",
    type=click.Choice(["none", "gz", "snappy", "lz4", "zstd"]),
    default="none",
    show_default=True,
)
@click.option(
    "--encoding",
    type=click.Choice(["none", "prefix", "diff", "fast_diff", "row_index_v1"]),
    default="none",
    show_default=True,
)
@click.option("--block-size", type=click.IntRange(min=1), default=65536, show_default=True)
@click.option(
    "--bloom", type=click.Choice(["row", "rowcol", "none"]), default="row", show_default=True
)
@threads_option(help=WRITE_THREADS_HELP)
@pass_cli_context
def write_cmd(
    cli_ctx: CliContext,
    *,
    paths: tuple[str, ...],
    table_name: str | None,
    start_row: str | None,
    stop_row: str | None,
    family: str | None,
    fmt: str | None,
    compression: str,
    encoding: str,
    block_size: int,
    bloom: str,
    threads: int | None,
) -> None:
    """Write cells to one HBase HFile (bulk-loadable, one family).

    IN is a cells file as ``load-cells`` reads it (columns row, family, qualifier, ts,
    type as code or HBase name, value; CSV in HBase printable form), or give --table to
    write a table's raw cells (every version and delete marker) in a row range. Cells are
    put in HBase's order.
    """
    from cellstore.cli.load_cells import _format_for, read_cells_file
    from cellstore.hbase import write_hfile
    from cellstore.storefiles.hfile.options import DEFAULT_WRITE_THREADS

    if table_name is None and len(paths) != 2:
        raise click.UsageError("give IN and OUT, or --table NS:T and OUT")
    if table_name is not None and len(paths) != 1:
        raise click.UsageError("with --table give only OUT")
    if table_name is None and (start_row or stop_row or family):
        raise click.UsageError("--start-row, --stop-row and --family need --table")
    started = time.perf_counter()
    out = paths[-1]
    if table_name is not None:
        cells = _table_cells(
            cli_ctx, table_name, start_row=start_row, stop_row=stop_row, family=family
        )
        source = table_name
    else:
        source = paths[0]
        cells = read_cells_file(source, fmt=fmt or _format_for(source))  # type: ignore[arg-type]
    cells = _type_codes(cells)
    if "family" in cells.column_names and cells.num_rows:
        import pyarrow.compute as pc

        families = pc.unique(cells.column("family")).to_pylist()
        if len(families) > 1:
            raise click.UsageError(
                f"the cells hold {len(families)} families; an HFile holds one (give --family)"
            )
    fs = None
    target = out
    if "://" in out:
        import fsspec

        fs, target = fsspec.core.url_to_fs(out, **(_options(cli_ctx, out) or {}))
    written = write_hfile(
        target,
        cells,
        fs=fs,
        compression=compression,  # type: ignore[arg-type]
        encoding=encoding,  # type: ignore[arg-type]
        block_size=block_size,
        bloom=bloom,  # type: ignore[arg-type]
        threads=DEFAULT_WRITE_THREADS if threads is None else threads,
    )
    secs = time.perf_counter() - started
    doc = {
        "source": source,
        "path": out,
        "cells": written.entry_count,
        "bytes": written.file_size,
        "blocks": written.data_blocks,
        "index_levels": written.index_levels,
        "compression": compression,
        "encoding": encoding,
        "seconds": round(secs, 3),
    }
    _emit(
        cli_ctx,
        doc,
        [
            f"wrote {out}: {written.entry_count} cells, {written.file_size} bytes, "
            f"{written.data_blocks} data blocks ({compression}, {encoding}) in {secs:.2f} s"
        ],
    )


#: Registered on the root group by :mod:`cellstore.cli.console`.
COMMANDS: tuple[click.Command, ...] = (hfile_group,)
