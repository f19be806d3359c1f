"""``with`` support shared by the store-file readers and writers.

:class:`FileContext` is the one ``__enter__``/``__exit__`` pair: entering returns the
object, leaving calls its :meth:`~FileContext._leave` with whether the block raised. Each
class says only what leaving does: a reader closes its handle; :class:`StoreFileWriter`
and :class:`RollingWriter` delete what they wrote unless they were closed; the HFile
writer finishes its file, or deletes it when the block raised.
"""

from __future__ import annotations

from types import TracebackType
from typing import Self

__all__ = ["FileContext"]


class FileContext:
    """A context manager whose exit is :meth:`_leave` (subclasses define it)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._leave(failed=exc_type is not None)

    def _leave(self, *, failed: bool) -> None:
        """What leaving the ``with`` block does (``failed``: the block raised)."""
        raise NotImplementedError
