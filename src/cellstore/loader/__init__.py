"""The bulk loader: input files and frames to cells, through a mapping, on Dask.

A load is a source plus one frozen :class:`LoadSettings` (the mapping, input format,
strictness, memory budget, parallelism, load id, clock, report directory), and either a
table to commit to or an :class:`HFileOutput` (HBase bulk-load HFiles). Plan, then
execute: :func:`~cellstore.loader.plan.plan_load` builds a frozen, picklable
:class:`LoadPlan` (inputs cut into parts, the mapping bound to the table, the mode);
:func:`~cellstore.loader.pipeline.load_table` executes it on Dask and commits once (the
body of ``Table.load``; ``cellstore load`` is the command line).
:func:`~cellstore.loader.hfiles.run_hfile_load` runs the same pipeline into HBase
bulk-load HFiles instead of committing (``Table.write_hfiles``); :func:`write_hfiles`
does so without a cellstore table (ImportTsv's bulk output).
:mod:`cellstore.loader.advise` checks row-key designs (``cellstore advise``; every load
runs its cheap checks too).
"""

from cellstore.loader.advise import advise_input, advise_table
from cellstore.loader.execute import ProgressFn, commit_load, reroute_files
from cellstore.loader.hfiles import run_hfile_load, write_hfiles
from cellstore.loader.inputs import INPUT_FORMATS, InputFormat, InputPart, TextOptions
from cellstore.loader.keycheck import AdviceThresholds, KeyAdvice, KeyFinding
from cellstore.loader.mapping import CellMapping, KeyColumn, LoadMapping, parse_cell_option
from cellstore.loader.pipeline import LoadableTable, load_table
from cellstore.loader.plan import (
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MEMORY_BUDGET,
    LoadPlan,
    LoadTask,
    plan_load,
    sample_split_keys,
)
from cellstore.loader.report import BadRecord, LoadReport
from cellstore.loader.settings import (
    HFileOutput,
    HFileOutputKwargs,
    LoadKwargs,
    LoadSettings,
    WriteHFilesKwargs,
    resolve_settings,
)
from cellstore.storefiles.hfile.options import HFileKwargs, HFileOptions

#: The earlier name of :class:`LoadMapping` (it shadowed ``collections.abc.Mapping``
#: inside the loader); kept so existing imports work.
Mapping = LoadMapping

__all__ = [
    "DEFAULT_MAX_FILE_BYTES",
    "DEFAULT_MEMORY_BUDGET",
    "INPUT_FORMATS",
    "AdviceThresholds",
    "BadRecord",
    "CellMapping",
    "HFileKwargs",
    "HFileOptions",
    "HFileOutput",
    "HFileOutputKwargs",
    "InputFormat",
    "InputPart",
    "KeyAdvice",
    "KeyColumn",
    "KeyFinding",
    "LoadKwargs",
    "LoadMapping",
    "LoadPlan",
    "LoadReport",
    "LoadSettings",
    "LoadTask",
    "LoadableTable",
    "Mapping",
    "ProgressFn",
    "TextOptions",
    "WriteHFilesKwargs",
    "advise_input",
    "advise_table",
    "commit_load",
    "load_table",
    "parse_cell_option",
    "plan_load",
    "reroute_files",
    "resolve_settings",
    "run_hfile_load",
    "sample_split_keys",
    "write_hfiles",
]
