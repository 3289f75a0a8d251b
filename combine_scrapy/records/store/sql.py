"""What the SQLite and MySQL record stores share: the record layout and every query but the full-text one.

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
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from combine_scrapy.access.urls import host_of
from combine_scrapy.document import neardup
from combine_scrapy.records.record import Record, RecordLink, TopicClass
from combine_scrapy.records.store import RANK_ORDERS, Deletion, Stored
from combine_scrapy.records.store.listing import RecordListing, SqlRecordListing, Tombstone
from combine_scrapy.records.store.search import SearchHit, query_words, snippet

T = TypeVar("T")

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
_FIELDS = (
    "url", "title", "text", "mime_type", "headings", "meta", "html", "charset", "server", "modified", "expires",
    "checked", "score", "normalized", "algorithm", "terms", "language", "country", "fingerprint",
)
#: Columns of ``records`` that commands fill in later (scrapy rank, scrapy reclassify) or the store keeps (changed).
_LATER = ("pagerank", "ipagerank", "off_topic", "changed")
_COLUMNS = ("id", "`key`", *_FIELDS, *_LATER)
_BANDS = tuple(f"band{band}" for band in range(neardup.BANDS))


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
    row: dict[str, Any] = {name: getattr(record, name) for name in _FIELDS}
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
    row.update(zip(_BANDS, neardup.bands(fingerprint) if fingerprint is not None else (None,) * neardup.BANDS))
    return row


class SqlRecordStore:
    """Records keyed by content MD5, with all the URLs that served them, in one SQL database."""

    location: str
    prefix: str = ""
    placeholder: str = "?"
    #: The version migrations bring the schema to (a test may stop earlier).
    schema_version: int = SCHEMA_VERSION

    def __init__(self) -> None:
        self._statements: dict[str, str] = {}

    @property
    def listing(self) -> RecordListing:
        """Selective lists of the records by date, class and host, for the console and OAI-PMH."""
        return SqlRecordListing(
            lambda text, parameters: self._read(lambda cursor: self._all(cursor, text, parameters)),
            lambda since, until: [Tombstone(deletion.key, deletion.deleted) for deletion in self.deleted_since(since, until)],
        )

    # -- what a backend supplies -------------------------------------------------

    def _write(self, work: Callable[[Any], T]) -> T:
        """Run ``work(cursor)`` as one transaction."""
        raise NotImplementedError

    def _read(self, work: Callable[[Any], T]) -> T:
        return self._write(work)

    def _search_rows(self, cursor, words: list[str], limit: int) -> list[tuple]:
        """``(id, key, title, url, score, text)`` of the best matches."""
        raise NotImplementedError

    def _link_target(self, url: str) -> tuple[str, Any]:
        """The indexed column of ``links`` that finds links to ``url``, and the value it must have."""
        return "url", url

    def _index(self, cursor, record_id: int, record: Record) -> None:
        """Add a record just inserted to the full-text index, when the backend keeps it by hand."""

    def _unindex(self, cursor, key: str) -> None:
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

    def _run(self, cursor, text: str, parameters: Sequence = ()) -> Any:
        cursor.execute(self._sql(text), tuple(parameters))
        return cursor

    def _one(self, cursor, text: str, parameters: Sequence = ()) -> tuple | None:
        return self._run(cursor, text, parameters).fetchone()

    def _all(self, cursor, text: str, parameters: Sequence = ()) -> list[tuple]:
        return list(self._run(cursor, text, parameters).fetchall())

    def _marks(self, count: int) -> str:
        return ", ".join("?" * count)

    # -- storing ------------------------------------------------------------------

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

        def work(cursor) -> Stored:
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

    def _insert(self, cursor, record: Record) -> None:
        row = record_row(
            record, compress_text=self._compressed_text,
            document_dictionary=self.schema_version >= DOCUMENT_DICTIONARY_VERSION,
        )
        indexed = self._index_columns(record) if self._compressed_text else {}
        row.update(indexed)
        if self._datestamps:
            row["changed"] = record.checked
        names = ("`key`", *_FIELDS, *_BANDS, *indexed, *(("changed",) if self._datestamps else ()),
                 *(("main_text",) if self.schema_version >= MAIN_TEXT_VERSION else ()),
                 *(("rendered",) if self.schema_version >= RENDERED_VERSION else ()))
        values = [row[name.strip("`")] for name in names]
        self._run(cursor, f"INSERT INTO {{p}}records ({', '.join(names)}) VALUES ({self._marks(len(names))})", values)
        record_id = cursor.lastrowid
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

    def _put_url(self, cursor, url: str, key: str, checked: float) -> None:
        self._run(cursor, "DELETE FROM {p}record_urls WHERE url_hash = ?", (url_hash(url),))
        self._run(
            cursor,
            "INSERT INTO {p}record_urls (url_hash, url, `key`, host, checked) VALUES (?, ?, ?, ?, ?)",
            (url_hash(url), url, key, host_of(url), checked),
        )

    def _key_for_url(self, cursor, url: str) -> str | None:
        row = self._one(cursor, "SELECT `key` FROM {p}record_urls WHERE url_hash = ?", (url_hash(url),))
        return row[0] if row else None

    def _drop_if_orphan(self, cursor, key: str, last_url: str) -> bool:
        """Delete the record if no URL is left on it; ``last_url`` is the one that just left."""
        if self._one(cursor, "SELECT 1 FROM {p}record_urls WHERE `key` = ? LIMIT 1", (key,)):
            return False
        self._delete_record(cursor, key, [last_url])
        return True

    @property
    def _tombstones(self) -> bool:
        return self.schema_version >= TOMBSTONES_VERSION

    @property
    def _compressed_text(self) -> bool:
        return self.schema_version >= COMPRESSED_TEXT_VERSION

    @property
    def _datestamps(self) -> bool:
        return self.schema_version >= CHANGED_VERSION

    def _touch(self, cursor, keys: Sequence[str], moment: float) -> None:
        """Move the datestamp of the records ``keys`` to ``moment`` (never back): what an export writes changed."""
        if self._datestamps and keys:
            cursor.executemany(
                self._sql("UPDATE {p}records SET changed = ? WHERE `key` = ? AND changed < ?"),
                [(moment, key, moment) for key in keys],
            )

    @property
    def _refresh_sql(self) -> str:
        if self._tombstones:
            return "UPDATE {p}records SET checked = ?, off_topic = 0 WHERE `key` = ?"
        return "UPDATE {p}records SET checked = ? WHERE `key` = ?"

    def _delete_record(self, cursor, key: str, urls: list[str]) -> None:
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

    def forget_url(self, url: str) -> str | None:
        """Remove a URL that no longer serves its record; the record goes with its last URL.

        Returns the key of the record that was deleted, if one was.
        """

        def work(cursor) -> str | None:
            key = self._key_for_url(cursor, url)
            if key is None:
                return None
            self._run(cursor, "DELETE FROM {p}record_urls WHERE url_hash = ?", (url_hash(url),))
            if self._drop_if_orphan(cursor, key, url):
                return key
            self._touch(cursor, [key], time.time())
            return None

        return self._write(work)

    def rename_url(self, old: str, new: str) -> bool:
        """Let ``new`` serve what ``old`` served (``old`` removed); the record ``new`` had is dropped if orphaned."""

        def work(cursor) -> bool:
            row = self._one(cursor, "SELECT `key`, checked FROM {p}record_urls WHERE url_hash = ?", (url_hash(old),))
            if row is None:
                return False
            key, checked = row
            replaced = self._key_for_url(cursor, new)
            self._run(cursor, "DELETE FROM {p}record_urls WHERE url_hash = ?", (url_hash(old),))
            self._put_url(cursor, new, key, checked)
            now = time.time()
            self._touch(cursor, [key], now)
            if replaced and replaced != key and not self._drop_if_orphan(cursor, replaced, new):
                self._touch(cursor, [replaced], now)
            return True

        return self._write(work)

    def delete(self, key: str) -> list[str]:
        """Delete a record with all its URLs; returns the URLs it had (none: no such record)."""

        def work(cursor) -> list[str]:
            urls = [row[0] for row in self._all(cursor, "SELECT url FROM {p}record_urls WHERE `key` = ?", (key,))]
            self._run(cursor, "DELETE FROM {p}record_urls WHERE `key` = ?", (key,))
            self._delete_record(cursor, key, urls)
            return sorted(urls)

        return self._write(work)

    # -- near-duplicates ------------------------------------------------------------

    def _nearest(self, cursor, fingerprint: int, distance: int, exclude: str | None = None) -> tuple[str, int] | None:
        """The closest record within ``distance`` bits, found through the band index, never a full scan."""
        if distance < neardup.BANDS:  # pigeonhole: one band is equal
            probes = [(value,) for value in neardup.bands(fingerprint)]
        else:  # one band is equal or one bit off
            probes = neardup.probes(fingerprint)
        query = " UNION ".join(
            f"SELECT `key`, fingerprint FROM {{p}}records WHERE {band} IN ({self._marks(len(values))})"
            for band, values in zip(_BANDS, probes)
        )
        best: tuple[int, str] | None = None
        for key, stored in self._all(cursor, query, [value for values in probes for value in values]):
            apart = neardup.distance(fingerprint, neardup.to_unsigned(stored))
            if apart <= distance and key != exclude and (best is None or (apart, key) < best):
                best = (apart, key)
        return (best[1], best[0]) if best else None

    def near_duplicate(self, fingerprint: int, distance: int) -> tuple[str, int] | None:
        """``(key, distance)`` of the stored record closest to ``fingerprint``, if within ``distance``."""
        return self._read(lambda cursor: self._nearest(cursor, fingerprint, distance))

    # -- reading ------------------------------------------------------------------

    def key_for_url(self, url: str) -> str | None:
        return self._read(lambda cursor: self._key_for_url(cursor, url))

    def key_for_id(self, record_id: int) -> str | None:
        row = self._read(lambda cursor: self._one(cursor, "SELECT `key` FROM {p}records WHERE id = ?", (record_id,)))
        return row[0] if row else None

    def urls(self, key: str) -> list[str]:
        rows = self._read(lambda cursor: self._all(cursor, "SELECT url FROM {p}record_urls WHERE `key` = ?", (key,)))
        return sorted(row[0] for row in rows)

    def urls_on_host(self, host: str) -> list[str]:
        rows = self._read(lambda cursor: self._all(cursor, "SELECT url FROM {p}record_urls WHERE host = ?", (host,)))
        return sorted(row[0] for row in rows)

    def url_keys(self) -> Iterator[tuple[str, str]]:
        """Every ``(url, key)``, in pages of PAGE rows by URL hash."""
        last = b""
        while True:
            rows = self._read(
                lambda cursor: self._all(
                    cursor,
                    "SELECT url_hash, url, `key` FROM {p}record_urls WHERE url_hash > ? ORDER BY url_hash LIMIT ?",
                    (last, PAGE),
                )
            )
            if not rows:
                return
            for _, url, key in rows:
                yield url, key
            last = bytes(rows[-1][0])

    def orphans(self) -> list[str]:
        rows = self._read(
            lambda cursor: self._all(
                cursor,
                "SELECT `key` FROM {p}records r WHERE NOT EXISTS "
                "(SELECT 1 FROM {p}record_urls u WHERE u.`key` = r.`key`) ORDER BY `key`",
            )
        )
        return [row[0] for row in rows]

    def anchors_to(self, url: str, limit: int = 50) -> list[tuple[str, str]]:
        """Distinct non-empty ``(anchor, kind)`` of stored links to ``url``, oldest first: an image's alt texts."""
        column, value = self._link_target(url)
        rows = self._read(
            lambda cursor: self._all(
                cursor,
                f"SELECT anchor, kind FROM {{p}}links WHERE {column} = ? AND anchor <> '' "
                "GROUP BY anchor, kind ORDER BY MIN(record), MIN(position) LIMIT ?",
                (value, limit),
            )
        )
        return [(anchor, kind) for anchor, kind in rows]

    def links_to(self, url: str, limit: int = 100) -> list[tuple[str, str, str, str]]:
        """``(key, url, anchor, kind)`` of stored links to ``url``, oldest first: each link's record and its first URL."""
        column, value = self._link_target(url)
        rows = self._read(
            lambda cursor: self._all(
                cursor,
                "SELECT r.`key`, (SELECT MIN(u.url) FROM {p}record_urls u WHERE u.`key` = r.`key`), l.anchor, l.kind "
                f"FROM {{p}}links l JOIN {{p}}records r ON r.id = l.record WHERE l.{column} = ? "
                "ORDER BY l.record, l.position LIMIT ?",
                (value, limit),
            )
        )
        return [(key, source or "", anchor, kind) for key, source, anchor, kind in rows]

    def count(self) -> int:
        return self._read(lambda cursor: self._one(cursor, "SELECT COUNT(*) FROM {p}records"))[0]

    def get(self, key: str) -> Record | None:
        records = self._read(lambda cursor: self._records(cursor, "`key` = ?", (key,)))
        return records[0][1] if records else None

    def __iter__(self) -> Iterator[Record]:
        """All records, oldest first, read in pages of PAGE so memory stays flat."""
        return self.records()

    def records(self, order: str = "id") -> Iterator[Record]:
        """All records, oldest first (``id``) or highest stored rank first (``pagerank``, ``ipagerank``: the
        records without one after, oldest first), read in pages of PAGE so memory stays flat."""
        if order != "id" and order not in RANK_ORDERS:
            raise ValueError(f"unknown record order {order!r}: use id, {', '.join(RANK_ORDERS)}")
        if order in RANK_ORDERS:
            # Keyset pages over (rank descending, id): each page starts after the last row of the one before.
            page = self._read(lambda cursor: self._records(
                cursor, f"{order} IS NOT NULL ORDER BY {order} DESC, id LIMIT ?", (PAGE,)))
            while page:
                yield from (record for _, record in page)
                last_id, last_rank = page[-1][0], getattr(page[-1][1], order)
                page = self._read(lambda cursor: self._records(
                    cursor,
                    f"{order} IS NOT NULL AND ({order} < ? OR ({order} = ? AND id > ?)) ORDER BY {order} DESC, id LIMIT ?",
                    (last_rank, last_rank, last_id, PAGE),
                ))
        unranked = f"{order} IS NULL AND " if order in RANK_ORDERS else ""
        last = 0
        while True:
            page = self._read(lambda cursor: self._records(cursor, f"{unranked}id > ? ORDER BY id LIMIT ?", (last, PAGE)))
            if not page:
                return
            yield from (record for _, record in page)
            last = page[-1][0]

    def _records(self, cursor, where: str, parameters: Sequence) -> list[tuple[int, Record]]:
        """``(id, record)`` of the records ``where`` selects, with their links and topics (three queries in all)."""
        main_text = "main_text" if self.schema_version >= MAIN_TEXT_VERSION else "NULL"
        rendered = "rendered" if self.schema_version >= RENDERED_VERSION else "0"
        rows = self._all(
            cursor, f"SELECT {', '.join(_COLUMNS)}, {main_text}, {rendered} FROM {{p}}records WHERE {where}", parameters
        )
        if not rows:
            return []
        ids = [row[0] for row in rows]
        links: dict[int, list[RecordLink]] = {record_id: [] for record_id in ids}
        classes: dict[int, list[TopicClass]] = {record_id: [] for record_id in ids}
        marks = self._marks(len(ids))
        for record_id, url, anchor, kind in self._all(
            cursor, f"SELECT record, url, anchor, kind FROM {{p}}links WHERE record IN ({marks}) ORDER BY record, position", ids
        ):
            links[record_id].append(RecordLink(url, anchor, kind))
        for record_id, name, absolute, relative, terms in self._all(
            cursor,
            f"SELECT record, class, absolute, relative, terms FROM {{p}}topics WHERE record IN ({marks}) "
            "ORDER BY record, position",
            ids,
        ):
            classes[record_id].append(TopicClass(name, absolute, relative, tuple(json.loads(terms))))
        return [(row[0], self._record(row, links[row[0]], classes[row[0]])) for row in rows]

    @staticmethod
    def _record(row: tuple, links: list[RecordLink], classes: list[TopicClass]) -> Record:
        values = dict(zip(("id", "key", *_FIELDS, *_LATER, "main_text", "rendered"), row))
        del values["id"]
        values["off_topic"] = bool(values["off_topic"])
        values["rendered"] = bool(values["rendered"])
        html, fingerprint, text, main_text = values["html"], values["fingerprint"], stored_text(values["text"]), values["main_text"]
        values.update(
            headings=json.loads(values["headings"]),
            meta=json.loads(values["meta"]),
            terms=json.loads(values["terms"]),
            text=text,
            html=None if html is None else inflate_document(html, text),
            main_text=None if main_text is None else inflate_document(main_text, text),
            fingerprint=None if fingerprint is None else neardup.to_unsigned(fingerprint),
        )
        return Record(**values, links=links, classes=classes)

    # -- deletions ----------------------------------------------------------------

    def deleted_since(self, since: float | None = None, until: float | None = None) -> list[Deletion]:
        """Tombstones of records deleted at or after ``since`` (all: None) and before ``until``, oldest first."""
        bounds = [(bound, value) for bound, value in (("deleted >= ?", since), ("deleted < ?", until)) if value is not None]
        where = f"WHERE {' AND '.join(bound for bound, _ in bounds)} " if bounds else ""
        rows = self._read(lambda cursor: self._all(
            cursor, f"SELECT `key`, urls, deleted FROM {{p}}deletions {where}ORDER BY deleted, `key`",
            [value for _, value in bounds],
        ))
        return [Deletion(key, json.loads(urls), deleted) for key, urls, deleted in rows]

    def forget_deletions(self, before: float | None = None) -> int:
        """Drop tombstones of records deleted before ``before`` (all of them: None); returns how many went."""

        def work(cursor) -> int:
            if before is None:
                return self._run(cursor, "DELETE FROM {p}deletions").rowcount
            return self._run(cursor, "DELETE FROM {p}deletions WHERE deleted < ?", (before,)).rowcount

        return self._write(work)

    # -- topic scores, ranks and statistics -------------------------------------------

    def reclassify(self, key: str, score: float, normalized: float, algorithm: str, classes: list[TopicClass],
                   terms: list[str], off_topic: bool = False) -> None:
        """Replace a record's topic scores, classes and matched terms, and set or clear its off-topic flag."""

        def work(cursor) -> None:
            row = self._one(cursor, "SELECT id FROM {p}records WHERE `key` = ?", (key,))
            if row is None:
                return
            record_id = row[0]
            self._run(
                cursor,
                "UPDATE {p}records SET score = ?, normalized = ?, algorithm = ?, terms = ?, off_topic = ? WHERE id = ?",
                (score, normalized, algorithm, json.dumps(list(terms), ensure_ascii=False), int(off_topic), record_id),
            )
            self._run(cursor, "DELETE FROM {p}topics WHERE record = ?", (record_id,))
            self._touch(cursor, [key], time.time())
            if classes:
                cursor.executemany(
                    self._sql(
                        "INSERT INTO {p}topics (record, position, class, absolute, relative, terms) VALUES (?, ?, ?, ?, ?, ?)"
                    ),
                    [
                        (record_id, position, topic.name, topic.absolute, topic.relative,
                         json.dumps(list(topic.terms), ensure_ascii=False))
                        for position, topic in enumerate(classes)
                    ],
                )

        self._write(work)

    def link_graph(self) -> tuple[list[tuple[str, str]], dict[str, float]]:
        """``(source key, target key)`` of every stored link from one record to a URL of another (or the same),
        and every record's topic score by key."""
        column, _ = self._link_target("")

        def work(cursor):
            edges = self._all(
                cursor,
                f"SELECT DISTINCT r.`key`, u.`key` FROM {{p}}record_urls u JOIN {{p}}links l ON l.{column} = u.{column} "
                "JOIN {p}records r ON r.id = l.record WHERE l.url = u.url",
            )
            scores = self._all(cursor, "SELECT `key`, score FROM {p}records")
            return edges, scores

        edges, scores = self._read(work)
        return [(source, target) for source, target in edges], {key: float(score) for key, score in scores}

    def set_ranks(self, pagerank: Mapping[str, float], ipagerank: Mapping[str, float]) -> None:
        """Store each record's ranks in one transaction; a record in neither map is left without ranks."""

        def work(cursor) -> None:
            before = {key: (old, old_i) for key, old, old_i in self._all(cursor, "SELECT `key`, pagerank, ipagerank FROM {p}records")}
            self._run(cursor, "UPDATE {p}records SET pagerank = NULL, ipagerank = NULL")
            keys = pagerank.keys() | ipagerank.keys()
            cursor.executemany(
                self._sql("UPDATE {p}records SET pagerank = ?, ipagerank = ? WHERE `key` = ?"),
                [(pagerank.get(key), ipagerank.get(key), key) for key in sorted(keys)],
            )
            self._touch(cursor, sorted(key for key, ranks in before.items()
                                       if ranks != (pagerank.get(key), ipagerank.get(key))), time.time())

        self._write(work)

    def term_counts(self) -> dict[str, int]:
        """How many records each matched term was found in, read in pages."""
        counts: Counter[str] = Counter()
        last = 0
        while True:
            rows = self._read(lambda cursor: self._all(
                cursor, "SELECT id, terms FROM {p}records WHERE id > ? ORDER BY id LIMIT ?", (last, PAGE)))
            if not rows:
                return dict(counts)
            for _, terms in rows:
                counts.update(set(json.loads(terms)))
            last = rows[-1][0]

    def class_counts(self) -> dict[str, int]:
        """How many records are classified in each topic class."""
        rows = self._read(lambda cursor: self._all(
            cursor, "SELECT class, COUNT(DISTINCT record) FROM {p}topics GROUP BY class"))
        return {name: count for name, count in rows}

    # -- search -------------------------------------------------------------------

    def search(self, query: str, limit: int = 10) -> list[SearchHit]:
        """Records with any word of ``query``, best first, each with a snippet; ValueError for a query without words."""
        words = query_words(query)
        rows = self._read(lambda cursor: self._search_rows(cursor, words, limit))
        return [
            SearchHit(record_id, key, title, url or "", float(score), snippet(stored_text(text), words))
            for record_id, key, title, url, score, text in rows
        ]

    # -- schema -------------------------------------------------------------------

    def fill_fingerprints(self, cursor) -> None:
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
                        f"UPDATE {{p}}records SET fingerprint = ?, {', '.join(f'{band} = ?' for band in _BANDS)} WHERE id = ?",
                        (neardup.to_signed(fingerprint), *neardup.bands(fingerprint), record_id),
                    )
            last = rows[-1][0]

    def compress_documents_against_texts(self, cursor) -> None:
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

