"""Servers that misbehave: each kind is served on loopback and crawled, and the crawl must finish.

One raw TCP server (it writes whatever bytes a case needs, HTTP or not)
listens on several loopback addresses: 127.0.0.50 serves the page cases,
linked from its home page, and each robots.txt case has an address of its
own. One crawl (WaitIntervalHost 0, UAtimeout 1 s, HarvestRetries 1,
redirects followed) covers them all. For each case the table says what the
crawl must make of the URL (its last outcome in the harvest log) and a log
line that names it; afterwards nothing is left marked, the good pages are
stored, and the server on 127.0.0.1 that the private redirect points at saw
nothing.
"""

from __future__ import annotations

import gzip
import re
import socket
import socketserver
import sqlite3
import struct
import threading
import time
from dataclasses import dataclass

import pytest
from conftest import JobDir, free_port
from test_network_safety import RecordingServer

pytestmark = pytest.mark.crawl

PAGES, ROBOTS_HTML, ROBOTS_500, ROBOTS_MOVED, ROBOTS_TARGET, ROBOTS_HUGE, ROBOTS_SLOW, HELD = (
    f"127.0.0.{n}" for n in range(50, 58)
)
ROBOTS_HOSTS = (ROBOTS_HTML, ROBOTS_500, ROBOTS_MOVED, ROBOTS_HUGE, ROBOTS_SLOW)
TOPIC = "100: carnivorous plants=CP\n"
BODY = b"<html><head><title>Fine</title></head><body><p>carnivorous plants</p></body></html>"


