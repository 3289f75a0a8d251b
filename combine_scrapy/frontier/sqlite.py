"""The embedded frontier: one SQLite file, one harvester process, nothing to start.

Every method is one short transaction, so a harvester killed at any moment
leaves the file consistent: a marked URL stays marked until a fetch of it has
completed, and a URL leased to a dead harvester comes back when its lease ends.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from combine_scrapy.faults import connect, make_directory
from combine_scrapy.frontier import FrontierEntry, MarkResult
from combine_scrapy.frontier.strategy import Head, Round, strategy_named

SCHEMA = """
CREATE TABLE IF NOT EXISTS urls (
    url TEXT PRIMARY KEY,
    host TEXT NOT NULL,
    harvest INTEGER NOT NULL DEFAULT 1,      -- marked for crawling
    lock_until REAL NOT NULL DEFAULT 0,      -- URL lock (lease while in progress)
    priority REAL NOT NULL DEFAULT 0,        -- the best evidence of the pages linking here, raised as they come
    distance INTEGER NOT NULL DEFAULT 0,     -- link hops since the last relevant page, on the best known path
    seq INTEGER NOT NULL,                    -- order of marking, for FIFO ties
    attempts INTEGER NOT NULL DEFAULT 0,     -- hand-outs not yet completed
    retries INTEGER NOT NULL DEFAULT 0,      -- completed as unavailable in a row
    status INTEGER,                          -- last HTTP status, NULL before the first fetch
    last_checked REAL,
    etag TEXT,
    last_modified TEXT,
    score REAL,                              -- the topic score of the last fetch (PageRank strategies)
    visits INTEGER NOT NULL DEFAULT 0,       -- fetches that gave the page (200 or 304), for revisits
    changes INTEGER NOT NULL DEFAULT 0,      -- of those, how many found it changed
    first_visit REAL,
    digest TEXT                              -- content key of the last 200
);
CREATE INDEX IF NOT EXISTS urls_best ON urls (harvest, host, priority DESC, seq);  -- each host's best URL, by seek
CREATE TABLE IF NOT EXISTS hosts (
    host TEXT PRIMARY KEY,
    lock_until REAL NOT NULL DEFAULT 0,
    delay REAL,                              -- robots.txt Crawl-delay, when longer than WaitIntervalHost
    urls INTEGER NOT NULL DEFAULT 0,
    fetched INTEGER NOT NULL DEFAULT 0,      -- completed fetches, for the host's yield
    relevant INTEGER NOT NULL DEFAULT 0,     -- of those, relevant pages
    leased_until REAL NOT NULL DEFAULT 0     -- end of the lease of the URL being fetched (0: none)
);
CREATE TABLE IF NOT EXISTS links (           -- the crawled link graph, kept for the PageRank strategies
    source TEXT NOT NULL,
    target TEXT NOT NULL,
    PRIMARY KEY (source, target)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS robots (
    host TEXT PRIMARY KEY,
    status INTEGER,
    body BLOB,
    expires REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS control (          -- flags every process of the job reads: paused
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""


# A strategy's queue (frontier.strategy) as the order of one host's URLs.
_QUEUES = {"fifo": "seq", "best": "priority DESC, seq"}


class SqliteFrontier:
    """The frontier in one SQLite file."""

    def __init__(self, path: str | Path, *, max_attempts: int = 5):
        make_directory(Path(path).parent)
        self.path = str(path)
        self.max_attempts = max_attempts
        self._db = connect(self.path, isolation_level=None, timeout=30)  # a full disk or damaged file: a StorageFault
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._upgrade()
        self._db.executescript(SCHEMA)

    def _upgrade(self) -> None:
        """Add the columns later versions use to a frontier file written by an earlier one."""
        for table, added in (
            ("urls", (("score", "REAL"), ("visits", "INTEGER NOT NULL DEFAULT 0"),
                      ("changes", "INTEGER NOT NULL DEFAULT 0"), ("first_visit", "REAL"), ("digest", "TEXT"),
                      ("distance", "INTEGER NOT NULL DEFAULT 0"))),
            ("hosts", (("fetched", "INTEGER NOT NULL DEFAULT 0"), ("relevant", "INTEGER NOT NULL DEFAULT 0"),
                       ("leased_until", "REAL NOT NULL DEFAULT 0"))),
        ):
            columns = {row[1] for row in self._db.execute(f"PRAGMA table_info({table})")}
            for column, declaration in added:
                if columns and column not in columns:
                    self._db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
        self._db.execute("DROP INDEX IF EXISTS urls_ready")  # replaced by urls_best, which rounds seek in

    def close(self) -> None:
        self._db.close()

    def mark(
        self, entries: Iterable[tuple[str, str, float]], *, max_urls_per_host: int | None = None, distance: int = 0
    ) -> MarkResult:
        """Mark new URLs ``(url, host, priority)`` at ``distance`` for crawling.

        A known URL that is still marked and was never fetched is raised: it
        keeps the higher priority and the lower distance (one UPDATE of its
        row). Fetched URLs stay as they are. Refused URLs are new ones over
        the per-host bound.
        """
        marked = refused = raised = 0
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            seq = db.execute("SELECT COALESCE(MAX(seq), 0) FROM urls").fetchone()[0]
            for url, host, priority in entries:
                if db.execute("SELECT 1 FROM urls WHERE url = ?", (url,)).fetchone():
                    raised += db.execute(
                        """
                        UPDATE urls SET priority = MAX(priority, :priority), distance = MIN(distance, :distance)
                        WHERE url = :url AND harvest = 1 AND last_checked IS NULL
                              AND (priority < :priority OR distance > :distance)
                        """,
                        {"url": url, "priority": priority, "distance": distance},
                    ).rowcount
                    continue
                db.execute("INSERT OR IGNORE INTO hosts (host) VALUES (?)", (host,))
                if max_urls_per_host is not None:
                    count = db.execute("SELECT urls FROM hosts WHERE host = ?", (host,)).fetchone()[0]
                    if count >= max_urls_per_host:
                        refused += 1
                        continue
                seq += 1
                db.execute(
                    "INSERT INTO urls (url, host, priority, distance, seq) VALUES (?, ?, ?, ?, ?)",
                    (url, host, priority, distance, seq),
                )
                db.execute("UPDATE hosts SET urls = urls + 1 WHERE host = ?", (host,))
                marked += 1
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return MarkResult(marked, refused, raised)

    def remark(self, url: str) -> bool:
        """Mark a known URL for crawling again, unlocked (recycle / re-harvest)."""
        cursor = self._db.execute(
            "UPDATE urls SET harvest = 1, lock_until = 0, attempts = 0 WHERE url = ?", (url,)
        )
        return cursor.rowcount > 0

    def ready(self, now: float, strategy: str = "BreadthFirstTime", limit: int | None = None, *,
              hold: float = 0.0) -> Round:
        """One round of the strategy (:mod:`combine_scrapy.frontier.strategy`) over the heads of the hosts.

        A host takes part when it has a due marked URL and is free, or leased
        (a fetch in flight) for at most ``hold`` seconds more; URLs handed out
        too often without completion are dropped first.
        """
        crawl = strategy_named(strategy)
        self._db.execute(
            "UPDATE urls SET harvest = 0 WHERE harvest = 1 AND attempts >= ? AND lock_until <= ?",
            (self.max_attempts, now),
        )
        rows = self._db.execute(
            f"""
            SELECT u.url, u.host, u.priority, u.etag, u.last_modified, u.distance, u.seq,
                   h.lock_until, h.fetched, h.relevant
            FROM hosts h JOIN urls u ON u.rowid = (
                SELECT rowid FROM urls WHERE harvest = 1 AND host = h.host AND lock_until <= :now
                ORDER BY {_QUEUES[crawl.queue]} LIMIT 1
            )
            WHERE h.lock_until <= :now OR h.leased_until > :now AND h.lock_until <= :until
            """,
            {"now": now, "until": now + hold},
        ).fetchall()
        heads = [Head(FrontierEntry(*row[:6]), *row[6:]) for row in rows]
        return crawl.round(heads, now, limit, lambda hosts, depth: self._deeper(now, hosts, depth))

    def _deeper(self, now: float, hosts: list[str], depth: int) -> dict[str, list[tuple[float, int]]]:
        """``(priority, order of marking)`` of the first ``depth`` due URLs of each host, by priority."""
        return {
            host: self._db.execute(
                f"""
                SELECT priority, seq FROM urls WHERE harvest = 1 AND host = ? AND lock_until <= ?
                ORDER BY {_QUEUES["best"]} LIMIT ?
                """,
                (host, now, depth),
            ).fetchall()
            for host in hosts
        }

    def add_links(self, edges: Iterable[tuple[str, str]]) -> None:
        """Remember ``(source, target)`` edges of the crawled graph."""
        self._db.executemany("INSERT OR IGNORE INTO links (source, target) VALUES (?, ?)", edges)

    def link_graph(self) -> tuple[list[tuple[str, str]], dict[str, float]]:
        """The crawled graph's edges, and the topic score of every fetched page."""
        edges = self._db.execute("SELECT source, target FROM links").fetchall()
        scores = dict(self._db.execute("SELECT url, score FROM urls WHERE score IS NOT NULL").fetchall())
        return edges, scores

    def set_priorities(self, priorities: dict[str, float]) -> None:
        """Overwrite the priority of marked URLs (a PageRank recomputation)."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.executemany(
                "UPDATE urls SET priority = ? WHERE url = ? AND harvest = 1",
                ((rank, url) for url, rank in priorities.items()),
            )
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def claim(self, entry: FrontierEntry, now: float, lease: float) -> bool:
        """Lease the URL and lock its host, unless another hand-out got there first."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            host_free = db.execute(
                "SELECT 1 FROM hosts WHERE host = ? AND lock_until <= ?", (entry.host, now)
            ).fetchone()
            url_free = db.execute(
                "SELECT 1 FROM urls WHERE url = ? AND harvest = 1 AND lock_until <= ?", (entry.url, now)
            ).fetchone()
            if not (host_free and url_free):
                db.execute("ROLLBACK")
                return False
            db.execute("UPDATE hosts SET lock_until = ?, leased_until = ? WHERE host = ?",
                       (now + lease, now + lease, entry.host))
            db.execute(
                "UPDATE urls SET lock_until = ?, attempts = attempts + 1 WHERE url = ?",
                (now + lease, entry.url),
            )
            db.execute("COMMIT")
            return True
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def lock_host(self, host: str, until: float) -> None:
        self._db.execute("INSERT OR IGNORE INTO hosts (host) VALUES (?)", (host,))
        self._db.execute("UPDATE hosts SET lock_until = ? WHERE host = ?", (until, host))

    def complete(
        self,
        url: str,
        host: str,
        *,
        now: float,
        url_lock_until: float,
        host_lock_until: float,
        status: int | None,
        keep_marked: bool = False,
        etag: str | None = None,
        last_modified: str | None = None,
        score: float | None = None,
        relevant: bool | None = None,
    ) -> None:
        """Record the end of a fetch: locks set, harvest flag cleared unless ``keep_marked``.

        The fetch counts for its host's yield, as relevant when ``relevant``.
        """
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute(
                """
                UPDATE urls SET harvest = ?, lock_until = ?, attempts = 0, status = ?, last_checked = ?,
                       retries = CASE WHEN ? THEN retries + 1 ELSE 0 END,
                       etag = COALESCE(?, etag), last_modified = COALESCE(?, last_modified),
                       score = COALESCE(?, score)
                WHERE url = ?
                """,
                (int(keep_marked), url_lock_until, status, now, keep_marked, etag, last_modified, score, url),
            )
            db.execute(
                """
                UPDATE hosts SET lock_until = ?, leased_until = 0, fetched = fetched + 1, relevant = relevant + ?
                WHERE host = ?
                """,
                (self._with_delay(host, now, host_lock_until), int(bool(relevant)), host),
            )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def release(self, url: str, host: str, host_lock_until: float, now: float | None = None) -> None:
        """Give a leased URL back without counting the attempt (its fetch was put off).

        With ``now``, the host's robots.txt Crawl-delay counts from then, as after a fetch.
        """
        self._db.execute(
            "UPDATE urls SET lock_until = 0, attempts = MAX(attempts - 1, 0) WHERE url = ?", (url,)
        )
        self._db.execute("UPDATE hosts SET leased_until = 0 WHERE host = ?", (host,))
        self.lock_host(host, host_lock_until if now is None else self._with_delay(host, now, host_lock_until))

    def _with_delay(self, host: str, now: float, host_lock_until: float) -> float:
        """The host lock stretched to the host's Crawl-delay when that is longer."""
        delay = self._db.execute("SELECT delay FROM hosts WHERE host = ?", (host,)).fetchone()
        return max(host_lock_until, now + delay[0]) if delay and delay[0] else host_lock_until

    def change_history(self, url: str) -> tuple[int, int, float | None, str | None]:
        """``(visits, changes, first visit, last content digest)`` of a page, for its revisit interval."""
        row = self._db.execute("SELECT visits, changes, first_visit, digest FROM urls WHERE url = ?", (url,)).fetchone()
        return tuple(row) if row else (0, 0, None, None)

    def record_visit(self, url: str, now: float, digest: str | None, changed: bool) -> None:
        """Count a fetch that gave the page (``digest`` None for a 304: unchanged)."""
        self._db.execute(
            """
            UPDATE urls SET visits = visits + 1, changes = changes + ?, first_visit = COALESCE(first_visit, ?),
                            digest = COALESCE(?, digest)
            WHERE url = ?
            """,
            (int(changed), now, digest, url),
        )

    def host_yield(self, host: str) -> tuple[int, int]:
        """``(fetched, relevant)``: the host's completed fetches and how many gave a relevant page."""
        row = self._db.execute("SELECT fetched, relevant FROM hosts WHERE host = ?", (host,)).fetchone()
        return (row[0], row[1]) if row else (0, 0)

    def retries(self, url: str) -> int:
        row = self._db.execute("SELECT retries FROM urls WHERE url = ?", (url,)).fetchone()
        return row[0] if row else 0

    def statuses(self, urls: Iterable[str]) -> dict[str, int | None]:
        """The last HTTP status of each known URL (None: not fetched yet); unknown URLs left out."""
        urls, known = list(urls), {}
        for start in range(0, len(urls), 500):
            chunk = urls[start:start + 500]
            known.update(self._db.execute(
                f"SELECT url, status FROM urls WHERE url IN ({', '.join('?' * len(chunk))})", chunk
            ).fetchall())
        return known

    def set_host_delay(self, host: str, delay: float | None) -> None:
        self._db.execute("INSERT OR IGNORE INTO hosts (host) VALUES (?)", (host,))
        self._db.execute("UPDATE hosts SET delay = ? WHERE host = ?", (delay, host))

    def next_due(self, now: float) -> float | None:
        """When the next marked URL (and its host) becomes free, or None when nothing is marked."""
        row = self._db.execute(
            """
            SELECT MIN(MAX(u.lock_until, h.lock_until)) FROM urls u JOIN hosts h ON h.host = u.host
            WHERE u.harvest = 1
            """
        ).fetchone()
        return None if row[0] is None else max(row[0], now)

    def robots(self, host: str, now: float) -> tuple[int | None, bytes | None] | None:
        """The cached robots.txt answer ``(status, body)`` for a host, or None when absent or expired."""
        row = self._db.execute(
            "SELECT status, body FROM robots WHERE host = ? AND expires > ?", (host, now)
        ).fetchone()
        return (row[0], row[1]) if row else None

    def store_robots(self, host: str, status: int | None, body: bytes | None, expires: float) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO robots (host, status, body, expires) VALUES (?, ?, ?, ?)",
            (host, status, body, expires),
        )

    def hosts(self, now: float, limit: int = 20) -> list[tuple[str, int, float]]:
        """Hosts with marked URLs, most first: ``(host, marked URLs, seconds until unlocked)``."""
        rows = self._db.execute(
            """
            SELECT h.host, COUNT(*), MAX(h.lock_until - :now, 0) FROM urls u JOIN hosts h ON h.host = u.host
            WHERE u.harvest = 1 GROUP BY h.host ORDER BY COUNT(*) DESC, h.host LIMIT :limit
            """,
            {"now": now, "limit": limit},
        )
        return [(host, marked, wait) for host, marked, wait in rows]

    def counts(self, now: float) -> dict[str, int]:
        """URLs by state, for the crawl summary and status commands."""
        row = self._db.execute(
            """
            SELECT COUNT(*),
                   SUM(harvest = 1 AND lock_until <= :now),
                   SUM(harvest = 1 AND lock_until > :now),
                   SUM(harvest = 0 AND status IS NOT NULL),
                   (SELECT COUNT(*) FROM hosts)
            FROM urls
            """,
            {"now": now},
        ).fetchone()
        return {
            "urls": row[0],
            "marked_ready": row[1] or 0,
            "marked_locked": row[2] or 0,
            "done": row[3] or 0,
            "hosts": row[4],
        }

    def set_paused(self, paused: bool) -> None:
        """Pause or resume every harvester of the job (``scrapy pause`` / ``resume``, the console)."""
        if paused:
            self._db.execute("INSERT OR REPLACE INTO control (name, value) VALUES ('paused', '1')")
        else:
            self._db.execute("DELETE FROM control WHERE name = 'paused'")

    def paused(self) -> bool:
        return self._db.execute("SELECT 1 FROM control WHERE name = 'paused'").fetchone() is not None
