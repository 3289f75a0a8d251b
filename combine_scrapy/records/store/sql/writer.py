"""The SQL record store's writer: the pages a crawl stores, the URLs that went."""

from __future__ import annotations

import json
import time
from typing import cast

from combine_scrapy.document import neardup
from combine_scrapy.records.record import Record
from combine_scrapy.records.store import Stored
from combine_scrapy.records.store.sql.tables import (
    BAND_COLUMNS,
    DOCUMENT_DICTIONARY_VERSION,
    FIELDS,
    MAIN_TEXT_VERSION,
    RENDERED_VERSION,
    Cursor,
    SqlTables,
    record_row,
    url_hash,
)


class SqlRecordWriter(SqlTables):
    """Records stored under their URLs and URLs dropped from them (``RecordWriter``)."""

    def store(self, record: Record, near_duplicate_distance: int | None = None) -> Stored:
        """Store a record under ``record.url``, in one transaction.

        Known content gets the URL added and its check time refreshed. New
        content that is a near-duplicate (within ``near_duplicate_distance``)
        of another record joins that record instead of being stored; the
        URL's own earlier record is not "another record", so a page that
        changed a little is stored anew. A URL that served other content
        before is moved, and the old record goes when no URL is left on it.
        """
        if near_duplicate_distance is not None and not 0 <= near_duplicate_distance <= neardup.MAX_DISTANCE:
            raise ValueError(f"near-duplicate distance must be 0 to {neardup.MAX_DISTANCE}, got {near_duplicate_distance}")

        def work(cursor: Cursor) -> Stored:
            previous = self._key_for_url(cursor, record.url)
            target = record.key if self._one(cursor, "SELECT 1 FROM {p}records WHERE `key` = ?", (record.key,)) else None
            # A record stored again by the crawl passes the current topic filter: a reclassify flag is out of date.
            outcome = Stored.KNOWN
            if target is None and near_duplicate_distance is not None and record.fingerprint is not None:
                match = self._nearest(cursor, record.fingerprint, near_duplicate_distance, exclude=previous)
                if match:
                    target, outcome = match[0], Stored.NEAR_DUPLICATE
            if target is None:
                self._insert(cursor, record)
                target, outcome = record.key, Stored.NEW
            else:
                self._run(cursor, self._refresh_sql, (record.checked, target))
                self._touch(cursor, [target], record.checked)
            self._put_url(cursor, record.url, target, record.checked)
            if previous and previous != target and not self._drop_if_orphan(cursor, previous, record.url):
                self._touch(cursor, [previous], time.time())  # it lost a URL
            return outcome

        return self._write(work)

    def _insert(self, cursor: Cursor, record: Record) -> None:
        row = record_row(
            record, compress_text=self._compressed_text,
            document_dictionary=self.schema_version >= DOCUMENT_DICTIONARY_VERSION,
        )
        indexed = self._index_columns(record) if self._compressed_text else {}
        row.update(indexed)
        if self._datestamps:
            row["changed"] = record.checked
        names = ("`key`", *FIELDS, *BAND_COLUMNS, *indexed, *(("changed",) if self._datestamps else ()),
                 *(("main_text",) if self.schema_version >= MAIN_TEXT_VERSION else ()),
                 *(("rendered",) if self.schema_version >= RENDERED_VERSION else ()))
        values = [row[name.strip("`")] for name in names]
        self._run(cursor, f"INSERT INTO {{p}}records ({', '.join(names)}) VALUES ({self._marks(len(names))})", values)
        record_id = cast(int, cursor.lastrowid)   # an INSERT's row has one
        if self._compressed_text:
            self._index(cursor, record_id, record)
        if self._tombstones:  # the content is back: it is no longer deleted
            self._run(cursor, "DELETE FROM {p}deletions WHERE `key` = ?", (record.key,))
        if record.links:
            cursor.executemany(
                self._sql("INSERT INTO {p}links (record, position, url, anchor, kind) VALUES (?, ?, ?, ?, ?)"),
                [(record_id, position, link.url, link.anchor, link.kind) for position, link in enumerate(record.links)],
            )
        if record.classes:
            cursor.executemany(
                self._sql(
                    "INSERT INTO {p}topics (record, position, class, absolute, relative, terms) VALUES (?, ?, ?, ?, ?, ?)"
                ),
                [
                    (record_id, position, topic.name, topic.absolute, topic.relative, json.dumps(list(topic.terms), ensure_ascii=False))
                    for position, topic in enumerate(record.classes)
                ],
            )

    @property
    def _refresh_sql(self) -> str:
        if self._tombstones:
            return "UPDATE {p}records SET checked = ?, off_topic = 0 WHERE `key` = ?"
        return "UPDATE {p}records SET checked = ? WHERE `key` = ?"

    def forget_url(self, url: str) -> str | None:
        """Remove a URL that no longer serves its record; the record goes with its last URL.

        Returns the key of the record that was deleted, if one was.
        """

        def work(cursor: Cursor) -> str | None:
            key = self._key_for_url(cursor, url)
            if key is None:
                return None
            self._run(cursor, "DELETE FROM {p}record_urls WHERE url_hash = ?", (url_hash(url),))
            if self._drop_if_orphan(cursor, key, url):
                return key
            self._touch(cursor, [key], time.time())
            return None

        return self._write(work)
