"""Defaults shared by the API and the CLI (importing this module is cheap)."""

from __future__ import annotations

from typing import Final

__all__ = ["DEFAULT_ROOT", "ROOT_ENV_VAR"]

#: The embedded default warehouse root: a local directory, no server.
DEFAULT_ROOT: Final = "./cellstore-data"
#: Environment variable that overrides :data:`DEFAULT_ROOT`.
ROOT_ENV_VAR: Final = "CELLSTORE_ROOT"
