"""The record store in MySQL or MariaDB, through mysqlclient, for harvesters on several machines.

Chosen by the ``MYSQL_URL`` setting (``mysql://user:password@host:port/database``).
Each job's tables carry the prefix ``combine_<job>_``, so several jobs share a
database. Text is utf8mb4, so any crawled character fits.

Every operation is one InnoDB transaction, retried whole when the connection
is lost (a server restarted, a connection killed): the store reconnects,
waiting up to ``reconnect_timeout`` seconds for the server (a harvester:
COMBINE_OUTAGE_PATIENCE, also when the server cannot be reached at its start),
logging how long it has waited, and runs the transaction again. SIGINT or
SIGTERM ends the wait at once; the store then gives up (MysqlUnavailable, a
CrawlFault that stops the crawl) and does not wait again. A transaction cut
off before its COMMIT was rolled back by the server; one whose COMMIT went through but whose answer was lost finds its
work done when it runs again (the MD5 and URL keys make every write
idempotent), so no record is lost or stored twice.
"""

from __future__ import annotations

import hashlib
import logging
import re
import time
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, TypeVar
from urllib.parse import unquote, urlsplit

import MySQLdb

from combine_scrapy.document import neardup
from combine_scrapy.faults import Outage, OutageWait, StopSignals, StorageFault
from combine_scrapy.records.record import Record
from combine_scrapy.records.store.search import index_words
from combine_scrapy.records.store.sql import SqlRecordStore
from combine_scrapy.records.store.sql.tables import PAGE, SCHEMA_VERSION, Cursor, Row, compress, url_hash

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: Errors after which the connection is gone: server gone or lost, connection killed, cannot connect, shutting down.
LOST_CONNECTION = {2002, 2003, 2006, 2013, 2055, 1927, 1053, 4031}
#: Errors after which the transaction is worth running again at once: deadlock, lock wait timeout,
#: and a duplicate key (another harvester stored the same content first; the retry finds it stored).
TRANSIENT = {1213, 1205, 1062}
TRANSIENT_RETRIES = 3
# Errors no retry mends, with what the operator should do: the crawl stops on them (a StorageFault).
FATAL = {
    1146: "a table of the job is missing (dropped?): restore it from a backup, or start the job's tables afresh",
    1114: "a table of the job is full: free space on the database server and run the crawl again",
    1021: "the database server's disk is full: free space there and run the crawl again",
    1142: "the database user may not write the job's tables: grant it INSERT, UPDATE, DELETE",
    1290: "the database server is read-only: make it writable and run the crawl again",
}
RECONNECT_TIMEOUT = 60.0
#: Seconds a statement may go without a word from the server (mysqlclient's read_timeout and write_timeout): a
#: server that stops answering without closing the connection (hung, or cut off by a network that drops its
#: packets) is then an outage, waited out and given up on as one that refuses, not a crawl blocked for good. Long
#: enough for any statement of a crawl or a command on a big job; migrations, whose DDL on a big table and whose
#: wait for another harvester's migration may take longer, run without it.
STATEMENT_SILENCE = 600

# How a job's tables store their pages ({storage}: one of the two below, by server).
_TABLE_OPTIONS = "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci {storage}"
#: MariaDB: each 16 KB page zlib-compressed as it is written, the rest of it punched out of the file (where the
#: file system can: ext4, XFS, Btrfs), so a page takes the 4 KB blocks its rows need and the space InnoDB reserves
#: ahead takes none. Compressed rows (below) kept one record of 6 KB to a page of 8 KB, and each growing file
#: 5 to 12 MB ahead of its pages.
PAGE_COMPRESSED = "ROW_FORMAT=DYNAMIC KEY_BLOCK_SIZE=0 PAGE_COMPRESSED=1"
#: Other MySQL servers: compressed rows, pages of 8 KB on disk.
ROW_COMPRESSED = "ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8"
#: The job's tables but the full-text index's own.
TABLES = ("records", "record_urls", "links", "topics", "deletions", "schema_version")

#: A step of a migration: SQL (``{p}`` the table prefix, ``{storage}`` the pages' options) or a store method run in
#: one transaction.
MigrationStep = str | Callable[["MysqlRecordStore", Cursor], None]

