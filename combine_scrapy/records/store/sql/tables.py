"""The record layout the SQLite and MySQL stores share, and the tables every part of the SQL store works over.

A backend supplies its connection, how it runs one transaction (SQLite:
``BEGIN IMMEDIATE``; MySQL: retried over a lost connection), its migrations and
its full-text query. Everything else is one SQL text for both, written with
``?`` parameters and ``{p}`` for the table prefix.

Layout (the current schema version):

``records``      id, key (MD5, unique), the document's fields, fingerprint and its four 16-bit bands; the text
                 zlib-compressed, the original document and the main content zlib-compressed with the text as preset
                 dictionary (so they change together, and the main content, mostly words of the text, costs a few
                 bytes); MySQL: with ``words``, the text's distinct words, which its FULLTEXT index covers
``record_urls``  url_hash (MD5 of the URL: the primary key, as long URLs cannot be one in MySQL), url,
                 key of its record, host, checked
``links``        record id, position, url, anchor, kind; indexed by url (MySQL: by url_hash, the URL's MD5, a
                 virtual column only its index holds)
``topics``       record id, position, class, absolute and relative score, matched terms
``deletions``    tombstones: key of a deleted record, the URLs it had (JSON list), when it went
``schema_version`` one row per migration applied

``records`` also holds what commands compute later and a crawl never writes:
``pagerank`` and ``ipagerank`` (scrapy rank), ``off_topic`` (scrapy reclassify --flag); and ``changed``, the
record's datestamp: when what an export writes of it last changed (stored or checked again, rescored or
reclassified, ranked, a URL added or gone), which ``export --since`` and OAI-PMH select on.
"""

from __future__ import annotations

import hashlib
import json
import time
import zlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol, TypeVar

from combine_scrapy.access.urls import host_of
from combine_scrapy.document import neardup
from combine_scrapy.records.record import Record
from combine_scrapy.records.store import Deletion

T = TypeVar("T")

#: A row a query gave.
Row = tuple[Any, ...]


class Cursor(Protocol):
    """What the store asks of a DB-API cursor (sqlite3's, mysqlclient's): the work of one transaction is given one."""

    @property
    def rowcount(self) -> int: ...

    @property
    def lastrowid(self) -> int | None: ...

    def execute(self, sql: str, parameters: Sequence[Any], /) -> Any: ...

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Any: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


#: The schema this program writes; each backend lists the migrations that lead to it.
SCHEMA_VERSION = 10
#: The first version with tombstones of deleted records and the rank and off-topic columns.
TOMBSTONES_VERSION = 5
#: The first version with the text compressed and a search index that does not hold it a second time.
COMPRESSED_TEXT_VERSION = 6
#: The first version with the original document compressed against its text (what they share is kept once).
DOCUMENT_DICTIONARY_VERSION = 7
#: The first version with each record's datestamp (``changed``), moved by every change of what an export writes.
CHANGED_VERSION = 8
#: The first version with the main content of a page (records stored before have none).
MAIN_TEXT_VERSION = 9
#: The first version that notes whether a page was rendered in a browser (records stored before were not).
RENDERED_VERSION = 10
#: zlib level of the stored text and original document: 9 saves under 1% more and takes twice the time.
COMPRESSION_LEVEL = 6
#: The flag of a zlib stream's second byte that says it was compressed against a preset dictionary.
ZLIB_FDICT = 0x20
#: Rows read at a time when iterating.
PAGE = 500

#: Columns of ``records`` that hold a Record field under the same name.
FIELDS = (
    "url", "title", "text", "mime_type", "headings", "meta", "html", "charset", "server", "modified", "expires",
    "checked", "score", "normalized", "algorithm", "terms", "language", "country", "fingerprint",
)
#: Columns of ``records`` that commands fill in later (scrapy rank, scrapy reclassify) or the store keeps (changed).
LATER = ("pagerank", "ipagerank", "off_topic", "changed")
COLUMNS = ("id", "`key`", *FIELDS, *LATER)
BAND_COLUMNS = tuple(f"band{band}" for band in range(neardup.BANDS))


