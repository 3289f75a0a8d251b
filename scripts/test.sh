#!/usr/bin/env bash
# Set up everything (system packages, .venv, servers) and run the whole test suite.
# Extra arguments go to pytest, e.g. scripts/test.sh -k frontier
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/services.sh
exec .venv/bin/python -m pytest "$@"
