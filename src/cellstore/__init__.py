"""cellstore: HBase's data model as sorted store files on any fsspec filesystem."""

from cellstore.core.cells import CellType
from cellstore.core.family import Family, KeepDeletedCells
from cellstore.errors import CellstoreError

__version__ = "0.1.0"

__all__ = ["CellType", "CellstoreError", "Family", "KeepDeletedCells", "__version__"]
