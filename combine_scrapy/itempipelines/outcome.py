"""The fetch's outcome: what it means for the frontier, decided by the crawl policy."""

from __future__ import annotations

from combine_scrapy.context import CrawlComponent
from combine_scrapy.items import Fetch


class OutcomePipeline(CrawlComponent):
    """Decide what the fetch means for the frontier (:meth:`CrawlPolicy.settle_outcome`); a postponed fetch has
    no outcome."""

    def process_item(self, item: Fetch) -> Fetch:
        if not item.postponed:
            self.context.policy.settle_outcome(item)
        return item
