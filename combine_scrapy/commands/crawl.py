"""``scrapy crawl``, with a focused job checked before Scrapy starts.

A broken job then gives one line naming the file, the line and what is
wrong, and exit status 2, instead of a traceback from inside the engine. A
crawl that ends for want of a usable seed exits with status 2 as well.
"""

from __future__ import annotations

import sys

from scrapy.commands.crawl import Command as ScrapyCrawlCommand

from combine_scrapy.job import JobConfigError, load_job
from combine_scrapy.spiders.focused import NO_USABLE_SEED, FocusedSpider


class Command(ScrapyCrawlCommand):
    crawler = None

    def _create_crawler(self, spidercls):
        self.crawler = super()._create_crawler(spidercls)
        return self.crawler

    def run(self, args, opts):
        if args and args[0] == FocusedSpider.name and "job" in opts.spargs:
            try:
                load_job(opts.spargs["job"], self.settings.get("COMBINE_TOPICS_DIR"))
            except JobConfigError as e:
                print(f"error: bad job: {e}", file=sys.stderr)
                self.exitcode = 2
                return
        super().run(args, opts)
        if self.crawler is not None and self.crawler.stats.get_value("finish_reason") == NO_USABLE_SEED:
            self.exitcode = 2
