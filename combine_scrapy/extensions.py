"""Scrapy extensions: what a person sees of a crawl, and what the job commands find of it."""

from __future__ import annotations

import logging
import os
import shutil
import sys
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from scrapy import signals
from scrapy.exceptions import CloseSpider, NotConfigured
from scrapy.utils.asyncio import create_looping_call

from combine_scrapy.context import CrawlComponent
from combine_scrapy.faults import FAULT_REASONS, CrawlFault, stop_crawl
from combine_scrapy.frontier import FrontierCounts
from combine_scrapy.links.saturation import RECENT_FETCHES, SATURATED
from combine_scrapy.operations.control import harvesters_dir, write_pid_file
from combine_scrapy.operations.harvestlog import FetchRow, HarvestLog, format_rate, harvest_rate, log_path
from combine_scrapy.stores import data_directory

logger = logging.getLogger(__name__)

#: Hosts with marked URLs looked at for the "hosts waiting" count.
HOSTS_SCAN = 100_000
#: Seconds the frontier's numbers are reused between two looks (a big frontier takes a while to count).
FRONTIER_REFRESH = 10.0
#: The crawl statistic of pages fetched: fetches of frontier URLs that got an HTTP response, whatever its status
#: (a 304 too; robots.txt requests never). The harvest log counts the same fetches.
PAGES_STAT = "fetch/pages"


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

    def __init__(self, stream):
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

    def __init__(self, crawler, interval: float, terminal_interval: float, stream):
        super().__init__(crawler)
        self.interval = interval
        self.terminal_interval = terminal_interval
        self.terminal = TerminalLine(stream) if terminal_interval and stream.isatty() else None
        self._last_pages = 0
        self._rate = PageRate()
        self._tasks = []
        # (when, counts, hosts marked, hosts waiting, when the next host is free)
        self._frontier_seen: tuple[float, FrontierCounts, int, int, float | None] | None = None

    @classmethod
    def from_crawler(cls, crawler):
        settings = crawler.settings
        interval = settings.getfloat("COMBINE_PROGRESS_INTERVAL")
        if not interval:
            raise NotConfigured
        extension = cls(crawler, interval, settings.getfloat("COMBINE_PROGRESS_TERMINAL_INTERVAL"), sys.stderr)
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def spider_opened(self, spider):
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

    def spider_closed(self, spider, reason):
        for task in self._tasks:
            if task.running:
                task.stop()
        if self.terminal:
            self.terminal.clear()
            for handler in logging.getLogger().handlers:
                handler.removeFilter(self.terminal)

    def snapshot(self, per_minute: float) -> Progress:
        context = self.context
        stats = self.stats
        relevant = stats.get_value("topic/relevant", 0)
        now = time.time()
        if self._frontier_seen is None or now - self._frontier_seen[0] >= 0.9 * min(FRONTIER_REFRESH, self.interval):
            hosts = context.frontier.hosts(now, limit=HOSTS_SCAN)
            waits = [wait for _, _, wait in hosts if wait > 0]
            next_free = now + min(waits) if waits else None
            self._frontier_seen = (now, context.frontier.counts(now), len(hosts), len(waits), next_free)
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

    def log_progress(self):
        pages = self.crawler.stats.get_value(PAGES_STAT, 0)
        progress = self.snapshot((pages - self._last_pages) * 60 / self.interval)
        self._last_pages = pages
        logger.info(progress.log_line())

    def draw_progress(self):
        per_minute = self._rate.add(time.monotonic(), self.crawler.stats.get_value(PAGES_STAT, 0))
        self.terminal.draw(self.snapshot(per_minute).terminal_line())


class HarvesterPidFile:
    """Write ``data/<job>/harvesters/<pid>.pid`` while the spider runs, so ``scrapy stop JOB`` finds it."""

    def __init__(self, data_dir: str):
        self.data_dir = data_dir
        self.path: Path | None = None

    @classmethod
    def from_crawler(cls, crawler):
        extension = cls(data_directory(crawler.settings))
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def spider_opened(self, spider):
        self.path = write_pid_file(harvesters_dir(self.data_dir, spider.job_name), os.getpid())

    def spider_closed(self, spider, reason):
        if self.path is not None:
            self.path.unlink(missing_ok=True)


class HarvestLogWriter:
    """Append every fetch to the job's harvest log (data/<job>/harvest_log.sqlite): an item pipeline run
    just before FrontierPipeline completes the URL.

    Each row is its own transaction, written before the frontier counts the
    URL done: a harvester killed at any moment loses from the log only fetches
    the frontier still holds, which are fetched (and logged) again, so the
    counts ``scrapy status`` shows match what the web servers saw. (Rows held
    back in memory, as before, were lost by every kill.)
    """

    def __init__(self, crawler, data_dir: str):
        self.crawler = crawler
        self.data_dir = data_dir
        self.log: HarvestLog | None = None

    @classmethod
    def from_crawler(cls, crawler):
        settings = crawler.settings
        if not settings.getbool("COMBINE_HARVEST_LOG"):
            raise NotConfigured
        extension = cls(crawler, data_directory(settings))
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def spider_opened(self, spider):
        try:
            self.log = HarvestLog(log_path(self.data_dir, spider.job_name))
        except CrawlFault as fault:
            stop_crawl(self.crawler, fault)

    def process_item(self, item):
        if self.log is not None and not item.postponed and item.outcome is not None:
            self.log.append([self._row(item)])
        return item

    @staticmethod
    def _row(item) -> FetchRow:
        classification = item.classification
        best = max(classification.classes, key=lambda c: c.absolute, default=None) if classification else None
        return FetchRow(
            time=item.fetched_at,
            url=item.url,
            host=item.host,
            status=item.status,
            outcome=item.outcome.value,
            relevant=classification.relevant if classification else None,
            score=classification.score if classification else None,
            best_class=best.name if best and classification.relevant else None,
            harvester=os.getpid(),
            new_record=item.novel,
        )

    def spider_closed(self, spider, reason):
        if self.log is not None:
            self.log.close()


