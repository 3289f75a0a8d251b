"""What the SQLite and MySQL record stores share: the record layout and every query but the full-text one.

``tables`` holds the layout and what every part works over (``SqlTables``:
the backend's hooks, the SQL helpers, the steps several parts take); one
class per interface of :mod:`combine_scrapy.records.store` works over it:
``writer`` (RecordWriter), ``reader`` (RecordReader), ``search``
(RecordSearch), ``maintenance`` (RecordMaintenance) and ``listings``
(RecordListings). SqlRecordStore is all of them; a backend subclasses it
with its hooks.
"""

from __future__ import annotations

from combine_scrapy.records.store.sql.listings import SqlRecordListings
from combine_scrapy.records.store.sql.maintenance import SqlRecordMaintenance
from combine_scrapy.records.store.sql.reader import SqlRecordReader
from combine_scrapy.records.store.sql.search import SqlRecordSearch
from combine_scrapy.records.store.sql.writer import SqlRecordWriter

__all__ = ["SqlRecordStore"]


class SqlRecordStore(SqlRecordWriter, SqlRecordReader, SqlRecordSearch, SqlRecordMaintenance, SqlRecordListings):
    """Records keyed by content MD5, with all the URLs that served them, in one SQL database."""
