"""The ``cellstore`` command line (click).

``cellstore [--root URL] [--storage-option K=V ...] [--output text|json] COMMAND ...``.
Importing this package loads click and cellstore's light core only: pyarrow, pandas,
dask, fsspec and :mod:`cellstore.warehouse` are imported inside command bodies.
"""

from cellstore.cli.console import cli, main

__all__ = ["cli", "main"]