class CrawlFaults(CrawlComponent):
    """Stop the crawl on a CrawlFault in an item pipeline (a full disk under the records, a vanished frontier):
    one log line saying what failed and what to do, the spider closed with the fault's reason, exit status 1."""

    @classmethod
    def from_crawler(cls, crawler):
        extension = super().from_crawler(crawler)
        crawler.signals.connect(extension.item_error, signal=signals.item_error)
        return extension

    def spider_opened(self, spider):
        """Close the spider at once on a fault met while it opened; warn when the frontier is empty but records
        are stored (a lost frontier would start the crawl afresh)."""
        super().spider_opened(spider)
        reason = self.stats.get_value("fault/reason")
        if reason:
            raise CloseSpider(reason)
        context = self.context
        try:
            if context.frontier.counts(time.time()).urls:
                return
            records = context.store.count()
        except CrawlFault:  # the scheduler stops the crawl on it
            return
        if records:
            logger.warning(
                "the frontier of job %s is empty but %d records are stored: if it was lost (Redis restarted "
                "without persistence, frontier.sqlite deleted), stop and run 'scrapy sanity %s' to rebuild it; "
                "crawling from the seeds again", context.job.name, records, context.job.name,
            )

    def item_error(self, item, response, spider, failure):
        if failure.check(CrawlFault):
            stop_crawl(self.crawler, failure.value)


def summary_head(job: str, stats: dict, reason: str) -> list[str]:
    """The first lines of a crawl's summary: how it finished, what it fetched."""
    relevant = stats.get("topic/relevant", 0)
    rate = format_rate(harvest_rate(relevant, relevant + stats.get("topic/irrelevant", 0)))
    return [
        f"== combine-scrapy: job {job} finished ({reason}) ==",
        f"pages fetched: {stats.get(PAGES_STAT, 0)}   relevant: {relevant}   harvest rate: {rate}",
    ]


def fault_summary(job: str, stats: dict, reason: str, why: str | None) -> str:
    """The summary of a crawl stopped before it was done (a fault, or a signal before the crawl started): only
    what this process counted, and why it stopped (its backends may not answer)."""
    return "\n".join([*summary_head(job, stats, reason), f"stopped: {why}"])


class HarvestSummary(CrawlComponent):
    """Print what the crawl did when it ends: fetched, relevant, stored, harvest rate, and where it went."""

    @classmethod
    def from_crawler(cls, crawler):
        extension = super().from_crawler(crawler)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def spider_closed(self, spider, reason):
        print(self.summary(self.context, self.stats.get_stats(), reason), flush=True)
        if spider.seed_problem:
            print(f"no usable seed: {spider.seed_problem}", flush=True)

    @staticmethod
    def summary(context, stats: dict, reason: str) -> str:
        """What the crawl did; after a fault, only what this process counted (its backends may not answer)."""
        fetched = stats.get(PAGES_STAT, 0)
        relevant = stats.get("topic/relevant", 0)
        job = context.job.name
        if reason in FAULT_REASONS:
            return fault_summary(job, stats, reason, stats.get("fault/message"))
        head = summary_head(job, stats, reason)
        if reason == SATURATED:
            head.append(f"saturated (StopWhenSaturated = {context.job.crawling.stop_when_saturated}): "
                        f"{stats.get('saturation/reason')}")
        counts = context.frontier.counts(time.time())
        return "\n".join([
            *head,
            f"records: {stats.get('records/new', 0)} new this run "
            f"({stats.get('records/near_duplicate', 0)} near-duplicate pages joined a record), "
            f"{context.store.count()} stored in all",
            f"frontier: {counts.urls} URLs on {counts.hosts} hosts, {counts.marked} still marked",
            f"records are in {context.store.location}",
            f"export them:  scrapy export {job} -o {job}.jsonl",
            *HarvestSummary.nothing_found(context.job, stats, fetched, relevant, reason),
        ])

    @staticmethod
    def nothing_found(job, stats: dict, fetched: int, relevant: int, reason: str) -> list[str]:
        """When no page was relevant: why, and what to change."""
        if relevant:
            return []
        if not fetched:
            return ["no page was fetched: the seeds were refused by the job's URL rules, unreachable or forbidden by "
                    "robots.txt (see urls/rejected/* and fetch/outcome/* in the stats above)"]
        cutoffs = getattr(job.topic_filter.classifier, "cutoffs", None)
        best = stats.get("topic/best_score")
        cutoff = cutoffs.total if cutoffs is not None else getattr(job.topic_filter.classifier, "threshold", None)
        why = f"0 relevant pages in {fetched} fetched: no page reached the topic's cutoff"
        if best is not None and cutoff is not None:
            why += f" (best score {best:g}, cutoff {cutoff:g})"
        tries = []
        if job.links.method == "propagate":
            tries.append("LinkStrategy = online, to follow the links of irrelevant pages too "
                         "(propagate follows only the links of relevant pages)")
        elif reason == "finished":
            tries.append(f"a larger MaxTunnelDistance (now {job.links.max_tunnel_distance}): the crawl ran out of links "
                         "that many irrelevant pages from the seeds")
        else:
            tries.append("a longer crawl (it was stopped)")
        if best is not None and cutoff is not None and 0 < best < cutoff:
            tries.append(f"a lower tot_cutoff (the best page scored {best:g})")
        tries.append("seeds nearer the topic, or more terms (synonyms, abbreviations) in the topic definition")
        return [why, "try " + "; or ".join(tries)]
