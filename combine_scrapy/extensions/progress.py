"""What a person sees of a running crawl: a progress line in the log and on a terminal."""

from __future__ import annotations

import logging
import shutil
import sys
import time
from collections import deque
from dataclasses import dataclass
from typing import Self, TextIO

from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import AsyncioLoopingCall, create_looping_call
from twisted.internet.task import LoopingCall

from combine_scrapy.context import CrawlComponent
from combine_scrapy.frontier import FrontierCounts, FrontierOperations
from combine_scrapy.links.saturation import RECENT_FETCHES
from combine_scrapy.operations.harvestlog import format_rate, harvest_rate
from combine_scrapy.stats import PAGES_STAT

logger = logging.getLogger(__name__)


#: Seconds the frontier's numbers are reused between two looks (a big frontier takes a while to count).
FRONTIER_REFRESH = 10.0


@dataclass(frozen=True)
class Progress:
    """One look at a running crawl."""

    job: str
    pages: int
    per_minute: float
    relevant: int
    judged: int
    records: int
    frontier_urls: int
    due: int
    locked: int
    hosts_marked: int
    hosts_waiting: int
    next_host_free: float | None = None  # seconds until the first waiting host may be fetched again
    recent_new_rate: float = 0.0  # new relevant records per fetch over the last RECENT_FETCHES fetches

    @property
    def harvest_rate(self) -> str:
        return format_rate(harvest_rate(self.relevant, self.judged))

    def log_line(self) -> str:
        """Due URLs are fetched as soon as their host's turn comes; when every host waits, the line says how long."""
        every_host_waits = self.hosts_marked and self.hosts_waiting == self.hosts_marked
        return (
            f"progress: {self.pages} pages ({self.per_minute:.0f}/min), {self.relevant} relevant "
            f"(harvest rate {self.harvest_rate}), {self.records} records "
            f"({self.recent_new_rate:.1%} of the last {RECENT_FETCHES} fetches new); frontier {self.frontier_urls} URLs, "
            f"{self.due} due, {self.locked} locked until due again; "
            f"{self.hosts_waiting} of {self.hosts_marked} hosts waiting their turn"
            + (f" (the next in {self.next_host_free:.0f} s)" if every_host_waits and self.next_host_free is not None else "")
        )

    def terminal_line(self) -> str:
        return (
            f"{self.job}: {self.pages} pages, {self.per_minute:.0f}/min, harvest rate {self.harvest_rate}, "
            f"{self.records} records | frontier {self.frontier_urls} URLs, {self.due} due, "
            f"hosts waiting {self.hosts_waiting}/{self.hosts_marked}"
        )


class PageRate:
    """Pages per minute over the last ``window`` seconds, from (time, pages so far) samples."""

    def __init__(self, window: float = 60.0):
        self.window = window
        self._samples: deque[tuple[float, int]] = deque()

    def add(self, now: float, pages: int) -> float:
        self._samples.append((now, pages))
        while len(self._samples) > 2 and self._samples[1][0] <= now - self.window:
            self._samples.popleft()
        first_time, first_pages = self._samples[0]
        return (pages - first_pages) * 60 / (now - first_time) if now > first_time else 0.0


class TerminalLine:
    """One line at the bottom of a terminal, redrawn in place; log records clear it before they print."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.drawn = False

    def draw(self, text: str) -> None:
        width = shutil.get_terminal_size().columns - 1
        self.stream.write("\r\x1b[K" + text[:width])
        self.stream.flush()
        self.drawn = True

    def clear(self) -> None:
        if self.drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.drawn = False

    def filter(self, record: logging.LogRecord) -> bool:
        """As a logging filter: make room for the record."""
        self.clear()
        return True


class HarvestProgress(CrawlComponent):
    """Log one progress line every COMBINE_PROGRESS_INTERVAL seconds, and on a terminal keep one
    line updated every COMBINE_PROGRESS_TERMINAL_INTERVAL seconds.

    Pages per minute, harvest rate so far, records, the frontier's size and
    how many hosts wait for their lock: what a person watching a long crawl wants to know.
    """

    def __init__(self, crawler: Crawler, interval: float, terminal_interval: float, stream: TextIO) -> None:
        super().__init__(crawler)
        self.interval = interval
        self.terminal_interval = terminal_interval
        self.terminal = TerminalLine(stream) if terminal_interval and stream.isatty() else None
        self._last_pages = 0
        self._rate = PageRate()
        self._tasks: list[AsyncioLoopingCall | LoopingCall] = []
        # (when, counts, hosts marked, hosts waiting, when the next host is free)
        self._frontier_seen: tuple[float, FrontierCounts, int, int, float | None] | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        settings = crawler.settings
        interval = settings.getfloat("COMBINE_PROGRESS_INTERVAL")
        if not interval:
            raise NotConfigured
        extension = cls(crawler, interval, settings.getfloat("COMBINE_PROGRESS_TERMINAL_INTERVAL"), sys.stderr)
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def spider_opened(self, spider: Spider) -> None:
        super().spider_opened(spider)
        log_task = create_looping_call(self.log_progress)
        log_task.start(self.interval, now=False)
        self._tasks.append(log_task)
        if self.terminal:
            for handler in logging.getLogger().handlers:
                if getattr(handler, "stream", None) is self.terminal.stream:
                    handler.addFilter(self.terminal)
            terminal_task = create_looping_call(self.draw_progress)
            terminal_task.start(self.terminal_interval, now=False)
            self._tasks.append(terminal_task)

    def spider_closed(self, spider: Spider, reason: str) -> None:
        for task in self._tasks:
            if task.running:
                task.stop()
        if self.terminal:
            self.terminal.clear()
            for handler in logging.getLogger().handlers:
                handler.removeFilter(self.terminal)

    def snapshot(self, per_minute: float) -> Progress:
        context = self.context
        frontier: FrontierOperations = context.frontier
        stats = self.stats
        relevant = stats.get_value("topic/relevant", 0)
        now = time.time()
        if self._frontier_seen is None or now - self._frontier_seen[0] >= 0.9 * min(FRONTIER_REFRESH, self.interval):
            hosts = frontier.host_counts(now)
            next_free = None if hosts.next_free is None else now + hosts.next_free
            self._frontier_seen = (now, frontier.counts(now), hosts.marked, hosts.waiting, next_free)
        _, counts, hosts_marked, hosts_waiting, next_free = self._frontier_seen
        return Progress(
            job=context.job.name,
            pages=stats.get_value(PAGES_STAT, 0),
            per_minute=per_minute,
            relevant=relevant,
            judged=relevant + stats.get_value("topic/irrelevant", 0),
            records=stats.get_value("records/new", 0),
            recent_new_rate=stats.get_value("records/recent_new_rate", 0.0),
            frontier_urls=counts.urls,
            due=counts.marked_ready,
            locked=counts.marked_locked,
            hosts_marked=hosts_marked,
            hosts_waiting=hosts_waiting,
            next_host_free=None if next_free is None else max(next_free - now, 0.0),
        )

    def log_progress(self) -> None:
        pages = self.crawler.stats.get_value(PAGES_STAT, 0)
        progress = self.snapshot((pages - self._last_pages) * 60 / self.interval)
        self._last_pages = pages
        logger.info(progress.log_line())

    def draw_progress(self) -> None:
        if self.terminal is None:
            return
        per_minute = self._rate.add(time.monotonic(), self.crawler.stats.get_value(PAGES_STAT, 0))
        self.terminal.draw(self.snapshot(per_minute).terminal_line())
