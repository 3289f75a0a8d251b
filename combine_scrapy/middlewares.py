"""Downloader middlewares: the guards every request passes, whichever way it entered.

URL rules and robots.txt are pure code (:mod:`combine_scrapy.access.urls`,
:mod:`combine_scrapy.access.robots`); these classes only apply them to requests and
count what they refuse in the crawl's stats.
"""

from __future__ import annotations

import logging
import time
from urllib.parse import urljoin, urlsplit
from urllib.request import getproxies, proxy_bypass

from scrapy import Request, signals
from scrapy.downloadermiddlewares.httpcompression import HttpCompressionMiddleware
from scrapy.exceptions import DownloadTimeoutError, IgnoreRequest, StopDownload
from scrapy.http import Response
from scrapy.utils._compression import _DecompressionMaxSizeExceeded
from scrapy.utils.asyncio import sleep
from scrapy.utils.datatypes import LocalCache
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred
from twisted.internet.error import TimeoutError as TwistedTimeoutError
from twisted.internet.interfaces import IResolutionReceiver
from zope.interface import implementer

from combine_scrapy.access.addresses import PRIVATE_ADDRESS, Address, parse_ip, scheme_refusal
from combine_scrapy.access.politeness import OVERLOAD_STATUSES, parse_retry_after
from combine_scrapy.access.robots import MAX_BODY_BYTES, RobotsPolicy, policy_from_response
from combine_scrapy.access.urls import SCHEME, SCHEMES, WEB_SCHEMES, check_url, host_of
from combine_scrapy.context import CrawlComponent
from combine_scrapy.siderequests import side_request

logger = logging.getLogger(__name__)

#: robots.txt redirects followed at most, as RFC 9309 asks.
ROBOTS_MAX_REDIRECTS = 5
REDIRECT_STATUSES = (301, 302, 303, 307, 308)


#: Signal sent with each robots.txt answer read from the network: ``page_url`` (the request that needed it),
#: ``status`` and ``body`` (None when unreachable) and the ``policy`` parsed from them (the sitemap reader listens).
ROBOTS_FETCHED = object()


class UrlRejected(IgnoreRequest):
    """The URL fails the job's canonicalization or allow/exclude rules."""


class PrivateAddressRefused(UrlRejected):
    """The host is, or resolves to, a non-public address the job does not name (see :mod:`combine_scrapy.access.addresses`)."""


class SchemeRefused(UrlRejected):
    """A request's scheme is not on the allow-list (:func:`combine_scrapy.access.addresses.scheme_refusal`)."""


class RedirectRefused(UrlRejected):
    """A redirect leads to a scheme the crawler does not follow (ftp:, javascript:, mailto:, data:)."""


class HopDeferred(IgnoreRequest):
    """A redirect's next host will not be free within the fetch's lease: the hop is not made now."""


class RobotsDisallowed(IgnoreRequest):
    """robots.txt forbids the URL."""


class RobotsUnavailable(IgnoreRequest):
    """robots.txt could not be read (5xx, unreachable): the site counts as closed for now."""


class RobotsPending(IgnoreRequest):
    """robots.txt was just read; the page waits for the host's next turn."""


