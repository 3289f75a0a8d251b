"""What operators read and set in the SQLite frontier: counts, the busiest hosts, the pause switch, the seeds marked."""

from __future__ import annotations

from combine_scrapy.frontier import FrontierCounts, HostCounts
from combine_scrapy.frontier.sqlite.connection import SqlitePart


class SqliteOperations(SqlitePart):
    """Counts, the busiest hosts, the pause switch and the seeds fingerprint in ``control`` (``FrontierOperations``)."""

    def hosts(self, now: float, limit: int = 20) -> list[tuple[str, int, float]]:
        """Hosts with marked URLs, most first: ``(host, marked URLs, seconds until unlocked)``."""
        rows = self.connection.db.execute(
            """
            SELECT h.host, COUNT(*), MAX(h.lock_until - :now, 0) FROM urls u JOIN hosts h ON h.id = u.host_id
            WHERE u.marked = 1 GROUP BY h.id ORDER BY COUNT(*) DESC, h.host LIMIT :limit
            """,
            {"now": now, "limit": limit},
        )
        return [(host, marked, wait) for host, marked, wait in rows]

    def host_counts(self, now: float) -> HostCounts:
        """The hosts with marked URLs (each found on the index of marked URLs by host) and their locks."""
        marked, waiting, first = self.connection.db.execute(
            """
            SELECT COUNT(*), COALESCE(SUM(h.lock_until > :now), 0),
                   MIN(CASE WHEN h.lock_until > :now THEN h.lock_until END)
            FROM hosts h WHERE EXISTS (SELECT 1 FROM urls u WHERE u.host_id = h.id AND u.marked = 1)
            """,
            {"now": now},
        ).fetchone()
        return HostCounts(marked=marked, waiting=waiting, next_free=None if first is None else first - now)

    def counts(self, now: float) -> FrontierCounts:
        """URLs by state, for the crawl summary and status commands."""
        row = self.connection.db.execute(
            """
            SELECT COUNT(*),
                   SUM(marked = 1 AND lock_until <= :now),
                   SUM(marked = 1 AND lock_until > :now),
                   (SELECT COUNT(*) FROM fetches f JOIN urls u ON u.seq = f.seq
                    WHERE u.marked = 0 AND f.status IS NOT NULL),
                   (SELECT COUNT(*) FROM hosts)
            FROM urls
            """,
            {"now": now},
        ).fetchone()
        return FrontierCounts(
            urls=row[0], marked_ready=row[1] or 0, marked_locked=row[2] or 0, done=row[3] or 0, hosts=row[4],
        )

    def set_paused(self, paused: bool) -> None:
        """Pause or resume every harvester of the job (``scrapy pause`` / ``resume``, the console)."""
        if paused:
            self.connection.db.execute("INSERT OR REPLACE INTO control (name, value) VALUES ('paused', '1')")
        else:
            self.connection.db.execute("DELETE FROM control WHERE name = 'paused'")

    def paused(self) -> bool:
        return self.connection.db.execute("SELECT 1 FROM control WHERE name = 'paused'").fetchone() is not None

    def seeds_marked(self) -> str | None:
        row = self.connection.db.execute("SELECT value FROM control WHERE name = 'seeds'").fetchone()
        return row[0] if row else None

    def set_seeds_marked(self, fingerprint: str) -> None:
        self.connection.db.execute("INSERT OR REPLACE INTO control (name, value) VALUES ('seeds', ?)", (fingerprint,))

    def close(self) -> None:
        """Close the file."""
        self.connection.close()
