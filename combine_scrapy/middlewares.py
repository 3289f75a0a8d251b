"""Downloader middlewares: the guards every request passes, whichever way it entered.

URL rules and robots.txt are pure code (:mod:`combine_scrapy.urls`,
:mod:`combine_scrapy.robots`); these classes only apply them to requests and
count what they refuse in the crawl's stats.
"""

from __future__ import annotations

import logging
import time
from urllib.parse import urljoin, urlsplit

from scrapy import Request, signals
from scrapy.downloadermiddlewares.httpcompression import HttpCompressionMiddleware
from scrapy.exceptions import DownloadTimeoutError, IgnoreRequest, StopDownload
from scrapy.http import Response
from scrapy.http.request import NO_CALLBACK
from scrapy.utils._compression import _DecompressionMaxSizeExceeded
from twisted.internet.error import TimeoutError as TwistedTimeoutError

from combine_scrapy.robots import MAX_BODY_BYTES, RobotsPolicy, policy_from_response
from combine_scrapy.urls import check_url, host_of

logger = logging.getLogger(__name__)

#: robots.txt redirects followed at most, as RFC 9309 asks.
ROBOTS_MAX_REDIRECTS = 5
REDIRECT_STATUSES = (301, 302, 303, 307, 308)


class UrlRejected(IgnoreRequest):
    """The URL fails the job's canonicalization or allow/exclude rules."""


class RobotsDisallowed(IgnoreRequest):
    """robots.txt forbids the URL."""


class RobotsUnavailable(IgnoreRequest):
    """robots.txt could not be read (5xx, unreachable): the site counts as closed for now."""


class RobotsPending(IgnoreRequest):
    """robots.txt was just read; the page waits for the host's next turn."""


def _job(crawler):
    return crawler.spider.harvest.job


class UrlRulesMiddleware:
    """Refuse a request whose URL the job's rules reject; a non-canonical URL goes back to the scheduler."""

    def __init__(self, crawler):
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)

    def process_request(self, request: Request):
        if request.meta.get("dont_obey_robotstxt"):
            return None
        verdict = check_url(request.url, _job(self.crawler).url_rules)
        if not verdict.ok:
            self.crawler.stats.inc_value(f"urls/rejected/{verdict.reason}")
            raise UrlRejected(f"{verdict.reason}: {request.url}")
        if verdict.url != request.url:
            return request.replace(url=verdict.url)
        return None


