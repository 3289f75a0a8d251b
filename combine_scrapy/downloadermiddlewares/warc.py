"""saveWARC = 1: a downloader middleware that archives every response the crawl downloads (:mod:`combine_scrapy.records.warc`).

It sits between the download handler and BoundedHttpCompressionMiddleware, so
it sees each response as it came, before content decoding, and every request
that reaches the network: pages, followed redirect hops, robots.txt, sitemaps.
"""

from __future__ import annotations

import logging
import time
from typing import Self

import scrapy
from scrapy import Request, Spider, signals
from scrapy.crawler import Crawler
from scrapy.http import Headers, Response, TextResponse

from combine_scrapy.context import CrawlComponent
from combine_scrapy.records.warc import Exchange, WarcArchive
from combine_scrapy.stores import data_directory

logger = logging.getLogger(__name__)

#: Where a job's WARC files go, under its data directory.
WARC_DIR = "warc"
#: What a conversion record of a rendered page says made it (WARC-Crawler-Rendered).
RENDERED_BY = "headless Chromium (scrapy-playwright): the DOM after the page's scripts ran"
#: Response flags Scrapy sets, and the WARC-Truncated reason each means.
_TRUNCATED = {"download_stopped": "length", "dataloss": "disconnect", "partial": "disconnect"}


def _header_list(headers: Headers) -> list[tuple[str, str]]:
    return [
        (name.decode("latin-1"), value.decode("latin-1"))
        for name, values in headers.items()
        for value in values
    ]


def exchange_of(request: Request, response: Response, fetched_at: float) -> Exchange:
    truncated = next((_TRUNCATED[flag] for flag in response.flags if flag in _TRUNCATED), None)
    return Exchange(
        url=response.url,
        method=request.method,
        request_headers=_header_list(request.headers),
        request_body=request.body,
        status=response.status,
        protocol=response.protocol or "HTTP/1.1",
        response_headers=_header_list(response.headers),
        body=response.body,
        fetched_at=fetched_at,
        ip_address=str(response.ip_address) if response.ip_address else None,
        truncated=truncated,
    )


class WarcMiddleware(CrawlComponent):
    """Write each downloaded response, with its request, into the job's WARC files (when the job says saveWARC = 1)."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self.archive: WarcArchive | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        middleware = super().from_crawler(crawler)
        crawler.signals.connect(middleware.spider_closed, signal=signals.spider_closed)
        return middleware

    def spider_opened(self, spider: Spider) -> None:
        super().spider_opened(spider)
        job = self.context.job
        if not job.archive.save_warc:
            return
        self.archive = WarcArchive(
            data_directory(self.crawler.settings) / job.name / WARC_DIR,
            prefix=job.name,
            max_size=job.archive.warc_max_size,
            software=f"combine-scrapy (Scrapy {scrapy.__version__})",
            operator=job.fetching.operator_email,
            description=f"focused crawl of job {job.name}",
        )
        logger.info("WARC: writing every fetch to %s", self.archive.directory)

    def spider_closed(self, spider: Spider) -> None:
        if self.archive is not None:
            self.archive.close()
            self.crawler.stats.set_value("warc/files", len(self.archive.files_written))
            self.archive = None

    def process_response(self, request: Request, response: Response) -> Response:
        if self.archive is None:
            return response
        if "render_of" in request.meta:
            return self._archive_render(self.archive, request, response)
        stats = self.crawler.stats
        exchange = exchange_of(request, response, time.time())
        try:
            where = self.archive.write(exchange)
        except OSError as e:  # a full disk: the crawl goes on, every fetch it cannot archive counted
            stats.inc_value("warc/failed")
            logger.error("WARC: cannot archive %s: %s", response.url, e)
            return response
        # A render of this page (combine_scrapy/render/) copies the request's meta and refers to this record.
        request.meta["warc_record_id"] = where.record_id
        stats.inc_value("warc/responses")
        stats.inc_value("warc/bytes", where.length)
        if exchange.truncated:
            stats.inc_value("warc/truncated")
        return response

    def _archive_render(self, archive: WarcArchive, request: Request, response: Response) -> Response:
        """A rendered page: its DOM as a conversion record of the page's HTTP response (archived before it)."""
        stats = self.crawler.stats
        html = response.text.encode("utf-8") if isinstance(response, TextResponse) else response.body
        try:
            where = archive.write_conversion(
                request.meta["render_of"], html, time.time(), RENDERED_BY, request.meta.get("warc_record_id", "")
            )
        except OSError as e:
            stats.inc_value("warc/failed")
            logger.error("WARC: cannot archive the render of %s: %s", response.url, e)
            return response
        stats.inc_value("warc/conversions")
        stats.inc_value("warc/bytes", where.length)
        return response
