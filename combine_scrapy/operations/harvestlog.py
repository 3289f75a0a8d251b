"""The harvest log: one row per fetch, what status and the harvest report read.

The frontier keeps only the last fetch of each URL and not whether the page
was relevant; the rate of a running crawl and the curve of relevant pages
against pages fetched (Figure 3.10 of the Combine study) need every fetch in
order. The log is a SQLite file beside the job's other files,
``data/<job>/harvest_log.sqlite``; harvesters on one machine share it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from combine_scrapy.faults import connect, make_directory
from combine_scrapy.sqlitetx import use_write_ahead_log, write_transaction

LOG_FILE = "harvest_log.sqlite"


def harvest_rate(relevant: int, judged: int) -> float | None:
    """The harvest rate, the one definition every summary, progress line, status and report uses:
    relevant pages per page the topic filter judged (None before the first).

    A judged page is a fetched page that was parsed and scored. Fetches that
    bring no page to judge (a 304 Not Modified, a redirect, a 404, a 5xx, a
    refusal) count as pages fetched but leave the harvest rate alone.
    """
    return relevant / judged if judged else None


def format_rate(rate: float | None) -> str:
    """A harvest rate as people read it: ``42%``, or ``n/a`` before any page was judged."""
    return "n/a" if rate is None else f"{rate:.0%}"

SCHEMA = """
CREATE TABLE IF NOT EXISTS fetches (
    time REAL NOT NULL,
    url TEXT NOT NULL,
    host TEXT NOT NULL,
    status INTEGER,            -- NULL: no response (refused by robots.txt or the URL rules, network error)
    outcome TEXT NOT NULL,     -- frontier.Outcome value
    relevant INTEGER,          -- 1 / 0 for a page the topic filter judged, NULL otherwise
    score REAL,
    class TEXT,                -- the best class of a relevant page
    harvester INTEGER,         -- process id
    new_record INTEGER         -- 1 / 0 for a stored relevant page: a new record / joined a stored one (a duplicate)
);
CREATE INDEX IF NOT EXISTS fetches_time ON fetches (time);
"""


@dataclass(frozen=True)
class FetchRow:
    time: float
    url: str
    host: str
    status: int | None
    outcome: str
    relevant: bool | None
    score: float | None
    best_class: str | None
    harvester: int
    new_record: bool | None = None  # a relevant page stored: True when it made a new record, False when a duplicate


@dataclass(frozen=True)
class LogTotals:
    """Counts over the whole log and over the recent window."""

    fetched: int            # fetches that got a response
    judged: int             # pages the topic filter judged
    relevant: int
    recent_fetched: int     # fetches with a response within the window
    window: float           # seconds
    first: float | None
    last: float | None

    @property
    def harvest_rate(self) -> float | None:
        return harvest_rate(self.relevant, self.judged)

    @property
    def recent_per_minute(self) -> float:
        return self.recent_fetched * 60 / self.window


@dataclass(frozen=True)
class HostRow:
    host: str
    fetched: int
    relevant: int
    judged: int
    new_records: int = 0   # relevant pages that made a new record
    duplicates: int = 0    # relevant pages that joined a stored record


def log_path(data_dir: str | Path, job: str) -> Path:
    return Path(data_dir) / job / LOG_FILE


class HarvestLog:
    """Append fetches, read back counts, curves and the busiest hosts and classes."""

    def __init__(self, path: str | Path):
        make_directory(Path(path).parent)
        self.path = Path(path)
        self._db = connect(str(path), isolation_level=None, timeout=30)  # harvesters share it
        use_write_ahead_log(self._db)
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)
        self._add_new_record_column()

    def _add_new_record_column(self) -> None:
        """Logs written before novelty was logged lack ``new_record``: add it (another harvester may at once)."""
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(fetches)")}
        if "new_record" not in columns:
            try:
                self._db.execute("ALTER TABLE fetches ADD COLUMN new_record INTEGER")
            except sqlite3.OperationalError as e:
                if "duplicate column" not in str(e):
                    raise

    def close(self) -> None:
        self._db.close()

    def append(self, rows: Iterable[FetchRow]) -> None:
        """Add fetches in one transaction."""
        with write_transaction(self._db):
            self._db.executemany(
                "INSERT INTO fetches (time, url, host, status, outcome, relevant, score, class, harvester, new_record)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (r.time, r.url, r.host, r.status, r.outcome, None if r.relevant is None else int(r.relevant),
                     r.score, r.best_class, r.harvester, None if r.new_record is None else int(r.new_record))
                    for r in rows
                ],
            )

    def totals(self, now: float, window: float) -> LogTotals:
        fetched, judged, relevant, recent, first, last = self._db.execute(
            """
            SELECT COUNT(status), COUNT(relevant), COALESCE(SUM(relevant), 0),
                   COUNT(CASE WHEN status IS NOT NULL AND time > :since THEN 1 END), MIN(time), MAX(time)
            FROM fetches
            """,
            {"since": now - window},
        ).fetchone()
        return LogTotals(fetched, judged, relevant, recent, window, first, last)

    def curve(self) -> list[tuple[float, int, int]]:
        """``(time, pages judged so far, relevant pages so far)`` after every page the topic filter judged:
        the harvest rate at each point is the one :func:`harvest_rate` gives."""
        points = []
        judged = relevant = 0
        for time, is_relevant in self._db.execute(
            "SELECT time, relevant FROM fetches WHERE relevant IS NOT NULL ORDER BY time"
        ):
            judged += 1
            relevant += bool(is_relevant)
            points.append((time, judged, relevant))
        return points

    def top_hosts(self, limit: int) -> list[HostRow]:
        rows = self._db.execute(
            """
            SELECT host, COUNT(*), COALESCE(SUM(relevant), 0), COUNT(relevant),
                   COUNT(CASE WHEN new_record = 1 THEN 1 END), COUNT(CASE WHEN new_record = 0 THEN 1 END)
            FROM fetches WHERE status IS NOT NULL
            GROUP BY host ORDER BY COUNT(*) DESC, host LIMIT ?
            """,
            (limit,),
        )
        return [HostRow(*row) for row in rows]

    def top_classes(self, limit: int) -> list[tuple[str, int]]:
        """Classes by the number of relevant pages they were the best class of."""
        rows = self._db.execute(
            """
            SELECT class, COUNT(*) FROM fetches WHERE relevant = 1 AND class IS NOT NULL
            GROUP BY class ORDER BY COUNT(*) DESC, class LIMIT ?
            """,
            (limit,),
        )
        return [(name, count) for name, count in rows]
