"""The embedded record store: one SQLite file, nothing to install or start.

The MD5 content key is unique, so storing the same content under a second URL
adds the URL to the existing record instead of a second record. Each store or
removal is one ``BEGIN IMMEDIATE`` transaction: a crash never leaves half a
record, and harvesters sharing the file take turns. Records are indexed for
search as they are stored (a contentless FTS5 table: the text is kept once,
compressed, in ``records``, and the index reads it through a view).
"""

from __future__ import annotations

import sqlite3
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from combine_scrapy.access.urls import host_of
from combine_scrapy.document import neardup
from combine_scrapy.faults import connect, make_directory
from combine_scrapy.records.record import Record
from combine_scrapy.records.store.sql import SqlRecordStore
from combine_scrapy.records.store.sql.tables import (
    PAGE,
    SCHEMA_VERSION,
    Cursor,
    Row,
    compress,
    document_against_text,
    stored_text,
    url_hash,
)
from combine_scrapy.sqlitetx import use_write_ahead_log, write_transaction

T = TypeVar("T")

#: The SQL function (registered on each connection) that gives the text of a ``records.text`` value.
INFLATE = "combine_inflate"

# Version 1: the first store, keyed by MD5 (its version was kept in PRAGMA user_version).
_V1 = [
    """CREATE TABLE records (
        key TEXT PRIMARY KEY, url TEXT NOT NULL, title TEXT NOT NULL, text TEXT NOT NULL, mime_type TEXT NOT NULL,
        headings TEXT NOT NULL, meta TEXT NOT NULL, html TEXT, charset TEXT NOT NULL, server TEXT NOT NULL,
        modified REAL, expires REAL, checked REAL NOT NULL, score REAL NOT NULL, normalized REAL NOT NULL,
        algorithm TEXT NOT NULL, terms TEXT NOT NULL, language TEXT, country TEXT
    )""",
    """CREATE TABLE record_urls (
        url TEXT PRIMARY KEY, key TEXT NOT NULL REFERENCES records (key) ON DELETE CASCADE, checked REAL NOT NULL
    )""",
    "CREATE INDEX record_urls_key ON record_urls (key)",
    """CREATE TABLE links (
        key TEXT NOT NULL REFERENCES records (key) ON DELETE CASCADE, url TEXT NOT NULL, anchor TEXT NOT NULL,
        kind TEXT NOT NULL
    )""",
    "CREATE INDEX links_key ON links (key)",
    """CREATE TABLE topics (
        key TEXT NOT NULL REFERENCES records (key) ON DELETE CASCADE, class TEXT NOT NULL, absolute REAL NOT NULL,
        relative REAL NOT NULL, terms TEXT NOT NULL
    )""",
    "CREATE INDEX topics_key ON topics (key)",
    "CREATE INDEX topics_class ON topics (class)",
]

# Version 2: record ids, URL hashes and hosts, ordered links and topics, simhash fingerprints with their band index.
_V2_TABLES = [
    """CREATE TABLE records (
        id INTEGER PRIMARY KEY,
        `key` TEXT NOT NULL UNIQUE,        -- upper-case hex MD5 of the content
        url TEXT NOT NULL,                 -- the URL it was first stored from
        title TEXT NOT NULL, text TEXT NOT NULL, mime_type TEXT NOT NULL,
        headings TEXT NOT NULL,            -- JSON list
        meta TEXT NOT NULL,                -- JSON object: name -> list of values
        html BLOB,                         -- original document, zlib-compressed, when saveHTML
        charset TEXT NOT NULL, server TEXT NOT NULL,
        modified REAL, expires REAL, checked REAL NOT NULL,
        score REAL NOT NULL, normalized REAL NOT NULL, algorithm TEXT NOT NULL,
        terms TEXT NOT NULL,               -- JSON list
        language TEXT, country TEXT,
        fingerprint INTEGER,               -- simhash, as a signed 64-bit integer
        band0 INTEGER, band1 INTEGER, band2 INTEGER, band3 INTEGER
    )""",
    *(f"CREATE INDEX records_band{band} ON records (band{band})" for band in range(neardup.BANDS)),
    """CREATE TABLE record_urls (
        url_hash BLOB PRIMARY KEY, url TEXT NOT NULL,
        `key` TEXT NOT NULL REFERENCES records (`key`) ON DELETE CASCADE,
        host TEXT NOT NULL, checked REAL NOT NULL
    ) WITHOUT ROWID""",
    "CREATE INDEX record_urls_key ON record_urls (`key`)",
    "CREATE INDEX record_urls_host ON record_urls (host)",
    """CREATE TABLE links (
        record INTEGER NOT NULL REFERENCES records (id) ON DELETE CASCADE, position INTEGER NOT NULL,
        url TEXT NOT NULL, anchor TEXT NOT NULL, kind TEXT NOT NULL,
        PRIMARY KEY (record, position)
    ) WITHOUT ROWID""",
    """CREATE TABLE topics (
        record INTEGER NOT NULL REFERENCES records (id) ON DELETE CASCADE, position INTEGER NOT NULL,
        class TEXT NOT NULL, absolute REAL NOT NULL, relative REAL NOT NULL, terms TEXT NOT NULL,
        PRIMARY KEY (record, position)
    ) WITHOUT ROWID""",
    "CREATE INDEX topics_class ON topics (class)",
]

