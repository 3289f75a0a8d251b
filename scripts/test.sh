#!/usr/bin/env bash
# Set up everything (system packages, .venv, servers) and run the whole test suite.
# Extra arguments go to pytest, e.g. scripts/test.sh -k frontier
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/services.sh
# Test files run whole, two at a time (COMBINE_TEST_WORKERS=0: one process); a crawl test waits half its time.
workers=${COMBINE_TEST_WORKERS:-2}
if [ "$workers" = 0 ]; then
  exec .venv/bin/python -m pytest "$@"
fi
exec .venv/bin/python -m pytest -n "$workers" --dist loadfile "$@"
