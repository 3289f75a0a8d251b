#!/usr/bin/env bash
# Start the servers the tests of the Redis and MySQL paths talk to, when they are not answering:
# Redis on 127.0.0.1:6379 and MariaDB on 127.0.0.1:3306 (root, empty password, database test).
set -euo pipefail

redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }
mariadb_up() { mariadb-admin --protocol=tcp -h 127.0.0.1 -P 3306 -u root ping >/dev/null 2>&1; }

wait_for() {  # wait_for NAME CHECK: up to 30 s
  for _ in $(seq 1 60); do "$2" && return 0; sleep 0.5; done
  echo "services: $1 did not start" >&2; return 1
}

if ! redis_up; then
  echo "services: starting Redis"
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log
  wait_for Redis redis_up
fi

if ! mariadb_up; then
  echo "services: starting MariaDB"
  if [ ! -d /var/lib/mysql/mysql ]; then
    mariadb-install-db --user=mysql --datadir=/var/lib/mysql >/dev/null
  fi
  mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld 2>/dev/null || true
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd -- --user=mysql --bind-address=127.0.0.1
  for _ in $(seq 1 60); do mariadb -u root -e "SELECT 1" >/dev/null 2>&1 && break; sleep 0.5; done
  if ! mariadb_up; then
    # A fresh Debian install lets root in through the socket only; the tests connect over TCP.
    mariadb -u root -e "ALTER USER 'root'@'localhost' IDENTIFIED VIA mysql_native_password USING PASSWORD('') OR unix_socket"
  fi
  wait_for MariaDB mariadb_up
fi
mariadb --protocol=tcp -h 127.0.0.1 -u root -e "CREATE DATABASE IF NOT EXISTS test CHARACTER SET utf8mb4"
