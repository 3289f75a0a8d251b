"""Refuse a request whose URL the job's rules reject."""

from __future__ import annotations

from scrapy import Request

from combine_scrapy.access.urls import check_url
from combine_scrapy.context import CrawlComponent
from combine_scrapy.exceptions import UrlRejected


class UrlRulesMiddleware(CrawlComponent):
    """Refuse a request whose URL the job's rules reject; a non-canonical URL goes back to the scheduler."""

    def process_request(self, request: Request) -> Request | None:
        if request.meta.get("dont_obey_robotstxt"):
            return None
        verdict = check_url(request.url, self.context.job.url_rules)
        if not verdict.ok:
            self.crawler.stats.inc_value(f"urls/rejected/{verdict.reason}")
            raise UrlRejected(f"{verdict.reason}: {request.url}")
        if verdict.url != request.url:
            return request.replace(url=verdict.url)
        return None