# Version 1: records, their URLs (keyed by the URL's MD5: a URL can be longer than an index allows), links, topics.
_V1 = [
    f"""CREATE TABLE {{p}}records (
        id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
        `key` CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL UNIQUE,
        url TEXT NOT NULL, title MEDIUMTEXT NOT NULL, text LONGTEXT NOT NULL, mime_type TEXT NOT NULL,
        headings MEDIUMTEXT NOT NULL, meta MEDIUMTEXT NOT NULL, html LONGBLOB,
        charset TEXT NOT NULL, server TEXT NOT NULL,
        modified DOUBLE, expires DOUBLE, checked DOUBLE NOT NULL,
        score DOUBLE NOT NULL, normalized DOUBLE NOT NULL, algorithm TEXT NOT NULL,
        terms MEDIUMTEXT NOT NULL, language VARCHAR(64), country VARCHAR(64)
    ) {_TABLE_OPTIONS}""",
    f"""CREATE TABLE {{p}}record_urls (
        url_hash BINARY(16) NOT NULL PRIMARY KEY, url TEXT NOT NULL,
        `key` CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL, host VARCHAR(300) NOT NULL, checked DOUBLE NOT NULL,
        INDEX {{p}}record_urls_key (`key`), INDEX {{p}}record_urls_host (host),
        CONSTRAINT {{p}}record_urls_record FOREIGN KEY (`key`) REFERENCES {{p}}records (`key`) ON DELETE CASCADE
    ) {_TABLE_OPTIONS}""",
    f"""CREATE TABLE {{p}}links (
        record BIGINT NOT NULL, position INT NOT NULL, url TEXT NOT NULL, anchor TEXT NOT NULL, kind VARCHAR(32) NOT NULL,
        PRIMARY KEY (record, position),
        CONSTRAINT {{p}}links_record FOREIGN KEY (record) REFERENCES {{p}}records (id) ON DELETE CASCADE
    ) {_TABLE_OPTIONS}""",
    f"""CREATE TABLE {{p}}topics (
        record BIGINT NOT NULL, position INT NOT NULL, class VARCHAR(255) NOT NULL,
        absolute DOUBLE NOT NULL, relative DOUBLE NOT NULL, terms MEDIUMTEXT NOT NULL,
        PRIMARY KEY (record, position), INDEX {{p}}topics_class (class),
        CONSTRAINT {{p}}topics_record FOREIGN KEY (record) REFERENCES {{p}}records (id) ON DELETE CASCADE
    ) {_TABLE_OPTIONS}""",
]

# Version 2: simhash fingerprints and their band index, filled in for the records already there.
_V2: list[MigrationStep] = [
    "ALTER TABLE {p}records ADD COLUMN fingerprint BIGINT, "
    + ", ".join(f"ADD COLUMN band{band} SMALLINT UNSIGNED" for band in range(neardup.BANDS))
    + ", "
    + ", ".join(f"ADD INDEX {{p}}records_band{band} (band{band})" for band in range(neardup.BANDS)),
    SqlRecordStore.fill_fingerprints,
]

# Version 3: full-text search.
_V3 = ["ALTER TABLE {p}records ADD FULLTEXT INDEX {p}records_search (title, text)"]

# Version 4: links looked up by their target. A TEXT URL cannot be indexed whole, so its MD5 is: a column the
# server computes (as url_hash() does in Python) for the rows already there and for every row inserted.
_V4 = [
    "ALTER TABLE {p}links ADD COLUMN url_hash BINARY(16) AS (UNHEX(MD5(url))) STORED, "
    "ADD INDEX {p}links_url_hash (url_hash)"
]

# Version 5: tombstones of deleted records (incremental exports, OAI-PMH), ranks (scrapy rank) and the
# off-topic flag (scrapy reclassify --flag).
_V5 = [
    f"""CREATE TABLE {{p}}deletions (
        `key` CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
        urls MEDIUMTEXT NOT NULL, deleted DOUBLE NOT NULL,
        INDEX {{p}}deletions_deleted (deleted)
    ) {_TABLE_OPTIONS}""",
    "ALTER TABLE {p}records ADD COLUMN pagerank DOUBLE, ADD COLUMN ipagerank DOUBLE, "
    "ADD COLUMN off_topic TINYINT NOT NULL DEFAULT 0, "
    "ADD INDEX {p}records_pagerank (pagerank), ADD INDEX {p}records_ipagerank (ipagerank)",
]


def _compress_texts(store: SqlRecordStore, cursor: Cursor) -> None:
    """Compress the text of the records already there and fill in their distinct words (a migration step)."""
    last = 0
    while rows := store._all(cursor, "SELECT id, text FROM {p}records WHERE id > ? ORDER BY id LIMIT ?", (last, PAGE)):
        for record_id, text in rows:
            text = bytes(text).decode("utf-8")  # the LONGTEXT's bytes, now a LONGBLOB's
            store._run(cursor, "UPDATE {p}records SET text = ?, words = ? WHERE id = ?", (compress(text), index_words(text), record_id))
        last = rows[-1][0]


