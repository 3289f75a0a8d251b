#!/usr/bin/env bash
# Idempotent set-up for a fresh Debian 12 machine with Python 3.11:
# system packages, a virtual environment in .venv, the pinned Python packages.
# Quick when everything is already there: each step checks before it acts.
set -euo pipefail
cd "$(dirname "$0")/.."

# Libraries to build mysqlclient, the converters' programs, the test servers.
SYSTEM_PACKAGES=(
  pkg-config gcc libmariadb-dev
  poppler-utils ghostscript antiword unrtf catdoc util-linux
  mariadb-server redis-server redis-tools  # redis-tools: redis-cli joins the test Redis Cluster
  docker-compose  # the tests validate docker-compose.yml with it (no Docker engine needed)
  chromium chromium-driver  # rendering (Render in combine.cfg, through Playwright) and the console's browser tests
                            # (selenium drives Debian's chromium): nothing downloaded
)
bash scripts/install-missing.sh setup "${SYSTEM_PACKAGES[@]}"

PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  if ! "$PYTHON" -m venv --help >/dev/null 2>&1; then
    bash scripts/install-missing.sh setup python3-venv python3-dev
  fi
  echo "setup: creating .venv with $("$PYTHON" --version)"
  "$PYTHON" -m venv .venv
fi

# The crawl's packages and the tests' (requirements-test.txt includes requirements.txt); re-installed only
# when either file changed since the last successful install.
stamp=.venv/.requirements.sha256
want=$(cat requirements.txt requirements-test.txt | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "setup: installing Python packages from requirements.txt and requirements-test.txt"
  .venv/bin/python -m pip install -q --upgrade pip 2>&1 | grep -v "^WARNING: Location" || true
  .venv/bin/python -m pip install -q -r requirements-test.txt 2>&1 | grep -v "^WARNING: Location" || true
  .venv/bin/python -c "import scrapy, scrapy_redis, w3lib, tldextract, MySQLdb, textract, protego, pytest, selenium, sickle, scrapy_playwright" \
    || { echo "setup: Python packages failed to install" >&2; exit 1; }
  echo "$want" > "$stamp"
fi

# The package itself, in editable mode: `import combine_scrapy` (README's `from combine_scrapy.operations.debug
# import score`) works from any directory, and reads this checkout's files as they are edited.
root=$PWD
if ! (cd / && "$root/.venv/bin/python" -c 'import combine_scrapy, pathlib, sys; sys.exit(pathlib.Path(combine_scrapy.__file__).parent != pathlib.Path(sys.argv[1]))' "$root/combine_scrapy") 2>/dev/null; then
  echo "setup: installing combine_scrapy into .venv in editable mode"
  output=$(.venv/bin/python -m pip install -q --no-deps -e . 2>&1) \
    || { echo "$output" >&2; echo "setup: installing combine_scrapy failed" >&2; exit 1; }
fi
