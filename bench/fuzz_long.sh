#!/usr/bin/env bash
# Long fuzz run: every fuzz suite with many examples (CI runs a bounded number).
# Usage: bench/fuzz_long.sh [EXAMPLES]   (default 20000 per test)
set -euo pipefail
cd "$(dirname "$0")/.."
CELLSTORE_FUZZ_EXAMPLES="${1:-20000}" .venv/bin/python -m pytest -q -p no:cacheprovider \
    --timeout=0 tests/test_fuzz_*.py
