"""Settings shared by the fuzz suites (``tests/test_fuzz_*.py``).

CI runs a bounded number of examples per fuzz test; ``bench/fuzz_long.sh`` raises it
through ``CELLSTORE_FUZZ_EXAMPLES`` for a long run.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

#: Examples per fuzz test: small in CI, large in the bench run.
FUZZ_EXAMPLES = int(os.environ.get("CELLSTORE_FUZZ_EXAMPLES", "150"))

#: Settings for every fuzz test: bounded examples, no deadline (I/O varies on a loaded box).
FUZZ_SETTINGS = settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
