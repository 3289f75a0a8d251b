"""The frontier: which URLs are marked for crawling, and when each URL and host may be fetched.

Combine's scheduler rules: a URL is
handed out only when it is marked, its own lock has expired and its host's lock
has expired; what happens after the fetch decides how long each stays locked.
The rules live here as pure functions; the stores only keep the times.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from combine_scrapy.frontier.strategy import CRAWL_STRATEGIES, Round

#: Seconds a handed-out URL and its host stay leased to one harvester. A
#: harvester that dies holds nothing longer than this (Combine: 60 s).
LEASE_SECONDS = 60.0


#: The priorities an operator may give seeds (scrapy seed --priority, the console's POST /api/seed): any
#: topic score or link relevance fits; NaN, infinities and 1e308 do not (a NaN one was never handed out).
MAX_SEED_PRIORITY = 1e9


def seed_priority(value: object) -> float:
    """A seed priority as given (a number, or text such as ``"0.5"``); ValueError says what is wrong with it."""
    try:
        if isinstance(value, bool):
            raise TypeError(value)
        priority = float(value)  # type: ignore[arg-type]  # whatever float() reads; anything else is a ValueError
    except (TypeError, ValueError):
        raise ValueError(f"priority {str(value)[:40]!r} is not a number") from None
    if not math.isfinite(priority):
        raise ValueError(f"priority {str(value)[:40]!r} is not a finite number")
    if abs(priority) > MAX_SEED_PRIORITY:
        raise ValueError(f"priority {str(value)[:40]!r} is out of range: give a number from {-MAX_SEED_PRIORITY:g}"
                         f" to {MAX_SEED_PRIORITY:g}")
    return priority


class Outcome(enum.Enum):
    SUCCESS = "success"
    REDIRECT = "redirect"
    NOT_MODIFIED = "not_modified"
    UNAVAILABLE = "unavailable"
    NOT_FOUND = "not_found"
    ROBOTS = "robots"


def valid_status(status: int) -> bool:
    """Whether a final answer's status is one HTTP has room for (200-599; 1xx are never final)."""
    return 200 <= status <= 599


def outcome_for_status(status: int | None) -> Outcome:
    """Map an HTTP status (``None``: no response at all) to Combine's outcomes.

    A status HTTP has no room for (``999``, ``-1``, a final ``150``) says
    nothing of the page: the server is broken, so the URL is unavailable for now.
    """
    if status is None or status in (408, 429) or status >= 500 or not valid_status(status):
        return Outcome.UNAVAILABLE
    if 200 <= status < 300:
        return Outcome.SUCCESS
    if status in (301, 302, 303, 307, 308):
        return Outcome.REDIRECT
    if status == 304:
        return Outcome.NOT_MODIFIED
    return Outcome.NOT_FOUND


class LockIntervalsOfJob(Protocol):
    """What the lock table reads of a job's lock intervals (:class:`combine_scrapy.job.LockIntervals`), in seconds:
    the job's variables check strategy names against this module's, so this module does not import the job."""

    @property
    def host(self) -> float: ...

    @property
    def success(self) -> float: ...

    @property
    def robot_rules(self) -> float: ...

    @property
    def not_found(self) -> float: ...

    @property
    def not_modified(self) -> float: ...

    @property
    def unavailable(self) -> float: ...


@dataclass(frozen=True)
class Locks:
    """How long a URL and its host stay locked after an outcome, in seconds."""

    url: float
    host: float


