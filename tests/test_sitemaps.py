"""Sitemaps as a link source: robots.txt Sitemap: lines, /sitemap.xml, indexes, .gz, bounds, lastmod revisits."""

from __future__ import annotations

import gzip
import re

import pytest
from conftest import PROJECT, JobDir, free_port
from scrapy.http.request import NO_CALLBACK

from combine_scrapy.links.sitemaps import (
    SitemapError,
    decompressed,
    parse_lastmod,
    parse_sitemap,
    sitemaps_in_robots,
)
from combine_scrapy.operations.sampleweb import LoopbackWeb, Page
from combine_scrapy.siderequests import side_request

TOPIC = (PROJECT / "topics" / "demo" / "topicdefinition.txt").read_text()
A, B = "127.0.0.2", "127.0.0.3"
NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def urlset(*entries: tuple[str, str | None]) -> str:
    rows = "".join(
        f"<url><loc>{loc}</loc>{f'<lastmod>{lastmod}</lastmod>' if lastmod else ''}</url>" for loc, lastmod in entries
    )
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset {NS}>{rows}</urlset>'


def index(*locations: str) -> str:
    rows = "".join(f"<sitemap><loc>{loc}</loc></sitemap>" for loc in locations)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex {NS}>{rows}</sitemapindex>'


def plants(title: str, links: str = "") -> Page:
    return Page(f"<html><head><title>{title}</title></head><body><p>Carnivorous plants: {title}, sundews and drosera.</p>"
                f"{links}</body></html>")


def xml(text: str) -> Page:
    return Page(text, headers={"Content-Type": "application/xml"})


def robots(*lines: str) -> Page:
    return Page("User-agent: *\nDisallow: /private/\n" + "".join(f"{line}\n" for line in lines),
                headers={"Content-Type": "text/plain"})


def stat(result, name: str) -> int:
    match = re.search(rf"'{re.escape(name)}': (\d+)", result.stderr)
    return int(match.group(1)) if match else 0


# --- parsing -----------------------------------------------------------------------------------


def test_robots_sitemap_lines_are_found_resolved_and_kept_once():
    body = b"User-agent: *\nSitemap: /a.xml\nsitemap: http://other.example/b.xml.gz\nSITEMAP: /a.xml\nSitemap: ftp://x/c.xml\n"
    assert sitemaps_in_robots(body, "http://h.example/robots.txt") == [
        "http://h.example/a.xml", "http://other.example/b.xml.gz",
    ]
    assert sitemaps_in_robots(None, "http://h.example/robots.txt") == []


def test_urlset_gives_pages_with_lastmod_and_stops_at_the_bound():
    body = urlset(("http://h.example/a", "2026-01-31"), ("/b", "2026-01-31T10:00:00+01:00"), ("mailto:x@y", None),
                  ("http://h.example/c", "yesterday")).encode()
    content = parse_sitemap(body, "http://h.example/sitemap.xml", max_pages=10)
    assert content.pages == [
        ("http://h.example/a", parse_lastmod("2026-01-31T00:00:00Z")),
        ("http://h.example/b", parse_lastmod("2026-01-31T09:00:00Z")),
        ("http://h.example/c", None),
    ]
    assert not content.sitemaps and not content.cut
    bounded = parse_sitemap(body, "http://h.example/sitemap.xml", max_pages=1)
    assert len(bounded.pages) == 1 and bounded.cut


def test_index_gives_sitemaps_and_text_sitemaps_give_lines():
    content = parse_sitemap(index("http://h.example/1.xml.gz", "/2.xml").encode(), "http://h.example/i.xml", 10)
    assert content.sitemaps == ["http://h.example/1.xml.gz", "http://h.example/2.xml"] and not content.pages
    text = parse_sitemap(b"http://h.example/a\n\njunk\nhttps://h.example/b\n", "http://h.example/s.txt", 10)
    assert [url for url, _ in text.pages] == ["http://h.example/a", "https://h.example/b"]


@pytest.mark.parametrize("body", [b"<html><body>not a sitemap</body></html>", b"<", b"<?xml version='1.0'?>"])
def test_what_is_not_a_sitemap_is_a_clear_error(body):
    with pytest.raises(SitemapError, match="not a sitemap"):
        parse_sitemap(body, "http://h.example/s.xml", 10)


def test_entities_are_not_expanded():
    body = (b'<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
            b'<urlset><url><loc>http://h.example/&x;</loc></url></urlset>')
    pages = parse_sitemap(body, "http://h.example/s.xml", 10).pages
    assert all("root:" not in url for url, _ in pages)


def test_gzip_is_inflated_within_the_bound():
    body = urlset(("http://h.example/a", None)).encode()
    assert decompressed(gzip.compress(body), 1 << 20) == body
    assert decompressed(body, 10) == body  # plain XML is not inflated (its download was bounded)
    with pytest.raises(SitemapError, match="inflates past 1000 bytes"):
        decompressed(gzip.compress(b" " * 100_000), 1000)


# --- crawls ------------------------------------------------------------------------------------


CONFIG = """
WaitIntervalHost = 0.1
classifyPlugIn = plain
AllowPrivateAddresses = 1
Sitemaps = 1
SitemapGuess = 1
"""


