"""The crawl's own signals, beside Scrapy's (``crawler.signals.connect(handler, signal=...)``), and what a
handler of the crawl's spider signals may read of the spider."""

from typing import Protocol


class JobSpider(Protocol):
    """The spider the focused crawl's signal handlers get (``spider_opened``, ``spider_closed``): it crawls a job."""

    job_name: str
    #: Why the crawl had no usable seed (None while it has one).
    seed_problem: str | None


#: Signal sent with each robots.txt answer read from the network: ``page_url`` (the request that needed it),
#: ``status`` and ``body`` (None when unreachable) and the ``policy`` parsed from them (the sitemap reader listens).
ROBOTS_FETCHED = object()