def url_hash(url: str) -> bytes:
    """The 16-byte MD5 of a URL, its primary key in ``record_urls``."""
    return hashlib.md5(url.encode("utf-8")).digest()


def compress(text: str) -> bytes:
    return zlib.compress(text.encode("utf-8"), COMPRESSION_LEVEL)


def stored_text(value: str | bytes) -> str:
    """The text of a ``records.text`` value: compressed (schema 6 on) or as it was stored before."""
    return value if isinstance(value, str) else zlib.decompress(value).decode("utf-8")


def compress_document(html: str, text: str) -> bytes:
    """The original document zlib-compressed with its text as preset dictionary: most of the text is in the
    document, and each such stretch becomes a back-reference (17 KB of HTML: 1.1 KB instead of 2.7 KB)."""
    dictionary = text.encode("utf-8")
    compressor = zlib.compressobj(COMPRESSION_LEVEL, zdict=dictionary) if dictionary else zlib.compressobj(COMPRESSION_LEVEL)
    return compressor.compress(html.encode("utf-8")) + compressor.flush()


def inflate_document(value: bytes, text: str) -> str:
    """The original document of a ``records.html`` value, given the record's text: compressed against the text
    (schema 7 on) or by itself (a stream that asks for no dictionary ignores it)."""
    dictionary = text.encode("utf-8")
    decompressor = zlib.decompressobj(zdict=dictionary) if dictionary else zlib.decompressobj()
    return (decompressor.decompress(value) + decompressor.flush()).decode("utf-8")


def document_against_text(html: bytes, text: str | bytes) -> bytes:
    """A ``records.html`` value compressed by itself (before schema 7) compressed again against the record's text;
    one that already is (a migration cut short and run again) is returned as it is."""
    if html[1] & ZLIB_FDICT:
        return bytes(html)
    return compress_document(zlib.decompress(html).decode("utf-8"), stored_text(text))


def record_row(record: Record, compress_text: bool = True, document_dictionary: bool = True) -> dict[str, Any]:
    """A Record as values of ``records`` columns (JSON lists, compressed text and original, signed fingerprint)."""
    if record.html is None:
        html = None
    elif document_dictionary:
        html = compress_document(record.html, record.text)
    else:
        html = compress(record.html)
    fingerprint = record.fingerprint
    row: dict[str, Any] = {name: getattr(record, name) for name in FIELDS}
    row.update(
        key=record.key,
        headings=json.dumps(record.headings, ensure_ascii=False),
        meta=json.dumps(record.meta, ensure_ascii=False),
        terms=json.dumps(record.terms, ensure_ascii=False),
        text=compress(record.text) if compress_text else record.text,
        html=html,
        fingerprint=None if fingerprint is None else neardup.to_signed(fingerprint),
        main_text=None if record.main_text is None else compress_document(record.main_text, record.text),
        rendered=int(record.rendered),
    )
    row.update(zip(BAND_COLUMNS, neardup.bands(fingerprint) if fingerprint is not None else (None,) * neardup.BANDS))
    return row