class RobotsMiddleware:
    """Obey robots.txt, read once per host and cached in the frontier across runs.

    A host's robots.txt is itself a request to the host, so the page that
    caused it is put off to the host's next turn instead of following at once:
    no two requests to a host come closer than WaitIntervalHost.
    """

    DOWNLOAD_PRIORITY = 1000

    def __init__(self, crawler):
        self.crawler = crawler
        self._policies: dict[str, tuple[RobotsPolicy, bool, float]] = {}
        self._robots_redirects: dict[str, tuple[str, int]] = {}  # host -> (robots.txt URL to read next, hops so far)

    @classmethod
    def from_crawler(cls, crawler):
        middleware = cls(crawler)
        crawler.signals.connect(middleware._robots_bytes_received, signal=signals.bytes_received)
        return middleware

    def _robots_bytes_received(self, data: bytes, request: Request, spider) -> None:
        """Stop reading a robots.txt past MAX_BODY_BYTES and keep what came (RFC 9309 2.5)."""
        if "robots_bytes" not in request.meta:
            return
        request.meta["robots_bytes"] += len(data)
        if request.meta["robots_bytes"] > MAX_BODY_BYTES:
            self.crawler.stats.inc_value("robots/truncated")
            raise StopDownload(fail=False)

    async def process_request(self, request: Request):
        if request.meta.get("dont_obey_robotstxt"):
            return None
        host = host_of(request.url)
        now = time.time()
        cached = self._cached(host, now)
        if cached is None:
            from_frontier = "frontier_entry" in request.meta
            status, body = await self._read_robots(host, request.url, one_hop=from_frontier)
            cached = self._remember(host, status, body, now)
            if from_frontier:
                raise RobotsPending(f"robots.txt of {host} read first")
        policy, available = cached
        if not available:
            self.crawler.stats.inc_value("robots/unavailable")
            raise RobotsUnavailable(f"robots.txt of {host} unavailable")
        if not policy.allowed(request.url):
            self.crawler.stats.inc_value("robots/disallowed")
            raise RobotsDisallowed(f"forbidden by robots.txt: {request.url}")
        return None

    def _cached(self, host: str, now: float) -> tuple[RobotsPolicy, bool] | None:
        cached = self._policies.get(host)
        if cached and cached[2] > now:
            return cached[0], cached[1]
        stored = self.crawler.spider.harvest.frontier.robots(host, now)
        if stored is None:
            return None
        return self._remember(host, *stored, now, store=False)

    def _remember(
        self, host: str, status: int | None, body: bytes | None, now: float, store: bool = True
    ) -> tuple[RobotsPolicy, bool]:
        """Parse and cache a robots.txt answer; a 5xx, 429 or no answer leaves the site unavailable."""
        job = _job(self.crawler)
        policy = policy_from_response(status, body, job.user_agent)
        # Re-read after Combine's 1 or 4 days, or sooner when the job locks robots rules for less.
        ttl = min(policy.ttl, job.lock_robot_rules)
        frontier = self.crawler.spider.harvest.frontier
        if store:
            frontier.store_robots(host, status, body, now + ttl)
        delay = policy.crawl_delay if policy.crawl_delay and policy.crawl_delay > job.wait_interval_host else None
        frontier.set_host_delay(host, delay)
        available = status is not None and status < 500 and status != 429
        self._policies[host] = (policy, available, now + ttl)
        return policy, available

    async def _read_robots(self, host: str, page_url: str, one_hop: bool) -> tuple[int | None, bytes | None]:
        """Fetch robots.txt, following up to five redirects; (None, None) when unreachable.

        With ``one_hop`` (a request the frontier handed out, one a host per
        turn) a redirect is not followed at once, which would be a second
        request to the host within WaitIntervalHost: its target is kept and
        fetched on the host's next turn (RobotsPending puts the page off).
        """
        parts = urlsplit(page_url)
        url, hops = self._robots_redirects.pop(host, (f"{parts.scheme}://{parts.netloc}/robots.txt", 0))
        if not hops:
            self.crawler.stats.inc_value("robots/requests")
        while True:
            request = Request(
                url,
                priority=self.DOWNLOAD_PRIORITY,
                callback=NO_CALLBACK,
                meta={
                    "dont_obey_robotstxt": True,
                    "handle_httpstatus_all": True,
                    "dont_redirect": True,
                    "download_timeout": _job(self.crawler).timeout,
                    "robots_bytes": 0,
                },
            )
            try:
                response = await self.crawler.engine.download_async(request)
            except Exception as e:  # any download failure means "unreachable"
                logger.info("robots.txt %s unreachable: %s", url, e)
                return None, None
            location = response.headers.get(b"Location")
            if response.status not in (301, 302, 303, 307, 308) or not location:
                self.crawler.stats.inc_value(f"robots/status/{response.status}")
                return response.status, response.body
            if hops == ROBOTS_MAX_REDIRECTS:
                logger.info("robots.txt %s: too many redirects", page_url)
                return None, None
            url, hops = urljoin(url, location.decode("latin-1")), hops + 1
            if one_hop:
                self._robots_redirects[host] = (url, hops)
                self.crawler.stats.inc_value("robots/redirect_deferred")
                raise RobotsPending(f"robots.txt of {host} redirects to {url}: read on the host's next turn")


class JobHeadersMiddleware:
    """Send the job's User-Agent and the operator's e-mail in From, as Combine did."""

    def __init__(self, crawler):
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)

    def process_request(self, request: Request):
        job = _job(self.crawler)
        request.headers.setdefault(b"User-Agent", job.user_agent)
        if job.operator_email:
            request.headers.setdefault(b"From", job.operator_email)
        return None


