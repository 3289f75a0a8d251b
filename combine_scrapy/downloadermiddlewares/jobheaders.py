"""The job's request headers (User-Agent, From, Accept-Language...)."""

from __future__ import annotations

from scrapy import Request

from combine_scrapy.context import CrawlComponent


class JobHeadersMiddleware(CrawlComponent):
    """Send the job's User-Agent and the operator's e-mail in From, as Combine did."""

    def process_request(self, request: Request) -> None:
        job = self.context.job
        request.headers.setdefault(b"User-Agent", job.fetching.user_agent)
        if job.fetching.operator_email:
            request.headers.setdefault(b"From", job.fetching.operator_email)
        return None
