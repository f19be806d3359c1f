"""Defaults shared by the API and the CLI (importing this module is cheap)."""

from __future__ import annotations

from typing import Final

__all__ = ["CELLSTORE_VERSION", "DEFAULT_ROOT", "ROOT_ENV_VAR"]

#: The release version (``cellstore.__version__``); store files record it as their writer.
CELLSTORE_VERSION: Final = "0.1.0"

#: The embedded default warehouse root: a local directory, no server.
DEFAULT_ROOT: Final = "./cellstore-data"
#: Environment variable that overrides :data:`DEFAULT_ROOT`.
ROOT_ENV_VAR: Final = "CELLSTORE_ROOT"
