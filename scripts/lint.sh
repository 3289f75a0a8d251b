#!/bin/sh
# Type checks the pure modules under mypy --strict (the module list and options are in pyproject.toml);
# exits non-zero when mypy finds an error.
set -e
cd "$(dirname "$0")/.."
exec .venv/bin/mypy
