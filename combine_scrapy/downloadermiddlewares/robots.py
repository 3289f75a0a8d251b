"""Obey robots.txt: read once a host, cached in the frontier."""

from __future__ import annotations

import logging
import time
from typing import Self
from urllib.parse import urljoin, urlsplit

from scrapy import Request, Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import StopDownload

from combine_scrapy.access.politeness import OVERLOAD_STATUSES, parse_retry_after
from combine_scrapy.access.robots import MAX_BODY_BYTES, RobotsPolicy, policy_from_response
from combine_scrapy.access.urls import host_of
from combine_scrapy.context import CrawlComponent
from combine_scrapy.exceptions import RobotsDisallowed, RobotsPending, RobotsUnavailable
from combine_scrapy.frontier import RobotsCache, UrlQueue
from combine_scrapy.siderequests import side_request
from combine_scrapy.signals import ROBOTS_FETCHED

logger = logging.getLogger(__name__)


#: robots.txt redirects followed at most, as RFC 9309 asks.
ROBOTS_MAX_REDIRECTS = 5


class RobotsMiddleware(CrawlComponent):
    """Obey robots.txt, read once per host and cached in the frontier across runs.

    A host's robots.txt is itself a request to the host, so the page that
    caused it is put off to the host's next turn instead of following at once:
    no two requests to a host come closer than WaitIntervalHost.

    A robots.txt answered 429 or 503 with a ``Retry-After`` closes the host
    until then, not for a day: the answer is kept in this harvester's memory
    that long (not in the frontier), the page is put off, and the frontier
    holds the host until then (FrontierPipeline releases it at the host's
    next turn, which the Retry-After set).
    """

    DOWNLOAD_PRIORITY = 1000

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        # host -> (policy, whether the site is available, until when, whether a Retry-After holds it until then)
        self._policies: dict[str, tuple[RobotsPolicy, bool, float, bool]] = {}
        self._robots_redirects: dict[str, tuple[str, int]] = {}  # host -> (robots.txt URL to read next, hops so far)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        middleware = super().from_crawler(crawler)
        crawler.signals.connect(middleware._robots_bytes_received, signal=signals.bytes_received)
        return middleware

    def _robots_bytes_received(self, data: bytes, request: Request, spider: Spider) -> None:
        """Stop reading a robots.txt past MAX_BODY_BYTES and keep what came (RFC 9309 2.5)."""
        if "robots_bytes" not in request.meta:
            return
        request.meta["robots_bytes"] += len(data)
        if request.meta["robots_bytes"] > MAX_BODY_BYTES:
            self.crawler.stats.inc_value("robots/truncated")
            raise StopDownload(fail=False)

    async def process_request(self, request: Request) -> None:
        if request.meta.get("dont_obey_robotstxt"):
            return None
        host = host_of(request.url)
        now = time.time()
        cached = self._cached(host, now)
        if cached is None:
            status, body, retry_after = await self._read_robots(host, request.url)
            cached = self._remember(host, status, body, now, retry_after=retry_after)
            self.crawler.signals.send_catch_log(ROBOTS_FETCHED, page_url=request.url, status=status, body=body, policy=cached[0])
            raise RobotsPending(f"robots.txt of {host} read first")
        policy, available, held = cached
        if held:
            raise RobotsPending(f"robots.txt of {host} asked to wait (Retry-After)")
        if not available:
            self.crawler.stats.inc_value("robots/unavailable")
            raise RobotsUnavailable(f"robots.txt of {host} unavailable")
        if not policy.allowed(request.url):
            self.crawler.stats.inc_value("robots/disallowed")
            raise RobotsDisallowed(f"forbidden by robots.txt: {request.url}")
        return None

    def _cached(self, host: str, now: float) -> tuple[RobotsPolicy, bool, bool] | None:
        cached = self._policies.get(host)
        if cached and cached[2] > now:
            return cached[0], cached[1], cached[3]
        cache: RobotsCache = self.context.frontier
        stored = cache.robots(host, now)
        if stored is None:
            return None
        return self._remember(host, *stored, now, store=False)

    def _remember(
        self, host: str, status: int | None, body: bytes | None, now: float, store: bool = True,
        retry_after: float | None = None,
    ) -> tuple[RobotsPolicy, bool, bool]:
        """Parse and cache a robots.txt answer; a 5xx, 429 or no answer leaves the site unavailable.

        With ``retry_after`` (a 429 or 503 that said when to come back) the answer is kept that long, here only.
        """
        context = self.context
        cache: RobotsCache = context.frontier
        queue: UrlQueue = context.frontier  # the host's delay (Crawl-delay) is the queue's to keep
        policy = policy_from_response(status, body, context.job.fetching.user_agent)
        # Re-read after Combine's 1 or 4 days, or sooner when the job locks robots rules for less.
        ttl = min(policy.ttl, context.job.locks.robot_rules)
        held = retry_after is not None
        delay = context.pace.set_crawl_delay(host, policy.crawl_delay)
        if retry_after is not None:
            ttl = retry_after
            self.crawler.stats.inc_value("robots/retry_after")
            logger.info("robots.txt of %s answered %s: read again in %g s (Retry-After); its pages wait", host, status,
                        retry_after)
        if store and not held:
            cache.store_robots(host, status, body, now + ttl, host_delay=delay)
        else:
            queue.set_host_delay(host, delay)
        available = status is not None and status < 500 and status != 429
        self._policies[host] = (policy, available, now + ttl, held)
        return policy, available, held

    async def _read_robots(self, host: str, page_url: str) -> tuple[int | None, bytes | None, float | None]:
        """Fetch robots.txt, or the next of up to five redirects it leads to: status, body and the seconds a
        429 or 503 asked to wait (Retry-After); (None, None, None) when unreachable.

        The page came from the frontier, which hands out a host once a turn, so
        a redirect is not followed at once, which would be a second request to
        the host within WaitIntervalHost: its target is kept and fetched on the
        host's next turn (RobotsPending puts the page off).
        """
        parts = urlsplit(page_url)
        url, hops = self._robots_redirects.pop(host, (f"{parts.scheme}://{parts.netloc}/robots.txt", 0))
        if not hops:
            self.crawler.stats.inc_value("robots/requests")
        request = side_request(url, self.DOWNLOAD_PRIORITY, self.context.job.fetching.timeout, robots_bytes=0)
        try:
            response = await self.crawler.engine.download_async(request)
        except Exception as e:  # any download failure means "unreachable"
            logger.info("robots.txt %s unreachable: %s", url, e)
            return None, None, None
        location = response.headers.get(b"Location")
        if response.status not in (301, 302, 303, 307, 308) or not location:
            self.crawler.stats.inc_value(f"robots/status/{response.status}")
            retry_after = None
            if response.status in OVERLOAD_STATUSES:  # HostPacingMiddleware has held the host as it asks
                header = response.headers.get(b"Retry-After")
                retry_after = parse_retry_after(header.decode("latin-1") if header else None, time.time())
            return response.status, response.body, retry_after
        if hops == ROBOTS_MAX_REDIRECTS:
            logger.info("robots.txt %s: too many redirects", page_url)
            return None, None, None
        target = urljoin(url, location.decode("latin-1"))
        self._robots_redirects[host] = (target, hops + 1)
        self.crawler.stats.inc_value("robots/redirect_deferred")
        raise RobotsPending(f"robots.txt of {host} redirects to {target}: read on the host's next turn")
