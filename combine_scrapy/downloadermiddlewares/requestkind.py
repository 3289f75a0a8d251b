"""What a request that reaches the downloader is: a page, a redirect's hop, a render or a robots.txt."""

from __future__ import annotations

from scrapy import Request


def request_kind(request: Request) -> str:
    """What a request is, for log lines: a page, a followed redirect's hop, a page's render or a robots.txt."""
    if "robots_bytes" in request.meta:
        return "robots.txt"
    if "render_of" in request.meta:
        return "render"
    return "redirect" if "redirect_times" in request.meta else "page"


def extra_turn(request: Request) -> bool:
    """Whether the request is a second fetch of its host for one frontier URL: a redirect's hop, or a render."""
    return "redirect_times" in request.meta or "render_of" in request.meta