# Version 3: full-text search, kept by triggers as records come and go. Without token positions (detail=column):
# bm25 ranks by counts alone and snippets are cut in Python, so positions would only double the index.
_V3 = [
    """CREATE VIRTUAL TABLE search USING fts5(
        title, text, content='records', content_rowid='id', tokenize='unicode61 remove_diacritics 2', detail=column
    )""",
    """CREATE TRIGGER records_search_insert AFTER INSERT ON records BEGIN
        INSERT INTO search (rowid, title, text) VALUES (new.id, new.title, new.text);
    END""",
    """CREATE TRIGGER records_search_delete AFTER DELETE ON records BEGIN
        INSERT INTO search (search, rowid, title, text) VALUES ('delete', old.id, old.title, old.text);
    END""",
    """CREATE TRIGGER records_search_update AFTER UPDATE OF title, text ON records BEGIN
        INSERT INTO search (search, rowid, title, text) VALUES ('delete', old.id, old.title, old.text);
        INSERT INTO search (rowid, title, text) VALUES (new.id, new.title, new.text);
    END""",
    "INSERT INTO search (search) VALUES ('rebuild')",
]

# Version 4: links looked up by their target, for the alt texts and anchors of the pages that link to a URL.
_V4 = ["CREATE INDEX links_url ON links (url)"]

# Version 5: tombstones of deleted records (incremental exports, OAI-PMH), ranks (scrapy rank) and the
# off-topic flag (scrapy reclassify --flag).
_V5 = [
    """CREATE TABLE deletions (
        `key` TEXT PRIMARY KEY, urls TEXT NOT NULL, deleted REAL NOT NULL  -- urls: JSON list
    ) WITHOUT ROWID""",
    "CREATE INDEX deletions_deleted ON deletions (deleted)",
    "ALTER TABLE records ADD COLUMN pagerank REAL",
    "ALTER TABLE records ADD COLUMN ipagerank REAL",
    "ALTER TABLE records ADD COLUMN off_topic INTEGER NOT NULL DEFAULT 0",
    "CREATE INDEX records_pagerank ON records (pagerank)",
    "CREATE INDEX records_ipagerank ON records (ipagerank)",
]


# Version 6: the text zlib-compressed. The FTS5 index reads it (for bm25) through a view that inflates it with
# a function each connection registers, and keeps no copy; the store adds and removes index entries itself.
_V6_SEARCH = [
    f"CREATE VIEW search_content AS SELECT id, title, {INFLATE}(text) AS text FROM records",
    """CREATE VIRTUAL TABLE search USING fts5(
        title, text, content='search_content', content_rowid='id', tokenize='unicode61 remove_diacritics 2',
        detail=column
    )""",
]


def _upgrade_to_v6(db: sqlite3.Connection) -> None:
    """Compress every record's text and index it through the inflating view instead of triggers."""
    for trigger in ("records_search_insert", "records_search_delete", "records_search_update"):
        db.execute(f"DROP TRIGGER {trigger}")
    db.execute("DROP TABLE search")
    last = 0
    while rows := db.execute("SELECT id, text FROM records WHERE id > ? ORDER BY id LIMIT ?", (last, PAGE)).fetchall():
        db.executemany("UPDATE records SET text = ? WHERE id = ?", [(compress(stored_text(text)), id_) for id_, text in rows])
        last = rows[-1][0]
    for statement in _V6_SEARCH:
        db.execute(statement)
    db.execute("INSERT INTO search (search) VALUES ('rebuild')")


