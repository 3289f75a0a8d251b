"""What the browser may load while it renders a page: the crawler's own rules, applied to every request it makes.

A page's scripts, frames and redirects make the browser fetch other URLs. Each
goes through the same rules as a URL the crawler fetches itself (pure code
here; :mod:`combine_scrapy.downloadermiddlewares.render` adds robots.txt and
the host's turn, which need the crawl's state):

- images, fonts and media are never loaded (rendering needs the text and links);
- only ``http:`` and ``https:`` go to the network (``data:``, ``blob:`` and
  ``about:`` stay in the browser);
- the job's URL rules (allow, exclude, maxUrlLength, spider traps);
- the address guard (:class:`~combine_scrapy.access.addresses.AddressPolicy`):
  a non-public address only on a host the job names;
- another port of the page's own host counts as another server: refused
  unless the job names that host and port.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from combine_scrapy.access.addresses import PRIVATE_ADDRESS, Address, AddressPolicy, endpoint
from combine_scrapy.access.urls import UrlRules, check_url

#: Resource types (Playwright's ``Request.resource_type``) the browser never loads.
UNLOADED_TYPES = frozenset({"image", "font", "media"})
#: Schemes that make no network request.
IN_BROWSER_SCHEMES = frozenset({"data", "blob", "about"})
NETWORK_SCHEMES = frozenset({"http", "https"})

RESOURCE_TYPE = "resource_type"
SCHEME = "scheme"
URL_RULES = "url_rules"
OTHER_PORT = "other_port"


def scheme_of(url: str) -> str:
    return urlsplit(url).scheme.lower()


def static_refusal(url: str, resource_type: str, page_url: str, rules: UrlRules, addresses: AddressPolicy) -> str | None:
    """Why the browser must not load ``url`` for the page at ``page_url`` (a reason name), or None.

    Judged from the URL alone; a host name's resolved addresses are judged by :func:`address_refusal`.
    """
    scheme = scheme_of(url)
    if scheme in IN_BROWSER_SCHEMES:
        return None
    if scheme not in NETWORK_SCHEMES:
        return SCHEME
    if resource_type in UNLOADED_TYPES:
        return RESOURCE_TYPE
    if not check_url(url, rules).ok:
        return URL_RULES
    host, port = endpoint(url)
    page_host, page_port = endpoint(page_url)
    if host == page_host and port != page_port and not addresses.trusts(url):
        return OTHER_PORT
    return address_refusal(url, addresses)


def address_refusal(url: str, addresses: AddressPolicy, resolved: Iterable[Address] = ()) -> str | None:
    """``private_address`` when the URL's host is, or resolves to, a non-public address the job does not name."""
    return PRIVATE_ADDRESS if addresses.refusal(url, resolved) is not None else None
