"""Plain Scrapy, the throughput baseline: follow every link, no focus pipeline.

    http_proxy=http://127.0.0.1:8950 .venv/bin/python -m bench.plainspider --seconds 60 URL...

A minimal spider configured as Scrapy's "Broad Crawls" guide advises
(downloader-aware priority queue, no cookies, retries or redirects), with the
same politeness as the focused harvester: robots.txt obeyed, at most one
request in flight per host, no delay. It is run with Scrapy's default
settings, not this project's (which would install the frontier scheduler).
``--breadth-first`` crawls in breadth-first order as Scrapy's FAQ sets it up
(DEPTH_PRIORITY = 1, FIFO queues, one global priority queue): the peer of
the focus benchmark (bench/focushard.py). It follows the http(s) links of
text responses (not ``mailto:``); ``--allowed-domain`` keeps it on a domain
as a spider's ``allowed_domains`` does (bench/focusreal: the doc web's hosts).
"""

from __future__ import annotations

import argparse

import scrapy
from scrapy.crawler import CrawlerProcess
from scrapy.http import TextResponse


class PlainSpider(scrapy.Spider):
    name = "plain"

    def __init__(self, seeds: list[str], allowed_domains: list[str] | None = None, **kwargs):
        super().__init__(**kwargs)
        self.seeds = seeds
        if allowed_domains:
            self.allowed_domains = allowed_domains  # Scrapy's OffsiteMiddleware drops requests elsewhere

    async def start(self):
        for url in self.seeds:
            yield scrapy.Request(url)

    def parse(self, response):
        if not isinstance(response, TextResponse):  # an image or a PDF a link led to: nothing to follow
            return
        for href in response.css("a::attr(href)").getall():
            url = response.urljoin(href.strip())
            if url.startswith(("http://", "https://")):  # not mailto:, javascript: and the like
                yield response.follow(url)


#: Scrapy's breadth-first order (its FAQ, "Does Scrapy crawl in breadth-first or depth-first order?").
BREADTH_FIRST = {
    "DEPTH_PRIORITY": 1,
    "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
    "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
    "SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.ScrapyPriorityQueue",
}


def settings(seconds: float, concurrency: int, max_pages: int, breadth_first: bool = False) -> dict[str, object]:
    return {
        "CONCURRENT_REQUESTS": concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        "DOWNLOAD_DELAY": 0,
        "ROBOTSTXT_OBEY": True,
        "SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.DownloaderAwarePriorityQueue",
        "COOKIES_ENABLED": False,
        "RETRY_ENABLED": False,
        "REDIRECT_ENABLED": False,
        "TELNETCONSOLE_ENABLED": False,
        "USER_AGENT": "plain-scrapy (virtualweb benchmark)",
        "LOG_LEVEL": "INFO",
        "CLOSESPIDER_TIMEOUT": seconds,
        "CLOSESPIDER_PAGECOUNT": max_pages,
        **(BREADTH_FIRST if breadth_first else {}),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("seeds", nargs="+")
    parser.add_argument("--seconds", type=float, default=60, help="stop after this long")
    parser.add_argument("--concurrency", type=int, default=32, help="CONCURRENT_REQUESTS")
    parser.add_argument("--max-pages", type=int, default=0, help="stop after this many responses (0: no bound)")
    parser.add_argument("--breadth-first", action="store_true", help="Scrapy's breadth-first order")
    parser.add_argument("--allowed-domain", action="append", default=[], metavar="DOMAIN",
                        help="follow links to this domain and its subdomains only (the spider's allowed_domains)")
    args = parser.parse_args(argv)
    process = CrawlerProcess(settings=settings(args.seconds, args.concurrency, args.max_pages, args.breadth_first))
    process.crawl(PlainSpider, seeds=args.seeds, allowed_domains=args.allowed_domain)
    process.start()


if __name__ == "__main__":
    main()
