"""The embedded record store: one SQLite file, nothing to install or start.

The MD5 content key is the primary key, so storing the same content under a
second URL adds the URL to the existing record instead of a second record.
Each store or removal is one transaction: a crash never leaves half a record.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from combine_scrapy.record import Record, RecordLink, TopicClass

SCHEMA_VERSION = 1
SCHEMA = """
CREATE TABLE IF NOT EXISTS records (
    key TEXT PRIMARY KEY,             -- upper-case hex MD5 of the content
    url TEXT NOT NULL,                -- the URL it was first stored from
    title TEXT NOT NULL,
    text TEXT NOT NULL,
    mime_type TEXT NOT NULL,
    headings TEXT NOT NULL,           -- JSON list
    meta TEXT NOT NULL,               -- JSON object: name -> list of values
    html TEXT,                        -- original document, when saveHTML
    charset TEXT NOT NULL,
    server TEXT NOT NULL,
    modified REAL,
    expires REAL,
    checked REAL NOT NULL,
    score REAL NOT NULL,
    normalized REAL NOT NULL,
    algorithm TEXT NOT NULL,
    terms TEXT NOT NULL,              -- JSON list
    language TEXT,
    country TEXT
);
CREATE TABLE IF NOT EXISTS record_urls (
    url TEXT PRIMARY KEY,
    key TEXT NOT NULL REFERENCES records (key) ON DELETE CASCADE,
    checked REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS record_urls_key ON record_urls (key);
CREATE TABLE IF NOT EXISTS links (
    key TEXT NOT NULL REFERENCES records (key) ON DELETE CASCADE,
    url TEXT NOT NULL,
    anchor TEXT NOT NULL,
    kind TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS links_key ON links (key);
CREATE TABLE IF NOT EXISTS topics (
    key TEXT NOT NULL REFERENCES records (key) ON DELETE CASCADE,
    class TEXT NOT NULL,
    absolute REAL NOT NULL,
    relative REAL NOT NULL,
    terms TEXT NOT NULL               -- JSON list
);
CREATE INDEX IF NOT EXISTS topics_key ON topics (key);
CREATE INDEX IF NOT EXISTS topics_class ON topics (class);
"""

_RECORD_COLUMNS = (
    "key", "url", "title", "text", "mime_type", "headings", "meta", "html", "charset", "server",
    "modified", "expires", "checked", "score", "normalized", "algorithm", "terms", "language", "country",
)


class SqliteRecordStore:
    """Records keyed by content MD5, with all the URLs that served them."""

    def __init__(self, path: str | Path):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.location = str(path)
        self._db = sqlite3.connect(self.location, isolation_level=None, timeout=30)  # harvesters share it
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA foreign_keys=ON")
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise RuntimeError(f"{self.location}: record schema version {version} is newer than this program ({SCHEMA_VERSION})")
        self._db.executescript(SCHEMA)
        self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def close(self) -> None:
        self._db.close()

    def store(self, record: Record) -> bool:
        """Store a record under ``record.url``; returns True when the content is new.

        Known content gets the URL added and its check time refreshed; a URL
        that served other content before is moved to the new record, and the
        old record goes when no URL is left on it.
        """
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            previous = self.key_for_url(record.url)
            new = db.execute("SELECT 1 FROM records WHERE key = ?", (record.key,)).fetchone() is None
            if new:
                self._insert(record)
            else:
                db.execute("UPDATE records SET checked = ? WHERE key = ?", (record.checked, record.key))
            db.execute(
                "INSERT OR REPLACE INTO record_urls (url, key, checked) VALUES (?, ?, ?)",
                (record.url, record.key, record.checked),
            )
            if previous and previous != record.key:
                self._drop_if_orphan(previous)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return new

    def forget_url(self, url: str) -> str | None:
        """Remove a URL that no longer serves its record; the record goes with its last URL.

        Returns the key of the record that was deleted, if one was.
        """
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            key = self.key_for_url(url)
            deleted = None
            if key:
                db.execute("DELETE FROM record_urls WHERE url = ?", (url,))
                deleted = key if self._drop_if_orphan(key) else None
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return deleted

    def key_for_url(self, url: str) -> str | None:
        row = self._db.execute("SELECT key FROM record_urls WHERE url = ?", (url,)).fetchone()
        return row[0] if row else None

    def _drop_if_orphan(self, key: str) -> bool:
        if self._db.execute("SELECT 1 FROM record_urls WHERE key = ?", (key,)).fetchone():
            return False
        self._db.execute("DELETE FROM records WHERE key = ?", (key,))
        return True

    def _insert(self, record: Record) -> None:
        values = {
            **{name: getattr(record, name) for name in _RECORD_COLUMNS},
            "headings": json.dumps(record.headings, ensure_ascii=False),
            "meta": json.dumps(record.meta, ensure_ascii=False),
            "terms": json.dumps(record.terms, ensure_ascii=False),
        }
        placeholders = ", ".join(f":{name}" for name in _RECORD_COLUMNS)
        self._db.execute(f"INSERT INTO records ({', '.join(_RECORD_COLUMNS)}) VALUES ({placeholders})", values)
        self._db.executemany(
            "INSERT INTO links (key, url, anchor, kind) VALUES (?, ?, ?, ?)",
            [(record.key, link.url, link.anchor, link.kind) for link in record.links],
        )
        self._db.executemany(
            "INSERT INTO topics (key, class, absolute, relative, terms) VALUES (?, ?, ?, ?, ?)",
            [
                (record.key, topic.name, topic.absolute, topic.relative, json.dumps(list(topic.terms)))
                for topic in record.classes
            ],
        )

    def urls(self, key: str) -> list[str]:
        rows = self._db.execute("SELECT url FROM record_urls WHERE key = ? ORDER BY url", (key,))
        return [row[0] for row in rows]

    def count(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM records").fetchone()[0]

    def get(self, key: str) -> Record | None:
        row = self._db.execute(
            f"SELECT {', '.join(_RECORD_COLUMNS)} FROM records WHERE key = ?", (key,)
        ).fetchone()
        return self._record(row) if row else None

    def __iter__(self) -> Iterator[Record]:
        """All records, oldest key first, read in pages so memory stays flat."""
        last = ""
        while True:
            rows = self._db.execute(
                f"SELECT {', '.join(_RECORD_COLUMNS)} FROM records WHERE key > ? ORDER BY key LIMIT 500", (last,)
            ).fetchall()
            if not rows:
                return
            for row in rows:
                yield self._record(row)
            last = rows[-1][0]

    def _record(self, row: tuple) -> Record:
        values = dict(zip(_RECORD_COLUMNS, row))
        key = values["key"]
        values["headings"] = json.loads(values["headings"])
        values["meta"] = json.loads(values["meta"])
        values["terms"] = json.loads(values["terms"])
        values["links"] = [
            RecordLink(*link)
            for link in self._db.execute("SELECT url, anchor, kind FROM links WHERE key = ?", (key,))
        ]
        values["classes"] = [
            TopicClass(name, absolute, relative, tuple(json.loads(terms)))
            for name, absolute, relative, terms in self._db.execute(
                "SELECT class, absolute, relative, terms FROM topics WHERE key = ? ORDER BY absolute DESC", (key,)
            )
        ]
        return Record(**values)
