"""doAnalyse: the language and the server's country of a relevant page."""

from __future__ import annotations

from combine_scrapy.context import CrawlComponent
from combine_scrapy.document.analyse import analyse
from combine_scrapy.items import Fetch


class AnalysePipeline(CrawlComponent):
    """doAnalyse: the language of a relevant page and the country of its server, for its record."""

    def process_item(self, item: Fetch) -> Fetch:
        page, classification = item.page, item.classification
        if not self.context.job.analysis.do_analyse or page is None or classification is None or not classification.relevant:
            return item
        item.analysis = analyse(item.url, f"{page.title}\n{page.text}")
        self.stats.inc_value(f"analyse/language/{item.analysis.language or 'unknown'}")
        self.stats.inc_value(f"analyse/country/{item.analysis.country or 'unknown'}")
        return item
