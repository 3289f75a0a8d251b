"""The frontier as a Scrapy scheduler: BreadthFirstTime and the other crawl strategies.

A Scrapy component, so it sits above the spider beside the other components (Scrapy's own is
``scrapy/core/scheduler.py``); what it hands out is the frontier's and the strategy's.

At each scheduling point one URL from each unlocked host forms a ready queue,
as in Combine. BreadthFirstTime and
BreadthFirst hand it out completely before the next scheduling; BestFirst and
the PageRank strategies take only the best few, so links found a moment ago
compete at once, and the PageRank strategies recompute the ranks as the graph
grows (each strategy is one object in :mod:`combine_scrapy.frontier.strategy`).
Each hand-out leases the URL and locks its host, so a host is never fetched
twice within WaitIntervalHost. A harvester holds at most CONCURRENT_REQUESTS
leases: the next URL is chosen once a page in flight has been processed, with
the links it gave already marked (with CONCURRENT_REQUESTS = 1 the crawl is
one page at a time, and the same web gives the same order of fetches).

Requests that Scrapy enqueues (the seeds, a URL rewritten by a middleware)
are canonicalized, validated and marked in the frontier: nothing
is fetched that the frontier has not handed out.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from typing import TYPE_CHECKING, Self, cast

from scrapy import Request, Spider
from scrapy.core.scheduler import BaseScheduler
from scrapy.crawler import Crawler
from scrapy.utils.asyncio import CallLaterResult, call_later

from combine_scrapy.faults import notes_fault_on_open, stops_crawl_on_fault
from combine_scrapy.frontier import FrontierEntry, FrontierOperations, UrlQueue
from combine_scrapy.frontier.strategy import strategy_named
from combine_scrapy.stats import PAGES_STAT

if TYPE_CHECKING:  # the spider names this scheduler in its settings, and the scheduler reads its crawl context
    from combine_scrapy.spiders.focused import FocusedSpider

logger = logging.getLogger(__name__)

#: Seconds between two looks at the job's pause flag (``scrapy pause``, the console): how soon a pause or resume bites.
PAUSE_POLL = 1.0


class FrontierScheduler(BaseScheduler):
    def __init__(self, crawler: Crawler, idle_horizon: float, best_batch: int, rerank_every: int,
                 shared_poll: float) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.idle_horizon = idle_horizon
        self.shared_poll = shared_poll
        self.best_batch = best_batch
        self.rerank_every = rerank_every
        self._handed_out_since_rerank = 0
        self.ready: deque[FrontierEntry] = deque()
        self._held_until: float | None = None  # when a host holding better URLs than the last round's frees
        self._lease_ends: dict[str, float] = {}  # URL -> end of the lease this harvester took
        self._wakeup: CallLaterResult | None = None   # the pending wake-up call, and when it fires
        self._wake_at: float | None = None
        self._paused = False      # the job's pause flag as last read, and when
        self._pause_read_at = float("-inf")

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        settings = crawler.settings
        return cls(
            crawler,
            idle_horizon=settings.getfloat("COMBINE_IDLE_HORIZON"),
            best_batch=settings.getint("CONCURRENT_REQUESTS"),
            rerank_every=settings.getint("COMBINE_RERANK_EVERY"),
            shared_poll=settings.getfloat("COMBINE_SHARED_POLL_INTERVAL"),
        )

    @notes_fault_on_open
    def open(self, spider: Spider) -> None:
        self.spider = cast("FocusedSpider", spider)   # the scheduler of the focused crawl (settings.py)
        self.context = self.spider.context
        self.context.policy.stats = self.stats  # the policy counts what it decides in the crawl's stats
        # What the scheduler reads of the frontier: its queue's rounds, its pause switch and counts.
        self.queue: UrlQueue = self.context.frontier
        self.operations: FrontierOperations = self.context.frontier
        self.strategy = strategy_named(self.context.job.crawling.strategy)
        counts = self.operations.counts(time.time())
        logger.info(
            "frontier of job %s: %d URLs on %d hosts, %d marked and due",
            self.context.job.name, counts.urls, counts.hosts, counts.marked_ready,
        )

    def close(self, reason: str) -> None:
        if self._wakeup is not None:
            self._wakeup.cancel()

    @stops_crawl_on_fault(False)
    def enqueue_request(self, request: Request) -> bool:
        marked, rejected = self.context.policy.mark([(request.url, request.priority)])
        self.stats.inc_value("frontier/marked", marked)
        for reason, count in rejected.items():
            self.stats.inc_value(f"urls/rejected/{reason}", count)
            logger.debug("rejected (%s): %s", reason, request.url)
        return bool(marked)

    @stops_crawl_on_fault(False)
    def has_pending_requests(self) -> bool:
        """True while a marked URL will come due within the idle horizon."""
        if self.ready:
            return True
        now = time.time()
        if self.paused(now):  # a paused crawl waits for resume (or stop) instead of ending
            return True
        due = self.queue.next_due(now)
        return due is not None and due <= now + self.idle_horizon

    @stops_crawl_on_fault(None)
    def next_request(self) -> Request | None:
        now = time.time()
        if self.paused(now):
            self._wake_in(now, PAUSE_POLL)
            return None
        in_flight = self._in_flight(now)
        if in_flight >= self.best_batch:
            return None  # the engine asks again when a page in flight has gone through the pipelines
        if self.spider.max_pages and self.stats.get_value(PAGES_STAT, 0) + in_flight >= self.spider.max_pages:
            return None  # -a max_pages=N: the pages in flight may be the last ones
        if not self.ready:
            self._schedule(now)
        while self.ready:
            entry = self.ready.popleft()
            if self.context.policy.claim(entry, now):
                self._lease_ends[entry.url] = now + self.context.policy.lease_seconds
                self._handed_out_since_rerank += 1
                self.stats.inc_value("scheduler/dequeued/frontier")
                return self.spider.request_for(entry)
        self._wake_when_due(now)
        return None

    def _in_flight(self, now: float) -> int:
        """URLs this harvester leased and has not completed or released, whose lease still runs."""
        leased = self.context.policy.leased
        for url in [url for url in self._lease_ends if url not in leased]:
            del self._lease_ends[url]
        return sum(1 for end in self._lease_ends.values() if end > now)

    def paused(self, now: float) -> bool:
        """The job's pause flag, read from the frontier at most every PAUSE_POLL seconds; changes are logged."""
        if now - self._pause_read_at >= PAUSE_POLL:
            self._pause_read_at = now
            paused = self.operations.paused()
            if paused != self._paused:
                logger.info("job %s %s", self.context.job.name, "paused: no new URL is taken" if paused else "resumed")
                self.stats.inc_value("scheduler/paused" if paused else "scheduler/resumed")
            self._paused = paused
        return self._paused

    def _schedule(self, now: float) -> None:
        """Build the next ready queue in the job's strategy's order."""
        strategy = self.strategy
        if strategy.ranked and self._handed_out_since_rerank >= self.rerank_every:
            ranked = self.context.policy.rerank()
            self._handed_out_since_rerank = 0
            self.stats.inc_value("scheduler/reranked")
            logger.debug("%s recomputed over %d pages", strategy.name, ranked)
        limit = None if strategy.full_round else self.best_batch
        hold = self.context.policy.lease_seconds if strategy.holds_places else 0.0
        round_ = self.queue.ready(now, strategy.name, limit, hold=hold)
        self._held_until = round_.held_until
        if round_.held_until is not None and not round_:
            self.stats.inc_value("scheduler/held")
        self.ready.extend(round_)

    def _wake_when_due(self, now: float) -> None:
        """Ask the engine for the next request when the next host unlocks.

        Scrapy polls an idle scheduler every five seconds; with a host interval
        shorter than that the crawl would stall, so wake it at the right time.
        On a shared frontier other harvesters mark and free URLs too: look
        again at least every COMBINE_SHARED_POLL_INTERVAL seconds. When better
        URLs wait for their hosts, wake when the first is free, not sooner to
        fetch worse ones meanwhile; nothing is due before it (its host's URL
        is marked), so the frontier need not be asked.
        """
        due = self._held_until if self._held_until is not None else self.queue.next_due(now)
        if due is None or due > now + self.idle_horizon:
            return
        if self.context.shared:
            due = min(due, now + self.shared_poll)
        self._wake_in(now, due - now)

    def _wake_in(self, now: float, delay: float) -> None:
        """Poll the scheduler again in ``delay`` seconds, unless a wake-up is due sooner."""
        due = now + delay
        if self._wake_at is not None and self._wake_at <= due:
            return
        if self._wakeup is not None:
            self._wakeup.cancel()
        self._wake_at = max(due, now + 0.01) + 0.001
        self._wakeup = call_later(self._wake_at - now, self._wake_engine)

    def _wake_engine(self) -> None:
        self._wake_at = None
        slot = getattr(self.crawler.engine, "_slot", None)  # the engine has no public "poll now"
        if slot is not None:
            slot.nextcall.schedule()
