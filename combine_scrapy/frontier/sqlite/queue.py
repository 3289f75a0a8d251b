"""The SQLite frontier's URL queue: marking, handing out rounds, leases and locks."""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

from combine_scrapy.frontier import FrontierEntry, Marking, MarkResult
from combine_scrapy.frontier.sqlite.connection import SqliteConnection, SqlitePart
from combine_scrapy.frontier.sqlite.heads import HEADS, HeadCache
from combine_scrapy.frontier.sqlite.tails import URL_ROW, key_of
from combine_scrapy.frontier.strategy import FIRST_DEPTH, YIELD_DECAY, CrawlStrategy, Round, strategy_named
from combine_scrapy.frontier.tails import tail_of
from combine_scrapy.sqlitetx import write_transaction

# A strategy's queue (frontier.strategy) as the order of one host's URLs.
_QUEUES = {"fifo": "seq", "best": "priority DESC, seq"}

# Whether a URL is known, by its host's number and its tail.
_KNOWN = "SELECT 1 FROM urls WHERE host_id = ? AND tail = ?"

# A host's lock after a fetch ends at ?1, stretched to its Crawl-delay counted from ?2 (when given).
_HOST_LOCK = "CASE WHEN delay <> 0 AND ?2 IS NOT NULL THEN MAX(?1, ?2 + delay) ELSE ?1 END"

# The end of a fetch (``complete``), one statement a table: what it left, the URL's mark and lock, its host.
_FETCHED = f"""
    INSERT INTO fetches (seq, status, last_checked, retries, etag, last_modified, score)
    SELECT seq, ?, ?, ?, ?, ?, ? FROM urls WHERE {URL_ROW}
    ON CONFLICT (seq) DO UPDATE SET
        status = excluded.status, last_checked = excluded.last_checked,
        retries = CASE WHEN excluded.retries THEN retries + 1 ELSE 0 END,
        etag = COALESCE(excluded.etag, etag), last_modified = COALESCE(excluded.last_modified, last_modified),
        score = COALESCE(excluded.score, score)
"""
_COMPLETED = f"UPDATE urls SET marked = ?, lock_until = ?, attempts = 0 WHERE {URL_ROW}"
_HOST_FETCHED = f"""
    UPDATE hosts SET lock_until = {_HOST_LOCK}, leased_until = 0,
        fetched = fetched + 1, relevant = relevant * {YIELD_DECAY!r} + ?3
    WHERE host = ?4
"""

# Giving a leased URL back (``release``): the URL unlocked, its host locked as after a fetch.
_RELEASED = f"UPDATE urls SET lock_until = 0, attempts = MAX(attempts - 1, 0) WHERE {URL_ROW}"
_HOST_RELEASED = f"UPDATE hosts SET lock_until = {_HOST_LOCK}, leased_until = 0 WHERE host = ?3"


