"""The embedded frontier: one SQLite file, one harvester process, nothing to start.

Every method is one short transaction, so a harvester killed at any moment
leaves the file consistent: a marked URL stays marked until a fetch of it has
completed, and a URL leased to a dead harvester comes back when its lease ends.

A URL is kept short, as the Redis frontier keeps it: its host as the number of
the host's row, and the rest with ``http://<host>`` written ``:`` and
``https://<host>`` ``;``. Its number is its order of marking, so the index of
each host's best URLs holds no text. What fetches leave (status, validators,
the revisit history) is kept apart from a URL's first fetch on. A queued URL
of the virtual web costs 79 bytes, 163 before (``bench.frontier_size``).
Methods given only a URL find its host with ``host_of``: a URL is marked
under ``host_of(url)``. The view ``url_states`` shows every URL whole with
its state, for reading the file by hand.
"""

from __future__ import annotations

import bisect
import heapq
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from combine_scrapy.access.urls import host_of
from combine_scrapy.faults import connect, make_directory
from combine_scrapy.frontier import FrontierCounts, FrontierEntry, MarkResult
from combine_scrapy.frontier.strategy import YIELD_DECAY, CrawlStrategy, Head, Round, strategy_named
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

#: URLs of each host a round reads past the heads before reading more where they could matter
#: (``CrawlStrategy.round``): reading a URL is the cost here, not the statement.
FIRST_DEPTH = 4

# A strategy's queue (frontier.strategy) as the order of one host's URLs.
_QUEUES = {"fifo": "seq", "best": "priority DESC, seq"}

# A URL's row: its host's number and its tail (``?`` the host name, then the tail).
_URL = "host_id = (SELECT id FROM hosts WHERE host = ?) AND tail = ?"
_KNOWN = "SELECT 1 FROM urls WHERE host_id = ? AND tail = ?"

# A host's lock after a fetch ends at ?1, stretched to its Crawl-delay counted from ?2 (when given).
_HOST_LOCK = "CASE WHEN delay <> 0 AND ?2 IS NOT NULL THEN MAX(?1, ?2 + delay) ELSE ?1 END"

# The end of a fetch (``complete``), one statement a table: what it left, the URL's mark and lock, its host.
_FETCHED = f"""
    INSERT INTO fetches (seq, status, last_checked, retries, etag, last_modified, score)
    SELECT seq, ?, ?, ?, ?, ?, ? FROM urls WHERE {_URL}
    ON CONFLICT (seq) DO UPDATE SET
        status = excluded.status, last_checked = excluded.last_checked,
        retries = CASE WHEN excluded.retries THEN retries + 1 ELSE 0 END,
        etag = COALESCE(excluded.etag, etag), last_modified = COALESCE(excluded.last_modified, last_modified),
        score = COALESCE(excluded.score, score)
"""
_COMPLETED = f"UPDATE urls SET marked = ?, lock_until = ?, attempts = 0 WHERE {_URL}"
_HOST_FETCHED = f"""
    UPDATE hosts SET lock_until = {_HOST_LOCK}, leased_until = 0,
        fetched = fetched + 1, relevant = relevant * {YIELD_DECAY!r} + ?3
    WHERE host = ?4
"""

# Giving a leased URL back (``release``): the URL unlocked, its host locked as after a fetch.
_RELEASED = f"UPDATE urls SET lock_until = 0, attempts = MAX(attempts - 1, 0) WHERE {_URL}"
_HOST_RELEASED = f"UPDATE hosts SET lock_until = {_HOST_LOCK}, leased_until = 0 WHERE host = ?3"

# The columns of the layout before hosts were numbered (one row per URL, the URL whole in it and in its key)
# that files of yet earlier versions lack, read when such a file is rewritten in today's layout.
_OLD_COLUMNS = (
    ("urls", (("score", "REAL"), ("visits", "INTEGER NOT NULL DEFAULT 0"),
              ("changes", "INTEGER NOT NULL DEFAULT 0"), ("first_visit", "REAL"), ("digest", "TEXT"),
              ("distance", "INTEGER NOT NULL DEFAULT 0"))),
    ("hosts", (("fetched", "INTEGER NOT NULL DEFAULT 0"), ("relevant", "INTEGER NOT NULL DEFAULT 0"),
               ("leased_until", "REAL NOT NULL DEFAULT 0"))),
)

