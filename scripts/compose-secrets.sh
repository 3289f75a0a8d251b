#!/usr/bin/env bash
# Write .env beside docker-compose.yml with new random secrets: the MariaDB root password, the
# crawler's database user and password, the Redis password and scrapyd's HTTP user and password.
# An existing .env is kept (its servers already use its secrets); --force replaces it.
# .env is in .gitignore: never commit it. .env.example lists the same variables.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ -e .env && "${1:-}" != "--force" ]]; then
  echo ".env exists; keeping it (scripts/compose-secrets.sh --force writes new secrets," >&2
  echo "after which the volumes created with the old ones need 'docker compose down -v')" >&2
  exit 0
fi

# 32 hex characters (128 bits): safe inside URLs, SQL strings and shell words without quoting.
secret() { od -An -N16 -tx1 /dev/urandom | tr -d ' \n'; }

umask 077
cat > .env.tmp <<ENV
# Written by scripts/compose-secrets.sh on $(date -u +%Y-%m-%d); never commit this file.
MARIADB_ROOT_PASSWORD=$(secret)
MARIADB_DATABASE=combine
MARIADB_CRAWLER_USER=crawler
MARIADB_CRAWLER_PASSWORD=$(secret)
REDIS_PASSWORD=$(secret)
SCRAPYD_USERNAME=combine
SCRAPYD_PASSWORD=$(secret)
ENV
mv .env.tmp .env
echo "wrote .env (mode 600) with new secrets for docker compose"
