# Sourced by the mariadb image's entrypoint when it first initialises the data volume:
# the crawlers' user, with only what the record store needs on the crawl database (it creates and
# upgrades its tables itself), nothing on any other database and no administrative privilege.
: "${MARIADB_CRAWLER_USER:?}" "${MARIADB_CRAWLER_PASSWORD:?}" "${MARIADB_DATABASE:?}"
for value in "$MARIADB_CRAWLER_USER" "$MARIADB_CRAWLER_PASSWORD" "$MARIADB_DATABASE"; do
  if [[ ! "$value" =~ ^[A-Za-z0-9_]+$ ]]; then
    echo "crawler-user.sh: MARIADB_CRAWLER_USER, MARIADB_CRAWLER_PASSWORD and MARIADB_DATABASE take letters, digits and _ only" >&2
    exit 1
  fi
done
docker_process_sql --database=mysql <<SQL
CREATE USER IF NOT EXISTS '${MARIADB_CRAWLER_USER}'@'%' IDENTIFIED BY '${MARIADB_CRAWLER_PASSWORD}';
GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, ALTER, INDEX, REFERENCES ON \`${MARIADB_DATABASE}\`.* TO '${MARIADB_CRAWLER_USER}'@'%';
SQL
