"""Sitemaps = 1 / SitemapGuess = 1: the sitemaps of each host whose robots.txt is read, as a link source."""

from __future__ import annotations

import logging
from collections import deque
from typing import Self
from urllib.parse import urlsplit

from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.utils.defer import deferred_from_coro
from twisted.internet.defer import Deferred

from combine_scrapy.access.robots import RobotsPolicy
from combine_scrapy.access.urls import host_of
from combine_scrapy.context import CrawlComponent
from combine_scrapy.links.sitemaps import (
    GUESSED_PATH,
    SitemapContent,
    SitemapError,
    SitemapLimits,
    decompressed,
    parse_sitemap,
    sitemaps_in_robots,
)
from combine_scrapy.records.store import RecordReader
from combine_scrapy.siderequests import side_request
from combine_scrapy.signals import ROBOTS_FETCHED

logger = logging.getLogger(__name__)


class SitemapReader(CrawlComponent):
    """Reads the sitemaps of each host whose robots.txt the crawl reads, and marks the pages they list.

    A Scrapy extension: RobotsMiddleware sends ``ROBOTS_FETCHED`` with each
    robots.txt answer it reads from the network; the host's sitemaps are then
    read in the background, one request at a time, each in its host's turn.
    """

    DOWNLOAD_PRIORITY = 900  # after robots.txt, before pages

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self._reading: set[Deferred[None]] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        reader = super().from_crawler(crawler)
        crawler.signals.connect(reader.robots_fetched, signal=ROBOTS_FETCHED)
        crawler.signals.connect(reader.spider_closed, signal=signals.spider_closed)
        return reader

    def robots_fetched(self, page_url: str, status: int | None, body: bytes | None, policy: RobotsPolicy) -> None:
        job = self.context.job
        if not (job.sitemaps.from_robots or job.sitemaps.guess):
            return
        parts = urlsplit(page_url)
        origin = f"{parts.scheme}://{parts.netloc}"
        named = sitemaps_in_robots(body, f"{origin}/robots.txt") if job.sitemaps.from_robots and status and 200 <= status < 300 else []
        if not named and job.sitemaps.guess:
            guess = origin + GUESSED_PATH
            if policy.allowed(guess):
                named = [guess]
            else:
                self.stats.inc_value("sitemaps/robots_disallowed")
        if named:
            limits = SitemapLimits(job.sitemaps.max_files, job.sitemaps.max_urls, job.sitemaps.max_size)
            reading = deferred_from_coro(self._read_host(host_of(page_url), named, limits))
            self._reading.add(reading)
            reading.addBoth(lambda _: self._reading.discard(reading))

    def spider_closed(self, spider: Spider) -> None:
        for reading in list(self._reading):
            reading.cancel()

    async def _read_host(self, host: str, first: list[str], limits: SitemapLimits) -> None:
        queue, seen = deque(first), set(first)
        files = taken = 0
        dated: list[tuple[str, float]] = []
        while queue:
            url = queue.popleft()
            if files == limits.max_files:
                self._limit(host, "files", f"{len(queue) + 1} sitemaps left unread after {files}")
                break
            files += 1
            content = await self._read(url, limits, limits.max_urls - taken)
            if content is None:
                continue
            for nested in content.sitemaps:
                if nested not in seen:
                    seen.add(nested)
                    queue.append(nested)
            taken += len(content.pages)
            self._mark(content.pages)
            dated.extend((page, lastmod) for page, lastmod in content.pages if lastmod is not None)
            if content.cut or (taken == limits.max_urls and queue):
                self._limit(host, "urls", f"stopped at {limits.max_urls} URLs (in {url})")
                break
        if dated:
            self._revisit_changed(dated)

    async def _read(self, url: str, limits: SitemapLimits, room: int) -> SitemapContent | None:
        """One sitemap's content, or None (counted and logged) when it cannot be had or read."""
        self.stats.inc_value("sitemaps/requests")
        request = side_request(url, self.DOWNLOAD_PRIORITY, self.context.job.fetching.timeout, download_maxsize=limits.max_bytes)
        try:
            response = await self.crawler.engine.download_async(request)
        except Exception as e:  # unreachable, refused by the address guard, over the size bound: never fatal
            self.stats.inc_value("sitemaps/failed")
            logger.info("sitemap %s not read: %s", url, e or type(e).__name__)
            return None
        if response.status != 200:
            self.stats.inc_value(f"sitemaps/status/{response.status}")
            logger.info("sitemap %s not read: HTTP %d", url, response.status)
            return None
        try:
            content = parse_sitemap(decompressed(response.body, limits.max_bytes), url, room)
        except SitemapError as e:
            self.stats.inc_value(f"sitemaps/{e.reason}")
            logger.warning("sitemap %s not read: %s", url, e)
            return None
        self.stats.inc_value("sitemaps/read")
        return content

    def _mark(self, pages: list[tuple[str, float | None]]) -> None:
        if not pages:
            return
        self.stats.inc_value("sitemaps/urls", len(pages))
        marked, rejected = self.context.policy.mark((url, 0.0) for url, _ in pages)
        self.stats.inc_value("sitemaps/marked", marked)
        self.stats.inc_value("frontier/marked", marked)
        for reason, count in rejected.items():
            self.stats.inc_value(f"urls/rejected/{reason}", count)

    def _revisit_changed(self, dated: list[tuple[str, float]]) -> None:
        """Mark again the stored pages whose lastmod is later than their record's last check."""
        records: RecordReader = self.context.store
        for url in self.context.policy.mark_changed(dated, records):
            self.stats.inc_value("sitemaps/revisits")
            logger.info("sitemap: %s changed since it was checked (lastmod): marked again", url)

    def _limit(self, host: str, limit: str, detail: str) -> None:
        self.stats.inc_value(f"sitemaps/limit/{limit}")
        logger.warning("sitemaps of %s: limit %s reached: %s", host, limit, detail)