# Version 6: the text zlib-compressed; the FULLTEXT index covers its distinct words (ranking by which words a
# record has, as SQLite's does), not every occurrence of each: a third of the index and of the record.
_V6: list[MigrationStep] = [
    "ALTER TABLE {p}records DROP INDEX {p}records_search, MODIFY text LONGBLOB NOT NULL, "
    "ADD COLUMN words MEDIUMTEXT NOT NULL DEFAULT ''",
    _compress_texts,
    "ALTER TABLE {p}records ADD FULLTEXT INDEX {p}records_search (title, words)",
]


def _store_pages(store: MysqlRecordStore, cursor: Cursor) -> None:
    """Store the pages of every table of the job as the server stores them best (a migration step)."""
    for table in TABLES:
        options = store._value(
            cursor,
            "SELECT LOWER(create_options) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?",
            (store.prefix + table,),
        )
        if store.storage == PAGE_COMPRESSED and "`page_compressed`='1'" not in options:
            store._run(cursor, f"ALTER TABLE {{p}}{table} {PAGE_COMPRESSED}")


# Version 7: the original document compressed against its text; the links' URL hash a virtual column, held by its
# index only; on MariaDB the pages compressed as they are written instead of compressed rows (see PAGE_COMPRESSED).
_V7: list[MigrationStep] = [
    SqlRecordStore.compress_documents_against_texts,
    "ALTER TABLE {p}links DROP INDEX {p}links_url_hash, DROP COLUMN url_hash, "
    "ADD COLUMN url_hash BINARY(16) AS (UNHEX(MD5(url))) VIRTUAL, ADD INDEX {p}links_url_hash (url_hash), {storage}",
    _store_pages,
]


# Version 8: each record's datestamp, when what an export writes of it last changed (the last check until now).
_V8 = [
    "ALTER TABLE {p}records ADD COLUMN changed DOUBLE NOT NULL DEFAULT 0, ADD INDEX {p}records_changed (changed)",
    "UPDATE {p}records SET changed = checked",
]

# Version 9: the main content of a page (the article without menus), compressed against the text; records
# stored before have none.
_V9 = ["ALTER TABLE {p}records ADD COLUMN main_text LONGBLOB"]

# Version 10: whether a page was rendered in a browser before it was parsed (Render).
_V10 = ["ALTER TABLE {p}records ADD COLUMN rendered TINYINT NOT NULL DEFAULT 0"]


def table_prefix(job: str) -> str:
    """``combine_<job>_``; a job name that is not a plain identifier (or is long) gets a hash to stay unique."""
    safe = re.sub(r"\W", "_", job, flags=re.ASCII)
    if safe != job or len(safe) > 32:
        safe = f"{safe[:24]}_{hashlib.md5(job.encode()).hexdigest()[:8]}"
    return f"combine_{safe}_"


def connection_arguments(url: str) -> dict[str, Any]:
    """mysqlclient's connect() arguments from ``mysql://user:password@host:port/database``; ValueError naming what is wrong."""
    parts = urlsplit(url)
    if parts.scheme not in ("mysql", "mariadb"):
        raise ValueError(f"MYSQL_URL {_redacted(url)!r}: expected mysql://user:password@host:port/database")
    database = parts.path.lstrip("/")
    if not database or "/" in database:
        raise ValueError(f"MYSQL_URL {_redacted(url)!r}: name one database after the host, as in mysql://host/crawl")
    try:
        port = parts.port or 3306
    except ValueError as e:
        raise ValueError(f"MYSQL_URL {_redacted(url)!r}: {e}") from e
    return {
        "host": parts.hostname or "localhost",
        "port": port,
        "user": unquote(parts.username or "root"),
        "password": unquote(parts.password or ""),
        "database": unquote(database),
        "charset": "utf8mb4",
        "autocommit": False,
        "connect_timeout": 5,   # a server that does not answer is an outage, waited out as one that refuses
        "read_timeout": STATEMENT_SILENCE,
        "write_timeout": STATEMENT_SILENCE,
    }