def test_side_requests_pass_the_robots_check_keep_every_status_and_follow_no_redirect():
    """robots.txt and sitemaps are asked for by one builder: what each adds joins what both need."""
    request = side_request("http://h.example/sitemap.xml", 900, 7.5, download_maxsize=1024)
    assert request.callback is NO_CALLBACK and request.priority == 900
    assert request.meta == {"dont_obey_robotstxt": True, "handle_httpstatus_all": True, "dont_redirect": True,
                            "download_timeout": 7.5, "download_maxsize": 1024}


@pytest.mark.crawl
def test_crawl_discovers_pages_listed_only_in_sitemaps(job_dir: JobDir):
    port = free_port(A)
    base_a, base_b = f"http://{A}:{port}", f"http://{B}:{port}"
    pages_xml = urlset((f"{base_a}/only-in-sitemap.html", None), (f"{base_a}/private/secret.html", None))
    sites = {
        A: {
            "/robots.txt": robots(f"Sitemap: {base_a}/sitemap_index.xml"),
            "/": plants("Home", f'<a href="{base_b}/">garden club</a>'),
            "/sitemap_index.xml": xml(index(f"{base_a}/sitemaps/pages.xml.gz")),
            "/sitemaps/pages.xml.gz": Page(gzip.compress(pages_xml.encode()), headers={"Content-Type": "application/gzip"}),
            "/only-in-sitemap.html": plants("Only in the sitemap"),
            "/private/secret.html": plants("Secret"),
        },
        B: {
            "/robots.txt": robots(),  # names no sitemap: SitemapGuess asks for /sitemap.xml
            "/": plants("Garden club"),
            "/sitemap.xml": xml(urlset((f"{base_b}/guessed.html", None))),
            "/guessed.html": plants("Found through /sitemap.xml"),
        },
    }
    with LoopbackWeb(sites, port=port) as web:
        job_dir.write(CONFIG, TOPIC, [f"{base_a}/"])
        result = job_dir.crawl()
        fetched = {(hit.host, hit.path) for hit in web.hits}
    assert (A, "/only-in-sitemap.html") in fetched and (B, "/guessed.html") in fetched
    assert (A, "/private/secret.html") not in fetched  # marked, then refused by robots.txt like any URL
    assert (A, "/sitemap.xml") not in fetched  # robots.txt named a sitemap: nothing guessed
    with job_dir.records() as db:
        titles = {row[0] for row in db.execute("SELECT title FROM records")}
    assert {"Only in the sitemap", "Found through /sitemap.xml"} <= titles
    assert stat(result, "sitemaps/read") == 3 and stat(result, "sitemaps/marked") == 3


@pytest.mark.crawl
def test_sitemap_urls_are_bounded_and_non_public_hosts_refused(job_dir: JobDir):
    port = free_port(A)
    base = f"http://{A}:{port}"
    listed = [("http://127.0.0.9:9/x.html", None)] + [(f"{base}/p{n}.html", None) for n in range(4)]
    sites = {A: {
        "/robots.txt": robots(f"Sitemap: {base}/sitemap.xml", f"Sitemap: {base}/second.xml"),
        "/": plants("Home"),
        "/sitemap.xml": xml(urlset(*listed)),
        "/second.xml": xml(urlset((f"{base}/second.html", None))),
        **{f"/p{n}.html": plants(f"Page {n}") for n in range(4)},
    }}
    config = "WaitIntervalHost = 0.1\nclassifyPlugIn = plain\nSitemaps = 1\nSitemapMaxUrls = 3\n"
    with LoopbackWeb(sites, port=port) as web:
        job_dir.write(config, TOPIC, [f"{base}/"])
        result = job_dir.crawl()
        fetched = {hit.path for hit in web.hits}
    assert {"/p0.html", "/p1.html"} <= fetched and not {"/p2.html", "/p3.html", "/second.xml"} & fetched
    assert stat(result, "urls/rejected/private_address") == 1  # the seed names only 127.0.0.2
    assert stat(result, "sitemaps/limit/urls") == 1
    assert "limit urls reached" in result.stderr


@pytest.mark.crawl
def test_sitemap_lastmod_later_than_the_record_marks_the_page_again(job_dir: JobDir):
    port = free_port(A)
    base = f"http://{A}:{port}"
    sites = {A: {
        "/robots.txt": robots(f"Sitemap: {base}/sitemap.xml"),
        "/": plants("Home"),
        "/new.html": plants("New"),
        "/sitemap.xml": xml(urlset((f"{base}/changed.html", "2100-01-01"), (f"{base}/same.html", "2000-01-01"))),
        "/changed.html": plants("Changed"),
        "/same.html": plants("Same"),
    }}
    # robots.txt (and so the sitemap) is read again after a second.
    config = CONFIG + "WaitIntervalHarvesterLockRobotRules = 1\n"
    with LoopbackWeb(sites, port=port) as web:
        job_dir.write(config, TOPIC, [f"{base}/"])
        job_dir.crawl()
        first = [hit.path for hit in web.hits]
        assert first.count("/changed.html") == 1 and first.count("/same.html") == 1
        job_dir.write(config, TOPIC, [f"{base}/", f"{base}/new.html"])  # something due, so robots.txt is read again
        result = job_dir.crawl()
        paths = [hit.path for hit in web.hits]
    assert paths.count("/robots.txt") == 2 and paths.count("/sitemap.xml") == 2
    assert paths.count("/changed.html") == 2  # its lastmod is later than its record's last check
    assert paths.count("/same.html") == 1
    assert stat(result, "sitemaps/revisits") == 1
