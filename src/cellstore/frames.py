"""Dask collections of planned read tasks (one partition per task).

Shared by :meth:`cellstore.reader.Scan.to_dask` and :func:`cellstore.hbase.read_hfiles_dask`
(anything that hands picklable tasks and a picklable reader to ``dd.from_map``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["from_tasks"]


def from_tasks(
    reader: Callable[[Any], Any],
    tasks: Sequence[Any],
    *,
    meta: Any,
    divisions: Sequence[Any] | None,
    label: str,
) -> Any:
    """A lazy ``dask.dataframe`` whose partition ``i`` is ``reader(tasks[i])``.

    Args:
        reader: Picklable callable returning a pandas DataFrame shaped like ``meta``.
        tasks: Picklable tasks, at least one.
        meta: Empty DataFrame with every partition's columns and dtypes.
        divisions: ``len(tasks) + 1`` known boundaries of the index, or None.
        label: Prefix of the task names.

    Dask appends an object-to-``string[pyarrow]`` step to every partition of ``from_map``
    (its ``dataframe.convert-string`` option). When ``meta`` has no object column nor
    object index the step changes nothing, yet on a ``distributed`` cluster it runs as one
    more task per partition (the scheduler does not fuse it into the read): it is left out
    then. With object columns Dask's conversion applies as usual. The caller's Dask
    configuration is not changed.
    """
    import dask
    import dask.dataframe as dd
    import pandas as pd

    objects = any(pd.api.types.is_object_dtype(t) for t in (*meta.dtypes, meta.index.dtype))
    options = (
        contextlib.nullcontext()
        if objects
        else dask.config.set({"dataframe.convert-string": False})
    )
    with options:
        return dd.from_map(  # type: ignore[no-untyped-call]
            reader,
            list(tasks),
            meta=meta,
            divisions=None if divisions is None else tuple(divisions),
            label=label,
            enforce_metadata=False,
        )