def locks_for(outcome: Outcome, intervals: LockIntervalsOfJob, retry_after: float | None = None) -> Locks:
    """Combine's lock table over a job's lock intervals, with two deliberate changes for UNAVAILABLE.

    Combine locked a host for 18,000 s after a 5xx; one bad page would stall
    a small crawl for five hours, so the host waits ten host intervals instead.
    A server that said when to come back (a 429 or 503 with Retry-After,
    ``retry_after`` seconds) gets the URL back then instead of after the
    day-long unavailable lock, and its host is held that long whatever became
    of the URL; neither sooner than WaitIntervalHost.
    """
    wait = intervals.host
    if retry_after is not None:
        held = max(retry_after, wait)
        if outcome is Outcome.UNAVAILABLE:
            return Locks(url=held, host=held)
        usual = locks_for(outcome, intervals)
        return Locks(url=usual.url, host=max(held, usual.host))
    url_lock = {
        Outcome.SUCCESS: intervals.success,
        Outcome.REDIRECT: intervals.success,
        Outcome.NOT_MODIFIED: intervals.not_modified,
        Outcome.UNAVAILABLE: intervals.unavailable,
        Outcome.NOT_FOUND: intervals.not_found,
        Outcome.ROBOTS: intervals.robot_rules,
    }[outcome]
    host_lock = wait * 10 if outcome is Outcome.UNAVAILABLE else wait
    return Locks(url=url_lock, host=host_lock)


#: Crawl strategies (CrawlStrategy in combine.cfg); each is one object in :mod:`combine_scrapy.frontier.strategy`.
STRATEGIES = tuple(CRAWL_STRATEGIES)


@dataclass(frozen=True)
class FrontierEntry:
    """A URL ready to be fetched, with what a conditional GET needs."""

    url: str
    host: str
    priority: float = 0.0
    etag: str | None = None
    last_modified: str | None = None
    distance: int = 0          # link hops since the last relevant page on the best known path (seeds: 0)


class MarkResult(NamedTuple):
    """What one ``mark`` did: new URLs, new URLs refused over the per-host bound, known URLs raised."""

    marked: int
    refused: int
    raised: int


@dataclass(frozen=True)
class Marking:
    """URLs to mark, as ``mark`` takes them: ``(url, host, priority)`` entries ``distance`` link hops from the
    last relevant page, at most ``max_urls_per_host`` a host; one value, so that ``complete`` takes a page's
    links with the end of its fetch."""

    entries: Sequence[tuple[str, str, float]]
    max_urls_per_host: int | None = None
    distance: int = 0


@dataclass(frozen=True)
class HostCounts:
    """The hosts with marked URLs, for the progress line: read every few seconds, so counted without a scan."""

    marked: int                # hosts with marked URLs (queued, leased or waiting to be retried)
    waiting: int               # of them, those whose host lock has not ended
    next_free: float | None    # seconds until the first of those unlocks (None: none waits)


@dataclass(frozen=True)
class FrontierCounts:
    """URLs by state, for the crawl summary, the status command and the console."""

    urls: int            # every URL the frontier knows
    marked_ready: int    # marked, its own lock expired
    marked_locked: int   # marked, locked (leased, waiting to be retried)
    done: int            # no longer marked, fetched with a response
    hosts: int           # every host the frontier knows

    @property
    def marked(self) -> int:
        """URLs still to fetch, ready or locked."""
        return self.marked_ready + self.marked_locked


