r"""Option blocks shared by ``load`` and ``advise``, each collected into one object.

:func:`input_options` adds the mapping flags (``--mapping`` or inline ``--row-key`` /
``--column`` / ``--timestamp`` / ``--operation``) and the input flags (``--format``,
``--delimiter``, ``--no-header``, ``--column-names``, ``--multiline``,
``--input-storage-option``) to a command and hands the command one :class:`InputFlags`
(as ``input_flags``) instead of a dozen parameters; :meth:`InputFlags.resolve` builds
the mapping and text options from them in one place. :func:`hfile_options` does the same
for ``load``'s ``--hfile-output`` block (:class:`HFileFlags`, building a
:class:`~cellstore.loader.HFileOutput`).

Nothing here imports pyarrow (the loader is imported inside the methods).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TypeVar, cast

import click

from cellstore.cli.optionkit import WRITE_THREADS_HELP
from cellstore.cli.params import LOAD_ID, STORAGE_OPTION, _ParamType
from cellstore.errors import InvalidArgumentError

if TYPE_CHECKING:
    from cellstore.loader import HFileOutput, LoadMapping, LoadSettings, TextOptions

__all__ = [
    "SIZE",
    "HFileFlags",
    "InputFlags",
    "LoadFlags",
    "hfile_options",
    "input_options",
    "load_options",
    "parse_size",
    "text_options",
]

F = TypeVar("F", bound=Callable[..., Any])
#: A click option: its declarations and keyword attributes.
OptionSpec = tuple[tuple[str, ...], dict[str, Any]]

_SIZE: Final = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([kmgt]?)(i?b)?\s*$", re.IGNORECASE)
_UNITS: Final = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text: str) -> int:
    """Bytes of a size like ``512M``, ``2GiB``, ``1048576`` (binary multiples).

    Raises:
        InvalidArgumentError: if the text is not a size.
    """
    m = _SIZE.match(text)
    if m is None:
        raise InvalidArgumentError(f"not a size: {text!r} (e.g. 512M, 2G, 1048576)")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


class _SizeType(_ParamType[int]):
    name = "size"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        try:
            return parse_size(str(value))
        except InvalidArgumentError as e:
            self.fail(str(e), param, ctx)


#: A size parameter (``512M``, ``2G``, ``1048576``).
SIZE: Final = _SizeType()


def _opt(*decls: str, **attrs: Any) -> OptionSpec:
    return decls, attrs


def text_options(
    mapping: LoadMapping,
    *,
    delimiter: str | None,
    no_header: bool,
    column_names: str | None,
    multiline: bool = False,
) -> TextOptions:
    """Text-input options: the mapping's ``[input]`` overridden by the command-line flags."""
    from cellstore.loader import TextOptions

    text_opts = dict(mapping.input_options)
    text_opts.pop("format", None)
    if multiline:
        text_opts["multiline"] = True
    if delimiter is not None:
        text_opts["delimiter"] = "\t" if delimiter in ("\\t", "tab") else delimiter
    if no_header:
        text_opts["header"] = False
    if column_names is not None:
        text_opts["column_names"] = tuple(c.strip() for c in column_names.split(","))
    return TextOptions.from_options(text_opts)


def _inline_mapping(
    *,
    row_key: str | None,
    columns: Sequence[str],
    timestamp: str | None,
    operation: str | None,
) -> LoadMapping:
    from cellstore.core.codecs import Codec
    from cellstore.loader import KeyColumn, LoadMapping

    key = None
    if row_key is not None:
        name, _, codec = row_key.partition(":")
        key = KeyColumn(column=name, codec=Codec.parse(codec or "string"))
    ts_col, unit = None, "ms"
    if timestamp is not None:
        ts_col, _, unit = timestamp.partition(":")
        unit = unit or "ms"
    return LoadMapping.simple(
        row_key=key,
        columns=list(columns),
        timestamp=ts_col,
        timestamp_unit=unit,  # type: ignore[arg-type]  # validated by LoadMapping
        operation=operation,
    )


