"""A URL as the frontier file keeps it: its host's row and the rest of it, short (``frontier.tails``), so a
URL's row holds only what follows its host. A URL given alone is kept under ``host_of(url)``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from combine_scrapy.access.urls import host_of
from combine_scrapy.frontier.tails import tail_of

# A URL's row: its host's number and its tail (``?`` the host name, then the tail).
URL_ROW = "host_id = (SELECT id FROM hosts WHERE host = ?) AND tail = ?"


def key_of(url: str) -> tuple[str, str]:
    """``(host, tail)``: where a URL given alone is kept."""
    host = host_of(url)
    return host, tail_of(host, url)


# A URL's scheme and authority: ``host_of`` reads nothing past them, so URLs that begin alike share a host.
_ORIGIN = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*")


def keys_of(urls: Iterable[str]) -> Iterator[tuple[str, str]]:
    """``key_of`` each URL, ``host_of`` asked once for the URLs of one scheme and authority."""
    hosts: dict[str, str] = {}
    for url in urls:
        origin = _ORIGIN.match(url)
        if origin is None:
            yield key_of(url)
            continue
        host = hosts.get(origin[0])
        if host is None:
            host = hosts[origin[0]] = host_of(origin[0])
        yield host, tail_of(host, url)