def _limit_reached(stats, limit: str, request: Request, detail: str) -> None:
    """Count a fetch limit that bit (``fetch/limit/<limit>``) and say so in the log, naming the URL.

    The URL is the frontier's; a redirect followed on the way is named too.
    """
    stats.inc_value(f"fetch/limit/{limit}")
    url = request.meta["frontier_entry"].url
    where = f"{url} (redirected to {request.url})" if request.url != url else url
    logger.warning("fetch limit %s reached for %s: %s", limit, where, detail)


def _extension(url: str) -> str:
    name = urlsplit(url).path.rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[-1].lower() if "." in name else ""


class FetchLimitsMiddleware:
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

    def __init__(self, crawler):
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler):
        middleware = cls(crawler)
        crawler.signals.connect(middleware._headers_received, signal=signals.headers_received)
        crawler.signals.connect(middleware._bytes_received, signal=signals.bytes_received)
        return middleware

    def process_request(self, request: Request):
        if "frontier_entry" not in request.meta:
            return None  # robots.txt: its own bounds (RobotsMiddleware)
        job = _job(self.crawler)
        request.meta["download_maxsize"] = job.max_size
        request.meta["download_timeout"] = job.timeout
        request.meta["body_bytes"] = 0
        if request.method == "GET" and _extension(request.url) in job.head_only_extensions:
            request.method = "HEAD"
            self.crawler.stats.inc_value("fetch/head")
        return None

    def _headers_received(self, headers, body_length: int, request: Request, spider) -> None:
        declared = isinstance(body_length, int)  # else Twisted's UNKNOWN_LENGTH: the body's end will tell
        if "body_bytes" not in request.meta or request.method == "HEAD":  # a HEAD answer's length is the GET's
            return
        if declared and body_length > request.meta["download_maxsize"]:
            request.meta["body_cut"] = f"{body_length} bytes declared, not read"
            raise StopDownload(fail=False)

    def _bytes_received(self, data: bytes, request: Request, spider) -> None:
        if "body_bytes" not in request.meta:
            return
        request.meta["body_bytes"] += len(data)
        if request.meta["body_bytes"] > request.meta["download_maxsize"]:
            request.meta["body_cut"] = "cut there"
            raise StopDownload(fail=False)

    async def process_response(self, request: Request, response: Response):
        if "frontier_entry" not in request.meta:
            return response
        job = _job(self.crawler)
        if "body_cut" in request.meta:
            _limit_reached(
                self.crawler.stats, "size", request, f"body over {job.max_size} bytes, {request.meta['body_cut']}"
            )
            response = response.replace(body=response.body[:job.max_size])
        location = response.headers.get(b"Location")
        if response.status not in REDIRECT_STATUSES or not location or not job.follow_redirects:
            return response
        hops = request.meta.get("redirect_times", 0)
        if hops >= job.max_redirects:
            _limit_reached(self.crawler.stats, "redirects", request, f"more than {job.max_redirects} redirects")
            return response
        target = urljoin(response.url, location.decode("latin-1"))
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
        return await self.crawler.engine.download_async(redirected)

    def process_exception(self, request: Request, exception: Exception):
        if "frontier_entry" in request.meta and isinstance(exception, (DownloadTimeoutError, TwistedTimeoutError)):
            timeout = _job(self.crawler).timeout
            _limit_reached(self.crawler.stats, "time", request, f"no complete answer within {timeout:g} s")
        return None


class BoundedHttpCompressionMiddleware(HttpCompressionMiddleware):
    """Scrapy's decompression, which stops at the request's ``download_maxsize``; a bomb is counted and logged.

    Without the bound a small gzip or brotli answer could inflate to gigabytes
    in memory. Scrapy drops such a response; here it goes on with an empty
    body, so the URL counts as fetched (its status and headers are real)
    instead of as a failure to retry.
    """

    def process_response(self, request: Request, response: Response):
        try:
            return super().process_response(request, response)
        except IgnoreRequest as e:
            if not isinstance(e.__cause__, _DecompressionMaxSizeExceeded) or "frontier_entry" not in request.meta:
                raise
            limit = request.meta.get("download_maxsize", self._max_size)
            _limit_reached(
                self.stats, "decompressed_size", request,
                f"{len(response.body)} compressed bytes inflate past {limit} bytes; body dropped",
            )
            response.headers.pop(b"Content-Encoding", None)
            return response.replace(body=b"")