# An old row's URL as a tail: the same rule as ``_tail``, in SQL.
_OLD_TAIL = """
    CASE WHEN substr(o.url, 1, 7 + length(o.host)) = 'http://' || o.host THEN ':' || substr(o.url, 8 + length(o.host))
         WHEN substr(o.url, 1, 8 + length(o.host)) = 'https://' || o.host THEN ';' || substr(o.url, 9 + length(o.host))
         ELSE o.url END
"""


def _tail(host: str, url: str) -> str:
    """``url`` as its host's rows keep it: ``http://<host>`` written ``:``, ``https://<host>`` ``;``."""
    if url.startswith("http://") and url.startswith(host, 7):
        return ":" + url[7 + len(host):]
    if url.startswith("https://") and url.startswith(host, 8):
        return ";" + url[8 + len(host):]
    return url


def _whole(host: str, tail: str) -> str:
    """The URL a host's ``tail`` stands for."""
    mark = tail[:1]
    if mark == ":":
        return "http://" + host + tail[1:]
    if mark == ";":
        return "https://" + host + tail[1:]
    return tail


def _key(url: str) -> tuple[str, str]:
    """``(host, tail)``: where a URL given alone is kept."""
    host = host_of(url)
    return host, _tail(host, url)


# A URL's scheme and authority: ``host_of`` reads nothing past them, so URLs that begin alike share a host.
_ORIGIN = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*")


def _keys(urls: Iterable[str]) -> Iterator[tuple[str, str]]:
    """``_key`` of each URL, ``host_of`` asked once for the URLs of one scheme and authority."""
    hosts: dict[str, str] = {}
    for url in urls:
        origin = _ORIGIN.match(url)
        if origin is None:
            yield _key(url)
            continue
        host = hosts.get(origin[0])
        if host is None:
            host = hosts[origin[0]] = host_of(origin[0])
        yield host, _tail(host, url)


# Each host's head in a queue's order (``{order}``) and when a locked URL of it comes free, for ``{hosts}``.
_HEADS = """
    SELECT h.host, h.lock_until, h.leased_until, h.fetched, h.relevant,
           u.tail, u.priority, f.etag, f.last_modified, u.distance, u.seq,
           (SELECT MIN(lock_until) FROM urls
            WHERE marked = 1 AND lock_until > 0 AND host_id = h.id AND lock_until > :now)
    FROM hosts h LEFT JOIN urls u ON u.seq = (
        SELECT seq FROM urls WHERE marked = 1 AND host_id = h.id AND lock_until <= :now
        ORDER BY {order} LIMIT 1
    )
    LEFT JOIN fetches f ON f.seq = u.seq
    WHERE {hosts}
"""


@dataclass
class _CachedHost:
    """A host as the last read of it found it: its head (None: no due URL), its locks, its first due URLs."""

    head: Head | None
    leased_until: float
    unlocks: float | None                 # when its first locked marked URL comes free (its head may change)
    key: tuple | None = None              # the head's place in ``_HeadCache.order``
    queue: list[tuple[float, int]] | None = None  # ``_deeper``'s answer for it, read ``depth`` deep
    depth: int = 0


