"""The typed object every command receives: warehouse settings and the chosen renderer.

The root group builds one :class:`CliContext` from the global options; commands get it
with :data:`pass_cli_context` (click's ``make_pass_decorator``, as in click's
``examples/repo``), never through an untyped ``ctx.obj`` dict.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import click

from cellstore.cli.output import Output

if TYPE_CHECKING:
    from cellstore.warehouse import Warehouse

__all__ = ["CliContext", "pass_cli_context"]


@dataclass
class CliContext:
    """Global options of one ``cellstore`` invocation.

    Attributes:
        root: Warehouse root: a local path or an fsspec URL.
        storage_options: fsspec options for the root's filesystem (may hold secrets, so
            left out of the ``repr``).
        output: The renderer chosen by ``--output``.
        debug: ``--debug``: errors print their traceback too.
    """

    root: str
    storage_options: dict[str, Any] = field(repr=False)
    output: Output
    debug: bool = False
    _warehouse: Warehouse | None = field(default=None, init=False, repr=False)
    _checked: bool = field(default=False, init=False, repr=False)

    def warehouse(self, *, missing_ok: bool = False) -> Warehouse:
        """The warehouse at :attr:`root`, connected on first use.

        Args:
            missing_ok: The command may start a warehouse (it creates a table), or needs
                none (``advise`` of a table not yet created). Otherwise a root without a
                warehouse is an error, so that a misspelt ``--root`` is not an empty one.

        Returns:
            The :class:`~cellstore.warehouse.Warehouse` (one per invocation).

        Raises:
            WarehouseNotFoundError: no warehouse at the root (and not ``missing_ok``).
        """
        if self._warehouse is None:
            from cellstore.warehouse import connect

            self._warehouse = connect(self.root, storage_options=self.storage_options)
        if not missing_ok and not self._checked:
            if not self._warehouse.started():
                from cellstore.errors import WarehouseNotFoundError

                raise WarehouseNotFoundError(
                    f"no warehouse at {self.root}: no table was ever created there (check "
                    "--root or $CELLSTORE_ROOT; 'cellstore create' starts one)"
                )
            self._checked = True
        return self._warehouse


#: Decorator passing the invocation's :class:`CliContext` as a command's first argument.
pass_cli_context = click.make_pass_decorator(CliContext)
