"""What the console shows and does, as plain data: one job's frontier, records, harvest log and harvesters.

Everything here is synchronous and runs in one worker thread of the console
(SQLite connections stay in the thread that opened them); the web layer only
turns it into JSON and HTML.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import redis
from scrapy.settings import BaseSettings

from combine_scrapy.access.urls import host_of
from combine_scrapy.context import CrawlContext
from combine_scrapy.frontier.redis import RedisFrontier
from combine_scrapy.job import Job
from combine_scrapy.operations.console.beacon import beacon_key
from combine_scrapy.operations.control import harvesters_dir, running_harvesters, stop_processes
from combine_scrapy.operations.harvestlog import log_path
from combine_scrapy.records.export.select import parse_date
from combine_scrapy.records.store.listing import RecordHead, RecordListing, on_host
from combine_scrapy.stores import data_directory

logger = logging.getLogger(__name__)

#: Points of the harvest curve sent to the page at most.
CURVE_POINTS = 400
#: Seconds over which "pages per minute" is measured.
RATE_WINDOW = 60.0
#: A harvester whose beacon is older than this many seconds counts as silent.
BEACON_STALE = 10.0
#: Full-text hits looked at, at most: a search counts and pages through these (the filters thin them out).
SEARCH_CANDIDATES = 500

#: A JSON object as the console's API answers it (and its pages read it): field names to JSON values.
JsonObject = dict[str, Any]


class BadRequest(ValueError):
    """A request the console cannot answer as asked; the message says why."""


@dataclass(frozen=True)
class SearchFilters:
    topic_class: str | None = None
    host: str | None = None
    since: float | None = None
    until: float | None = None

    @classmethod
    def parse(cls, topic_class: str = "", host: str = "", since: str = "", until: str = "") -> SearchFilters:
        try:
            return cls(
                topic_class.strip() or None,
                host.strip().lower() or None,
                parse_date(since) if since.strip() else None,
                parse_date(until, end_of_day=True) if until.strip() else None,
            )
        except ValueError as e:
            raise BadRequest(str(e)) from e

    @property
    def any(self) -> bool:
        return any(value is not None for value in (self.topic_class, self.host, self.since, self.until))


@dataclass
class SearchPage:
    """One page of a search: its hits, how many records were found in all, whether more may match than the
    SEARCH_CANDIDATES looked at, and the best hit's score (what each hit's relevance is a share of)."""

    hits: list[JsonObject]
    total: int
    more: bool
    best: float | None


class HarvestLogReader:
    """Read-only queries over data/<job>/harvest_log.sqlite (absent until the first harvester writes it)."""

    def __init__(self, path: Path):
        self.path = path
        self._db: sqlite3.Connection | None = None

    def _connection(self) -> sqlite3.Connection | None:
        if self._db is None and self.path.exists():
            self._db = sqlite3.connect(f"{self.path.as_uri()}?mode=ro", uri=True, timeout=10)
        return self._db

    def close(self) -> None:
        if self._db is not None:
            self._db.close()

    def query(self, text: str, parameters: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        db = self._connection()
        return db.execute(text, parameters).fetchall() if db is not None else []

    def totals(self, now: float) -> JsonObject:
        rows = self.query(
            """SELECT COUNT(status), COUNT(relevant), COALESCE(SUM(relevant), 0),
                      COUNT(CASE WHEN status IS NOT NULL AND time > ? THEN 1 END), MIN(time), MAX(time)
               FROM fetches""",
            (now - RATE_WINDOW,),
        )
        fetched, judged, relevant, recent, first, last = rows[0] if rows else (0, 0, 0, 0, None, None)
        return {
            "fetched": fetched, "judged": judged, "relevant": relevant,
            "harvest_rate": relevant / judged if judged else None,
            "per_minute": recent * 60 / RATE_WINDOW, "first": first, "last": last,
        }

    def curve(self, points: int = CURVE_POINTS) -> list[list[float]]:
        """``[time, fetched so far, relevant so far]`` at most ``points`` times, the last fetch always included."""
        counted = self.query("SELECT COUNT(*) FROM fetches WHERE status IS NOT NULL")
        total: int = counted[0][0] if counted else 0
        if not total:
            return []
        step = max(1, -(-total // points))
        return [list(row) for row in self.query(
            """SELECT time, n, r FROM (
                   SELECT time, ROW_NUMBER() OVER (ORDER BY time, rowid) AS n,
                          SUM(COALESCE(relevant, 0)) OVER (ORDER BY time, rowid ROWS UNBOUNDED PRECEDING) AS r
                   FROM fetches WHERE status IS NOT NULL)
               WHERE n % ? = 0 OR n = ? OR n = 1 ORDER BY n""",
            (step, total),
        )]

    def recent_relevant(self, limit: int = 20) -> list[JsonObject]:
        return [
            {"time": when, "url": url, "score": score, "class": best}
            for when, url, score, best in self.query(
                "SELECT time, url, score, class FROM fetches WHERE relevant = 1 ORDER BY time DESC LIMIT ?", (limit,)
            )
        ]

    def errors(self, limit: int = 20) -> list[JsonObject]:
        """Fetches that did not give a page, by outcome and HTTP status."""
        return [
            {"kind": outcome.replace("_", " ") + (f" ({status})" if status is not None else " (no response)"),
             "outcome": outcome, "status": status, "count": count}
            for outcome, status, count in self.query(
                """SELECT outcome, status, COUNT(*) FROM fetches
                   WHERE outcome NOT IN ('success', 'redirect', 'not_modified')
                   GROUP BY outcome, status ORDER BY COUNT(*) DESC, outcome LIMIT ?""",
                (limit,),
            )
        ]

    def hosts(self, limit: int) -> dict[str, tuple[int, int]]:
        """Host -> (pages fetched, relevant), busiest first."""
        return {host: (fetched, relevant) for host, fetched, relevant in self.query(
            """SELECT host, COUNT(*), COALESCE(SUM(relevant), 0) FROM fetches WHERE status IS NOT NULL
               GROUP BY host ORDER BY COUNT(*) DESC, host LIMIT ?""",
            (limit,),
        )}

    def last_fetches(self, since: float) -> dict[int, tuple[float, str]]:
        """Harvester pid -> (time, URL) of its last logged fetch after ``since``."""
        return {pid: (when, url) for pid, when, url in self.query(
            "SELECT harvester, MAX(time), url FROM fetches WHERE time > ? GROUP BY harvester", (since,)
        )}


class ConsoleData:
    """A job as the console sees it: its frontier and records (as its harvesters open them) and its harvest log."""

    def __init__(self, job: Job, context: CrawlContext, data_dir: Path):
        self.job = job
        self.context = context
        self.data_dir = data_dir
        self.index: RecordListing = context.store.listing
        self.log = HarvestLogReader(log_path(data_dir, job.name))

    @classmethod
    def open(cls, job: Job, settings: BaseSettings) -> ConsoleData:
        """The job's backends where the settings put them; a Redis or MySQL outage is waited out 5 s, not a
        harvester's 10 min."""
        context = CrawlContext.from_settings(settings, job, outage_patience=5)
        return cls(job, context, data_directory(settings))

    def close(self) -> None:
        self.log.close()
        self.context.close()

    # -- the live page --------------------------------------------------------------

    def status(self, now: float | None = None) -> JsonObject:
        now = time.time() if now is None else now
        return {
            "job": self.job.name,
            "time": now,
            "paused": self.context.frontier.paused(),
            "frontier": asdict(self.context.frontier.counts(now)),
            "records": self.context.store.count(),
            "records_location": self.context.store.location,
            **self.log.totals(now),
            "curve": self.log.curve(),
            "recent_relevant": self._with_record_keys(self.log.recent_relevant()),
            "errors": self.log.errors(),
            "harvesters": self.harvesters(now),
        }

    def _with_record_keys(self, pages: list[JsonObject]) -> list[JsonObject]:
        for page in pages:
            page["record"] = self.context.store.key_for_url(page["url"])
        return pages

    def hosts(self, limit: int = 50, now: float | None = None) -> list[JsonObject]:
        """Hosts with marked URLs and hosts fetched most: marked URLs, lock, pages fetched and relevant."""
        now = time.time() if now is None else now
        fetched = self.log.hosts(limit)
        rows: dict[str, JsonObject] = {}
        for host, marked, wait in self.context.frontier.hosts(now, limit=limit):
            rows[host] = {"host": host, "marked": marked, "locked_for": round(wait, 1), "fetched": 0, "relevant": 0}
        for host, (pages, relevant) in fetched.items():
            row = rows.setdefault(host, {"host": host, "marked": 0, "locked_for": 0.0})
            row.update(fetched=pages, relevant=relevant)
        return sorted(rows.values(), key=lambda row: (-row["marked"], -row["fetched"], row["host"]))[:limit]

    def harvesters(self, now: float) -> list[JsonObject]:
        """Running harvesters: this machine's pid files and beacons, and on Redis every machine's beacons."""
        directory = harvesters_dir(self.data_dir, self.job.name)
        found: dict[tuple[str, int], JsonObject] = {}
        alive = set(running_harvesters(directory))
        for path in sorted(directory.glob("*.json")) if directory.is_dir() else []:
            try:
                state = json.loads(path.read_text())
                pid = int(state["pid"])
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if pid not in alive:
                path.unlink(missing_ok=True)  # left by a harvester that was killed
                continue
            found[(state.get("machine", ""), pid)] = state
        frontier = self.context.frontier
        if isinstance(frontier, RedisFrontier):  # a shared frontier: every machine's harvesters write their beacons there
            try:
                for key in frontier.server.scan_iter(match=beacon_key(frontier.prefix, "*", "*"), count=1000):
                    raw = frontier.server.get(key)
                    if raw:
                        state = json.loads(raw)
                        found[(state.get("machine", ""), int(state["pid"]))] = state
            except (redis.exceptions.RedisError, ValueError, KeyError) as e:
                logger.warning("cannot read the harvesters' beacons from Redis: %s", e)
        for pid in alive:  # a harvester that has not written its first beacon yet
            if not any(found_pid == pid for _, found_pid in found):
                found[("", pid)] = {"pid": pid, "machine": "", "fetching": [], "updated": None}
        last = self.log.last_fetches(now - 600)
        harvesters = []
        for (_, pid), state in sorted(found.items(), key=lambda item: (item[0][0], item[0][1])):
            updated = state.get("updated")
            state["silent"] = updated is None or now - updated > BEACON_STALE
            state["last_fetch"] = dict(zip(("time", "url"), last[pid])) if pid in last else None
            harvesters.append(state)
        return harvesters

    # -- records --------------------------------------------------------------------

    def search(self, query: str, filters: SearchFilters, limit: int = 20, offset: int = 0) -> SearchPage:
        """One page of the records found: full-text hits (best first), or with an empty query the newest records,
        that pass the filters; ``offset`` records of the result are skipped."""
        store = self.context.store
        if not query.strip():
            if not filters.any:
                raise BadRequest("give words to search for, or a filter (class, host, dates)")
            heads = self.index.heads(since=filters.since, until=filters.until, topic_class=filters.topic_class,
                                     host=filters.host, limit=offset + limit, newest_first=True)[offset:]
            results = []
            for head in heads:
                record = store.get(head.key)
                if record is not None:
                    results.append(self._hit(head.key, record.title, store.urls(head.key), None,
                                             record.text[:200], head.classes, head.changed))
            total = self.index.count(since=filters.since, until=filters.until, topic_class=filters.topic_class,
                                     host=filters.host)
            return SearchPage(results, total, False, None)
        try:
            hits = store.search(query, limit=SEARCH_CANDIDATES)
        except ValueError as e:
            raise BadRequest(str(e)) from e
        best = hits[0].score if hits else None
        if filters.any:
            found = []
            for hit in hits:
                listed = self.index.head(hit.key)
                if listed is not None and self._passes(listed, store.urls(hit.key), filters):
                    found.append(hit)
            hits = found
        results = []
        for hit in hits[offset:offset + limit]:
            listed = self.index.head(hit.key)
            if listed is not None:
                results.append(self._hit(hit.key, hit.title, store.urls(hit.key), hit.score, hit.snippet,
                                         listed.classes, listed.changed))
        return SearchPage(results, len(hits), len(hits) >= SEARCH_CANDIDATES, best)

    @staticmethod
    def _passes(head: RecordHead, urls: list[str], filters: SearchFilters) -> bool:
        if filters.topic_class and not any(
            name == filters.topic_class or name.startswith(filters.topic_class + ".") for name in head.classes
        ):
            return False
        if filters.host and not any(on_host(host_of(url), filters.host) for url in urls):
            return False
        if filters.since is not None and head.changed < filters.since:
            return False
        return filters.until is None or head.changed < filters.until

    @staticmethod
    def _hit(key: str, title: str, urls: list[str], score: float | None, snippet: str, classes: tuple[str, ...],
             changed: float) -> JsonObject:
        return {"key": key, "title": title, "url": urls[0] if urls else "", "urls": urls, "score": score,
                "snippet": snippet, "classes": list(classes), "changed": changed}

    def record(self, key: str) -> JsonObject | None:
        """Everything the record page shows: title, URLs, scores per class, language, links out and in, text."""
        store = self.context.store
        record = store.get(key)
        head = self.index.head(key)
        if record is None or head is None:
            return None
        urls = store.urls(key)
        inlinks: list[JsonObject] = []
        seen: set[tuple[str, str]] = set()
        for url in urls:
            for source_key, source_url, anchor, kind in store.links_to(url):
                if (source_key, url) not in seen and source_key != key:
                    seen.add((source_key, url))
                    inlinks.append({"record": source_key, "url": source_url, "to": url, "anchor": anchor, "kind": kind})
        return {
            "key": key, "id": head.id, "title": record.title, "urls": urls, "mime_type": record.mime_type,
            "language": record.language, "country": record.country, "checked": record.checked, "changed": record.changed,
            "modified": record.modified, "score": record.score, "normalized": record.normalized,
            "algorithm": record.algorithm,
            "classes": [asdict(topic) for topic in record.classes],
            "terms": record.terms, "headings": record.headings, "meta": record.meta,
            "links_out": [asdict(link) for link in record.links],
            "links_in": inlinks,
            "text": record.text,
        }

    def records(self, after_id: int = 0, limit: int = 50) -> list[JsonObject]:
        """Records newest first, ``limit`` at a time (``after_id``: the last id of the previous page)."""
        heads = self.index.heads(after_id=after_id, limit=limit, newest_first=True)
        return [{"id": head.id, "key": head.key, "changed": head.changed, "classes": list(head.classes)} for head in heads]

    def classes(self) -> list[tuple[str, int]]:
        return self.index.classes()

    # -- actions --------------------------------------------------------------------

    def seed(self, urls: list[str], priority: float = 0.0) -> JsonObject:
        """Mark URLs through the job's URL rules, as ``scrapy seed`` does."""
        marked, rejected = self.context.policy.mark(((url, priority) for url in urls), seeds=True)
        over_bound = rejected.pop("host_full", 0)
        refused = sum(rejected.values())
        accepted = len(urls) - refused
        return {"accepted": accepted, "new": marked, "known": accepted - marked - over_bound,
                "over_bound": over_bound, "refused": dict(rejected)}

    def set_paused(self, paused: bool) -> JsonObject:
        self.context.frontier.set_paused(paused)
        return {"paused": self.context.frontier.paused()}

    def stop(self) -> JsonObject:
        """SIGTERM to this machine's harvesters of the job (Scrapy's graceful shutdown), without waiting."""
        pids = running_harvesters(harvesters_dir(self.data_dir, self.job.name))
        stop_processes(pids, timeout=0)
        return {"stopping": pids}
