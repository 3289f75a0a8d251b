"""The requests the crawl makes for itself beside the frontier's URLs: a host's robots.txt and its sitemaps.

Both are fetched with the engine's ``download_async`` (no spider callback, no item), past the robots check that
they are part of, with whatever status they get handed back and no redirect followed: the component that asked
reads the answer itself, within the job's fetch timeout.
"""

from __future__ import annotations

from typing import Any

from scrapy import Request
from scrapy.http.request import NO_CALLBACK


def side_request(url: str, priority: int, timeout: float, **meta: Any) -> Request:
    """A side request for ``url`` at download ``priority``, ``timeout`` seconds at most; ``meta`` adds to its meta."""
    return Request(
        url,
        priority=priority,
        callback=NO_CALLBACK,
        meta={
            "dont_obey_robotstxt": True,
            "handle_httpstatus_all": True,
            "dont_redirect": True,
            "download_timeout": timeout,
            **meta,
        },
    )