class UrlRulesMiddleware(CrawlComponent):
    """Refuse a request whose URL the job's rules reject; a non-canonical URL goes back to the scheduler."""

    def process_request(self, request: Request):
        if request.meta.get("dont_obey_robotstxt"):
            return None
        verdict = check_url(request.url, self.context.job.url_rules)
        if not verdict.ok:
            self.crawler.stats.inc_value(f"urls/rejected/{verdict.reason}")
            raise UrlRejected(f"{verdict.reason}: {request.url}")
        if verdict.url != request.url:
            return request.replace(url=verdict.url)
        return None


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

    def __init__(self, crawler):
        super().__init__(crawler)
        # host -> (policy, whether the site is available, until when, whether a Retry-After holds it until then)
        self._policies: dict[str, tuple[RobotsPolicy, bool, float, bool]] = {}
        self._robots_redirects: dict[str, tuple[str, int]] = {}  # host -> (robots.txt URL to read next, hops so far)

    @classmethod
    def from_crawler(cls, crawler):
        middleware = super().from_crawler(crawler)
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
        stored = self.context.frontier.robots(host, now)
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
        policy = policy_from_response(status, body, context.job.fetching.user_agent)
        # Re-read after Combine's 1 or 4 days, or sooner when the job locks robots rules for less.
        ttl = min(policy.ttl, context.job.locks.robot_rules)
        held = retry_after is not None
        if retry_after is not None:
            ttl = retry_after
            self.crawler.stats.inc_value("robots/retry_after")
            logger.info("robots.txt of %s answered %s: read again in %g s (Retry-After); its pages wait", host, status,
                        retry_after)
        elif store:
            context.frontier.store_robots(host, status, body, now + ttl)
        context.frontier.set_host_delay(host, context.pace.set_crawl_delay(host, policy.crawl_delay))
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


def _request_kind(request: Request) -> str:
    """What a request is, for log lines: a page, a followed redirect's hop, a page's render or a robots.txt."""
    if "robots_bytes" in request.meta:
        return "robots.txt"
    if "render_of" in request.meta:
        return "render"
    return "redirect" if "redirect_times" in request.meta else "page"


def _extra_turn(request: Request) -> bool:
    """Whether the request is a second fetch of its host for one frontier URL: a redirect's hop, or a render."""
    return "redirect_times" in request.meta or "render_of" in request.meta


@implementer(IResolutionReceiver)
class _Addresses:
    """Collects a name's addresses from the reactor's resolver into a Deferred."""

    def __init__(self):
        self.addresses: list[Address] = []
        self.done: Deferred[list[Address]] = Deferred()

    def resolutionBegan(self, resolution) -> None:
        pass

    def addressResolved(self, address) -> None:
        parsed = parse_ip(getattr(address, "host", ""))
        if parsed is not None:
            self.addresses.append(parsed)

    def resolutionComplete(self) -> None:
        self.done.callback(self.addresses)


def _schemes(request: Request) -> tuple[str, ...]:
    """The schemes a request may have: a URL the job marked may be ftp, a redirect's hop, robots.txt or sitemap not."""
    return SCHEMES if "frontier_entry" in request.meta and "redirect_times" not in request.meta else WEB_SCHEMES


class AddressGuardMiddleware(CrawlComponent):
    """Refuse requests with a scheme off the allow-list, and to loopback, private and link-local addresses on
    hosts the job does not name.

    Every request the crawl makes passes here: pages, followed redirects,
    robots.txt and its redirects, sitemaps. The scheme is checked first and
    whatever AllowPrivateAddresses says (``file:`` never). A host written
    as an address is judged as written (every spelling the resolver accepts),
    a name by what the reactor's resolver gives for it. That resolver is the
    one the download connects through and Scrapy caches its answers, so the
    address judged is the address fetched. Names are remembered per host.
    A name fetched through an HTTP proxy (``http_proxy``) is the proxy's to
    resolve, and is not resolved here.
    """

    def __init__(self, crawler):
        super().__init__(crawler)
        self._resolved: LocalCache[str, list[Address]] = LocalCache(10_000)
        self._proxies = getproxies()  # read once, as Scrapy's HttpProxyMiddleware does

    async def process_request(self, request: Request):
        refusal = scheme_refusal(request.url, _schemes(request))
        if refusal is not None:
            self.crawler.stats.inc_value(f"urls/rejected/{SCHEME}")
            logger.warning("refused %s %s: %s", _request_kind(request), request.url[:200], refusal)
            raise SchemeRefused(f"{SCHEME}: {request.url[:200]}: {refusal}")
        policy = self.context.addresses
        if policy.trusts(request.url):
            return None
        parts = urlsplit(request.url)
        host = (parts.hostname or "").rstrip(".")
        proxied = "proxy" in request.meta or (parts.scheme in self._proxies and not proxy_bypass(host))
        addresses = [] if parse_ip(host) is not None or proxied else await self._addresses(host)
        refusal = policy.refusal(request.url, addresses)
        if refusal is None:
            return None
        self.crawler.stats.inc_value(f"urls/rejected/{PRIVATE_ADDRESS}")
        logger.info("refused %s %s: %s, and the job does not name the host", _request_kind(request), request.url, refusal)
        raise PrivateAddressRefused(f"{PRIVATE_ADDRESS}: {request.url}: {refusal}")

    async def _addresses(self, host: str) -> list[Address]:
        """The addresses ``host`` resolves to (none when it does not resolve: the download fails on its own)."""
        if host in self._resolved:
            return self._resolved[host]
        from twisted.internet import reactor

        receiver = _Addresses()
        reactor.nameResolver.resolveHostName(receiver, host)
        addresses = await maybe_deferred_to_future(receiver.done)
        self._resolved[host] = addresses
        return addresses


