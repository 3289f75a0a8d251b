"""Why the crawl's downloader middlewares refuse or put off a request: each an IgnoreRequest the spider's errback
turns into the fetch's outcome."""

from __future__ import annotations

from scrapy.exceptions import IgnoreRequest


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
