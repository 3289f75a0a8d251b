"""saveIrrelevant = 1: keep the pages the topic filter turned down (:mod:`combine_scrapy.records.irrelevant`)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from combine_scrapy.context import CrawlComponent
from combine_scrapy.frontier import Outcome
from combine_scrapy.items import Fetch
from combine_scrapy.stores import data_directory
from combine_scrapy.topic.text import Document

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler

from combine_scrapy.records.irrelevant import IRRELEVANT_FILE, IrrelevantPage, IrrelevantPages

logger = logging.getLogger(__name__)


class IrrelevantPagesPipeline(CrawlComponent):
    """Keep the pages the topic filter turned down (saveIrrelevant = 1); runs after RecordPipeline."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self.pages: IrrelevantPages | None = None
        self.main_content = False  # the job's topicText = main: the filter read the main content block

    def spider_opened(self, spider: Spider) -> None:
        super().spider_opened(spider)
        job = self.context.job
        if not job.archive.save_irrelevant:
            return
        path = data_directory(self.crawler.settings) / job.name / IRRELEVANT_FILE
        self.pages = IrrelevantPages(path, job.archive.irrelevant_max_pages)
        self.main_content = job.topic.text == "main"

    def close_spider(self) -> None:
        if self.pages is not None:
            self.pages.close()
            self.pages = None

    def process_item(self, item: Fetch) -> Fetch:
        if self.pages is None or item.postponed:
            return item
        classification, page = item.classification, item.page  # TopicPipeline classified every parsed page
        if item.outcome is Outcome.SUCCESS and classification is not None and not classification.relevant and page is not None:
            document = Document.from_page(page, item.host, main_content=self.main_content)
            if self.pages.keep(IrrelevantPage(document, classification.score, item.fetched_at)):
                self.stats.inc_value("irrelevant/kept")
            else:
                self.stats.inc_value("irrelevant/limit")
                logger.debug("irrelevant page %s not kept: %d pages kept already", item.url, len(self.pages))
        elif item.outcome in (Outcome.SUCCESS, Outcome.NOT_FOUND, Outcome.ROBOTS) and self.pages.forget(item.url):
            self.stats.inc_value("irrelevant/forgotten")
        return item