def _collect(
    specs: Sequence[OptionSpec], into: str, build: Callable[[dict[str, Any]], Any]
) -> Callable[[F], F]:
    """A decorator adding options to a command and passing their values as one object.

    The command gets ``into=build(values)`` (values by parameter name) instead of the
    options' own parameters.
    """
    names = [str(click.Option(list(decls), **attrs).name) for decls, attrs in specs]

    def decorate(command: F) -> F:
        @functools.wraps(command)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            values = {n: kwargs.pop(n) for n in names}
            return command(*args, **{into: build(values)}, **kwargs)

        decorated = cast(F, wrapper)
        for decls, attrs in reversed(specs):
            decorated = click.option(*decls, **attrs)(decorated)
        return decorated

    return decorate


# ------------------------------------------------------------------------- input flags
@dataclass(frozen=True, kw_only=True)
class InputFlags:
    """The mapping and input flags of ``load`` and ``advise``.

    Attributes:
        mapping_path: ``--mapping FILE``.
        row_key: ``--row-key COLUMN[:CODEC]``.
        columns: ``--column`` specs.
        timestamp: ``--timestamp COLUMN[:UNIT]`` (``load`` only).
        operation: ``--operation COLUMN`` (``load`` only).
        input_format: ``--format``.
        delimiter: ``--delimiter``.
        no_header: ``--no-header``.
        column_names: ``--column-names``.
        multiline: ``--multiline`` (``load`` only).
        input_storage_options: ``--input-storage-option`` pairs.
    """

    mapping_path: str | None = None
    row_key: str | None = None
    columns: tuple[str, ...] = ()
    timestamp: str | None = None
    operation: str | None = None
    input_format: str | None = None
    delimiter: str | None = None
    no_header: bool = False
    column_names: str | None = None
    multiline: bool = False
    input_storage_options: tuple[tuple[str, Any], ...] = ()

    @property
    def mapping_given(self) -> bool:
        """Whether a mapping flag was given."""
        return bool(self.mapping_path or self.row_key or self.columns)

    @property
    def input_given(self) -> bool:
        """Whether a mapping or text-input flag was given."""
        text = self.input_format or self.delimiter or self.no_header or self.column_names
        return self.mapping_given or bool(text)

    def mapping(self, storage_options: dict[str, Any]) -> LoadMapping:
        """The mapping from ``--mapping FILE`` (read with ``storage_options``) or inline.

        Raises:
            click.UsageError: both, or neither, given.
        """
        from cellstore.loader import LoadMapping

        inline = self.row_key or self.columns or self.timestamp or self.operation
        if self.mapping_path is not None and inline:
            raise click.UsageError("give --mapping or inline --row-key/--column options, not both")
        if self.mapping_path is None and not self.columns:
            raise click.UsageError("give --mapping FILE, or --column (and --row-key) options")
        if self.mapping_path is not None:
            return LoadMapping.from_file(self.mapping_path, storage_options=storage_options)
        return _inline_mapping(
            row_key=self.row_key,
            columns=self.columns,
            timestamp=self.timestamp,
            operation=self.operation,
        )

    def resolve(self) -> tuple[LoadMapping, TextOptions, Any, dict[str, Any]]:
        """The mapping, text options, input format and input storage options.

        Raises:
            click.UsageError: both or neither of ``--mapping`` and inline options.
        """
        options = dict(self.input_storage_options)
        mapping = self.mapping(options)
        text = text_options(
            mapping,
            delimiter=self.delimiter,
            no_header=self.no_header,
            column_names=self.column_names,
            multiline=self.multiline,
        )
        return mapping, text, self.input_format or mapping.input_options.get("format"), options


