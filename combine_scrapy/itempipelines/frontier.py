"""The frontier's side of a fetch: the crawl policy completes the URL, marks its links, teaches the link model."""

from __future__ import annotations

from typing import Self

from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.utils.defer import deferred_from_coro

from combine_scrapy.context import CrawlComponent
from combine_scrapy.items import Fetch
from combine_scrapy.links.saturation import SATURATED


class FrontierPipeline(CrawlComponent):
    """Hand the fetch to the crawl policy (:meth:`CrawlPolicy.fetch_done`, or :meth:`CrawlPolicy.fetch_postponed`);
    end the crawl when the policy finds it saturated.

    The online link model is merged with the job's stored one when the crawl opens, every few hundred
    lessons (the policy's), and when it closes.
    """

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        pipeline = super().from_crawler(crawler)
        crawler.signals.connect(pipeline.spider_closed, signal=signals.spider_closed)
        return pipeline

    def spider_opened(self, spider: Spider) -> None:
        super().spider_opened(spider)
        self.context.policy.sync_link_model()

    def spider_closed(self, spider: Spider, reason: str) -> None:
        self.context.policy.sync_link_model(closing=True)

    def process_item(self, item: Fetch) -> Fetch:
        policy = self.context.policy
        if item.postponed:
            policy.fetch_postponed(item)
            return item
        saturation = policy.fetch_done(item)
        if saturation is not None:
            deferred_from_coro(self.crawler.engine.close_spider_async(reason=SATURATED))
        return item