class UrlQueue(Protocol):
    """Which URLs are marked and when each URL and host may be fetched.

    The host locks live here with the URLs: one atomic step (a Lua script, a
    transaction) claims a URL and locks its host, or completes both.
    """

    def mark(self, entries: Iterable[tuple[str, str, float]], *, max_urls_per_host: int | None = None,
             distance: int = 0) -> MarkResult:
        """Mark new ``(url, host, priority)`` at ``distance``; a known URL still marked and never fetched
        takes the higher priority and the lower distance (raised), atomically, without a scan."""

    def remark(self, url: str) -> bool:
        """Mark a known URL again, unlocked."""

    def ready(self, now: float, strategy: str = "BreadthFirstTime", limit: int | None = None, *,
              hold: float = 0.0) -> Round:
        """One round in the strategy's order (at most one URL per free host); a host leased to a harvester
        (a fetch in flight) for at most ``hold`` seconds more takes part too, locked, in the strategies that
        hold places (BestFirst)."""

    def claim(self, entry: FrontierEntry, now: float, lease: float) -> bool:
        """Atomically lease the URL and lock its host; False if either is taken."""

    def complete(self, url: str, host: str, *, now: float, url_lock_until: float, host_lock_until: float,
                 status: int | None, keep_marked: bool = False, etag: str | None = None,
                 last_modified: str | None = None, score: float | None = None, relevant: bool | None = None,
                 links: Marking | None = None) -> MarkResult:
        """End a fetch: set both locks, clear the mark unless ``keep_marked``, count retries; count the
        fetch for its host, and as relevant when ``relevant``.

        ``links``, the URLs the page leads to, are marked first (as ``mark`` marks them) in the same step: one
        transaction, one round trip. Returns what that mark did (all 0 without ``links``)."""

    def host_yield(self, host: str) -> tuple[int, float]:
        """``(fetched, relevant)``: the host's completed fetches and how many gave a new relevant record, the
        latter decayed by ``strategy.YIELD_DECAY`` a fetch."""

    def release(self, url: str, host: str, host_lock_until: float, now: float | None = None) -> None:
        """Give a leased URL back without counting the attempt."""

    def retries(self, url: str) -> int: ...

    def statuses(self, urls: Iterable[str]) -> dict[str, int | None]:
        """The last HTTP status of each of ``urls`` the frontier knows (None: not fetched yet); unknown URLs left out."""

    def lock_host(self, host: str, until: float) -> None: ...

    def set_host_delay(self, host: str, delay: float | None) -> None: ...

    def next_due(self, now: float) -> float | None:
        """When the next marked URL and its host are both free; None when nothing is marked."""


class RobotsCache(Protocol):
    """Each host's robots.txt answer, kept until it expires, for every harvester of the job."""

    def robots(self, host: str, now: float) -> tuple[int | None, bytes | None] | None: ...

    def store_robots(self, host: str, status: int | None, body: bytes | None, expires: float, *,
                     host_delay: float | None) -> None:
        """Keep a host's robots.txt answer until ``expires``; set the host's delay (as ``UrlQueue.set_host_delay``)
        in the same step, so reading a new host's robots.txt costs one write."""


class LinkGraph(Protocol):
    """The crawled link graph and the priorities ranked from it (PageRank strategies)."""

    def add_links(self, edges: Iterable[tuple[str, str]]) -> None:
        """Remember edges of the crawled link graph."""

    def link_graph(self) -> tuple[list[tuple[str, str]], dict[str, float]]:
        """The graph's edges and the topic score of each fetched page."""

    def set_priorities(self, priorities: dict[str, float]) -> None:
        """Overwrite the priorities of marked URLs."""


class RevisitHistory(Protocol):
    """How often each page was fetched and changed, for its revisit interval."""

    def change_history(self, url: str) -> tuple[int, int, float | None, str | None]:
        """(visits, changes, first visit, last content digest)."""

    def record_visit(self, url: str, now: float, digest: str | None, changed: bool) -> None:
        """Count a fetch that gave the page; ``digest`` None for a 304."""


class FrontierOperations(Protocol):
    """What operators read and set: counts, the busiest hosts, the pause switch."""

    def counts(self, now: float) -> FrontierCounts: ...

    def hosts(self, now: float, limit: int = 20) -> list[tuple[str, int, float]]:
        """Hosts with marked URLs, most first: (host, marked URLs, seconds until unlocked)."""

    def host_counts(self, now: float) -> HostCounts:
        """How many hosts have marked URLs and how many of them wait for their lock, without counting URLs."""

    def set_paused(self, paused: bool) -> None:
        """Pause (no URL handed out to any harvester) or resume the job; kept in the frontier, so all see it."""

    def paused(self) -> bool: ...

    def seeds_marked(self) -> str | None:
        """The fingerprint of the seed list last marked in full, so a crawl start marks an unchanged one once."""

    def set_seeds_marked(self, fingerprint: str) -> None: ...

    def close(self) -> None: ...


class Frontier(UrlQueue, RobotsCache, LinkGraph, RevisitHistory, FrontierOperations, Protocol):
    """What a frontier store (SQLite, Redis) keeps for the scheduler, the middlewares and the pipelines."""