class SqliteQueue(SqlitePart):
    """Which URLs are marked and when each URL and host may be fetched (``UrlQueue``), for one harvester process."""

    def __init__(self, connection: SqliteConnection, *, max_attempts: int = 5) -> None:
        super().__init__(connection)
        self.max_attempts = max_attempts

    def mark(
        self, entries: Iterable[tuple[str, str, float]], *, max_urls_per_host: int | None = None, distance: int = 0
    ) -> MarkResult:
        """Mark new URLs ``(url, host, priority)`` at ``distance`` for crawling.

        A known URL that is still marked and was never fetched is raised: it
        keeps the higher priority and the lower distance (one UPDATE of its
        row). Fetched URLs stay as they are. Refused URLs are new ones over
        the per-host bound.
        """
        with write_transaction(self.connection.statements):
            return self._mark(Marking(list(entries), max_urls_per_host, distance))

    def _mark(self, links: Marking) -> MarkResult:
        """``mark``, inside the caller's write transaction."""
        marked = refused = raised = 0
        db = self.connection.statements
        max_urls_per_host, distance = links.max_urls_per_host, links.distance
        hosts: dict[str, list[int]] = {}  # host: [its number, its URLs before this call, URLs marked now]
        for url, host, priority in links.entries:
            known = hosts.get(host)
            if known is None:
                known = hosts[host] = self._host(host)
            host_id, stored, added = known
            tail = tail_of(host, url)
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
        row = self.connection.statements.execute("SELECT id, urls FROM hosts WHERE host = ?", (host,)).fetchone()
        if row is None:
            inserted = self.connection.statements.execute("INSERT INTO hosts (host) VALUES (?)", (host,))
            return [cast(int, inserted.lastrowid), 0, 0]   # an INSERT's row has one
        return [row[0], row[1], 0]

    def remark(self, url: str) -> bool:
        """Mark a known URL for crawling again, unlocked (recycle / re-harvest)."""
        key = key_of(url)
        self._changed(key[0])
        cursor = self.connection.db.execute(f"UPDATE urls SET marked = 1, lock_until = 0, attempts = 0 WHERE {URL_ROW}", key)
        return cursor.rowcount > 0

    def ready(self, now: float, strategy: str = "BreadthFirstTime", limit: int | None = None, *,
              hold: float = 0.0) -> Round:
        """One round of the strategy (:mod:`combine_scrapy.frontier.strategy`) over the heads of the hosts.

        A host takes part when it has a due marked URL and is free, or leased
        (a fetch in flight) for at most ``hold`` seconds more; URLs handed out
        too often without completion are dropped first. The heads are read
        again only for the hosts written since the last round (``HeadCache``).
        """
        crawl = strategy_named(strategy)
        self._read_heads(crawl, now)
        cache = self.connection.heads
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
        cache = self.connection.heads
        version = self.connection.db.execute("PRAGMA data_version").fetchone()[0]
        everything = (cache.everything or version != cache.version or crawl is not cache.strategy
                      or now < cache.read_at)
        hosts = cache.changed | cache.due_again(now)
        if (everything or hosts) and self.connection.db.execute(
            "SELECT 1 FROM urls WHERE marked = 1 AND attempts > 0 AND attempts >= ? AND lock_until <= ? LIMIT 1",
            (self.max_attempts, now),
        ).fetchone():
            self.connection.db.execute(
                "UPDATE urls SET marked = 0 WHERE marked = 1 AND attempts > 0 AND attempts >= ? AND lock_until <= ?",
                (self.max_attempts, now),
            )
            everything = True
        order = _QUEUES[crawl.queue]
        if everything:
            fresh = HeadCache()
            fresh.strategy, fresh.everything = crawl, False
            self.connection.heads = cache = fresh
            for row in self.connection.db.execute(
                HEADS.format(order=order, hosts="EXISTS (SELECT 1 FROM urls WHERE marked = 1 AND host_id = h.id)"),
                {"now": now},
            ):
                cache.put(row)
        elif hosts:
            cache.last_round = None
            statement = HEADS.format(order=order, hosts="h.host = :host")
            for host in hosts:
                cache.drop(host)
                row = self.connection.statements.execute(statement, {"now": now, "host": host}).fetchone()
                if row is not None:
                    cache.put(row)
        cache.changed.clear()
        cache.version = version
        cache.read_at = max(cache.read_at, now)

    def _changed(self, host: str) -> None:
        """Note a write of this connection to a host's URLs or locks: its head is read again."""
        self.connection.heads.changed.add(host)

    def _deeper(self, now: float, hosts: list[str], depth: int) -> dict[str, list[tuple[float, int]]]:
        """``(priority, order of marking)`` of the first ``depth`` due URLs of each host, by priority.

        Called in a round, right after ``_read_heads``: a host's answer holds until it is read again.
        """
        db = self.connection.statements
        queues = {}
        for host in hosts:
            cached = self.connection.heads.hosts.get(host)
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

    def claim(self, entry: FrontierEntry, now: float, lease: float) -> bool:
        """Lease the URL and lock its host, unless another hand-out got there first."""
        self._changed(entry.host)
        db = self.connection.statements
        with write_transaction(db):  # nothing is written when the lease is refused
            host = db.execute("SELECT id FROM hosts WHERE host = ? AND lock_until <= ?", (entry.host, now)).fetchone()
            leased = host is not None and db.execute(
                """
                UPDATE urls SET lock_until = ?, attempts = attempts + 1
                WHERE host_id = ? AND tail = ? AND marked = 1 AND lock_until <= ?
                """,
                (now + lease, host[0], tail_of(entry.host, entry.url), now),
            ).rowcount > 0
            if leased:
                db.execute("UPDATE hosts SET lock_until = ?, leased_until = ? WHERE id = ?",
                           (now + lease, now + lease, host[0]))
        return leased

    def lock_host(self, host: str, until: float) -> None:
        self._changed(host)
        self.connection.db.execute("INSERT OR IGNORE INTO hosts (host) VALUES (?)", (host,))
        self.connection.db.execute("UPDATE hosts SET lock_until = ? WHERE host = ?", (until, host))

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
        links: Marking | None = None,
    ) -> MarkResult:
        """Record the end of a fetch: locks set, mark cleared unless ``keep_marked``; ``links`` marked first, in
        the same transaction.

        The fetch counts for its host's yield, as a new relevant record when ``relevant``;
        the host's lock stretches to its robots.txt Crawl-delay when that is longer.
        """
        db = self.connection.statements
        tail = tail_of(host, url)
        self._changed(host)
        with write_transaction(db):
            marks = self._mark(links) if links is not None else MarkResult(0, 0, 0)
            db.execute(_FETCHED, (status, now, int(keep_marked), etag, last_modified, score, host, tail))
            db.execute(_COMPLETED, (int(keep_marked), url_lock_until, host, tail))
            db.execute(_HOST_FETCHED, (host_lock_until, now, int(bool(relevant)), host))
        return marks

    def release(self, url: str, host: str, host_lock_until: float, now: float | None = None) -> None:
        """Give a leased URL back without counting the attempt (its fetch was put off).

        With ``now``, the host's robots.txt Crawl-delay counts from then, as after a fetch.
        """
        self._changed(host)
        db = self.connection.statements
        with write_transaction(db):
            db.execute(_RELEASED, (host, tail_of(host, url)))
            db.execute("INSERT OR IGNORE INTO hosts (host) VALUES (?)", (host,))
            db.execute(_HOST_RELEASED, (host_lock_until, now, host))

    def host_yield(self, host: str) -> tuple[int, float]:
        """``(fetched, relevant)``: the host's completed fetches and its new relevant records, decayed."""
        row = self.connection.db.execute("SELECT fetched, relevant FROM hosts WHERE host = ?", (host,)).fetchone()
        return (row[0], float(row[1])) if row else (0, 0.0)

    def retries(self, url: str) -> int:
        row = self.connection.fetches("f.retries", url)
        return row[0] if row else 0

    def statuses(self, urls: Iterable[str]) -> dict[str, int | None]:
        """The last HTTP status of each known URL (None: not fetched yet); unknown URLs left out."""
        wanted = {key_of(url): url for url in urls}
        keys, known = list(wanted), dict[str, int | None]()
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            rows = self.connection.db.execute(
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
        self.connection.set_host_delay(host, delay)

    def next_due(self, now: float) -> float | None:
        """When the next marked URL (and its host) becomes free, or None when nothing is marked.

        While the crawl runs some free host nearly always has a due URL: that
        is looked for first, host by host, and stops at the first found.
        """
        if self.connection.db.execute(
            """
            SELECT 1 FROM hosts h WHERE h.lock_until <= :now
            AND EXISTS (SELECT 1 FROM urls WHERE marked = 1 AND host_id = h.id AND lock_until <= :now)
            """,
            {"now": now},
        ).fetchone():
            return now
        row = self.connection.db.execute(
            """
            SELECT MIN(MAX(u.lock_until, h.lock_until)) FROM urls u JOIN hosts h ON h.id = u.host_id
            WHERE u.marked = 1
            """
        ).fetchone()
        return None if row[0] is None else max(row[0], now)
