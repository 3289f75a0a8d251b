"""Stop the crawl on a fault of its stores, with one line saying what failed."""

from __future__ import annotations

import logging
import time
from typing import Any, Self

from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import CloseSpider
from scrapy.http import Response
from twisted.python.failure import Failure

from combine_scrapy.context import CrawlComponent
from combine_scrapy.faults import CrawlFault, stop_crawl
from combine_scrapy.frontier import FrontierOperations
from combine_scrapy.records.store import RecordMaintenance

logger = logging.getLogger(__name__)


class CrawlFaults(CrawlComponent):
    """Stop the crawl on a CrawlFault in an item pipeline (a full disk under the records, a vanished frontier):
    one log line saying what failed and what to do, the spider closed with the fault's reason, exit status 1."""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        extension = super().from_crawler(crawler)
        crawler.signals.connect(extension.item_error, signal=signals.item_error)
        return extension

    def spider_opened(self, spider: Spider) -> None:
        """Close the spider at once on a fault met while it opened; warn when the frontier is empty but records
        are stored (a lost frontier would start the crawl afresh)."""
        super().spider_opened(spider)
        reason = self.stats.get_value("fault/reason")
        if reason:
            raise CloseSpider(reason)
        context = self.context
        frontier: FrontierOperations = context.frontier
        store: RecordMaintenance = context.store
        try:
            if frontier.counts(time.time()).urls:
                return
            records = store.count()
        except CrawlFault:  # the scheduler stops the crawl on it
            return
        if records:
            logger.warning(
                "the frontier of job %s is empty but %d records are stored: if it was lost (Redis restarted "
                "without persistence, frontier.sqlite deleted), stop and run 'scrapy sanity %s' to rebuild it; "
                "crawling from the seeds again", context.job.name, records, context.job.name,
            )

    def item_error(self, item: Any, response: Response | None, spider: Spider, failure: Failure) -> None:
        if isinstance(failure.value, CrawlFault):
            stop_crawl(self.crawler, failure.value)
