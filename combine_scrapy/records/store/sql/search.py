"""The SQL record store's search: records found by their words or by their content's fingerprint."""

from __future__ import annotations

from combine_scrapy.records.store.search import SearchHit, query_words, snippet
from combine_scrapy.records.store.sql.tables import SqlTables, stored_text


class SqlRecordSearch(SqlTables):
    """Full-text search through the backend's query, near-duplicates through the band index (``RecordSearch``)."""

    def search(self, query: str, limit: int = 10) -> list[SearchHit]:
        """Records with any word of ``query``, best first, each with a snippet; ValueError for a query without words."""
        words = query_words(query)
        rows = self._read(lambda cursor: self._search_rows(cursor, words, limit))
        return [
            SearchHit(record_id, key, title, url or "", float(score), snippet(stored_text(text), words))
            for record_id, key, title, url, score, text in rows
        ]

    def near_duplicate(self, fingerprint: int, distance: int) -> tuple[str, int] | None:
        """``(key, distance)`` of the stored record closest to ``fingerprint``, if within ``distance``."""
        return self._read(lambda cursor: self._nearest(cursor, fingerprint, distance))