def input_options(*, load: bool) -> Callable[[F], F]:
    """The mapping and input flags, passed to the command as ``input_flags``.

    Args:
        load: Add ``load``'s flags too (``--timestamp``, ``--operation``, ``--multiline``).
    """
    specs: list[OptionSpec] = [
        _opt(
            "--mapping",
            "mapping_path",
            metavar="FILE",
            help="LoadMapping file (TOML or JSON; any fsspec URL).",
        ),
        _opt(
            "--row-key",
            metavar="COLUMN[:CODEC]",
            help="Inline mapping: the row-key column (codec default string).",
        ),
        _opt(
            "--column",
            "columns",
            multiple=True,
            metavar="FAMILY:QUALIFIER=COLUMN[:CODEC]",
            help="Inline mapping: a cell column (repeatable). FAMILY:{COL} takes the "
            "qualifier from input column COL.",
        ),
    ]
    if load:
        specs += [
            _opt(
                "--timestamp",
                metavar="COLUMN[:UNIT]",
                help="Inline mapping: timestamp column, unit s|ms|us|ns (default: load time).",
            ),
            _opt(
                "--operation",
                metavar="COLUMN",
                help="Inline mapping: column with Put/Delete/DeleteColumn/DeleteFamily/... ",
            ),
        ]
    specs += [
        _opt(
            "--format",
            "input_format",
            type=click.Choice(["csv", "tsv", "jsonl", "parquet"]),
            help="Input format (default: from each file's extension).",
        ),
        _opt("--delimiter", metavar="CHAR", help="CSV field delimiter (default , or tab)."),
        _opt("--no-header", is_flag=True, help="Text files have no header line."),
        _opt(
            "--column-names",
            metavar="A,B,...",
            help="Input column names (required with --no-header).",
        ),
    ]
    if load:
        specs.append(
            _opt(
                "--multiline",
                is_flag=True,
                help="CSV/TSV: quoted values may span lines (default: one record per line; "
                "a quote left open at the end of its line makes the record bad).",
            )
        )
    specs.append(
        _opt(
            "--input-storage-option",
            "input_storage_options",
            type=STORAGE_OPTION,
            multiple=True,
            help="fsspec option for the inputs' filesystem (repeatable).",
        )
    )
    return _collect(specs, "input_flags", lambda values: InputFlags(**values))


# ------------------------------------------------------------------------- load flags
@dataclass(frozen=True, kw_only=True)
class LoadFlags:
    """``load``'s flags that become :class:`~cellstore.loader.LoadSettings` fields.

    Attributes:
        skip_bad_records: ``--skip-bad-records``.
        load_id: ``--load-id``.
        memory_budget: ``--memory-budget``.
        max_file_bytes: ``--max-file-size``.
        max_files_per_region: ``--max-files-per-region``.
        workers: ``--workers``.
        report_dir: ``--report-dir``.
        no_assign_seq_id: ``--no-assign-seq-id``.
    """

    skip_bad_records: bool = False
    load_id: str | None = None
    memory_budget: int | None = None
    max_file_bytes: int | None = None
    max_files_per_region: int | None = None
    workers: int | None = None
    report_dir: str | None = None
    no_assign_seq_id: bool = False

    def settings(self, input_flags: InputFlags) -> LoadSettings:
        """The load's settings: these flags and the mapping and input of ``input_flags``.

        Flags not given keep the settings' defaults; key-design findings go to the
        report (printed), not to Python warnings.

        Raises:
            click.UsageError: both or neither of ``--mapping`` and inline options.
        """
        from cellstore.loader import LoadSettings

        mapping, text, fmt, in_opts = input_flags.resolve()
        given = {
            k: v
            for k, v in dataclasses.asdict(self).items()
            if k != "no_assign_seq_id" and v is not None
        }
        return LoadSettings(
            mapping=mapping,
            format=fmt,
            text=text,
            storage_options=in_opts,
            key_advice="report",
            assign_seq_id=not self.no_assign_seq_id,
            **given,
        )