def _upgrade_to_v7(db: sqlite3.Connection) -> None:
    """Compress every original document again, against its record's text."""
    last = 0
    while rows := db.execute(
        "SELECT id, text, html FROM records WHERE id > ? AND html IS NOT NULL ORDER BY id LIMIT ?", (last, PAGE)
    ).fetchall():
        db.executemany("UPDATE records SET html = ? WHERE id = ?", [(document_against_text(html, text), id_) for id_, text, html in rows])
        last = rows[-1][0]


def _upgrade_to_v2(db: sqlite3.Connection) -> None:
    """Rebuild the version 1 tables in the version 2 layout, fingerprinting every record."""
    for index in ("record_urls_key", "links_key", "topics_key", "topics_class"):
        db.execute(f"DROP INDEX {index}")
    for table in ("records", "record_urls", "links", "topics"):
        db.execute(f"ALTER TABLE {table} RENAME TO {table}_v1")
    for statement in _V2_TABLES:
        db.execute(statement)
    columns = (
        "key", "url", "title", "text", "mime_type", "headings", "meta", "html", "charset", "server", "modified",
        "expires", "checked", "score", "normalized", "algorithm", "terms", "language", "country",
    )
    for row in db.execute(f"SELECT {', '.join(columns)} FROM records_v1").fetchall():
        values = dict(zip(columns, row))
        html = values["html"]
        values["html"] = None if html is None else zlib.compress(html.encode("utf-8"))
        fingerprint = neardup.simhash(values["text"])
        values["fingerprint"] = None if fingerprint is None else neardup.to_signed(fingerprint)
        for band, value in enumerate(neardup.bands(fingerprint) if fingerprint is not None else (None,) * neardup.BANDS):
            values[f"band{band}"] = value
        names = list(values)
        db.execute(
            f"INSERT INTO records ({', '.join(f'`{name}`' for name in names)}) VALUES ({', '.join('?' * len(names))})",
            [values[name] for name in names],
        )
    db.executemany(
        "INSERT INTO record_urls (url_hash, url, `key`, host, checked) VALUES (?, ?, ?, ?, ?)",
        [(url_hash(url), url, key, host_of(url), checked)
         for url, key, checked in db.execute("SELECT url, key, checked FROM record_urls_v1").fetchall()],
    )
    db.execute(
        """INSERT INTO links (record, position, url, anchor, kind)
           SELECT r.id, ROW_NUMBER() OVER (PARTITION BY l.key ORDER BY l.rowid) - 1, l.url, l.anchor, l.kind
           FROM links_v1 l JOIN records r ON r.`key` = l.key"""
    )
    db.execute(
        """INSERT INTO topics (record, position, class, absolute, relative, terms)
           SELECT r.id, ROW_NUMBER() OVER (PARTITION BY t.key ORDER BY t.absolute DESC, t.rowid) - 1,
                  t.class, t.absolute, t.relative, t.terms
           FROM topics_v1 t JOIN records r ON r.`key` = t.key"""
    )
    for table in ("links", "topics", "record_urls", "records"):
        db.execute(f"DROP TABLE {table}_v1")


def _statements(statements: list[str]) -> Callable[[sqlite3.Connection], None]:
    def apply(db: sqlite3.Connection) -> None:
        for statement in statements:
            db.execute(statement)

    return apply


# Version 8: each record's datestamp, when what an export writes of it last changed (the last check until now).
_V8 = [
    "ALTER TABLE records ADD COLUMN changed REAL NOT NULL DEFAULT 0",
    "UPDATE records SET changed = checked",
    "CREATE INDEX records_changed ON records (changed)",
]

# Version 9: the main content of a page (the article without menus), compressed against the text; records
# stored before have none.
_V9 = ["ALTER TABLE records ADD COLUMN main_text BLOB"]

# Version 10: whether a page was rendered in a browser before it was parsed (Render).
_V10 = ["ALTER TABLE records ADD COLUMN rendered INTEGER NOT NULL DEFAULT 0"]


