#!/bin/sh
# Lint and type checks: ruff over the project, bench and tests (rules in pyproject.toml, [tool.ruff]) and
# mypy --strict over the modules [tool.mypy] lists; exits non-zero on the first that finds a problem.
set -e
cd "$(dirname "$0")/.."
.venv/bin/ruff check --no-cache combine_scrapy bench tests
.venv/bin/mypy
