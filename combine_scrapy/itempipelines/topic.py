"""The topic filter's verdict on a parsed page."""

from __future__ import annotations

from combine_scrapy.context import CrawlComponent
from combine_scrapy.items import Fetch
from combine_scrapy.topic import Document


class TopicPipeline(CrawlComponent):
    """Ask the job's topic filter whether the page is relevant."""

    def process_item(self, item: Fetch) -> Fetch:
        page = item.page
        if page is None:
            return item
        job = self.context.job
        document = Document.from_page(page, item.host, main_content=job.topic.text == "main")
        item.classification = job.topic_filter.classify(document)
        self.stats.inc_value("topic/relevant" if item.classification.relevant else "topic/irrelevant")
        return item
