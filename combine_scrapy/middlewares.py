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
from scrapy.exceptions import IgnoreRequest, StopDownload
from scrapy.http.request import NO_CALLBACK

from combine_scrapy.robots import MAX_BODY_BYTES, RobotsPolicy, policy_from_response
from combine_scrapy.urls import check_url, host_of

logger = logging.getLogger(__name__)

#: robots.txt redirects followed at most, as RFC 9309 asks.
ROBOTS_MAX_REDIRECTS = 5


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
            status, body = await self._read_robots(request.url)
            cached = self._remember(host, status, body, now)
            if "frontier_entry" in request.meta:
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

    async def _read_robots(self, page_url: str) -> tuple[int | None, bytes | None]:
        """Fetch robots.txt, following up to five redirects; (None, None) when unreachable."""
        parts = urlsplit(page_url)
        url = f"{parts.scheme}://{parts.netloc}/robots.txt"
        self.crawler.stats.inc_value("robots/requests")
        for _ in range(ROBOTS_MAX_REDIRECTS + 1):
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
            if response.status in (301, 302, 303, 307, 308) and location:
                url = urljoin(url, location.decode("latin-1"))
                continue
            self.crawler.stats.inc_value(f"robots/status/{response.status}")
            return response.status, response.body
        logger.info("robots.txt %s: too many redirects", page_url)
        return None, None


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
