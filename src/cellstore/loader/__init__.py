"""The bulk loader: input files and frames to cells, through a mapping, on Dask.

Plan, then execute: :func:`~cellstore.loader.plan.plan_load` builds a frozen, picklable
:class:`LoadPlan` (inputs cut into parts, the mapping bound to the table, the mode), and
:func:`run_load` executes it on Dask and commits once. ``Table.load`` is the Python API;
``cellstore load`` the command line. With ``hfile_output`` the same pipeline writes HBase
bulk-load HFiles instead of committing (:mod:`cellstore.loader.hfiles`);
:func:`write_hfiles` does so without a cellstore table (ImportTsv's bulk output).
:mod:`cellstore.loader.advise` checks row-key designs (``cellstore advise``; every load
runs its cheap checks too).
"""

from cellstore.loader.advise import advise_input, advise_table
from cellstore.loader.execute import ProgressFn, commit_load, reroute_files, run_load
from cellstore.loader.hfiles import write_hfiles
from cellstore.loader.inputs import INPUT_FORMATS, InputFormat, InputPart, TextOptions
from cellstore.loader.keycheck import AdviceThresholds, KeyAdvice, KeyFinding
from cellstore.loader.mapping import CellMapping, KeyColumn, LoadMapping, parse_cell_option
from cellstore.loader.plan import (
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MEMORY_BUDGET,
    LoadPlan,
    LoadSettings,
    LoadTask,
    plan_load,
    sample_split_keys,
)
from cellstore.loader.report import BadRecord, LoadReport

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
    "InputFormat",
    "InputPart",
    "KeyAdvice",
    "KeyColumn",
    "KeyFinding",
    "LoadPlan",
    "LoadReport",
    "LoadSettings",
    "LoadTask",
    "LoadMapping",
    "Mapping",
    "ProgressFn",
    "TextOptions",
    "advise_input",
    "advise_table",
    "commit_load",
    "parse_cell_option",
    "plan_load",
    "reroute_files",
    "run_load",
    "sample_split_keys",
    "write_hfiles",
]