def answer(status: str = "200 OK", headers: tuple[str, ...] = ("Content-Type: text/html",), body: bytes = BODY,
           length: int | None = None) -> bytes:
    """An HTTP/1.1 answer, Content-Length the body's unless ``length`` lies about it."""
    lines = [f"HTTP/1.1 {status}", *headers, f"Content-Length: {len(body) if length is None else length}",
             "Connection: close"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8") + body


def redirect(location: bytes | str, status: str = "302 Found") -> bytes:
    location = location.encode("utf-8") if isinstance(location, str) else location
    return b"HTTP/1.1 " + status.encode() + b"\r\nLocation: " + location + b"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


@dataclass(frozen=True)
class Case:
    """A page the server misbehaves on, what the crawl must make of it, and the log line that says so."""

    path: str
    outcome: str          # the URL's last outcome in the harvest log
    log: str              # a regular expression the crawl's log must match ({url} is the case's URL)


class Behaviour:
    """What the raw server does for one request: write bytes, or something worse."""

    def __init__(self, port: int, internal_port: int):
        self.port, self.internal_port = port, internal_port

    def __call__(self, handler: socketserver.StreamRequestHandler, host: str, method: str, path: str) -> None:
        if host == HELD:  # a whole host in maintenance for years: held a day at most
            handler.wfile.write(answer("503 Service Unavailable", ("Retry-After: 999999999",), b"maintenance")
                                if path != "/robots.txt" else answer("404 Not Found", body=b""))
            return None
        if host != PAGES:
            return self.robots_case(handler, host, path)
        if path.startswith("/drip"):
            return self.drip(handler)
        special = {
            "/reset": self.reset, "/silent": self.silent, "/closed-mid-body": self.closed_mid_body,
            "/head-differs.zip": self.head_with_body, "/not-http": self.not_http,
        }.get(path)
        if special:
            return special(handler, method) if path == "/head-differs.zip" else special(handler)
        handler.wfile.write(self.pages().get(path) or answer("404 Not Found", body=b"gone"))

    def pages(self) -> dict[str, bytes]:
        base = f"http://{PAGES}:{self.port}"
        long_tail = "a" * 10_000
        return {
            "/robots.txt": answer("404 Not Found", body=b""),
            "/": answer(body=b"<html><head><title>Start</title></head><body><p>carnivorous plants</p>"
                        + b"".join(b'<a href="%s">x</a>' % case.path.encode() for case in PAGE_CASES)
                        + f'<a href="https://{PAGES}:{self.port}/tls">tls</a></body></html>'.encode()),
            "/fine.html": answer(),
            "/short-length": answer(body=BODY + b"<p>trailing bytes the length does not cover</p>", length=len(BODY)),
            "/long-length": answer(body=BODY, length=len(BODY) + 5000),
            "/status-150": b"HTTP/1.1 150 Odd\r\nContent-Length: 0\r\n\r\n",
            "/status-999": answer("999 Request Denied"),
            "/status-negative": answer("-1 Minus"),
            "/status-garbage": answer("OK 200"),
            "/empty-200": answer(body=b""),
            "/huge-headers": answer(headers=("Content-Type: text/html", *(f"X-Filler-{n}: {'h' * 1000}" for n in range(100)))),
            "/huge-header-line": answer(headers=("Content-Type: text/html", f"X-Giant: {'g' * 100_000}")),
            "/no-colon": answer(headers=("Content-Type: text/html", "X-Header-Without-Colon")),
            "/loc-spaces": redirect("/a page with spaces.html"),
            "/loc-unicode": redirect("/späť/Ünïcödé.html".encode()),
            "/loc-relative": redirect("fine.html"),
            "/loc-empty": redirect(""),
            "/loc-long": redirect(f"/{long_tail}"),
            "/loop-a": redirect(f"{base}/loop-b"),
            "/loop-b": redirect(f"{base}/loop-a"),
            **{f"/chain-{n}": redirect(f"/chain-{n + 1}") for n in range(1, 8)},
            "/to-private": redirect(f"http://127.0.0.1:{self.internal_port}/secret"),
            "/to-ftp": redirect("ftp://example.org/file.txt", "301 Moved Permanently"),
            "/to-javascript": redirect("javascript:alert(1)"),
            "/to-mailto": redirect("mailto:someone@example.org"),
            "/to-data": redirect("data:text/html,<p>carnivorous plants</p>"),
            "/retry-after-nonsense": answer("429 Too Many Requests", ("Retry-After: soon",), b"slow down"),
            "/gzip-lie": answer(headers=("Content-Type: text/html", "Content-Encoding: gzip")),
            "/br-lie": answer(headers=("Content-Type: text/html", "Content-Encoding: br")),
            "/zstd-lie": answer(headers=("Content-Type: text/html", "Content-Encoding: zstd")),
            "/unknown-encoding": answer(headers=("Content-Type: text/html", "Content-Encoding: x-squeeze")),
            "/gzip-truncated": answer(headers=("Content-Type: text/html", "Content-Encoding: gzip"),
                                      body=gzip.compress(BODY)[:30]),
            "/charset-lie": answer(headers=("Content-Type: text/html; charset=utf-16",)),
            "/charset-unknown": answer(headers=("Content-Type: text/html; charset=x-no-such-charset",)),
            "/bad-chunks": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
        }

    def robots_case(self, handler, host: str, path: str) -> None:
        if path != "/robots.txt":
            handler.wfile.write(answer())
            return
        if host == ROBOTS_HTML:
            handler.wfile.write(answer(body=b"<html><body><h1>Welcome!</h1><p>Disallow: nothing here</p></body></html>"))
        elif host == ROBOTS_500:
            handler.wfile.write(answer("500 Internal Server Error", body=b"oops"))
        elif host == ROBOTS_MOVED:
            handler.wfile.write(redirect(f"http://{ROBOTS_TARGET}:{self.port}/robots.txt", "301 Moved Permanently"))
        elif host == ROBOTS_TARGET:
            handler.wfile.write(answer(headers=("Content-Type: text/plain",), body=b"User-agent: *\nDisallow: /\n"))
        elif host == ROBOTS_HUGE:
            handler.wfile.write(answer(headers=("Content-Type: text/plain",),
                                       body=b"User-agent: *\nDisallow: /private/\n" + b"# filler\n" * 200_000))
        elif host == ROBOTS_SLOW:
            time.sleep(3)
            handler.wfile.write(answer(headers=("Content-Type: text/plain",), body=b"User-agent: *\nAllow: /\n"))

    @staticmethod
    def reset(handler) -> None:
        handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    @staticmethod
    def silent(handler) -> None:
        time.sleep(3)  # accepts, reads the request, never answers (the crawler gives up after UAtimeout)

    @staticmethod
    def closed_mid_body(handler) -> None:
        handler.wfile.write(answer(body=BODY, length=10 * len(BODY))[: -len(BODY) // 2])

    @staticmethod
    def drip(handler) -> None:
        handler.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n")
        try:
            for _ in range(100):  # a byte every 0.1 s, for longer than UAtimeout
                handler.wfile.write(b"1\r\nx\r\n")
                handler.wfile.flush()
                time.sleep(0.1)
        except OSError:
            pass

    @staticmethod
    def head_with_body(handler, method: str) -> None:
        if method == "HEAD":  # a HEAD answered with a body, which HTTP forbids
            handler.wfile.write(answer(headers=("Content-Type: application/zip",), body=b"PK-not-really-a-zip"))
        else:
            handler.wfile.write(answer("500 Internal Server Error", body=b"GET was never meant to come"))

    @staticmethod
    def not_http(handler) -> None:
        handler.wfile.write(b"SSH-2.0-OpenSSH_9.2\r\n")


UNAVAILABLE_IS_GONE = "not_found"  # HarvestRetries = 1: the first unavailable answer is the last
PAGE_CASES = (
    Case("/reset", UNAVAILABLE_IS_GONE, r"fetch failed: {url}: .*(reset|Connection was closed|lost)"),
    Case("/silent", UNAVAILABLE_IS_GONE, r"fetch limit time reached for {url}"),
    Case("/closed-mid-body", UNAVAILABLE_IS_GONE, r"fetch failed: {url}: "),
    Case("/short-length", "success", r"Crawled \(200\) <GET {url}>"),
    Case("/long-length", UNAVAILABLE_IS_GONE, r"fetch failed: {url}: "),
    Case("/drip", UNAVAILABLE_IS_GONE, r"fetch limit time reached for {url}"),
    Case("/status-150", UNAVAILABLE_IS_GONE, r"({url}|status-150)"),
    Case("/status-999", UNAVAILABLE_IS_GONE, r"{url} answered with invalid HTTP status 999: unavailable"),
    Case("/status-negative", UNAVAILABLE_IS_GONE, r"{url} answered with invalid HTTP status -1: unavailable"),
    Case("/status-garbage", UNAVAILABLE_IS_GONE, r"fetch failed: {url}: "),
    Case("/empty-200", "success", r"Crawled \(200\) <GET {url}>"),
    Case("/huge-headers", "success", r"Crawled \(200\) <GET {url}>"),
    Case("/huge-header-line", UNAVAILABLE_IS_GONE, r"fetch failed: {url}: "),
    Case("/no-colon", "success", r"Skipping the bad response header line b'X-Header-Without-Colon'"),
    Case("/loc-spaces", "not_found", r"Crawled \(404\) <GET http://\S+/a%20page%20with%20spaces.html>"),
    Case("/loc-unicode", "not_found", r"Crawled \(404\) <GET http://\S+/sp%C3%A4%C5%A5/%C3%9Cn%C3%AFc%C3%B6d%C3%A9.html>"),
    Case("/loc-relative", "success", r"Crawled \(200\) <GET http://\S+/fine.html>"),
    Case("/loc-empty", "redirect", r"Crawled \(302\) <GET {url}>"),
    Case("/loc-long", "not_found", r"refused redirect of {url} .*too_long|rejected.*too_long|{url}"),
    Case("/loop-a", "redirect", r"fetch limit redirects reached for {url}"),
    Case("/chain-1", "redirect", r"fetch limit redirects reached for {url}"),
    Case("/to-private", "not_found", r"refused redirect http://127.0.0.1:\d+/secret: 127.0.0.1 is loopback"),
    Case("/to-ftp", "not_found", r"refused redirect of {url} to ftp://example.org/file.txt"),
    Case("/to-javascript", "not_found", r"refused redirect of {url} to javascript:alert\(1\)"),
    Case("/to-mailto", "not_found", r"refused redirect of {url} to mailto:"),
    Case("/to-data", "not_found", r"refused redirect of {url} to data:"),
    Case("/retry-after-nonsense", UNAVAILABLE_IS_GONE, r"{url}: ignored Retry-After 'soon'"),
    Case("/gzip-lie", "success", r"{url}: body is not gzip as Content-Encoding says \(Not a gzipped file"),
    Case("/br-lie", "success", r"{url}: body is not br as Content-Encoding says"),
    Case("/zstd-lie", "success", r"{url}: body is not zstd as Content-Encoding says"),
    Case("/unknown-encoding", "success", r"Crawled \(200\) <GET {url}>"),
    Case("/gzip-truncated", "success", r"Crawled \(200\) <GET {url}>"),
    Case("/charset-lie", "success", r"Crawled \(200\) <GET {url}>"),
    Case("/charset-unknown", "success", r"Crawled \(200\) <GET {url}>"),
    Case("/bad-chunks", UNAVAILABLE_IS_GONE, r"fetch failed: {url}: "),
    Case("/head-differs.zip", "success", r"Crawled \(200\) <HEAD {url}>"),
    Case("/not-http", UNAVAILABLE_IS_GONE, r"fetch failed: {url}: "),
)


class RawServer:
    """One threaded TCP server per loopback address, all on one port, each request recorded and handed to ``behaviour``."""

    def __init__(self, hosts, port: int, behaviour):
        self.hits: list[tuple[str, str, str]] = []
        hits, servers = self.hits, []

        class Handler(socketserver.StreamRequestHandler):
            timeout = 10

            def handle(self):
                try:
                    request_line = self.rfile.readline(65536).decode("latin-1").split()
                    while self.rfile.readline(65536).strip():
                        pass
                except (OSError, UnicodeDecodeError):
                    return
                host = self.server.server_address[0]
                if len(request_line) < 2:  # not HTTP (a TLS handshake on the plain port): answer in plain HTTP
                    hits.append((host, "?", "?"))
                    self.wfile.write(answer("400 Bad Request", body=b"plain HTTP here"))
                    return
                method, path = request_line[0], request_line[1]
                hits.append((host, method, path))
                try:
                    behaviour(self, host, method, path)
                except OSError:
                    pass

        for host in hosts:
            server = socketserver.ThreadingTCPServer((host, port), Handler, bind_and_activate=False)
            server.allow_reuse_address = True
            server.daemon_threads = True
            server.server_bind()
            server.server_activate()
            servers.append(server)
        self.servers = servers

    def __enter__(self):
        for server in self.servers:
            threading.Thread(target=server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        for server in self.servers:
            server.shutdown()
            server.server_close()


@pytest.fixture(scope="module")
def hostile_crawl(tmp_path_factory):
    base = tmp_path_factory.mktemp("hostile")
    job_dir = JobDir(topics=base / "topics", data=base / "data")
    port = free_port(PAGES)
    with RecordingServer() as internal:
        behaviour = Behaviour(port, internal.port)
        hosts = (PAGES, *ROBOTS_HOSTS, ROBOTS_TARGET, HELD)
        with RawServer(hosts, port, behaviour) as server:
            job_dir.write(
                "WaitIntervalHost = 0\nUAtimeout = 1\nHarvestRetries = 1\nUserAgentFollowRedirects = 1\n"
                "UAmaxRedirects = 3\nHeadOnlyExtensions = zip\n<exclude>\nURL never-excluded\n</exclude>\n",
                TOPIC,
                [f"http://{host}:{port}/" for host in (PAGES, *ROBOTS_HOSTS, HELD)],
                **{"sitesOK.txt": "".join(f"{host}\n" for host in hosts)},
            )
            started = time.monotonic()
            result = job_dir.crawl("-s", "LOG_LEVEL=DEBUG", timeout=90)  # a success says so only in DEBUG ("Crawled (200)")
            took = time.monotonic() - started
            yield job_dir, port, result, result.stats, list(server.hits), internal.hits, took


def last_outcomes(job_dir: JobDir) -> dict[str, tuple[int | None, str]]:
    with sqlite3.connect(job_dir.data / job_dir.name / "harvest_log.sqlite") as db:
        rows = db.execute("SELECT url, status, outcome FROM fetches ORDER BY time").fetchall()
    return {url: (status, outcome) for url, status, outcome in rows}


@pytest.mark.parametrize("case", PAGE_CASES, ids=[case.path for case in PAGE_CASES])
def test_each_misbehaving_page_ends_in_a_counted_outcome_and_a_log_line(hostile_crawl, case):
    job_dir, port, result, _, _, _, _ = hostile_crawl
    url = f"http://{PAGES}:{port}{case.path}"
    assert last_outcomes(job_dir)[url][1] == case.outcome
    assert re.search(case.log.format(url=re.escape(url)), result.stderr), case.log


def test_the_crawl_finishes_with_nothing_left_marked_and_the_good_pages_stored(hostile_crawl):
    job_dir, port, result, stats, _, _, took = hostile_crawl
    assert took < 60
    with job_dir.frontier() as db:
        assert db.execute("SELECT url FROM url_states WHERE marked = 1").fetchall() == []
    with job_dir.records() as db:
        stored = {url for (url,) in db.execute("SELECT url FROM record_urls")}
    for path in ("/", "/short-length", "/huge-headers", "/loc-relative", "/gzip-lie", "/br-lie", "/charset-lie"):
        assert f"http://{PAGES}:{port}{path}" in stored, path
    assert stats["fetch/limit/redirects"] == 2 and stats["fetch/limit/time"] >= 2
    assert stats["fetch/undecodable"] == 3 and stats["fetch/invalid_status"] == 2
    assert "finished" in result.stderr


def test_a_huge_retry_after_holds_its_host_a_day_and_the_crawl_still_ends(hostile_crawl):
    job_dir, port, result, stats, _, _, _ = hostile_crawl
    url = f"http://{HELD}:{port}/"
    assert last_outcomes(job_dir)[url] == (503, UNAVAILABLE_IS_GONE)
    assert re.search(rf"answered 503 to {re.escape(url)}: .*held 86400 s by Retry-After", result.stderr)
    with job_dir.frontier() as db:
        (held_until,) = db.execute("SELECT lock_until FROM hosts WHERE host = ?", (f"{HELD}:{port}",)).fetchone()
        (checked,) = db.execute("SELECT last_checked FROM url_states WHERE url = ?", (url,)).fetchone()
    assert 86_400 - 5 < held_until - checked <= 86_400 + 5


def test_the_private_redirect_never_reached_its_target(hostile_crawl):
    _, _, _, stats, _, internal_hits, _ = hostile_crawl
    assert internal_hits == [] and stats["urls/rejected/private_address"] == 1


def test_an_https_link_to_a_plain_http_port_fails_once(hostile_crawl):
    job_dir, port, result, _, _, _, _ = hostile_crawl
    url = f"https://{PAGES}:{port}/tls"
    assert last_outcomes(job_dir)[url][1] == UNAVAILABLE_IS_GONE
    assert re.search(rf"fetch failed: {re.escape(url)}: .*(SSL|TLS|ssl|tls|handshake|wrong version)", result.stderr)


def test_bad_robots_txt_answers(hostile_crawl):
    job_dir, port, result, stats, hits, _, _ = hostile_crawl
    outcomes = last_outcomes(job_dir)
    page = f"http://{{}}:{port}/"
    assert outcomes[page.format(ROBOTS_HTML)][1] == "success"       # an HTML page holds no rules: all allowed
    assert outcomes[page.format(ROBOTS_500)][1] == UNAVAILABLE_IS_GONE  # 5xx: the site is closed for now
    assert outcomes[page.format(ROBOTS_MOVED)][1] == "robots"      # its rules are where robots.txt moved to
    assert (ROBOTS_TARGET, "GET", "/robots.txt") in hits
    assert outcomes[page.format(ROBOTS_HUGE)][1] == "success" and stats["robots/truncated"] == 1
    assert outcomes[page.format(ROBOTS_SLOW)][1] == UNAVAILABLE_IS_GONE  # unreachable within UAtimeout: closed
    assert re.search(rf"robots.txt http://{ROBOTS_SLOW}:{port}/robots.txt unreachable", result.stderr)
    assert stats["robots/status/500"] == 1 and stats["robots/redirect_deferred"] == 1
