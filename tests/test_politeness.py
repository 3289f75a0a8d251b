"""Crawls that check URL canonicalization and robots.txt politeness end to end."""

from __future__ import annotations

import contextlib
from collections import Counter

import pytest
from conftest import free_port

from combine_scrapy.operations.sampleweb import LoopbackWeb, Page

pytestmark = pytest.mark.crawl

TOPIC = "100: carnivorous plants=CP\n"


def html(title: str, links: list[str] = ()) -> str:
    anchors = "".join(f'<a href="{href}">{title} link</a> ' for href in links)
    return f"<html><head><title>{title}</title></head><body><p>Carnivorous plants: {title}.</p>{anchors}</body></html>"


def text(body: bytes | str, status: int = 200, **extra) -> Page:
    return Page(body, status=status, headers={"Content-Type": "text/plain", **extra})


@contextlib.contextmanager
def default_port_web(host: str):
    """A site on port 80, when this machine lets the tests bind it; None otherwise."""
    web = LoopbackWeb({host: {"/p.html": Page(html("Port eighty"))}}, port=80)
    try:
        web.start()
    except OSError:
        yield None
        return
    try:
        yield web
    finally:
        web.stop()


def test_every_spelling_of_a_url_is_fetched_once(job_dir):
    port = free_port("127.0.0.1")
    home = f"http://127.0.0.1:{port}"
    with default_port_web("127.0.0.17") as port80:
        extra = ["http://127.0.0.17:80/p.html", "http://127.0.0.17/p.html#top"] if port80 else []
        links = [
            "/a.html#part", "/a.html", f"HTTP://LocalHost:{port}/b.html", f"{home}/./c/../b.html",
            "/d.html;jsessionid=0AB1", "/d.html?PHPSESSID=99ff", "/e.html?b=2&a=1", "/e.html?a=1&b=2&a=1", *extra,
        ]
        site = {path: Page(html(path)) for path in ("/a.html", "/b.html", "/d.html", "/e.html")}
        site["/"] = Page(html("Home", links))
        with LoopbackWeb({"127.0.0.1": site}, port=port) as web:
            job_dir.write(
                f"WaitIntervalHost = 0.2\nAllowPrivateAddresses = 1\n<exclude>\nURL \\.jpg$\n</exclude>\n"
                f"<serveralias>\n127.0.0.1:{port} localhost:{port}\n</serveralias>\n",
                TOPIC,
                [f"{home}/"],
            )
            job_dir.crawl()
            paths = Counter(hit.path for hit in web.hits_for("127.0.0.1") if hit.path != "/robots.txt")
        assert paths == Counter({"/": 1, "/a.html": 1, "/b.html": 1, "/d.html": 1, "/e.html?a=1&b=2": 1})
        if port80:
            assert [hit.path for hit in port80.hits_for("127.0.0.17")] == ["/robots.txt", "/p.html"]
    with job_dir.frontier() as db:
        urls = {row[0] for row in db.execute("SELECT url FROM url_states")}
    assert f"{home}/b.html" in urls and not any("localhost" in url.lower() for url in urls)


HUGE, LOOP, GARBAGE, DOWN, SLOW, DELAYED, MOVED = (f"127.0.0.{n}" for n in range(11, 18))


def test_bad_robots_txt_never_stops_the_crawl(job_dir):
    allowed_pages = {"/": Page(html("Home", ["/ok.html", "/private/no.html"])), "/ok.html": Page(html("OK"))}
    huge = b"User-agent: *\nDisallow: /private/\n" + b"# filler line of a very long robots.txt\n" * 60_000
    sites = {
        HUGE: {"/robots.txt": text(huge), **allowed_pages},
        LOOP: {"/robots.txt": Page("", status=302, headers={"Location": "/robots.txt"}), **allowed_pages},
        GARBAGE: {"/robots.txt": text(bytes(range(256)) * 40), **allowed_pages},
        DOWN: {"/robots.txt": text("down", status=503), **allowed_pages},
        SLOW: {"/robots.txt": Page("User-agent: *\nAllow: /\n", delay=3, headers={"Content-Type": "text/plain"}), **allowed_pages},
        MOVED: {
            "/robots.txt": Page("", status=301, headers={"Location": "/static/robots.txt"}),
            "/static/robots.txt": text("User-agent: *\nDisallow: /private/\n"),
            **allowed_pages,
        },
        DELAYED: {
            "/robots.txt": text("User-agent: *\nCrawl-delay: 1.5\n"),
            "/": Page(html("Home", ["/a.html", "/b.html"])),
            "/a.html": Page(html("A")),
            "/b.html": Page(html("B")),
        },
    }
    port = free_port(HUGE)
    with LoopbackWeb(sites, port=port) as web:
        job_dir.write(
            "WaitIntervalHost = 0.3\nUAtimeout = 1\nHarvestRetries = 1\n", TOPIC, [web.url(host) for host in sites]
        )
        result = job_dir.crawl()
        pages = {host: [hit.path for hit in web.hits_for(host) if hit.path != "/robots.txt"] for host in sites}
        delayed_times = [hit.time for hit in web.hits_for(DELAYED)]
        moved_times = [hit.time for hit in web.hits_for(MOVED)]
    assert sorted(pages[HUGE]) == ["/", "/ok.html"]          # rules read from the first 500 KiB
    assert sorted(pages[GARBAGE]) == ["/", "/ok.html", "/private/no.html"]  # garbage holds no rules
    assert sorted(pages[DELAYED]) == ["/", "/a.html", "/b.html"]
    assert sorted(pages[MOVED]) == ["/", "/ok.html", "/static/robots.txt"]  # rules read where robots.txt moved to
    moved_gaps = [b - a for a, b in zip(moved_times, moved_times[1:])]
    assert len(moved_times) == 4 and all(gap >= 0.3 * 0.95 for gap in moved_gaps), moved_gaps  # its redirect waited its turn
    assert pages[LOOP] == pages[DOWN] == pages[SLOW] == []   # unavailable: the site counts as closed
    gaps = [b - a for a, b in zip(delayed_times, delayed_times[1:])]
    assert all(gap >= 1.5 * 0.95 for gap in gaps), gaps      # Crawl-delay 1.5 > WaitIntervalHost 0.3
    assert result.stats["robots/truncated"] == 1
    assert result.stats["robots/disallowed"] == 2            # HUGE's and MOVED's /private/
