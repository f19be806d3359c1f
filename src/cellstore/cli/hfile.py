r"""HFile commands, like ``hbase hfile``: ``cellstore hfile info | cat | verify``.

* ``info FILE``: trailer, FileInfo (HBase's keys decoded), index and Bloom summary
  (``hbase hfile -m``); ``--output json`` prints :class:`~cellstore.hbase.HFileInfo`.
* ``cat FILE``: the cells in the HBase shell's ``scan`` format (``--limit``,
  ``--start-row``/``--stop-row`` in printable form, ``\x00`` escapes).
* ``verify FILE...``: every block checksum, the key order, the cell count and the last
  key; exits with 9 when any file is damaged or unreadable.

FILE is a local path or an fsspec URL (the global ``--storage-option`` values apply to
URLs). :mod:`cellstore.hbase` (and with it pyarrow) is imported inside command bodies
only, so ``cellstore --help`` stays fast.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import click

from cellstore.cli.context import CliContext, pass_cli_context
from cellstore.cli.output import JsonOutput
from cellstore.core.keys import from_string_binary
from cellstore.errors import CellstoreError, VerifyError

if TYPE_CHECKING:
    import pyarrow as pa

    from cellstore.hbase import HFileInfo, HFileVerifyReport

__all__ = ["COMMANDS", "cat_cmd", "hfile_group", "info_cmd", "verify_cmd"]


@click.group("hfile")
def hfile_group() -> None:
    """Read HBase HFiles (v2 and v3) directly: summary, cells, integrity.

    \b
    Example:
      cellstore hfile info /hbase/data/default/t1/<region>/cf/<hfile>
      cellstore hfile cat FILE --start-row row10 --limit 20
      cellstore hfile verify FILE [FILE ...]
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
    else:
        lines.append(f"    type={info.bloom_type}, hash={info.bloom_hash}, keys={info.bloom_keys}")
    lines.append("Delete Family Bloom filter:")
    lines.append("    Present" if info.delete_family_bloom else "    Not present")
    return lines


def _value_text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value)


@hfile_group.command("info")
@click.argument("path", metavar="FILE")
@pass_cli_context
def info_cmd(cli_ctx: CliContext, *, path: str) -> None:
    """Show FILE's trailer, FileInfo, index and Bloom summary (like ``hbase hfile -m``)."""
    from cellstore.hbase import hfile_info

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
@pass_cli_context
def cat_cmd(
    cli_ctx: CliContext,
    *,
    path: str,
    limit: int | None,
    start_row: str | None,
    stop_row: str | None,
) -> None:
    """Print FILE's cells in the HBase shell's scan format."""
    from cellstore.hbase import iter_hfile_batches

    started = time.perf_counter()
    batches = iter_hfile_batches(
        path,
        storage_options=_options(cli_ctx, path),
        start_row=from_string_binary(start_row) if start_row is not None else None,
        stop_row=from_string_binary(stop_row) if stop_row is not None else None,
        batch_bytes=1 << 20,
    )
    cli_ctx.output.scan_cells(path, _limited(batches, limit), started=started)


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


#: Registered on the root group by :mod:`cellstore.cli.console`.
COMMANDS: tuple[click.Command, ...] = (hfile_group,)
