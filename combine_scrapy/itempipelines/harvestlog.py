"""The harvest log (data/<job>/harvest_log.sqlite): every fetch, as it completes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Self

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from combine_scrapy.faults import CrawlFault, stop_crawl
from combine_scrapy.frontier import Outcome
from combine_scrapy.items import Fetch
from combine_scrapy.operations.harvestlog import FetchRow, HarvestLog, log_path
from combine_scrapy.signals import JobSpider
from combine_scrapy.stores import data_directory


class HarvestLogWriter:
    """Append every fetch to the job's harvest log (data/<job>/harvest_log.sqlite): an item pipeline run
    just before FrontierPipeline completes the URL.

    Each row is its own transaction, written before the frontier counts the
    URL done: a harvester killed at any moment loses from the log only fetches
    the frontier still holds, which are fetched (and logged) again, so the
    counts ``scrapy status`` shows match what the web servers saw. (Rows held
    back in memory, as before, were lost by every kill.)
    """

    def __init__(self, crawler: Crawler, data_dir: Path):
        self.crawler = crawler
        self.data_dir = data_dir
        self.log: HarvestLog | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        settings = crawler.settings
        if not settings.getbool("COMBINE_HARVEST_LOG"):
            raise NotConfigured
        extension = cls(crawler, data_directory(settings))
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def spider_opened(self, spider: JobSpider) -> None:
        try:
            self.log = HarvestLog(log_path(self.data_dir, spider.job_name))
        except CrawlFault as fault:
            stop_crawl(self.crawler, fault)

    def process_item(self, item: Fetch) -> Fetch:
        if self.log is not None and not item.postponed and item.outcome is not None:
            self.log.append([self._row(item, item.outcome)])
        return item

    @staticmethod
    def _row(item: Fetch, outcome: Outcome) -> FetchRow:
        """The log's row of a fetch that has its outcome."""
        classification = item.classification
        best = max(classification.classes, key=lambda c: c.absolute, default=None) if classification else None
        return FetchRow(
            time=item.fetched_at,
            url=item.url,
            host=item.host,
            status=item.status,
            outcome=outcome.value,
            relevant=classification.relevant if classification else None,
            score=classification.score if classification else None,
            best_class=best.name if best and classification and classification.relevant else None,
            harvester=os.getpid(),
            new_record=item.novel,
        )

    def spider_closed(self, spider: JobSpider, reason: str) -> None:
        if self.log is not None:
            self.log.close()
