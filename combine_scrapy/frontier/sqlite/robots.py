"""The SQLite frontier's robots.txt cache: each host's answer, kept until it expires."""

from __future__ import annotations

from combine_scrapy.frontier.sqlite.connection import SqlitePart
from combine_scrapy.sqlitetx import write_transaction


class SqliteRobotsCache(SqlitePart):
    """Each host's robots.txt answer in ``robots`` (``RobotsCache``)."""

    def robots(self, host: str, now: float) -> tuple[int | None, bytes | None] | None:
        """The cached robots.txt answer ``(status, body)`` for a host, or None when absent or expired."""
        row = self.connection.db.execute(
            "SELECT status, body FROM robots WHERE host = ? AND expires > ?", (host, now)
        ).fetchone()
        return (row[0], row[1]) if row else None

    def store_robots(self, host: str, status: int | None, body: bytes | None, expires: float, *,
                     host_delay: float | None) -> None:
        """Keep a host's robots.txt answer until ``expires``, and the host's delay with it."""
        with write_transaction(self.connection.db):
            self.connection.db.execute(
                "INSERT OR REPLACE INTO robots (host, status, body, expires) VALUES (?, ?, ?, ?)",
                (host, status, body, expires),
            )
            self.connection.set_host_delay(host, host_delay)