def load_options() -> Callable[[F], F]:
    """``load``'s settings flags, passed to the command as ``load_flags``."""
    specs: list[OptionSpec] = [
        _opt(
            "--skip-bad-records",
            is_flag=True,
            help="Skip bad records into <report dir>/<load id>.bad.jsonl; commit the rest.",
        ),
        _opt(
            "--load-id",
            type=LOAD_ID,
            help="Idempotency key: a load id the table already committed is not applied again.",
        ),
        _opt(
            "--memory-budget",
            type=SIZE,
            metavar="SIZE",
            help="Memory the load may hold at once (e.g. 512M, 2G; default 1G).",
        ),
        _opt(
            "--max-file-size",
            "max_file_bytes",
            type=SIZE,
            metavar="SIZE",
            help="Roll store files at about this many cell bytes (default 1G).",
        ),
        _opt(
            "--max-files-per-region",
            type=click.IntRange(1, 100_000),
            help="Spill mode: merge a region's sorted runs (per family) when there are more "
            "than N (default 32, HBase's bulk-load limit).",
        ),
        _opt(
            "--workers",
            type=click.IntRange(1, 1024),
            help="Parallel tasks (default: CPU count, or the cluster's threads).",
        ),
        _opt(
            "--report-dir",
            metavar="URL",
            help="Where the report and bad-records file go (default <table>/_loads).",
        ),
        _opt(
            "--no-assign-seq-id",
            is_flag=True,
            help="Commit without a sequence number, like HBase's bulk load with "
            "hbase.mapreduce.bulkload.assign.sequenceNumbers=false: at equal row, column, "
            "timestamp and type the cells already in the table win (not with --hfile-output).",
        ),
    ]
    return _collect(specs, "load_flags", lambda values: LoadFlags(**values))


# ------------------------------------------------------------------------ HFile output
@dataclass(frozen=True, kw_only=True)
class HFileFlags:
    """``load``'s ``--hfile-output`` block.

    Attributes:
        hfile_output: ``--hfile-output DIR``.
        split_keys: ``--split-keys FILE``.
        hbase_root: ``--hbase-root``.
        hbase_table: ``--hbase-table``.
        hbase_snapshot: ``--hbase-snapshot``.
        hfile_compression: ``--hfile-compression``.
        hfile_encoding: ``--hfile-encoding``.
        hfile_block_size: ``--hfile-block-size``.
        hfile_bloom: ``--hfile-bloom``.
        hfile_storage_options: ``--hfile-storage-option`` pairs.
        hfile_threads: ``--threads``: each HFile's blocks encoded and compressed on this
            many threads (``HFileOptions.threads``, every family; None: the default).
    """

    hfile_output: str | None = None
    split_keys: str | None = None
    hbase_root: str | None = None
    hbase_table: str | None = None
    hbase_snapshot: str | None = None
    hfile_compression: str | None = None
    hfile_encoding: str | None = None
    hfile_block_size: int | None = None
    hfile_bloom: str | None = None
    hfile_storage_options: tuple[tuple[str, Any], ...] = ()
    hfile_threads: int | None = None

    def output(self) -> HFileOutput | None:
        """The :class:`~cellstore.loader.HFileOutput` the flags describe (None: none).

        Raises:
            click.UsageError: options that need ``--hfile-output`` without it, or
                conflicting region sources.
        """
        given = (self.split_keys, self.hbase_root, self.hbase_table, self.hbase_snapshot)
        settings = (
            self.hfile_compression,
            self.hfile_encoding,
            self.hfile_block_size,
            self.hfile_bloom,
            self.hfile_threads,
        )
        if self.hfile_output is None:
            if any(o is not None for o in (*given, *settings)) or self.hfile_storage_options:
                raise click.UsageError(
                    "--split-keys, --hbase-*, --hfile-* and --threads options need --hfile-output"
                )
            return None
        if self.split_keys is not None and self.hbase_root is not None:
            raise click.UsageError("give --split-keys or --hbase-root, not both")
        if self.hbase_root is not None and (self.hbase_table is None) == (
            self.hbase_snapshot is None
        ):
            raise click.UsageError("--hbase-root needs --hbase-table or --hbase-snapshot")
        if self.hbase_root is None and (
            self.hbase_table is not None or self.hbase_snapshot is not None
        ):
            raise click.UsageError("--hbase-table and --hbase-snapshot need --hbase-root")
        from cellstore.loader import HFileOutput
        from cellstore.storefiles.hfile.options import DEFAULT_WRITE_THREADS, HFileOptions

        sources = ("split_keys", "hbase_root", "hbase_table", "hbase_snapshot")
        options = HFileOptions(
            compression=cast(Any, self.hfile_compression or "none"),
            encoding=cast(Any, self.hfile_encoding or "none"),
            block_size=self.hfile_block_size,
            bloom=cast(Any, self.hfile_bloom or "row"),
            threads=self.hfile_threads or DEFAULT_WRITE_THREADS,
        )
        return HFileOutput(
            output=self.hfile_output,
            hfile_settings=options,
            output_storage_options=dict(self.hfile_storage_options),
            **{k: getattr(self, k) for k in sources},
        )


