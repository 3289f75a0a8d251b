"""Scrapy extensions: what a person sees of a crawl."""

from __future__ import annotations

import logging
import time

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import create_looping_call

logger = logging.getLogger(__name__)


class HarvestProgress:
    """Log one progress line every COMBINE_PROGRESS_INTERVAL seconds.

    Pages per minute over the last interval, harvest rate so far, and the
    frontier's size: what a person watching a long crawl wants to know.
    """

    def __init__(self, crawler, interval: float):
        self.crawler = crawler
        self.interval = interval
        self._last_pages = 0
        self._task = None

    @classmethod
    def from_crawler(cls, crawler):
        interval = crawler.settings.getfloat("COMBINE_PROGRESS_INTERVAL")
        if not interval:
            raise NotConfigured
        extension = cls(crawler, interval)
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def spider_opened(self, spider):
        self._task = create_looping_call(self.log_progress)
        self._task.start(self.interval, now=False)

    def spider_closed(self, spider, reason):
        if self._task is not None and self._task.running:
            self._task.stop()

    def log_progress(self):
        harvest = getattr(self.crawler.spider, "harvest", None)
        if harvest is None:
            return
        stats = self.crawler.stats
        pages = stats.get_value("fetch/outcome/success", 0)
        relevant = stats.get_value("topic/relevant", 0)
        classified = relevant + stats.get_value("topic/irrelevant", 0)
        per_minute = (pages - self._last_pages) * 60 / self.interval
        self._last_pages = pages
        counts = harvest.frontier.counts(time.time())
        logger.info(
            "progress: %d pages (%.0f/min), %d relevant (harvest rate %s), %d records; "
            "frontier %d URLs, %d due now, %d waiting for their host or lock",
            pages, per_minute, relevant, f"{relevant / classified:.0%}" if classified else "n/a",
            stats.get_value("records/new", 0), counts["urls"], counts["marked_ready"], counts["marked_locked"],
        )


class HarvestSummary:
    """Print what the crawl did when it ends: fetched, relevant, stored, harvest rate, and where it went."""

    def __init__(self, crawler):
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler):
        extension = cls(crawler)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def spider_closed(self, spider, reason):
        harvest = getattr(spider, "harvest", None)
        if harvest is None:
            return
        print(self.summary(harvest, self.crawler.stats.get_stats(), reason), flush=True)

    @staticmethod
    def summary(harvest, stats: dict, reason: str) -> str:
        fetched = stats.get("fetch/outcome/success", 0)
        relevant = stats.get("topic/relevant", 0)
        classified = relevant + stats.get("topic/irrelevant", 0)
        rate = f"{relevant / classified:.0%}" if classified else "n/a"
        counts = harvest.frontier.counts(time.time())
        job = harvest.job.name
        return "\n".join([
            f"== combine-scrapy: job {job} finished ({reason}) ==",
            f"pages fetched: {fetched}   relevant: {relevant}   harvest rate: {rate}",
            f"records: {stats.get('records/new', 0)} new this run, {harvest.store.count()} stored in all",
            f"frontier: {counts['urls']} URLs on {counts['hosts']} hosts, "
            f"{counts['marked_ready'] + counts['marked_locked']} still marked",
            f"records are in {harvest.store.location}",
            f"export them:  scrapy export {job} -o {job}.jsonl",
        ])
