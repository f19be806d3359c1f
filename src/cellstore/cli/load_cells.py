"""Cell commands: ``load-cells``, the raw write primitive (reads are in ``reads.py``).

pyarrow is imported inside the functions, so importing this module stays cheap.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import TYPE_CHECKING, Final, Literal, get_args

import click

from cellstore.cli.context import CliContext, pass_cli_context
from cellstore.cli.params import LOAD_ID
from cellstore.core.keys import from_string_binary
from cellstore.errors import BadCellError

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["COMMANDS", "CellFileFormat", "load_cells_cmd", "read_cells_file"]

CellFileFormat = Literal["csv", "parquet", "jsonl"]
_SUFFIXES: Final[dict[str, CellFileFormat]] = {
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
}
#: Columns that text formats give in HBase's printable form (``\\xHH`` escapes).
_PRINTABLE_COLUMNS: Final = ("row", "qualifier", "value")


def _decode_printable(column: pa.ChunkedArray) -> pa.Array:
    """Bytes of a string column in printable form; other types are left to the loader."""
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = column.combine_chunks()
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        return arr
    if not pc.any(pc.match_substring(arr, "\\x")).as_py():
        return arr.cast(pa.binary())  # no escapes: the UTF-8 bytes, without a Python loop
    return pa.array(
        [None if s is None else from_string_binary(s) for s in arr.to_pylist()], pa.binary()
    )


def read_cells_file(path: str, *, fmt: CellFileFormat) -> pa.Table:
    """Read a raw cells file for :meth:`~cellstore.warehouse.Table.load_cells`.

    Columns are ``row, family, qualifier, ts, type, value`` (``ts``, ``type`` and
    ``value`` optional, as ``load_cells`` allows); a ``decoded`` column (what ``scan
    --output-file`` and ``export`` add) is left out. In CSV every column is read as a string
    except ``ts`` (int64 milliseconds), and ``type`` may be a name (``Put``,
    ``DeleteColumn``) or a code (``4``, ``12``). In CSV and JSON lines, ``row``,
    ``qualifier`` and ``value`` are in HBase's printable form and decoded with
    :func:`~cellstore.core.keys.from_string_binary`; Parquet columns are taken as they are
    (binary, or str as UTF-8).

    Args:
        path: Local file path.
        fmt: ``csv``, ``parquet`` or ``jsonl``.

    Returns:
        The cells as a pyarrow Table.

    Raises:
        InputNotFoundError: no such file.
        BadCellError: if the file cannot be parsed as ``fmt``.
    """
    import os

    import pyarrow as pa

    from cellstore.errors import InputNotFoundError

    if not os.path.exists(path):
        raise InputNotFoundError(f"cells file {path!r} does not exist")
    if os.path.isdir(path):
        raise BadCellError(f"cells file {path!r} is a directory")

    try:
        if fmt == "parquet":
            import pyarrow.parquet as pq

            cells = pq.read_table(path)
            # the text a scan or export adds beside the stored value
            return cells.drop_columns(["decoded"]) if "decoded" in cells.column_names else cells
        if fmt == "csv":
            import pyarrow.csv as pv

            types = {name: pa.string() for name in ("row", "family", "qualifier", "type", "value")}
            types["ts"] = pa.int64()
            table = pv.read_csv(path, convert_options=pv.ConvertOptions(column_types=types))
        else:
            import pyarrow.json as pj

            table = pj.read_json(path)
    except pa.ArrowInvalid as e:
        raise BadCellError(f"{path}: cannot read as {fmt}: {e}") from e
    if "decoded" in table.column_names:
        table = table.drop_columns(["decoded"])
    for name in _PRINTABLE_COLUMNS:
        if name in table.column_names:
            i = table.column_names.index(name)
            table = table.set_column(i, name, _decode_printable(table.column(name)))
    return table


def _format_for(path: str) -> CellFileFormat:
    fmt = _SUFFIXES.get(PurePath(path).suffix.lower())
    if fmt is None:
        raise click.UsageError(
            f"cannot tell the format of {path!r} from its extension; give --format "
            f"({'|'.join(get_args(CellFileFormat))})"
        )
    return fmt


@click.command("load-cells")
@click.argument("table")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(get_args(CellFileFormat)),
    default=None,
    help="File format (default: from the extension: .csv, .parquet/.pq, .jsonl/.ndjson/.json).",
)
@click.option(
    "--load-id",
    type=LOAD_ID,
    default=None,
    help="Idempotency key: a load id the table already committed is not applied again.",
)
@click.option(
    "--no-assign-seq-id",
    is_flag=True,
    help="Commit without a sequence number (HBase's bulk load with "
    "hbase.mapreduce.bulkload.assign.sequenceNumbers=false): at equal row, column, "
    "timestamp and type the cells already in the table win.",
)
@click.option(
    "--keys",
    type=click.Choice(["logical", "physical"]),
    default=None,
    help="Salted tables: row keys without their salt byte (logical, as get and scan take "
    "them), or with it (physical, verified). Default: logical, refusing a file whose every "
    "key already carries its salt byte.",
)
@pass_cli_context
def load_cells_cmd(
    cli_ctx: CliContext,
    *,
    table: str,
    file: str,
    fmt: CellFileFormat | None,
    load_id: str | None,
    no_assign_seq_id: bool = False,
    keys: Literal["logical", "physical"] | None = None,
) -> None:
    """Load raw cells from FILE into TABLE in one commit.

    FILE has columns row, family, qualifier, ts (ms), type (Put, Delete, DeleteColumn,
    DeleteFamily, DeleteFamilyVersion or their codes) and value. In CSV and JSON lines,
    row, qualifier and value are in HBase's printable form (\\x00 escapes).

    \b
    Example:
      cellstore load-cells ns:events cells.csv
    """  # noqa: D301 (click's \b marker)
    fmt = fmt or _format_for(file)
    handle = cli_ctx.warehouse().table(table)
    result = handle.load_cells(
        read_cells_file(file, fmt=fmt),
        load_id=load_id,
        assign_seq_id=not no_assign_seq_id,
        keys=keys,
    )
    cli_ctx.output.load_result(str(handle.name), result)


#: The commands this module adds to the root group.
COMMANDS: tuple[click.Command, ...] = (load_cells_cmd,)
