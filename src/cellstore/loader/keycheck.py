"""Row-key design checks (re-exported from :mod:`cellstore.core.keycheck`).

They moved to the core (pure functions over keys), so that the report uses them without
importing the loader; this module keeps the old import path.
"""

from cellstore.core.keycheck import *  # noqa: F403
from cellstore.core.keycheck import __all__ as __all__
