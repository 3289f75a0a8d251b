"""Continuous operation: revisits with conditional GET, more often for pages that change."""

from __future__ import annotations

import itertools

import pytest
from conftest import free_port

from combine_scrapy.operations.sampleweb import LoopbackWeb, Page

pytestmark = pytest.mark.crawl

HOST = "127.0.0.22"
LAST_MODIFIED = "Wed, 21 Oct 2015 07:28:00 GMT"


class ChangingPage(Page):
    """A page with new text on every fetch, and no validators: always a 200."""

    def __init__(self):
        super().__init__()
        self._count = itertools.count()

    def payload(self) -> bytes:
        return (f"<html><head><title>News</title></head><body><p>Carnivorous plants news, "
                f"edition {next(self._count)}.</p></body></html>").encode()


def test_unchanged_pages_answer_304_and_changing_pages_are_revisited_more(job_dir):
    home = Page(
        '<html><head><title>Carnivorous plants</title></head><body><a href="/news.html">news</a></body></html>',
        headers={"Content-Type": "text/html", "Last-Modified": LAST_MODIFIED, "ETag": '"v1"'},
    )
    port = free_port(HOST)
    with LoopbackWeb({HOST: {"/": home, "/news.html": ChangingPage()}}, port=port) as web:
        job_dir.write(
            "WaitIntervalHost = 0.1\nRevisit = 1\nRevisitMaxAge = 0.3\nWaitIntervalHarvesterLockSuccess = 4\n",
            "100: carnivorous plants=CP\n",
            [web.url(HOST)],
        )
        result = job_dir.crawl("-a", "max_pages=12", "-s", "COMBINE_IDLE_HORIZON=6")
        home_hits = [hit for hit in web.hits_for(HOST) if hit.path == "/"]
        news_hits = [hit for hit in web.hits_for(HOST) if hit.path == "/news.html"]
    conditional = [hit for hit in home_hits if hit.headers.get("If-Modified-Since") == LAST_MODIFIED]
    assert len(home_hits) >= 2 and conditional == home_hits[1:]          # every revisit is a conditional GET
    assert all(hit.headers.get("If-None-Match") == '"v1"' for hit in conditional)
    assert result.stats["fetch/outcome/not_modified"] >= 1
    assert len(news_hits) >= 2 * len(home_hits), (len(news_hits), len(home_hits))
    assert result.stats["revisit/changed"] >= 1