class HostPacingMiddleware(CrawlComponent):
    """Every request waits its host's turn, and a struggling host gets more time (:mod:`combine_scrapy.access.politeness`).

    The frontier hands out a host once per interval; what it does not hand
    out (a followed redirect's hop, a page's render, a robots.txt request) waits here for the
    host's next turn as this harvester knows it, and a hop locks its host in
    the frontier while it waits and after its answer. A hop whose host is not
    free within the fetch's lease is not made (:class:`HopDeferred`): the
    redirect's target is then marked as a new URL. Each answer adapts the
    host's interval: a 429 or 503 backs it off and its Retry-After holds it,
    a slow answer stretches it, and the frontier's host delay follows.
    """

    async def process_request(self, request: Request):
        context, host, now = self.context, host_of(request.url), time.time()
        hop = _extra_turn(request)
        wait = context.pace.next_turn(host) - now
        if wait > context.lease_seconds:
            if hop:
                raise HopDeferred(f"{host} is not free for {wait:.1f} s")
            # The frontier handed the host out, so what holds it here is something the frontier was not told
            # (a Retry-After on a robots.txt answer): wait no longer than the fetch's lease.
            logger.info("%s %s: its host is held for %.1f s more; it goes in %g s", _request_kind(request),
                        request.url, wait, context.lease_seconds)
            self.stats.inc_value("politeness/wait_cut")
        turn = context.pace.reserve(host, now, latest=now + context.lease_seconds)
        if turn > now:
            if hop:
                context.frontier.lock_host(host, turn + context.lease_seconds)
            self.stats.inc_value("politeness/waited")
            logger.debug("%s %s waits %.2f s for its host's turn", _request_kind(request), request.url, turn - now)
            await sleep(turn - now)
        return None

    def process_response(self, request: Request, response: Response):
        now = time.time()
        host, pace = host_of(request.url), self.context.pace
        retry_after = None
        if response.status in OVERLOAD_STATUSES:
            header = response.headers.get(b"Retry-After")
            text = header.decode("latin-1") if header else None
            retry_after = parse_retry_after(text, now)
            if text and retry_after is None:
                self.stats.inc_value("politeness/retry_after_ignored")
                logger.info("%s: ignored Retry-After %r (neither seconds nor an HTTP date)", request.url, text[:100])
        answer = pace.answered(host, now, response.status, request.meta.get("download_latency"), retry_after)
        if answer.overloaded:
            self.stats.inc_value("politeness/overloaded")
            held = f", held {answer.retry_after:g} s by Retry-After" if answer.retry_after is not None else ""
            logger.info("host %s answered %d to %s: interval %.1f s%s", host, response.status, request.url, answer.interval, held)
            if answer.retry_after is not None:
                self.stats.inc_value("politeness/retry_after")
        self._after_answer(request, host, now, answer.report)
        return response

    def process_exception(self, request: Request, exception: Exception):
        if isinstance(exception, IgnoreRequest):  # refused before it went out
            return None
        now = time.time()
        host = host_of(request.url)
        self._after_answer(request, host, now, self.context.pace.answered(host, now, None).report)
        return None

    def _after_answer(self, request: Request, host: str, now: float, report: bool) -> None:
        context = self.context
        if report:
            delay = context.pace.delay(host)
            context.frontier.set_host_delay(host, delay)
            self.stats.inc_value("politeness/interval_raised" if delay else "politeness/interval_restored")
            if delay:
                logger.info("host %s: interval now %.1f s (slow or overloaded)", host, delay)
            else:
                logger.info("host %s: interval back to WaitIntervalHost", host)
        if _extra_turn(request):  # the frontier did not hand this host out: keep it off until its turn
            context.frontier.lock_host(host, context.pace.next_turn(host))


