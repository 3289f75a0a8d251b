"""Fetch limits and modes in real crawls: body size, decompression bombs, time, HEAD, redirects.

Each limit is set low in the job's combine.cfg, a loopback page goes past
it, and the crawl must finish, count the limit in its stats
(``fetch/limit/<name>``, read from the crawler's stats) and log the URL.
"""

from __future__ import annotations

import gzip
import re
import socketserver
import threading

import pytest
from conftest import JobDir, free_port

from combine_scrapy.operations.sampleweb import LoopbackWeb, Page
from combine_scrapy.records.store.sql.tables import stored_text

pytestmark = pytest.mark.crawl

HOST, SLOW_HOST, STREAM_HOST = "127.0.0.2", "127.0.0.3", "127.0.0.4"
MAX_SIZE = 100_000
CRAWL_TIMEOUT = 120
TOPIC = "100: carnivorous plants=CP\n"
# Every page counts as relevant (sitesOK), so what reached the parser shows in the records.
BASE_CONFIG = f"""
WaitIntervalHost = 0.1
UAmaxSize = {MAX_SIZE}
UAtimeout = 1
<exclude>
URL never-excluded
</exclude>
"""


def html(title: str, body: str = "") -> Page:
    return Page(f"<html><head><title>{title}</title></head><body><p>{title} carnivorous plants</p>{body}</body></html>")


