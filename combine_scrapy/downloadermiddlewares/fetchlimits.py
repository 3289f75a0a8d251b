"""The job's fetch limits: size, time, redirects (followed here), HEAD-only extensions."""

from __future__ import annotations

import logging
from typing import Self
from urllib.parse import urljoin, urlsplit

from scrapy import Request, Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DownloadTimeoutError, StopDownload
from scrapy.http import Headers, Response
from scrapy.statscollectors import StatsCollector
from twisted.internet.error import TimeoutError as TwistedTimeoutError

from combine_scrapy.access.addresses import scheme_refusal
from combine_scrapy.access.urls import SCHEME
from combine_scrapy.context import CrawlComponent
from combine_scrapy.exceptions import HopDeferred, RedirectRefused

logger = logging.getLogger(__name__)


REDIRECT_STATUSES = (301, 302, 303, 307, 308)


def limit_reached(stats: StatsCollector | None, limit: str, request: Request, detail: str) -> None:
    """Count a fetch limit that bit (``fetch/limit/<limit>``, in ``stats`` when there are) and say so in the log, naming
    the URL.

    The URL is the frontier's; a redirect followed on the way is named too.
    """
    if stats is not None:
        stats.inc_value(f"fetch/limit/{limit}")
    url = request.meta["frontier_entry"].url
    where = f"{url} (redirected to {request.url})" if request.url != url else url
    logger.warning("fetch limit %s reached for %s: %s", limit, where, detail)


def _header_text(value: bytes) -> str:
    """A header's text: UTF-8 as browsers read Location, else Latin-1 (every byte is one)."""
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return value.decode("latin-1")


def _extension(url: str) -> str:
    name = urlsplit(url).path.rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[-1].lower() if "." in name else ""


class FetchLimitsMiddleware(CrawlComponent):
    """The job's fetch modes and limits on every page request, whichever way it came.

    - body size (UAmaxSize): a body declared larger is not read, one that
      grows past it is cut there (as Combine's user agent did); the page is
      parsed from what came. Scrapy's own ``download_maxsize`` is set to the
      same bound, which also stops decompression there;
    - time (UAtimeout) as ``download_timeout``: a timeout is a failed fetch,
      the URL unavailable for now, as Combine treated 408;
    - HEAD instead of GET for Combine's binary extensions (HeadOnlyExtensions):
      the record keeps what the headers say, the body is never fetched;
    - redirects: with UserAgentFollowRedirects, followed up to UAmaxRedirects
      (each hop through every guard again: rules, robots.txt); without it, or
      past the limit, the 3xx answer goes to the pipelines, which mark its
      target as a new URL, as Combine recycled redirects.

    Each limit that bites is counted as ``fetch/limit/<name>`` and logged with the URL.
    """

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        middleware = super().from_crawler(crawler)
        crawler.signals.connect(middleware._headers_received, signal=signals.headers_received)
        crawler.signals.connect(middleware._bytes_received, signal=signals.bytes_received)
        return middleware

    def process_request(self, request: Request) -> None:
        if "frontier_entry" not in request.meta:
            return None  # robots.txt: its own bounds (RobotsMiddleware)
        job = self.context.job
        request.meta["download_maxsize"] = job.fetching.max_size
        request.meta["download_timeout"] = job.fetching.timeout
        request.meta["body_bytes"] = 0
        if request.method == "GET" and _extension(request.url) in job.fetching.head_only_extensions:
            request.method = "HEAD"
            self.crawler.stats.inc_value("fetch/head")
        return None

    def _headers_received(self, headers: Headers, body_length: int, request: Request, spider: Spider) -> None:
        declared = isinstance(body_length, int)  # else Twisted's UNKNOWN_LENGTH: the body's end will tell
        if "body_bytes" not in request.meta or request.method == "HEAD":  # a HEAD answer's length is the GET's
            return
        if declared and body_length > request.meta["download_maxsize"]:
            request.meta["body_cut"] = f"{body_length} bytes declared, not read"
            raise StopDownload(fail=False)

    def _bytes_received(self, data: bytes, request: Request, spider: Spider) -> None:
        if "body_bytes" not in request.meta:
            return
        request.meta["body_bytes"] += len(data)
        if request.meta["body_bytes"] > request.meta["download_maxsize"]:
            request.meta["body_cut"] = "cut there"
            raise StopDownload(fail=False)

    async def process_response(self, request: Request, response: Response) -> Response:
        if "frontier_entry" not in request.meta:
            return response
        job = self.context.job
        if "body_cut" in request.meta:
            limit_reached(
                self.crawler.stats, "size", request, f"body over {job.fetching.max_size} bytes, {request.meta['body_cut']}"
            )
            response = response.replace(body=response.body[:job.fetching.max_size])
        location = response.headers.get(b"Location")
        if response.status not in REDIRECT_STATUSES or not location or not job.fetching.follow_redirects:
            return response
        hops = request.meta.get("redirect_times", 0)
        if hops >= job.fetching.max_redirects:
            limit_reached(self.crawler.stats, "redirects", request, f"more than {job.fetching.max_redirects} redirects")
            return response
        target = urljoin(response.url, _header_text(location).strip())
        refusal = scheme_refusal(target)
        if refusal is not None:
            self.crawler.stats.inc_value(f"urls/rejected/{SCHEME}")
            logger.info("refused redirect of %s to %s: %s", response.url, target[:200], refusal)
            raise RedirectRefused(f"{SCHEME}: redirect to {target[:200]}")
        redirected = request.replace(
            url=target,
            method="GET" if response.status == 303 else request.method,
            meta={
                **request.meta,
                "redirect_times": hops + 1,
                "redirect_urls": [*request.meta.get("redirect_urls", []), response.url],
            },
        )
        self.crawler.stats.inc_value("fetch/redirect_followed")
        try:
            return await self.crawler.engine.download_async(redirected)
        except HopDeferred as e:
            self.crawler.stats.inc_value("fetch/redirect_deferred")
            logger.info("redirect of %s to %s not followed now (%s): the target is marked instead", response.url, target, e)
            return response

    def process_exception(self, request: Request, exception: Exception) -> None:
        if "frontier_entry" in request.meta and isinstance(exception, (DownloadTimeoutError, TwistedTimeoutError)):
            timeout = self.context.job.fetching.timeout
            limit_reached(self.crawler.stats, "time", request, f"no complete answer within {timeout:g} s")
        return None
