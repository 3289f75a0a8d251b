#!/usr/bin/env bash
# Set up everything, serve the sample web on loopback and crawl it with the demo job.
# Extra arguments go to scrapy crawl, e.g. scripts/demo.sh -a max_pages=5
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

.venv/bin/python -m combine_scrapy.operations.sampleweb &
web=$!
trap 'kill $web 2>/dev/null || true' EXIT
for _ in $(seq 1 50); do
  .venv/bin/python -c "import socket; socket.create_connection(('127.0.0.2', 8931), 0.2)" 2>/dev/null && break
  sleep 0.1
done

.venv/bin/scrapy crawl focused -a job=demo "$@"
