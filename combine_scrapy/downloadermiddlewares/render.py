"""Render a fetched page in the browser when the job asks for it: a thin downloader middleware over scrapy-playwright.

A page is first fetched as any other (Scrapy's HTTP handler). When its answer
is an HTML page (200, GET) that shows the signs of a script-built page
(``Render = auto``, :mod:`combine_scrapy.render.detect`) or any HTML page
(``Render = always``), on a host the ``<render>`` rules name and that has not
been given up, it is requested once more with ``meta["playwright"] = True``:
scrapy-playwright loads it in Chromium, and the rendered DOM replaces the
fetched body for the pipelines (parsed, scored, stored). The render request
goes through every downloader middleware again: URL rules, address guard,
robots.txt, and the host's turn (a render is one more fetch of its host; when
its host is not free within the lease it is not made now). Its answer's
status and Retry-After adapt the host's pace as any answer does.

Every request the browser makes while it renders (scripts, XHR, frames,
redirects) passes a page route before scrapy-playwright's own: the job's URL
rules and address guard (:mod:`combine_scrapy.render.guard`), robots.txt as
the crawl has read it (a host whose robots.txt the crawl has not read is not
loaded), and, for another host than the page's, that host's turn (taken when
it is free, else the request is aborted). Requests to the page's own host
share the render's turn. Each aborted request is counted
(``render/blocked/<reason>``).

Counted: ``render/auto`` (and ``render/auto/<sign>``), ``render/always``,
``render/skipped/<reason>`` (a page that would be rendered and was not),
``render/failed/<reason>`` (the fetched page is kept), ``render/host_given_up``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict
from typing import Any
from urllib.parse import urlsplit

from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse, Response
from scrapy.utils.datatypes import LocalCache

from combine_scrapy.access.addresses import Address, parse_ip
from combine_scrapy.access.robots import RobotsPolicy, policy_from_response
from combine_scrapy.access.urls import host_of
from combine_scrapy.context import CrawlComponent
from combine_scrapy.exceptions import HopDeferred
from combine_scrapy.render import CONTEXT, CONTEXT_OPTIONS, ENABLED, RENDERED, SETTLE_SECONDS, failure_reason
from combine_scrapy.render.detect import HostRenderLedger, PageShape, brought_something, page_shape, script_built
from combine_scrapy.render.guard import IN_BROWSER_SCHEMES, address_refusal, scheme_of, static_refusal

logger = logging.getLogger(__name__)


class RenderMiddleware(CrawlComponent):
    """Render the HTML pages the job wants rendered, once each, and guard what the browser loads."""

    def __init__(self, crawler: Any) -> None:
        super().__init__(crawler)
        self.ledger = HostRenderLedger()
        self._host_slots: dict[str, asyncio.Semaphore] = defaultdict(self._host_semaphore)
        self._robots: LocalCache[str, tuple[RobotsPolicy, bool, float]] = LocalCache(10_000)
        self._resolved: LocalCache[str, list[Address]] = LocalCache(10_000)

    def _host_semaphore(self) -> asyncio.Semaphore:
        return asyncio.Semaphore(self.context.job.rendering.max_pages_per_host)

    async def process_response(self, request: Request, response: Response) -> Response:
        rendering = self.context.job.rendering
        if (
            rendering.mode == "never"
            or request.meta.get("playwright")
            or "frontier_entry" not in request.meta
            or request.method != "GET"
            or response.status != 200
            or not isinstance(response, HtmlResponse)
        ):
            return response
        shape: PageShape | None = None
        if rendering.mode == "auto":
            shape = page_shape(response.text)
            sign = script_built(shape)
            if sign is None:
                return response
        else:
            sign = None
        host = host_of(response.url)
        skipped = None
        if not self.crawler.settings.getbool(ENABLED):
            skipped = "no_browser"
        elif not rendering.renders(response.url, (urlsplit(response.url).hostname or "").rstrip(".")):
            skipped = "rules"
        elif not self.ledger.renders(host):
            skipped = "given_up"
        if skipped:
            self.stats.inc_value(f"render/skipped/{skipped}")
            return response
        async with self._host_slots[host]:
            rendered = await self._render(request, response)
        if rendered is None:
            return response
        self.stats.inc_value("render/auto" if sign else "render/always")
        if sign:
            self.stats.inc_value(f"render/auto/{sign}")
        fetched = shape or page_shape(response.text, skip_without_scripts=False)
        fruitful = brought_something(fetched, page_shape(rendered.text, skip_without_scripts=False))
        if self.ledger.record(host, fruitful):
            self.stats.inc_value("render/host_given_up")
            logger.info("host %s: its last %d renders showed nothing the fetched pages did not: no longer rendered",
                        host, self.ledger.limit)
        # The page's own URL: a script may have moved the browser's address elsewhere (history.pushState). The flag
        # tells the spider, and through it the page's record, that what is parsed is the rendered page.
        return rendered.replace(url=response.url, flags=[*rendered.flags, RENDERED])

    async def _render(self, request: Request, response: Response) -> HtmlResponse | None:
        """The page rendered, or None (counted and logged) when it was not: the fetched page is kept."""
        rendering = self.context.job.rendering
        render_request = request.replace(
            url=response.url,
            meta={
                **request.meta,
                "playwright": True,
                "playwright_context": CONTEXT,
                "playwright_context_kwargs": CONTEXT_OPTIONS,
                "playwright_page_init_callback": self._guard_page,
                "playwright_page_goto_kwargs": {"wait_until": "load", "timeout": rendering.timeout * 1000},
                "playwright_page_methods": [_settle(min(SETTLE_SECONDS, rendering.timeout))],
                "render_of": response.url,
            },
        )
        try:
            rendered = await self.crawler.engine.download_async(render_request)
        except HopDeferred as e:
            self.stats.inc_value("render/skipped/host_busy")
            logger.info("render of %s not made now (%s): the fetched page is kept", response.url, e)
            return None
        except IgnoreRequest as e:
            self.stats.inc_value("render/skipped/refused")
            logger.info("render of %s refused: %s", response.url, e)
            return None
        except Exception as e:  # the browser failed: timeout, crash, navigation error
            reason = failure_reason(e)
            self.stats.inc_value(f"render/failed/{reason}")
            logger.warning("render of %s failed (%s): %s; the fetched page is kept", response.url, reason, str(e).splitlines()[0][:300])
            return None
        if rendered.status != 200 or not isinstance(rendered, HtmlResponse):
            self.stats.inc_value("render/failed/status")
            logger.warning("render of %s answered %d (%s); the fetched page is kept", response.url, rendered.status,
                           type(rendered).__name__)
            return None
        return rendered

    # -- what the browser may load -------------------------------------------------------------------------

    async def _guard_page(self, page: Any, request: Request) -> None:
        """scrapy-playwright's page init callback: a route that runs before its own on every request of the page."""
        page_url = request.url
        page_host = host_of(page_url)

        async def route(route: Any, browser_request: Any) -> None:
            reason = await self._refusal(browser_request.url, browser_request.resource_type, page_url, page_host)
            if reason is None:
                await route.fallback()
                return
            self.stats.inc_value(f"render/blocked/{reason}")
            logger.debug("render of %s: %s %s not loaded (%s)", page_url, browser_request.resource_type, browser_request.url, reason)
            await route.abort("blockedbyclient")

        await page.route("**", route)

    async def _refusal(self, url: str, resource_type: str, page_url: str, page_host: str) -> str | None:
        context = self.context
        if scheme_of(url) in IN_BROWSER_SCHEMES:
            return None
        reason = static_refusal(url, resource_type, page_url, context.job.url_rules, context.addresses)
        if reason is not None:
            return reason
        host = host_of(url)
        hostname = (urlsplit(url).hostname or "").rstrip(".")
        if parse_ip(hostname) is None and not context.addresses.trusts(url):
            reason = address_refusal(url, context.addresses, await self._addresses(hostname))
            if reason is not None:
                return reason
        now = time.time()
        policy, available = self._robots_of(host, now)
        if policy is None:
            return "robots_unknown"
        if not available or not policy.allowed(url):
            return "robots"
        if host != page_host:
            if context.pace.next_turn(host) > now:
                return "host_busy"
            context.pace.reserve(host, now)
        return None

    def _robots_of(self, host: str, now: float) -> tuple[RobotsPolicy | None, bool]:
        """The robots.txt the crawl has read for ``host`` (None when it has not), and whether the host is open."""
        cached = self._robots.get(host)
        if cached and cached[2] > now:
            return cached[0], cached[1]
        stored = self.context.frontier.robots(host, now)
        if stored is None:
            return None, False
        status, body = stored
        policy = policy_from_response(status, body, self.context.job.fetching.user_agent)
        available = status is not None and status < 500 and status != 429
        self._robots[host] = (policy, available, now + min(policy.ttl, 3600))
        return policy, available

    async def _addresses(self, hostname: str) -> list[Address]:
        if hostname not in self._resolved:
            try:
                infos = await asyncio.get_running_loop().getaddrinfo(hostname, None)
            except OSError:
                infos = []
            self._resolved[hostname] = [address for info in infos if (address := parse_ip(str(info[4][0]))) is not None]
        return self._resolved[hostname]


def _settle(seconds: float) -> Any:
    """A page method: wait up to ``seconds`` for the page's network to fall quiet (its scripts' requests done)."""
    from scrapy_playwright.page import PageMethod

    async def settle(page: Any) -> None:
        try:
            await page.wait_for_load_state("networkidle", timeout=seconds * 1000)
        except Exception:  # still busy (a polling page): render what it shows now
            logger.debug("page %s still loading after %g s: rendered as it is", page.url, seconds)

    return PageMethod(settle)
