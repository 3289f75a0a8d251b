"""Keep a host's fetches apart: each request waits for its host's turn."""

from __future__ import annotations

import logging
import time

from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from scrapy.utils.asyncio import sleep

from combine_scrapy.access.politeness import OVERLOAD_STATUSES, parse_retry_after
from combine_scrapy.access.urls import host_of
from combine_scrapy.context import CrawlComponent
from combine_scrapy.downloadermiddlewares.requestkind import extra_turn, request_kind
from combine_scrapy.exceptions import HopDeferred
from combine_scrapy.frontier import UrlQueue

logger = logging.getLogger(__name__)


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

    async def process_request(self, request: Request) -> None:
        context, host, now = self.context, host_of(request.url), time.time()
        queue: UrlQueue = context.frontier
        hop = extra_turn(request)
        wait = context.pace.next_turn(host) - now
        if wait > context.policy.lease_seconds:
            if hop:
                raise HopDeferred(f"{host} is not free for {wait:.1f} s")
            # The frontier handed the host out, so what holds it here is something the frontier was not told
            # (a Retry-After on a robots.txt answer): wait no longer than the fetch's lease.
            logger.info("%s %s: its host is held for %.1f s more; it goes in %g s", request_kind(request),
                        request.url, wait, context.policy.lease_seconds)
            self.stats.inc_value("politeness/wait_cut")
        turn = context.pace.reserve(host, now, latest=now + context.policy.lease_seconds)
        if turn > now:
            if hop:
                queue.lock_host(host, turn + context.policy.lease_seconds)
            self.stats.inc_value("politeness/waited")
            logger.debug("%s %s waits %.2f s for its host's turn", request_kind(request), request.url, turn - now)
            await sleep(turn - now)
        return None

    def process_response(self, request: Request, response: Response) -> Response:
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

    def process_exception(self, request: Request, exception: Exception) -> None:
        if isinstance(exception, IgnoreRequest):  # refused before it went out
            return None
        now = time.time()
        host = host_of(request.url)
        self._after_answer(request, host, now, self.context.pace.answered(host, now, None).report)
        return None

    def _after_answer(self, request: Request, host: str, now: float, report: bool) -> None:
        context = self.context
        queue: UrlQueue = context.frontier
        if report:
            delay = context.pace.delay(host)
            queue.set_host_delay(host, delay)
            self.stats.inc_value("politeness/interval_raised" if delay else "politeness/interval_restored")
            if delay:
                logger.info("host %s: interval now %.1f s (slow or overloaded)", host, delay)
            else:
                logger.info("host %s: interval back to WaitIntervalHost", host)
        if extra_turn(request):  # the frontier did not hand this host out: keep it off until its turn
            queue.lock_host(host, context.pace.next_turn(host))
