"""The SQLite frontier's revisit history: how often each page was fetched and changed."""

from __future__ import annotations

from combine_scrapy.frontier.sqlite.connection import SqlitePart
from combine_scrapy.frontier.sqlite.tails import URL_ROW, key_of


class SqliteRevisitHistory(SqlitePart):
    """Each page's visits and changes, kept in ``fetches`` (``RevisitHistory``)."""

    def change_history(self, url: str) -> tuple[int, int, float | None, str | None]:
        """``(visits, changes, first visit, last content digest)`` of a page, for its revisit interval."""
        row = self.connection.fetches("f.visits, f.changes, f.first_visit, f.digest", url)
        return tuple(row) if row else (0, 0, None, None)

    def record_visit(self, url: str, now: float, digest: str | None, changed: bool) -> None:
        """Count a fetch that gave the page (``digest`` None for a 304: unchanged)."""
        self.connection.db.execute(
            f"""
            INSERT INTO fetches (seq, visits, changes, first_visit, digest)
            SELECT seq, 1, ?, ?, ? FROM urls WHERE {URL_ROW}
            ON CONFLICT (seq) DO UPDATE SET
                visits = visits + 1, changes = changes + excluded.changes,
                first_visit = COALESCE(first_visit, excluded.first_visit), digest = COALESCE(excluded.digest, digest)
            """,
            (int(changed), now, digest, *key_of(url)),
        )