class SqlTables:
    """A job's record tables in one SQL database: what each part of the store works over.

    A backend (SQLite, MySQL) supplies the hooks (one transaction, its
    full-text query and index, how links are found by target); the parts
    (``writer``, ``reader``, ``search``, ``maintenance``, ``listings``) share
    the SQL helpers and the steps several of them take.
    """

    location: str
    prefix: str = ""
    placeholder: str = "?"
    #: The version migrations bring the schema to (a test may stop earlier).
    schema_version: int = SCHEMA_VERSION

    def __init__(self) -> None:
        self._statements: dict[str, str] = {}

    # -- what a backend supplies -------------------------------------------------

    def _write(self, work: Callable[[Cursor], T]) -> T:
        """Run ``work(cursor)`` as one transaction."""
        raise NotImplementedError

    def _read(self, work: Callable[[Cursor], T]) -> T:
        return self._write(work)

    def _search_rows(self, cursor: Cursor, words: list[str], limit: int) -> list[Row]:
        """``(id, key, title, url, score, text)`` of the best matches."""
        raise NotImplementedError

    def _link_target(self, url: str) -> tuple[str, Any]:
        """The indexed column of ``links`` that finds links to ``url``, and the value it must have."""
        return "url", url

    def _index(self, cursor: Cursor, record_id: int, record: Record) -> None:
        """Add a record just inserted to the full-text index, when the backend keeps it by hand."""

    def _unindex(self, cursor: Cursor, key: str) -> None:
        """Take a record about to be deleted out of the full-text index, when the backend keeps it by hand."""

    def _index_columns(self, record: Record) -> dict[str, Any]:
        """Columns of ``records`` beyond the Record's fields that the backend's full-text index needs."""
        return {}

    def close(self) -> None:
        raise NotImplementedError

    # -- SQL helpers --------------------------------------------------------------

    def _sql(self, text: str) -> str:
        statement = self._statements.get(text)
        if statement is None:
            statement = text.replace("{p}", self.prefix)
            if self.placeholder != "?":
                statement = statement.replace("?", self.placeholder)
            self._statements[text] = statement
        return statement

    def _run(self, cursor: Cursor, text: str, parameters: Sequence[Any] = ()) -> Cursor:
        cursor.execute(self._sql(text), tuple(parameters))
        return cursor

    def _one(self, cursor: Cursor, text: str, parameters: Sequence[Any] = ()) -> Row | None:
        row: Row | None = self._run(cursor, text, parameters).fetchone()
        return row

    def _value(self, cursor: Cursor, text: str, parameters: Sequence[Any] = ()) -> Any:
        """The first column of the one row a query gives (a COUNT, a MAX)."""
        return self._run(cursor, text, parameters).fetchone()[0]

    def _all(self, cursor: Cursor, text: str, parameters: Sequence[Any] = ()) -> list[Row]:
        return list(self._run(cursor, text, parameters).fetchall())

    def _marks(self, count: int) -> str:
        return ", ".join("?" * count)

    # -- what several parts do ------------------------------------------------------

    @property
    def _tombstones(self) -> bool:
        return self.schema_version >= TOMBSTONES_VERSION

    @property
    def _compressed_text(self) -> bool:
        return self.schema_version >= COMPRESSED_TEXT_VERSION

    @property
    def _datestamps(self) -> bool:
        return self.schema_version >= CHANGED_VERSION

    def _key_for_url(self, cursor: Cursor, url: str) -> str | None:
        row = self._one(cursor, "SELECT `key` FROM {p}record_urls WHERE url_hash = ?", (url_hash(url),))
        return row[0] if row else None

    def _put_url(self, cursor: Cursor, url: str, key: str, checked: float) -> None:
        self._run(cursor, "DELETE FROM {p}record_urls WHERE url_hash = ?", (url_hash(url),))
        self._run(
            cursor,
            "INSERT INTO {p}record_urls (url_hash, url, `key`, host, checked) VALUES (?, ?, ?, ?, ?)",
            (url_hash(url), url, key, host_of(url), checked),
        )

    def _touch(self, cursor: Cursor, keys: Sequence[str], moment: float) -> None:
        """Move the datestamp of the records ``keys`` to ``moment`` (never back): what an export writes changed."""
        if self._datestamps and keys:
            cursor.executemany(
                self._sql("UPDATE {p}records SET changed = ? WHERE `key` = ? AND changed < ?"),
                [(moment, key, moment) for key in keys],
            )

    def _drop_if_orphan(self, cursor: Cursor, key: str, last_url: str) -> bool:
        """Delete the record if no URL is left on it; ``last_url`` is the one that just left."""
        if self._one(cursor, "SELECT 1 FROM {p}record_urls WHERE `key` = ? LIMIT 1", (key,)):
            return False
        self._delete_record(cursor, key, [last_url])
        return True

    def _delete_record(self, cursor: Cursor, key: str, urls: list[str]) -> None:
        """Delete a record and what hangs on it (links, topics, URLs; foreign keys cascade), leaving a tombstone
        with ``urls`` (the URLs it had; its first URL when none is left)."""
        if self._tombstones:
            row = self._one(cursor, "SELECT url FROM {p}records WHERE `key` = ?", (key,))
            if row is None:
                return
            self._run(cursor, "DELETE FROM {p}deletions WHERE `key` = ?", (key,))
            self._run(
                cursor, "INSERT INTO {p}deletions (`key`, urls, deleted) VALUES (?, ?, ?)",
                (key, json.dumps(sorted(set(urls)) or [row[0]], ensure_ascii=False), time.time()),
            )
        if self._compressed_text:
            self._unindex(cursor, key)
        self._run(cursor, "DELETE FROM {p}records WHERE `key` = ?", (key,))

    def _nearest(self, cursor: Cursor, fingerprint: int, distance: int, exclude: str | None = None) -> tuple[str, int] | None:
        """The closest record within ``distance`` bits, found through the band index, never a full scan."""
        if distance < neardup.BANDS:  # pigeonhole: one band is equal
            probes: list[tuple[int, ...]] = [(value,) for value in neardup.bands(fingerprint)]
        else:  # one band is equal or one bit off
            probes = neardup.probes(fingerprint)
        query = " UNION ".join(
            f"SELECT `key`, fingerprint FROM {{p}}records WHERE {band} IN ({self._marks(len(values))})"
            for band, values in zip(BAND_COLUMNS, probes)
        )
        best: tuple[int, str] | None = None
        for key, stored in self._all(cursor, query, [value for values in probes for value in values]):
            apart = neardup.distance(fingerprint, neardup.to_unsigned(stored))
            if apart <= distance and key != exclude and (best is None or (apart, key) < best):
                best = (apart, key)
        return (best[1], best[0]) if best else None

    def _deletions(self, since: float | None, until: float | None) -> list[Deletion]:
        """Tombstones of records deleted at or after ``since`` (all: None) and before ``until``, oldest first."""
        bounds = [(bound, value) for bound, value in (("deleted >= ?", since), ("deleted < ?", until)) if value is not None]
        where = f"WHERE {' AND '.join(bound for bound, _ in bounds)} " if bounds else ""
        rows = self._read(lambda cursor: self._all(
            cursor, f"SELECT `key`, urls, deleted FROM {{p}}deletions {where}ORDER BY deleted, `key`",
            [value for _, value in bounds],
        ))
        return [Deletion(key, json.loads(urls), deleted) for key, urls, deleted in rows]

    # -- schema -------------------------------------------------------------------

    def fill_fingerprints(self, cursor: Cursor) -> None:
        """Fingerprint records stored before fingerprints were (a migration step)."""
        last = 0
        while True:
            rows = self._all(
                cursor, "SELECT id, text FROM {p}records WHERE id > ? AND fingerprint IS NULL ORDER BY id LIMIT ?", (last, PAGE)
            )
            if not rows:
                return
            for record_id, text in rows:
                fingerprint = neardup.simhash(stored_text(text))
                if fingerprint is not None:
                    self._run(
                        cursor,
                        f"UPDATE {{p}}records SET fingerprint = ?, {', '.join(f'{band} = ?' for band in BAND_COLUMNS)} WHERE id = ?",
                        (neardup.to_signed(fingerprint), *neardup.bands(fingerprint), record_id),
                    )
            last = rows[-1][0]

    def compress_documents_against_texts(self, cursor: Cursor) -> None:
        """Compress the original documents stored before schema 7 again, against their texts (a migration step)."""
        last = 0
        while rows := self._all(
            cursor, "SELECT id, text, html FROM {p}records WHERE id > ? AND html IS NOT NULL ORDER BY id LIMIT ?", (last, PAGE)
        ):
            for record_id, text, html in rows:
                self._run(cursor, "UPDATE {p}records SET html = ? WHERE id = ?", (document_against_text(html, text), record_id))
            last = rows[-1][0]

    @staticmethod
    def _newer_schema_error(location: str, version: int) -> RuntimeError:
        return RuntimeError(
            f"{location}: record schema version {version} is newer than this program ({SCHEMA_VERSION}); "
            "upgrade combine-scrapy"
        )
