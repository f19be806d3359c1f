"""cellstore: HBase's data model as sorted store files on any fsspec filesystem.

The names that need pyarrow or fsspec (``CellType``, ``connect``, ``RowKeySpec``...) are
imported lazily on first access (PEP 562 module ``__getattr__``), so ``import cellstore``
and the CLI's ``--help`` stay fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from cellstore.core.family import Family, KeepDeletedCells
from cellstore.defaults import CELLSTORE_VERSION
from cellstore.errors import CellstoreError

if TYPE_CHECKING:
    from cellstore.core.cells import CellType
    from cellstore.core.rowkey import KeyField, RowKeySpec
    from cellstore.loader.settings import HFileOutput, LoadSettings
    from cellstore.storefiles.hfile.options import HFileOptions
    from cellstore.warehouse import connect

__version__ = CELLSTORE_VERSION

__all__ = [
    "CellType",
    "CellstoreError",
    "Family",
    "HFileOptions",
    "HFileOutput",
    "KeepDeletedCells",
    "KeyField",
    "LoadSettings",
    "RowKeySpec",
    "__version__",
    "connect",
]

#: Public names imported on first access, and the module that defines each.
_LAZY = {
    "CellType": "cellstore.core.cells",
    "HFileOptions": "cellstore.storefiles.hfile.options",
    "HFileOutput": "cellstore.loader.settings",
    "KeyField": "cellstore.core.rowkey",
    "LoadSettings": "cellstore.loader.settings",
    "RowKeySpec": "cellstore.core.rowkey",
    "connect": "cellstore.warehouse",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