class _HeadCache:
    """The heads of the hosts as last read, so a round reads again only the hosts written since.

    Another connection's commit changes ``PRAGMA data_version`` and empties
    the cache; this connection's own writes name the hosts they touch
    (``changed``); a host whose locked URL comes free is read again then.
    """

    def __init__(self) -> None:
        self.strategy: CrawlStrategy | None = None  # whose queue and order the heads follow
        self.version: int | None = None
        self.read_at = -math.inf                    # the latest time it was read for
        self.hosts: dict[str, _CachedHost] = {}
        self.order: list[tuple] = []                # (round_key, host) of the heads, for a strategy with head_order
        self.unlocks: list[tuple[float, str]] = []  # heap of (unlocks, host)
        self.first_unlock: dict[str, float] = {}    # each host's earliest time in the heap
        self.changed: set[str] = set()
        self.everything = True                      # every host to be read again
        # The last round: (strategy, limit, hold), its time, when its heads may change with time, the round.
        self.last_round: tuple[tuple, float, float, Round] | None = None

    def drop(self, host: str) -> None:
        cached = self.hosts.pop(host, None)
        if cached is not None and cached.key is not None:
            del self.order[bisect.bisect_left(self.order, cached.key)]

    def put(self, row: tuple) -> None:
        """Keep a host as read by ``_HEADS``."""
        host, lock_until, leased_until, fetched, relevant, tail, priority, etag, last_modified, distance, seq, \
            unlocks = row
        self.drop(host)
        head = None if seq is None else Head(
            FrontierEntry(_whole(host, tail), host, priority, etag, last_modified, distance), seq, lock_until,
            fetched, relevant,
        )
        if head is None and unlocks is None:
            return
        cached = self.hosts[host] = _CachedHost(head, leased_until, unlocks)
        if head is not None and self.strategy is not None and self.strategy.head_order is not None:
            cached.key = (self.strategy.round_key(head), host)
            bisect.insort(self.order, cached.key)
        if unlocks is not None and unlocks < self.first_unlock.get(host, math.inf):
            self.first_unlock[host] = unlocks
            heapq.heappush(self.unlocks, (unlocks, host))

    def due_again(self, now: float) -> set[str]:
        """The hosts whose locked URL came free since they were read."""
        hosts = set()
        while self.unlocks and self.unlocks[0][0] <= now:
            unlocks, host = heapq.heappop(self.unlocks)
            if self.first_unlock.get(host) == unlocks:
                del self.first_unlock[host]
            hosts.add(host)
        return hosts

    def heads(self, now: float, limit: int | None, hold: float) -> tuple[list[Head], float]:
        """The heads of the hosts free at ``now`` or leased for at most ``hold`` more seconds; with a
        strategy's head_order, only its ``limit`` first. And the first time after ``now`` when a host
        looked at comes free, or its lease or place ends: until then the same heads take part."""
        until = now + hold
        changes = math.inf
        if limit is not None and self.strategy is not None and self.strategy.head_order is not None:
            hosts = (self.hosts[host] for _, host in self.order)
        else:
            limit, hosts = None, (cached for cached in self.hosts.values() if cached.head is not None)
        heads: list[Head] = []
        for cached in hosts:
            head = cached.head
            if head is None:
                continue
            lock_until, leased_until = head.host_lock_until, cached.leased_until
            for moment in (lock_until, leased_until, lock_until - hold):
                if now < moment < changes:
                    changes = moment
            if lock_until <= now or leased_until > now and lock_until <= until:
                heads.append(head)
                if len(heads) == limit:
                    break
        return heads, changes