#: (version, what it brings, how) in order; each runs in one transaction.
MIGRATIONS: list[tuple[int, str, Callable[[sqlite3.Connection], None]]] = [
    (1, "records keyed by MD5, their URLs, links and topics", _statements(_V1)),
    (2, "record ids, URL hashes and hosts, simhash fingerprints and their band index", _upgrade_to_v2),
    (3, "full-text search (FTS5)", _statements(_V3)),
    (4, "links indexed by target URL", _statements(_V4)),
    (5, "tombstones of deleted records, PageRank and iPageRank, off-topic flag", _statements(_V5)),
    (6, "text compressed, contentless full-text index", _upgrade_to_v6),
    (7, "original document compressed against the text", _upgrade_to_v7),
    (8, "datestamps: when a record last changed", _statements(_V8)),
    (9, "main content, compressed against the text", _statements(_V9)),
    (10, "whether a page was rendered in a browser", _statements(_V10)),
]
assert MIGRATIONS[-1][0] == SCHEMA_VERSION


class SqliteRecordStore(SqlRecordStore):
    """Records keyed by content MD5, with all the URLs that served them, in one SQLite file."""

    def __init__(self, path: str | Path):
        super().__init__()
        make_directory(Path(path).parent)
        self.location = str(path)
        # Harvesters share it; a full disk, a read-only or damaged file is a StorageFault naming it.
        self._db = connect(self.location, isolation_level=None, timeout=30)
        self._db.create_function(INFLATE, 1, stored_text, deterministic=True)
        use_write_ahead_log(self._db)
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA foreign_keys=ON")
        self._migrate()

    def close(self) -> None:
        self._db.close()

    def _write(self, work: Callable[[Cursor], T]) -> T:
        cursor = self._db.cursor()
        with write_transaction(cursor):
            return work(cursor)

    def _read(self, work: Callable[[Cursor], T]) -> T:
        return work(self._db.cursor())

    def _index(self, cursor: Cursor, record_id: int, record: Record) -> None:
        cursor.execute("INSERT INTO search (rowid, title, text) VALUES (?, ?, ?)", (record_id, record.title, record.text))

    def _unindex(self, cursor: Cursor, key: str) -> None:
        # An external-content index forgets a row given the very values it indexed.
        row = cursor.execute("SELECT id, title, text FROM records WHERE `key` = ?", (key,)).fetchone()
        if row is not None:
            cursor.execute(
                "INSERT INTO search (search, rowid, title, text) VALUES ('delete', ?, ?, ?)",
                (row[0], row[1], stored_text(row[2])),
            )

    def _search_rows(self, cursor: Cursor, words: list[str], limit: int) -> list[Row]:
        match = " OR ".join(f'"{word}"' for word in words)  # \w+ words: no quote to escape
        return self._all(
            cursor,
            """SELECT r.id, r.`key`, r.title, (SELECT MIN(u.url) FROM record_urls u WHERE u.`key` = r.`key`),
                      -bm25(search, 5.0, 1.0) AS score, r.text
               FROM search JOIN records r ON r.id = search.rowid
               WHERE search MATCH ? ORDER BY score DESC, r.id LIMIT ?""",
            (match, limit),
        )

    def schema(self) -> int:
        """The schema version of the file: 0 when empty; version 1 kept it in PRAGMA user_version."""
        tables = {row[0] for row in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "schema_version" in tables:
            version: int | None = self._db.execute("SELECT MAX(version) FROM schema_version").fetchone()[0]
            return version or 0
        if "records" in tables:
            user_version: int = self._db.execute("PRAGMA user_version").fetchone()[0]
            return max(user_version, 1)
        return 0

    def _migrate(self) -> None:
        """Bring the file to ``schema_version``, one transaction per migration; refuse a newer file."""
        version = self.schema()
        if version > SCHEMA_VERSION:
            raise self._newer_schema_error(self.location, version)
        for number, description, apply in MIGRATIONS:
            if version < number <= self.schema_version:
                with write_transaction(self._db):
                    if self.schema() < number:  # another harvester may have got there first
                        apply(self._db)
                        self._db.execute(
                            "CREATE TABLE IF NOT EXISTS schema_version "
                            "(version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied REAL NOT NULL)"
                        )
                        self._db.execute(
                            "INSERT INTO schema_version (version, description, applied) VALUES (?, ?, ?)",
                            (number, description, time.time()),
                        )
