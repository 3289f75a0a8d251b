"""A URL as both frontier stores keep it under its host: ``http://<host>`` written ``:``, ``https://<host>`` ``;``.

The SQLite file keeps it as a URL row's tail, Redis as the field of its record in its host's hash and in its queue's
members (``short`` and ``long`` in ``frontier/lua/library.lua`` are the same rule in Lua).
"""

from __future__ import annotations


def tail_of(host: str, url: str) -> str:
    """``url`` as its host's structures keep it."""
    if url.startswith("http://") and url.startswith(host, 7):
        return ":" + url[7 + len(host):]
    if url.startswith("https://") and url.startswith(host, 8):
        return ";" + url[8 + len(host):]
    return url


def url_of(host: str, tail: str) -> str:
    """The URL a host's ``tail`` stands for."""
    mark = tail[:1]
    if mark == ":":
        return "http://" + host + tail[1:]
    if mark == ";":
        return "https://" + host + tail[1:]
    return tail