class SqliteFrontier:
    """The frontier in one SQLite file."""

    def __init__(self, path: str | Path, *, max_attempts: int = 5):
        make_directory(Path(path).parent)
        self.path = str(path)
        self.max_attempts = max_attempts
        self._db = connect(self.path, isolation_level=None, timeout=30)  # a full disk or damaged file: a StorageFault
        use_write_ahead_log(self._db)
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._upgrade()
        self._name_the_mark()
        for statement in SCHEMA:
            self._db.execute(statement)
        # One cursor for the calls made for every URL: the connection's execute makes one per statement.
        self._statements = self._db.cursor()
        self._heads = _HeadCache()

    def _columns(self, table: str) -> set[str]:
        return {row[1] for row in self._db.execute(f"PRAGMA table_info({table})")}

    def _upgrade(self) -> None:
        """Rewrite a file of the layout before hosts were numbered in today's, in one transaction.

        Every URL keeps its state, what its fetches left and its order of
        marking; every host its locks and counts. The old tables' pages are
        left free in the file for the frontier to grow into.
        """
        if "url" not in self._columns("urls"):
            return
        db = self._db
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
        db = self._db
        with write_transaction(db):
            if "harvest" in self._columns("urls"):  # not renamed meanwhile by another process of the job
                db.execute("DROP VIEW IF EXISTS url_states")
                for index in ("urls_best", "urls_attempted", "urls_locked"):
                    db.execute(f"DROP INDEX IF EXISTS {index}")
                db.execute("ALTER TABLE urls RENAME COLUMN harvest TO marked")

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
        db = self._statements
        hosts: dict[str, list[int]] = {}  # host: [its number, its URLs before this call, URLs marked now]
        with write_transaction(db):
            for url, host, priority in entries:
                known = hosts.get(host)
                if known is None:
                    known = hosts[host] = self._host(host)
                host_id, stored, added = known
                tail = _tail(host, url)
                full = max_urls_per_host is not None and stored + added >= max_urls_per_host
                if full and not db.execute(_KNOWN, (host_id, tail)).fetchone():
                    refused += 1
                    continue
                if not full and db.execute(
                    "INSERT OR IGNORE INTO urls (host_id, tail, priority, distance) VALUES (?, ?, ?, ?)",
                    (host_id, tail, priority, distance),
                ).rowcount:
                    self._changed(host)
                    known[2] += 1
                    marked += 1
                    continue
                raised_rows = db.execute(
                    """
                    UPDATE urls SET priority = MAX(priority, :priority), distance = MIN(distance, :distance)
                    WHERE host_id = :host AND tail = :tail AND marked = 1
                          AND (priority < :priority OR distance > :distance)
                          AND NOT EXISTS (SELECT 1 FROM fetches f WHERE f.seq = urls.seq AND f.last_checked IS NOT NULL)
                    """,
                    {"host": host_id, "tail": tail, "priority": priority, "distance": distance},
                ).rowcount
                if raised_rows:
                    raised += raised_rows
                    self._changed(host)
            db.executemany(
                "UPDATE hosts SET urls = urls + ? WHERE id = ?",
                ((added, host_id) for host_id, _, added in hosts.values() if added),
            )
        return MarkResult(marked, refused, raised)

    def _host(self, host: str) -> list[int]:
        """``[number, URLs, 0]`` of a host, its row made when new (inside the caller's transaction)."""
        row = self._statements.execute("SELECT id, urls FROM hosts WHERE host = ?", (host,)).fetchone()
        if row is None:
            return [self._statements.execute("INSERT INTO hosts (host) VALUES (?)", (host,)).lastrowid, 0, 0]
        return [row[0], row[1], 0]

    def remark(self, url: str) -> bool:
        """Mark a known URL for crawling again, unlocked (recycle / re-harvest)."""
        key = _key(url)
        self._changed(key[0])
        cursor = self._db.execute(f"UPDATE urls SET marked = 1, lock_until = 0, attempts = 0 WHERE {_URL}", key)
        return cursor.rowcount > 0

    def ready(self, now: float, strategy: str = "BreadthFirstTime", limit: int | None = None, *,
              hold: float = 0.0) -> Round:
        """One round of the strategy (:mod:`combine_scrapy.frontier.strategy`) over the heads of the hosts.

        A host takes part when it has a due marked URL and is free, or leased
        (a fetch in flight) for at most ``hold`` seconds more; URLs handed out
        too often without completion are dropped first. The heads are read
        again only for the hosts written since the last round (``_HeadCache``).
        """
        crawl = strategy_named(strategy)
        self._read_heads(crawl, now)
        cache = self._heads
        asked = (crawl, limit, hold)
        if cache.last_round is not None:  # nothing read again since: the same round while its heads stay
            last_asked, last_now, changes, last = cache.last_round
            if last_asked == asked and last_now <= now < changes:
                return Round(last, last.held_until)
        heads, changes = cache.heads(now, limit, hold)
        round_ = crawl.round(heads, now, limit, lambda hosts, depth: self._deeper(now, hosts, depth),
                             first_depth=FIRST_DEPTH)
        cache.last_round = (asked, now, changes, round_)
        return Round(round_, round_.held_until)

    def _read_heads(self, crawl: CrawlStrategy, now: float) -> None:
        """Bring the cached heads up to date for a round of ``crawl`` at ``now``."""
        cache = self._heads
        version = self._db.execute("PRAGMA data_version").fetchone()[0]
        everything = (cache.everything or version != cache.version or crawl is not cache.strategy
                      or now < cache.read_at)
        hosts = cache.changed | cache.due_again(now)
        if (everything or hosts) and self._db.execute(
            "SELECT 1 FROM urls WHERE marked = 1 AND attempts > 0 AND attempts >= ? AND lock_until <= ? LIMIT 1",
            (self.max_attempts, now),
        ).fetchone():
            self._db.execute(
                "UPDATE urls SET marked = 0 WHERE marked = 1 AND attempts > 0 AND attempts >= ? AND lock_until <= ?",
                (self.max_attempts, now),
            )
            everything = True
        order = _QUEUES[crawl.queue]
        if everything:
            fresh = _HeadCache()
            fresh.strategy, fresh.everything = crawl, False
            self._heads = cache = fresh
            for row in self._db.execute(
                _HEADS.format(order=order, hosts="EXISTS (SELECT 1 FROM urls WHERE marked = 1 AND host_id = h.id)"),
                {"now": now},
            ):
                cache.put(row)
        elif hosts:
            cache.last_round = None
            statement = _HEADS.format(order=order, hosts="h.host = :host")
            for host in hosts:
                cache.drop(host)
                row = self._statements.execute(statement, {"now": now, "host": host}).fetchone()
                if row is not None:
                    cache.put(row)
        cache.changed.clear()
        cache.version = version
        cache.read_at = max(cache.read_at, now)

    def _changed(self, host: str) -> None:
        """Note a write of this connection to a host's URLs or locks: its head is read again."""
        self._heads.changed.add(host)

    def _deeper(self, now: float, hosts: list[str], depth: int) -> dict[str, list[tuple[float, int]]]:
        """``(priority, order of marking)`` of the first ``depth`` due URLs of each host, by priority.

        Called in a round, right after ``_read_heads``: a host's answer holds until it is read again.
        """
        db = self._statements
        queues = {}
        for host in hosts:
            cached = self._heads.hosts.get(host)
            if cached is not None and cached.queue is not None and (
                cached.depth >= depth or len(cached.queue) < cached.depth
            ):
                queues[host] = cached.queue[:depth]
                continue
            queue = db.execute(
                f"""
                SELECT priority, seq FROM urls
                WHERE marked = 1 AND host_id = (SELECT id FROM hosts WHERE host = ?) AND lock_until <= ?
                ORDER BY {_QUEUES["best"]} LIMIT ?
                """,
                (host, now, depth),
            ).fetchall()
            if cached is not None:
                cached.queue, cached.depth = queue, depth
            queues[host] = queue
        return queues

    def add_links(self, edges: Iterable[tuple[str, str]]) -> None:
        """Remember ``(source, target)`` edges of the crawled graph."""
        self._db.executemany("INSERT OR IGNORE INTO links (source, target) VALUES (?, ?)", edges)

    def link_graph(self) -> tuple[list[tuple[str, str]], dict[str, float]]:
        """The crawled graph's edges, and the topic score of every fetched page."""
        edges = self._db.execute("SELECT source, target FROM links").fetchall()
        scores = dict(self._db.execute("SELECT url, score FROM url_states WHERE score IS NOT NULL").fetchall())
        return edges, scores

    def set_priorities(self, priorities: dict[str, float]) -> None:
        """Overwrite the priority of marked URLs (a PageRank recomputation, a rescoring by the link model).

        Only the heads of the hosts named are read again, unless they are most of the frontier's hosts."""
        db = self._statements
        with write_transaction(db):
            numbers: dict[str, int | None] = {}
            rows = []
            for (host, tail), rank in zip(_keys(priorities), priorities.values()):
                if host not in numbers:
                    row = db.execute("SELECT id FROM hosts WHERE host = ?", (host,)).fetchone()
                    numbers[host] = None if row is None else row[0]
                if numbers[host] is not None:
                    rows.append((rank, numbers[host], tail))
            db.executemany(  # an unchanged priority is not written (nor its index entry)
                "UPDATE urls SET priority = ?1 WHERE host_id = ?2 AND tail = ?3 AND marked = 1 AND priority <> ?1",
                rows,
            )
        cache = self._heads
        if 2 * len(numbers) > len(cache.hosts):
            cache.everything = True
        else:
            cache.changed.update(host for host, number in numbers.items() if number is not None)

    def claim(self, entry: FrontierEntry, now: float, lease: float) -> bool:
        """Lease the URL and lock its host, unless another hand-out got there first."""
        self._changed(entry.host)
        db = self._statements
        with write_transaction(db):  # nothing is written when the lease is refused
            host = db.execute("SELECT id FROM hosts WHERE host = ? AND lock_until <= ?", (entry.host, now)).fetchone()
            leased = host is not None and db.execute(
                """
                UPDATE urls SET lock_until = ?, attempts = attempts + 1
                WHERE host_id = ? AND tail = ? AND marked = 1 AND lock_until <= ?
                """,
                (now + lease, host[0], _tail(entry.host, entry.url), now),
            ).rowcount > 0
            if leased:
                db.execute("UPDATE hosts SET lock_until = ?, leased_until = ? WHERE id = ?",
                           (now + lease, now + lease, host[0]))
        return leased

    def lock_host(self, host: str, until: float) -> None:
        self._changed(host)
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
        """Record the end of a fetch: locks set, mark cleared unless ``keep_marked``.

        The fetch counts for its host's yield, as a new relevant record when ``relevant``;
        the host's lock stretches to its robots.txt Crawl-delay when that is longer.
        """
        db = self._statements
        tail = _tail(host, url)
        self._changed(host)
        with write_transaction(db):
            db.execute(_FETCHED, (status, now, int(keep_marked), etag, last_modified, score, host, tail))
            db.execute(_COMPLETED, (int(keep_marked), url_lock_until, host, tail))
            db.execute(_HOST_FETCHED, (host_lock_until, now, int(bool(relevant)), host))

    def release(self, url: str, host: str, host_lock_until: float, now: float | None = None) -> None:
        """Give a leased URL back without counting the attempt (its fetch was put off).

        With ``now``, the host's robots.txt Crawl-delay counts from then, as after a fetch.
        """
        self._changed(host)
        db = self._statements
        with write_transaction(db):
            db.execute(_RELEASED, (host, _tail(host, url)))
            db.execute("INSERT OR IGNORE INTO hosts (host) VALUES (?)", (host,))
            db.execute(_HOST_RELEASED, (host_lock_until, now, host))

    def _fetches(self, columns: str, url: str) -> tuple | None:
        """``columns`` of what the fetches of a URL left; None before its first."""
        return self._db.execute(
            f"SELECT {columns} FROM urls u JOIN fetches f ON f.seq = u.seq "
            "WHERE u.host_id = (SELECT id FROM hosts WHERE host = ?) AND u.tail = ?",
            _key(url),
        ).fetchone()

    def change_history(self, url: str) -> tuple[int, int, float | None, str | None]:
        """``(visits, changes, first visit, last content digest)`` of a page, for its revisit interval."""
        row = self._fetches("f.visits, f.changes, f.first_visit, f.digest", url)
        return tuple(row) if row else (0, 0, None, None)

    def record_visit(self, url: str, now: float, digest: str | None, changed: bool) -> None:
        """Count a fetch that gave the page (``digest`` None for a 304: unchanged)."""
        self._db.execute(
            f"""
            INSERT INTO fetches (seq, visits, changes, first_visit, digest)
            SELECT seq, 1, ?, ?, ? FROM urls WHERE {_URL}
            ON CONFLICT (seq) DO UPDATE SET
                visits = visits + 1, changes = changes + excluded.changes,
                first_visit = COALESCE(first_visit, excluded.first_visit), digest = COALESCE(excluded.digest, digest)
            """,
            (int(changed), now, digest, *_key(url)),
        )

    def host_yield(self, host: str) -> tuple[int, float]:
        """``(fetched, relevant)``: the host's completed fetches and its new relevant records, decayed."""
        row = self._db.execute("SELECT fetched, relevant FROM hosts WHERE host = ?", (host,)).fetchone()
        return (row[0], float(row[1])) if row else (0, 0.0)

    def retries(self, url: str) -> int:
        row = self._fetches("f.retries", url)
        return row[0] if row else 0

    def statuses(self, urls: Iterable[str]) -> dict[str, int | None]:
        """The last HTTP status of each known URL (None: not fetched yet); unknown URLs left out."""
        wanted = {_key(url): url for url in urls}
        keys, known = list(wanted), {}
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            rows = self._db.execute(
                f"""
                WITH wanted (host, tail) AS (VALUES {', '.join(['(?, ?)'] * len(chunk))})
                SELECT w.host, w.tail, f.status FROM wanted w JOIN hosts h ON h.host = w.host
                JOIN urls u ON u.host_id = h.id AND u.tail = w.tail LEFT JOIN fetches f ON f.seq = u.seq
                """,
                [part for key in chunk for part in key],
            )
            known.update((wanted[(host, tail)], status) for host, tail, status in rows)
        return known

    def set_host_delay(self, host: str, delay: float | None) -> None:
        self._db.execute("INSERT OR IGNORE INTO hosts (host) VALUES (?)", (host,))
        self._db.execute("UPDATE hosts SET delay = ? WHERE host = ?", (delay, host))

    def next_due(self, now: float) -> float | None:
        """When the next marked URL (and its host) becomes free, or None when nothing is marked.

        While the crawl runs some free host nearly always has a due URL: that
        is looked for first, host by host, and stops at the first found.
        """
        if self._db.execute(
            """
            SELECT 1 FROM hosts h WHERE h.lock_until <= :now
            AND EXISTS (SELECT 1 FROM urls WHERE marked = 1 AND host_id = h.id AND lock_until <= :now)
            """,
            {"now": now},
        ).fetchone():
            return now
        row = self._db.execute(
            """
            SELECT MIN(MAX(u.lock_until, h.lock_until)) FROM urls u JOIN hosts h ON h.id = u.host_id
            WHERE u.marked = 1
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
            SELECT h.host, COUNT(*), MAX(h.lock_until - :now, 0) FROM urls u JOIN hosts h ON h.id = u.host_id
            WHERE u.marked = 1 GROUP BY h.id ORDER BY COUNT(*) DESC, h.host LIMIT :limit
            """,
            {"now": now, "limit": limit},
        )
        return [(host, marked, wait) for host, marked, wait in rows]

    def counts(self, now: float) -> FrontierCounts:
        """URLs by state, for the crawl summary and status commands."""
        row = self._db.execute(
            """
            SELECT COUNT(*),
                   SUM(marked = 1 AND lock_until <= :now),
                   SUM(marked = 1 AND lock_until > :now),
                   (SELECT COUNT(*) FROM fetches f JOIN urls u ON u.seq = f.seq
                    WHERE u.marked = 0 AND f.status IS NOT NULL),
                   (SELECT COUNT(*) FROM hosts)
            FROM urls
            """,
            {"now": now},
        ).fetchone()
        return FrontierCounts(
            urls=row[0], marked_ready=row[1] or 0, marked_locked=row[2] or 0, done=row[3] or 0, hosts=row[4],
        )

    def set_paused(self, paused: bool) -> None:
        """Pause or resume every harvester of the job (``scrapy pause`` / ``resume``, the console)."""
        if paused:
            self._db.execute("INSERT OR REPLACE INTO control (name, value) VALUES ('paused', '1')")
        else:
            self._db.execute("DELETE FROM control WHERE name = 'paused'")

    def paused(self) -> bool:
        return self._db.execute("SELECT 1 FROM control WHERE name = 'paused'").fetchone() is not None

    def seeds_marked(self) -> str | None:
        row = self._db.execute("SELECT value FROM control WHERE name = 'seeds'").fetchone()
        return row[0] if row else None

    def set_seeds_marked(self, fingerprint: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO control (name, value) VALUES ('seeds', ?)", (fingerprint,))