def hfile_options() -> Callable[[F], F]:
    """``load``'s ``--hfile-output`` block, passed to the command as ``hfile_flags``."""
    with_output = "With --hfile-output: "
    specs: list[OptionSpec] = [
        _opt(
            "--hfile-output",
            metavar="DIR",
            help="Write HBase bulk-load HFiles to DIR (DIR/<family>/<hex>, absent or empty) "
            "instead of committing, like ImportTsv -Dimporttsv.bulk.output; then run "
            "'hbase completebulkload DIR TABLE'.",
        ),
        _opt(
            "--split-keys",
            metavar="FILE",
            help=with_output + "the HBase table's split keys, one per line, \\xNN "
            "escapes as the HBase shell prints them (default: this table's regions).",
        ),
        _opt(
            "--hbase-root",
            metavar="ROOT",
            help=with_output + "HBase root dir (or exported snapshot) of the target "
            "table: its regions and family settings are used.",
        ),
        _opt(
            "--hbase-table",
            metavar="NS:TABLE",
            help="With --hbase-root: the target table.",
        ),
        _opt(
            "--hbase-snapshot",
            metavar="NAME",
            help="With --hbase-root: a snapshot of the target table.",
        ),
        _opt(
            "--hfile-compression",
            "hfile_compression",
            type=click.Choice(["none", "gz", "snappy", "lz4", "zstd"]),
            help=with_output + "codec of families without an HBase descriptor (default none).",
        ),
        _opt(
            "--hfile-encoding",
            "hfile_encoding",
            type=click.Choice(["none", "prefix", "diff", "fast_diff", "row_index_v1"]),
            help=with_output + "data block encoding (default none).",
        ),
        _opt(
            "--hfile-block-size",
            "hfile_block_size",
            type=SIZE,
            metavar="SIZE",
            help=with_output + "data block size (default: the family's, 64K).",
        ),
        _opt(
            "--hfile-bloom",
            "hfile_bloom",
            type=click.Choice(["none", "row", "rowcol"]),
            help=with_output + "Bloom filter type (default row).",
        ),
        _opt(
            "--hfile-storage-option",
            "hfile_storage_options",
            type=STORAGE_OPTION,
            multiple=True,
            help="fsspec option for --hfile-output, --split-keys and --hbase-root (repeatable).",
        ),
        _opt(
            "--threads",
            "hfile_threads",
            type=click.IntRange(min=1),
            metavar="N",
            help=with_output + WRITE_THREADS_HELP,
        ),
    ]
    return _collect(specs, "hfile_flags", lambda values: HFileFlags(**values))