class StreamingHandler(socketserver.StreamRequestHandler):
    """An answer without Content-Length: the size is known only while reading it."""

    def handle(self):
        while self.rfile.readline().strip():
            pass
        self.wfile.write(b"HTTP/1.0 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n\r\n")
        self.wfile.write(b"<html><head><title>Streamed</title></head><body><p>carnivorous plants ")
        try:
            for _ in range(3 * MAX_SIZE // 1000):
                self.wfile.write(b"y" * 1000)
        except OSError:
            pass  # the crawler stopped reading, as it should


def record_texts(job_dir: JobDir) -> dict[str, str]:
    with job_dir.records() as db:
        rows = db.execute("SELECT u.url, r.text FROM record_urls u JOIN records r ON r.key = u.key").fetchall()
    return {url.rsplit("/", 1)[1]: stored_text(text) for url, text in rows}


@pytest.fixture(scope="module")
def limited_crawl(tmp_path_factory):
    base = tmp_path_factory.mktemp("limits")
    job_dir = JobDir(topics=base / "topics", data=base / "data")
    port = free_port()
    bomb = gzip.compress(b"<html><body>" + b" " * (64 * 1024 * 1024), compresslevel=9)
    links = "".join(
        f'<a href="/{name}">{name}</a>' for name in ("big.html", "bomb.html", "small.gz.html", "archive.zip", "moved.html")
    ) + f'<a href="http://{SLOW_HOST}:{port}/slow.html">slow</a><a href="http://{STREAM_HOST}:{port}/streamed.html">s</a>'
    site = {
        "/robots.txt": Page("", status=404),
        "/": html("Start", links),
        "/big.html": html("Big", "<p>" + "x" * MAX_SIZE + "</p>"),
        "/bomb.html": Page(bomb, headers={"Content-Type": "text/html", "Content-Encoding": "gzip"}),
        "/small.gz.html": Page(
            gzip.compress(b"<html><title>Gzipped</title><body>Gzipped carnivorous plants</body></html>"),
            headers={"Content-Type": "text/html", "Content-Encoding": "gzip"},
        ),
        "/archive.zip": Page("zip body never read" + "z" * 2 * MAX_SIZE, headers={"Content-Type": "application/zip"}),
        "/moved.html": Page("", status=301, headers={"Location": f"http://{HOST}:{port}/target.html"}),
        "/target.html": html("Target"),
    }
    slow = {"/robots.txt": Page("", status=404), "/slow.html": Page(html("Slow").body, delay=3)}
    streaming = socketserver.ThreadingTCPServer((STREAM_HOST, port), StreamingHandler)
    streaming.daemon_threads = True
    threading.Thread(target=streaming.serve_forever, daemon=True).start()
    sites_ok = f"{HOST}\n{SLOW_HOST}\n{STREAM_HOST}\n"
    try:
        with LoopbackWeb({HOST: site, SLOW_HOST: slow}, port=port) as web:
            job_dir.write(BASE_CONFIG, TOPIC, [web.url(HOST)], **{"sitesOK.txt": sites_ok})
            result = job_dir.crawl(timeout=CRAWL_TIMEOUT)
            yield job_dir, web, result, result.stats
    finally:
        streaming.shutdown()
        streaming.server_close()


def test_a_body_declared_over_the_size_limit_is_not_read(limited_crawl):
    job_dir, _, result, _ = limited_crawl
    assert re.search(r"fetch limit size reached for http://\S+/big.html: body over 100000 bytes, \d+ bytes declared", result.stderr)
    assert "xxxx" not in record_texts(job_dir)["big.html"]


def test_a_body_growing_over_the_size_limit_is_cut_there(limited_crawl):
    job_dir, _, result, stats = limited_crawl
    assert stats["fetch/limit/size"] == 2
    assert re.search(r"fetch limit size reached for http://\S+/streamed.html: body over 100000 bytes, cut there", result.stderr)
    text = record_texts(job_dir)["streamed.html"]
    assert text.startswith("carnivorous plants yyyy") and len(text) < MAX_SIZE


def test_a_decompression_bomb_stops_at_the_size_limit(limited_crawl):
    job_dir, _, result, stats = limited_crawl
    assert stats["fetch/limit/decompressed_size"] == 1
    assert re.search(r"fetch limit decompressed_size reached for http://\S+/bomb.html", result.stderr)
    assert record_texts(job_dir).get("bomb.html", "") == ""
    assert "Gzipped carnivorous plants" in record_texts(job_dir)["small.gz.html"]  # a normal gzip answer is read


def test_a_slow_answer_hits_the_time_limit(limited_crawl):
    job_dir, _, result, stats = limited_crawl
    assert stats["fetch/limit/time"] == 1
    assert re.search(r"fetch limit time reached for http://\S+/slow.html", result.stderr)
    assert "slow.html" not in record_texts(job_dir)


def test_binary_extensions_are_fetched_with_head_only(limited_crawl):
    job_dir, web, _, stats = limited_crawl
    assert stats["fetch/head"] == 1
    assert "archive.zip" not in " ".join(re.findall(r"fetch limit size.*", limited_crawl[2].stderr))  # no body, no limit
    assert [hit.path for hit in web.hits_for(HOST)].count("/archive.zip") == 1
    assert "zip body never read" not in record_texts(job_dir).get("archive.zip", "")


def test_a_redirect_not_followed_is_recycled_as_a_new_url(limited_crawl):
    job_dir, _, _, stats = limited_crawl
    assert "fetch/redirect_followed" not in stats
    assert "Target carnivorous plants" in record_texts(job_dir)["target.html"]
    assert "moved.html" not in record_texts(job_dir)


def test_redirects_followed_up_to_the_limit(tmp_path):
    job_dir = JobDir(topics=tmp_path / "topics", data=tmp_path / "data")
    port = free_port()
    url = f"http://{HOST}:{port}"
    site = {
        "/robots.txt": Page("", status=404),
        "/": html("Start", '<a href="/once.html">once</a> <a href="/loop1.html">loop</a>'),
        "/once.html": Page("", status=302, headers={"Location": f"{url}/sub/landing.html"}),
        "/sub/landing.html": html("Landing", '<a href="deeper.html">deeper</a>'),
        "/sub/deeper.html": html("Deeper"),
        "/loop1.html": Page("", status=301, headers={"Location": f"{url}/loop2.html"}),
        "/loop2.html": Page("", status=301, headers={"Location": f"{url}/loop1.html"}),
    }
    with LoopbackWeb({HOST: site}, port=port) as web:
        job_dir.write(
            BASE_CONFIG + "UserAgentFollowRedirects = 1\nUAmaxRedirects = 3\n", TOPIC, [web.url(HOST)],
            **{"sitesOK.txt": f"{HOST}\n"},
        )
        result = job_dir.crawl(timeout=CRAWL_TIMEOUT)
        stats = result.stats
        paths = [hit.path for hit in web.hits_for(HOST)]
    assert "Landing carnivorous plants" in record_texts(job_dir)["once.html"]  # followed: the page under its first URL
    assert "/sub/deeper.html" in paths  # its relative links are read from where the redirect ended
    assert stats["fetch/limit/redirects"] >= 1
    assert re.search(r"fetch limit redirects reached for http://\S+/loop1.html \(redirected to \S+\): more than 3 redirects", result.stderr)
    assert paths.count("/loop1.html") + paths.count("/loop2.html") <= 2 * (3 + 1)  # the loop ends
