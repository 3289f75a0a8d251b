"""The SQL record store's selective lists, for the console and OAI-PMH."""

from __future__ import annotations

from combine_scrapy.records.store.listing import RecordListing, SqlRecordListing, Tombstone
from combine_scrapy.records.store.sql.tables import SqlTables


class SqlRecordListings(SqlTables):
    """The store's listing (``RecordListings``): SqlRecordListing over its read query and tombstones."""

    @property
    def listing(self) -> RecordListing:
        """Selective lists of the records by date, class and host, for the console and OAI-PMH."""
        return SqlRecordListing(
            lambda text, parameters: self._read(lambda cursor: self._all(cursor, text, parameters)),
            lambda since, until: [Tombstone(deletion.key, deletion.deleted) for deletion in self._deletions(since, until)],
        )
