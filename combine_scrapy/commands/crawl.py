"""``scrapy crawl``, with a focused job checked before Scrapy starts.

A broken job then gives one line naming the file, the line and what is
wrong, and exit status 2, instead of a traceback from inside the engine.
A crawl stopped by a fault (a full disk, a vanished frontier: see
combine_scrapy.faults) exits with status 1, so scripts and ``scrapy harvest``
see that it did not finish.
"""

from __future__ import annotations

import sys

from scrapy.commands.crawl import Command as ScrapyCrawlCommand

from combine_scrapy.faults import FAULT_EXIT_STATUS, FAULT_REASONS
from combine_scrapy.job import JobConfigError, load_job
from combine_scrapy.spiders.focused import FocusedSpider


class Command(ScrapyCrawlCommand):
    def run(self, args, opts):
        if args and args[0] == FocusedSpider.name and "job" in opts.spargs:
            try:
                load_job(opts.spargs["job"], self.settings.get("COMBINE_TOPICS_DIR"))
            except JobConfigError as e:
                print(f"error: bad job: {e}", file=sys.stderr)
                self.exitcode = 2
                return
        self._crawler = None
        super().run(args, opts)
        if self._crawler is not None and self._crawler.stats.get_value("finish_reason") in FAULT_REASONS:
            self.exitcode = FAULT_EXIT_STATUS

    def _create_crawler(self, spidercls):
        self._crawler = super()._create_crawler(spidercls)
        return self._crawler
