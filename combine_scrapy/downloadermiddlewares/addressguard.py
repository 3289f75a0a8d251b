"""Refuse requests to non-public addresses and to schemes the job does not fetch."""

from __future__ import annotations

import logging
from urllib.parse import urlsplit
from urllib.request import getproxies, proxy_bypass

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.utils.datatypes import LocalCache
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IAddress, IHostResolution, IResolutionReceiver
from zope.interface import implementer

from combine_scrapy.access.addresses import PRIVATE_ADDRESS, Address, parse_ip, scheme_refusal
from combine_scrapy.access.urls import SCHEME, SCHEMES, WEB_SCHEMES
from combine_scrapy.context import CrawlComponent
from combine_scrapy.downloadermiddlewares.requestkind import request_kind
from combine_scrapy.exceptions import PrivateAddressRefused, SchemeRefused

logger = logging.getLogger(__name__)


@implementer(IResolutionReceiver)
class _Addresses:
    """Collects a name's addresses from the reactor's resolver into a Deferred."""

    def __init__(self) -> None:
        self.addresses: list[Address] = []
        self.done: Deferred[list[Address]] = Deferred()

    def resolutionBegan(self, resolution: IHostResolution) -> None:
        pass

    def addressResolved(self, address: IAddress) -> None:
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

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self._resolved: LocalCache[str, list[Address]] = LocalCache(10_000)
        self._proxies = getproxies()  # read once, as Scrapy's HttpProxyMiddleware does

    async def process_request(self, request: Request) -> None:
        refusal = scheme_refusal(request.url, _schemes(request))
        if refusal is not None:
            self.crawler.stats.inc_value(f"urls/rejected/{SCHEME}")
            logger.warning("refused %s %s: %s", request_kind(request), request.url[:200], refusal)
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
        logger.info("refused %s %s: %s, and the job does not name the host", request_kind(request), request.url, refusal)
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