def _redacted(url: str) -> str:
    """The URL without its password, for logs and messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return parts._replace(netloc=netloc).geturl()


class MysqlUnavailable(ConnectionError, StorageFault):
    """The MySQL server unreachable for longer than the patience, or a signal came while it was waited for: the
    crawl stops (a CrawlFault); a command reports it as the connection error it also is."""

    reason = "records_unreachable"

    def __init__(self, message: str):
        ConnectionError.__init__(self, message)


class MysqlRecordStore(SqlRecordStore):
    """A job's records in its own tables of a MySQL or MariaDB database."""

    placeholder = "%s"

    def __init__(self, arguments: dict[str, Any], job: str, *, location: str, reconnect_timeout: float = RECONNECT_TIMEOUT,
                 connect_patience: float = 0.0):
        """Connect (waiting ``connect_patience`` seconds for a server that cannot be reached yet) and bring the
        job's tables to the current schema; a lost connection is then waited for ``reconnect_timeout`` seconds."""
        super().__init__()
        self.prefix = table_prefix(job)
        self.location = f"{location} (tables {self.prefix}*)"
        self.reconnect_timeout = reconnect_timeout
        self._arguments = arguments
        self._outages = OutageWait("MySQL", "MYSQL_URL", MysqlUnavailable, logger, where=f"MySQL at {self.location}")
        self._db: Any = None   # a mysqlclient connection (untyped); None after close or while one is lost
        self._migrating = False   # connections made meanwhile have no read or write timeout (STATEMENT_SILENCE)
        try:
            self._db = self._reach(connect_patience)
        except MySQLdb.Error as e:
            raise ConnectionError(f"{self.location}: cannot connect: {e}") from e
        self.storage = PAGE_COMPRESSED if "mariadb" in self._db.get_server_info().lower() else ROW_COMPRESSED
        self._migrate()

    @classmethod
    def from_url(cls, url: str, job: str, *, reconnect_timeout: float = RECONNECT_TIMEOUT,
                 connect_patience: float = 0.0) -> MysqlRecordStore:
        return cls(connection_arguments(url), job, location=_redacted(url), reconnect_timeout=reconnect_timeout,
                   connect_patience=connect_patience)

    def _reach(self, patience: float) -> Any:
        """A new connection, waiting up to ``patience`` seconds while the server cannot be reached."""
        outage: Outage | None = None
        with StopSignals() as stop:
            while True:
                try:
                    db = self._connect()
                except (MySQLdb.OperationalError, MySQLdb.InterfaceError) as e:
                    if not _lost(e):
                        raise
                    outage = outage or self._outages.begin(patience)
                    outage.failed(e, stop)
                else:
                    if outage is not None:
                        outage.ended()
                    return db

    def _connect(self) -> Any:
        arguments = self._arguments
        if self._migrating:
            arguments = {name: value for name, value in arguments.items() if name not in ("read_timeout", "write_timeout")}
        db = MySQLdb.connect(**arguments)
        cursor = db.cursor()
        cursor.execute("SET SESSION sql_mode = 'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION'")
        cursor.execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
        return db

    @property
    def connection_id(self) -> int:
        """The server's id of this store's connection (what KILL takes)."""
        thread: int = self._db.thread_id()
        return thread

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def _write(self, work: Callable[[Cursor], T]) -> T:
        """Run ``work`` as one transaction; on a lost connection reconnect and run it again."""
        outage: Outage | None = None
        transient = 0
        with StopSignals() as stop:  # a signal while an attempt runs ends the wait it would start
            while True:
                try:
                    if self._db is None:
                        self._db = self._connect()
                    cursor = self._db.cursor()
                    try:
                        result = work(cursor)
                        self._db.commit()
                    except BaseException:
                        self._rollback()
                        raise
                    if outage is not None:
                        outage.ended()
                    return result
                except (MySQLdb.OperationalError, MySQLdb.InterfaceError, MySQLdb.IntegrityError) as e:
                    code = e.args[0] if e.args else 0
                    if _lost(e):
                        self._drop_connection()
                        outage = outage or self._outages.begin(self.reconnect_timeout)
                        outage.failed(e, stop)
                    elif code in TRANSIENT and transient < TRANSIENT_RETRIES:
                        transient += 1
                        logger.info("%s: %s; running the transaction again", self.location, e)
                    else:
                        self._raise_fault(e)
                except MySQLdb.Error as e:
                    self._raise_fault(e)

    def _raise_fault(self, error: MySQLdb.Error) -> NoReturn:
        """Raise ``error`` as the StorageFault it means (a full disk, a lost server), else as it is."""
        fault = self._fault(error)
        if fault is None:
            raise error
        raise fault from error

    def _fault(self, error: MySQLdb.Error) -> StorageFault | None:
        """The StorageFault a server error amounts to, when no retry mends it."""
        code = error.args[0] if error.args else 0
        if code not in FATAL:
            return None
        reason = "storage_full" if code in (1114, 1021) else "storage_error"
        return StorageFault(f"{self.location}: {error}: {FATAL[code]}", reason)

    def _rollback(self) -> None:
        try:
            self._db.rollback()
        except MySQLdb.Error:  # the connection is already gone; the server rolled back
            pass

    def _drop_connection(self) -> None:
        if self._db is not None:
            try:
                self._db.close()
            except MySQLdb.Error:
                pass
            self._db = None

    def _index_columns(self, record: Record) -> dict[str, Any]:
        return {"words": index_words(record.text)}

    def _search_rows(self, cursor: Cursor, words: list[str], limit: int) -> list[Row]:
        text = " ".join(words)
        indexed = "r.title, r.words" if self._compressed_text else "r.title, r.text"
        return self._all(
            cursor,
            f"""SELECT r.id, r.`key`, r.title, (SELECT MIN(u.url) FROM {{p}}record_urls u WHERE u.`key` = r.`key`),
                      MATCH ({indexed}) AGAINST (?) AS score, r.text
               FROM {{p}}records r WHERE MATCH ({indexed}) AGAINST (?)
               ORDER BY score DESC, r.id LIMIT ?""",
            (text, text, limit),
        )

    def _link_target(self, url: str) -> tuple[str, Any]:
        return "url_hash", url_hash(url)

    def schema(self) -> int:
        """The schema version of the job's tables (0: none yet)."""

        def work(cursor: Cursor) -> int:
            if not self._one(
                cursor,
                "SELECT 1 FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?",
                (f"{self.prefix}schema_version",),
            ):
                return 0
            version: int = self._value(cursor, "SELECT COALESCE(MAX(version), 0) FROM {p}schema_version")
            return version

        return self._write(work)

    def _migrate(self) -> None:
        """Bring the job's tables to ``schema_version``, holding a named lock so harvesters starting together take turns.

        MySQL commits each DDL statement by itself, so a migration is not one
        transaction; its version row is written after its last statement.
        """
        version = self.schema()
        if version > SCHEMA_VERSION:
            raise self._newer_schema_error(self.location, version)
        if version >= self.schema_version:
            return
        timed = self._db
        self._migrating = True
        try:
            self._db = self._connect()
            self._run_migrations()
        finally:
            self._migrating = False
            self._drop_connection()
            self._db = timed

    def _run_migrations(self) -> None:
        """The migrations the tables lack, on a connection without read or write timeouts."""
        lock = f"combine-schema-{self.prefix}"
        cursor = self._db.cursor()
        cursor.execute("SELECT GET_LOCK(%s, 300)", (lock,))
        try:
            cursor.execute(
                self._sql(
                    "CREATE TABLE IF NOT EXISTS {p}schema_version "
                    f"(version INT PRIMARY KEY, description TEXT NOT NULL, applied DOUBLE NOT NULL) {_TABLE_OPTIONS}"
                ).replace("{storage}", self.storage)
            )
            for number, description, statements in MIGRATIONS:
                if self.schema() < number <= self.schema_version:
                    for step in statements:
                        if callable(step):
                            self._write(lambda c: step(self, c))
                        else:
                            cursor.execute(self._sql(step).replace("{storage}", self.storage))
                    self._write(
                        lambda c: self._run(
                            c, "INSERT INTO {p}schema_version (version, description, applied) VALUES (?, ?, ?)",
                            (number, description, time.time()),
                        )
                    )
        finally:
            cursor.execute("SELECT RELEASE_LOCK(%s)", (lock,))


def _lost(error: MySQLdb.Error) -> bool:
    """Whether the error means the server cannot be reached (the connection is gone or cannot be made)."""
    code = error.args[0] if error.args else 0
    return isinstance(error, MySQLdb.InterfaceError) or code in LOST_CONNECTION


#: (version, what it brings, steps: SQL or a store method run in a transaction) in order.
MIGRATIONS: list[tuple[int, str, Sequence[MigrationStep]]] = [
    (1, "records keyed by MD5, their URLs, links and topics", _V1),
    (2, "simhash fingerprints and their band index", _V2),
    (3, "full-text search (FULLTEXT)", _V3),
    (4, "links indexed by the MD5 of their target URL", _V4),
    (5, "tombstones of deleted records, PageRank and iPageRank, off-topic flag", _V5),
    (6, "text compressed, FULLTEXT index of its distinct words", _V6),
    (7, "original document compressed against the text, links' URL hash virtual, pages compressed (MariaDB)", _V7),
    (8, "datestamps: when a record last changed", _V8),
    (9, "main content, compressed against the text", _V9),
    (10, "whether a page was rendered in a browser", _V10),
]
