"""What every part of the SQLite frontier shares: the file's connection, its layout and its upgrades.

Opening a file brings it to today's layout (``SCHEMA``), rewriting one of an
older layout in place, in one transaction; every part of the frontier
(``queue``, ``robots``, ``links``, ``revisit``, ``operations``) then works
over the one connection, each method one short transaction.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from combine_scrapy.faults import connect, make_directory
from combine_scrapy.frontier.sqlite.heads import HeadCache
from combine_scrapy.frontier.sqlite.tails import key_of
from combine_scrapy.sqlitetx import use_write_ahead_log, write_transaction

#: The tables, indexes, trigger and view of a frontier file, one statement each.
SCHEMA = (
    """
    CREATE TABLE IF NOT EXISTS hosts (
        id INTEGER PRIMARY KEY,
        host TEXT NOT NULL UNIQUE,
        lock_until REAL NOT NULL DEFAULT 0,
        delay REAL,                              -- robots.txt Crawl-delay, when longer than WaitIntervalHost
        urls INTEGER NOT NULL DEFAULT 0,
        fetched INTEGER NOT NULL DEFAULT 0,      -- completed fetches, for the host's yield
        relevant REAL NOT NULL DEFAULT 0,        -- of those, new relevant records, decayed (YIELD_DECAY)
        leased_until REAL NOT NULL DEFAULT 0     -- end of the lease of the URL being fetched (0: none)
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS urls (
        seq INTEGER PRIMARY KEY,                 -- order of marking, for FIFO order and ties: the URL's number
        host_id INTEGER NOT NULL,                -- hosts.id
        tail TEXT NOT NULL,                      -- the URL past 'http://<host>' (written ':') or
                                                 -- 'https://<host>' (';'), or whole when it starts otherwise
        marked INTEGER NOT NULL DEFAULT 1,      -- marked for crawling
        lock_until REAL NOT NULL DEFAULT 0,      -- URL lock (lease while in progress)
        priority REAL NOT NULL DEFAULT 0,        -- the best evidence of the pages linking here, raised as they come
        distance INTEGER NOT NULL DEFAULT 0,     -- link hops since the last relevant page, on the best known path
        attempts INTEGER NOT NULL DEFAULT 0      -- hand-outs not yet completed
    )
    """,
    "CREATE UNIQUE INDEX IF NOT EXISTS urls_key ON urls (host_id, tail)",
    # Each host's best marked URL, by seek; the rowid (seq) orders ties.
    "CREATE INDEX IF NOT EXISTS urls_best ON urls (host_id, priority DESC) WHERE marked = 1",
    # The marked URLs handed out and not completed, for ``ready``'s drop of those handed out too often.
    "CREATE INDEX IF NOT EXISTS urls_attempted ON urls (attempts) WHERE marked = 1 AND attempts > 0",
    # The marked URLs locked (leased, or waiting to be retried), for when a host's head may change by itself.
    "CREATE INDEX IF NOT EXISTS urls_locked ON urls (host_id, lock_until) WHERE marked = 1 AND lock_until > 0",
    """
    CREATE TABLE IF NOT EXISTS fetches (         -- what fetching a URL left, from its first fetch on
        seq INTEGER PRIMARY KEY,                 -- urls.seq
        status INTEGER,                          -- last HTTP status, NULL before the first completed fetch
        last_checked REAL,
        retries INTEGER NOT NULL DEFAULT 0,      -- completed as unavailable in a row
        etag TEXT,
        last_modified TEXT,
        score REAL,                              -- the topic score of the last fetch (PageRank strategies)
        visits INTEGER NOT NULL DEFAULT 0,       -- fetches that gave the page (200 or 304), for revisits
        changes INTEGER NOT NULL DEFAULT 0,      -- of those, how many found it changed
        first_visit REAL,
        digest TEXT                              -- content key of the last 200
    )
    """,
    # A URL deleted by hand takes what its fetches left with it, so a URL marked later never inherits it.
    """
    CREATE TRIGGER IF NOT EXISTS urls_deleted AFTER DELETE ON urls BEGIN
        DELETE FROM fetches WHERE seq = old.seq;
    END
    """,
    """
    CREATE VIEW IF NOT EXISTS url_states AS
    SELECT CASE substr(u.tail, 1, 1) WHEN ':' THEN 'http://' || h.host || substr(u.tail, 2)
                                     WHEN ';' THEN 'https://' || h.host || substr(u.tail, 2)
                                     ELSE u.tail END AS url,
           h.host, u.seq, u.marked, u.lock_until, u.priority, u.distance, u.attempts,
           f.status, f.last_checked, COALESCE(f.retries, 0) AS retries, f.etag, f.last_modified, f.score,
           COALESCE(f.visits, 0) AS visits, COALESCE(f.changes, 0) AS changes, f.first_visit, f.digest
    FROM urls u JOIN hosts h ON h.id = u.host_id LEFT JOIN fetches f ON f.seq = u.seq
    """,
    """
    CREATE TABLE IF NOT EXISTS links (           -- the crawled link graph, kept for the PageRank strategies
        source TEXT NOT NULL,
        target TEXT NOT NULL,
        PRIMARY KEY (source, target)
    ) WITHOUT ROWID
    """,
    """
    CREATE TABLE IF NOT EXISTS robots (
        host TEXT PRIMARY KEY,
        status INTEGER,
        body BLOB,
        expires REAL NOT NULL
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS control (          -- what every process of the job reads: paused, seeds
        name TEXT PRIMARY KEY,
        value TEXT NOT NULL
    )
    """,
)

# The columns of the layout before hosts were numbered (one row per URL, the URL whole in it and in its key)
# that files of yet earlier versions lack, read when such a file is rewritten in today's layout.
_OLD_COLUMNS = (
    ("urls", (("score", "REAL"), ("visits", "INTEGER NOT NULL DEFAULT 0"),
              ("changes", "INTEGER NOT NULL DEFAULT 0"), ("first_visit", "REAL"), ("digest", "TEXT"),
              ("distance", "INTEGER NOT NULL DEFAULT 0"))),
    ("hosts", (("fetched", "INTEGER NOT NULL DEFAULT 0"), ("relevant", "INTEGER NOT NULL DEFAULT 0"),
               ("leased_until", "REAL NOT NULL DEFAULT 0"))),
)

# An old row's URL as a tail: the same rule as ``frontier.tails.tail_of``, in SQL.
_OLD_TAIL = """
    CASE WHEN substr(o.url, 1, 7 + length(o.host)) = 'http://' || o.host THEN ':' || substr(o.url, 8 + length(o.host))
         WHEN substr(o.url, 1, 8 + length(o.host)) = 'https://' || o.host THEN ';' || substr(o.url, 9 + length(o.host))
         ELSE o.url END
"""


class SqliteConnection:
    """One frontier file: its connection, brought to today's layout, and the heads its parts keep up to date."""

    def __init__(self, path: str | Path) -> None:
        make_directory(Path(path).parent)
        self.path = str(path)
        self.db = connect(self.path, isolation_level=None, timeout=30)  # a full disk or damaged file: a StorageFault
        use_write_ahead_log(self.db)
        self.db.execute("PRAGMA synchronous=NORMAL")
        self._upgrade()
        self._name_the_mark()
        for statement in SCHEMA:
            self.db.execute(statement)
        # One cursor for the calls made for every URL: the connection's execute makes one per statement.
        self.statements = self.db.cursor()
        self.heads = HeadCache()

    def _columns(self, table: str) -> set[str]:
        return {row[1] for row in self.db.execute(f"PRAGMA table_info({table})")}

    def _upgrade(self) -> None:
        """Rewrite a file of the layout before hosts were numbered in today's, in one transaction.

        Every URL keeps its state, what its fetches left and its order of
        marking; every host its locks and counts. The old tables' pages are
        left free in the file for the frontier to grow into.
        """
        if "url" not in self._columns("urls"):
            return
        db = self.db
        with write_transaction(db):
            if "url" in self._columns("urls"):  # not upgraded meanwhile by another process of the job
                for table, added in _OLD_COLUMNS:
                    columns = self._columns(table)
                    for column, declaration in added:
                        if column not in columns:
                            db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
                db.execute("ALTER TABLE urls RENAME TO old_urls")
                db.execute("ALTER TABLE hosts RENAME TO old_hosts")
                db.execute("DROP INDEX IF EXISTS urls_best")
                db.execute("DROP INDEX IF EXISTS urls_ready")
                for statement in SCHEMA:
                    db.execute(statement)
                db.execute(
                    """
                    INSERT INTO hosts (host, lock_until, delay, urls, fetched, relevant, leased_until)
                    SELECT host, lock_until, delay, urls, fetched, relevant, leased_until FROM old_hosts ORDER BY rowid
                    """
                )
                db.execute("INSERT OR IGNORE INTO hosts (host, urls) SELECT host, COUNT(*) FROM old_urls GROUP BY host")
                db.execute(  # numbered in the old order of marking
                    f"""
                    INSERT INTO urls (host_id, tail, marked, lock_until, priority, distance, attempts)
                    SELECT h.id, {_OLD_TAIL}, o.harvest, o.lock_until, o.priority, o.distance, o.attempts
                    FROM old_urls o JOIN hosts h ON h.host = o.host ORDER BY o.seq, o.rowid
                    """
                )
                db.execute(
                    f"""
                    INSERT INTO fetches (seq, status, last_checked, retries, etag, last_modified, score, visits,
                                         changes, first_visit, digest)
                    SELECT u.seq, o.status, o.last_checked, o.retries, o.etag, o.last_modified, o.score, o.visits,
                           o.changes, o.first_visit, o.digest
                    FROM old_urls o JOIN hosts h ON h.host = o.host
                    JOIN urls u ON u.host_id = h.id AND u.tail = {_OLD_TAIL}
                    WHERE o.status IS NOT NULL OR o.last_checked IS NOT NULL OR o.retries <> 0 OR o.etag IS NOT NULL
                          OR o.last_modified IS NOT NULL OR o.score IS NOT NULL OR o.visits <> 0 OR o.changes <> 0
                          OR o.first_visit IS NOT NULL OR o.digest IS NOT NULL
                    """
                )
                db.execute("DROP TABLE old_urls")
                db.execute("DROP TABLE old_hosts")

    def _name_the_mark(self) -> None:
        """Files written before the mark was named ``marked`` call that column ``harvest``: renamed in place.

        The view and the partial indexes that name it are dropped first and made again from SCHEMA.
        """
        if "harvest" not in self._columns("urls"):
            return
        db = self.db
        with write_transaction(db):
            if "harvest" in self._columns("urls"):  # not renamed meanwhile by another process of the job
                db.execute("DROP VIEW IF EXISTS url_states")
                for index in ("urls_best", "urls_attempted", "urls_locked"):
                    db.execute(f"DROP INDEX IF EXISTS {index}")
                db.execute("ALTER TABLE urls RENAME COLUMN harvest TO marked")

    def close(self) -> None:
        self.db.close()

    def set_host_delay(self, host: str, delay: float | None) -> None:
        """Keep the host's delay (its robots.txt Crawl-delay, or longer when it answers slowly)."""
        self.db.execute("INSERT OR IGNORE INTO hosts (host) VALUES (?)", (host,))
        self.db.execute("UPDATE hosts SET delay = ? WHERE host = ?", (delay, host))

    def fetches(self, columns: str, url: str) -> tuple[Any, ...] | None:
        """``columns`` of what the fetches of a URL left; None before its first."""
        row: tuple[Any, ...] | None = self.db.execute(
            f"SELECT {columns} FROM urls u JOIN fetches f ON f.seq = u.seq "
            "WHERE u.host_id = (SELECT id FROM hosts WHERE host = ?) AND u.tail = ?",
            key_of(url),
        ).fetchone()
        return row


class SqlitePart:
    """One concern of the SQLite frontier (the queue, the robots.txt cache, ...) over the connection they share."""

    def __init__(self, connection: SqliteConnection) -> None:
        self.connection = connection