class JobHeadersMiddleware(CrawlComponent):
    """Send the job's User-Agent and the operator's e-mail in From, as Combine did."""

    def process_request(self, request: Request):
        job = self.context.job
        request.headers.setdefault(b"User-Agent", job.fetching.user_agent)
        if job.fetching.operator_email:
            request.headers.setdefault(b"From", job.fetching.operator_email)
        return None


def _limit_reached(stats, limit: str, request: Request, detail: str) -> None:
    """Count a fetch limit that bit (``fetch/limit/<limit>``) and say so in the log, naming the URL.

    The URL is the frontier's; a redirect followed on the way is named too.
    """
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
    def from_crawler(cls, crawler):
        middleware = super().from_crawler(crawler)
        crawler.signals.connect(middleware._headers_received, signal=signals.headers_received)
        crawler.signals.connect(middleware._bytes_received, signal=signals.bytes_received)
        return middleware

    def process_request(self, request: Request):
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
        job = self.context.job
        if "body_cut" in request.meta:
            _limit_reached(
                self.crawler.stats, "size", request, f"body over {job.fetching.max_size} bytes, {request.meta['body_cut']}"
            )
            response = response.replace(body=response.body[:job.fetching.max_size])
        location = response.headers.get(b"Location")
        if response.status not in REDIRECT_STATUSES or not location or not job.fetching.follow_redirects:
            return response
        hops = request.meta.get("redirect_times", 0)
        if hops >= job.fetching.max_redirects:
            _limit_reached(self.crawler.stats, "redirects", request, f"more than {job.fetching.max_redirects} redirects")
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

    def process_exception(self, request: Request, exception: Exception):
        if "frontier_entry" in request.meta and isinstance(exception, (DownloadTimeoutError, TwistedTimeoutError)):
            timeout = self.context.job.fetching.timeout
            _limit_reached(self.crawler.stats, "time", request, f"no complete answer within {timeout:g} s")
        return None


class BoundedHttpCompressionMiddleware(HttpCompressionMiddleware):
    """Scrapy's decompression, which stops at the request's ``download_maxsize``; a bomb is counted and logged.

    Without the bound a small gzip or brotli answer could inflate to gigabytes
    in memory. Scrapy drops such a response; here it goes on with an empty
    body, so the URL counts as fetched (its status and headers are real)
    instead of as a failure to retry. A body that is not what its
    Content-Encoding says (plain HTML sent as gzip) is read as it came,
    counted as ``fetch/undecodable``: the server would send the same again.
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
        except Exception as e:  # the body is not what Content-Encoding says (gzip, br, zstd, deflate)
            if "frontier_entry" not in request.meta:
                raise
            encoding = b", ".join(response.headers.getlist(b"Content-Encoding")).decode("latin-1")
            self.stats.inc_value("fetch/undecodable")
            logger.warning("%s: body is not %s as Content-Encoding says (%s); read as it came", request.url, encoding, e)
            response.headers.pop(b"Content-Encoding", None)
            return response
