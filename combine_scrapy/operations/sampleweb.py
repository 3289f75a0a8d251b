"""A small web of virtual hosts on loopback, for machines without internet and for tests.

Each host is its own address in 127.0.0.0/8 (127.0.0.2, 127.0.0.3, ...), all
on one port, so no DNS trick is needed. Every request is logged with its time,
so tests can check politeness. ``python -m combine_scrapy.operations.sampleweb`` serves
the web the ``demo`` job crawls: pages about carnivorous plants and pages off
the topic, links between hosts, a duplicate page, a session-id link and a
robots.txt that forbids a directory.
"""

from __future__ import annotations

import argparse
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

DEMO_PORT = 8931
DEMO_HOSTS = ("127.0.0.2", "127.0.0.3", "127.0.0.4")


@dataclass
class Page:
    body: bytes | str = b""
    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "text/html; charset=utf-8"})
    delay: float = 0.0

    def payload(self) -> bytes:
        return self.body.encode("utf-8") if isinstance(self.body, str) else self.body


@dataclass(frozen=True)
class Hit:
    host: str
    path: str
    time: float
    headers: dict[str, str]


class LoopbackWeb:
    """Serve ``{host address: {path: Page}}`` on one port of several loopback addresses."""

    def __init__(self, sites: dict[str, dict[str, Page]], port: int = 0):
        self.sites = sites
        self.port = port
        self.hits: list[Hit] = []
        self._lock = threading.Lock()
        self._servers: list[ThreadingHTTPServer] = []

    def url(self, host: str, path: str = "/") -> str:
        return f"http://{host}:{self.port}{path}"

    def hits_for(self, host: str) -> list[Hit]:
        with self._lock:
            return [hit for hit in self.hits if hit.host == host]

    def start(self) -> LoopbackWeb:
        for host in self.sites:
            server = ThreadingHTTPServer((host, self.port), self._handler_for(host))
            server.daemon_threads = True
            self.port = server.server_address[1]  # the first bind picks the port when 0
            self._servers.append(server)
            threading.Thread(target=server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        for server in self._servers:
            server.shutdown()
            server.server_close()
        self._servers.clear()

    def __enter__(self) -> LoopbackWeb:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _handler_for(self, host: str) -> type[BaseHTTPRequestHandler]:
        web = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                self._serve(with_body=True)

            def do_HEAD(self) -> None:
                self._serve(with_body=False)

            def _serve(self, with_body: bool) -> None:
                with web._lock:
                    web.hits.append(Hit(host, self.path, time.time(), dict(self.headers.items())))
                pages = web.sites[host]
                page = pages.get(self.path) or pages.get(urlsplit(self.path).path)
                if page is None:
                    page = Page("<html><head><title>Not found</title></head><body>Not found</body></html>", status=404)
                if page.delay:
                    time.sleep(page.delay)
                if page.status == 200 and self._not_modified(page):
                    self.send_response(304)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                payload = page.payload()
                self.send_response(page.status)
                for name, value in page.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if with_body:
                    self.wfile.write(payload)

            def _not_modified(self, page: Page) -> bool:
                """A conditional GET that matches the page's Last-Modified or ETag."""
                since, tags = self.headers.get("If-Modified-Since"), self.headers.get("If-None-Match")
                last_modified, etag = page.headers.get("Last-Modified"), page.headers.get("ETag")
                return bool((since and since == last_modified) or (tags and etag and etag in tags))

            def log_message(self, format: str, *args: object) -> None:  # keep test and demo output clean
                pass

        return Handler


def _html(title: str, body: str, keywords: str = "") -> str:
    meta = f'<meta name="keywords" content="{keywords}">' if keywords else ""
    return f"<!DOCTYPE html><html><head><title>{title}</title>{meta}</head><body>{body}</body></html>"


def demo_sites(port: int = DEMO_PORT) -> dict[str, dict[str, Page]]:
    """The demo job's web: plants (on topic), baseball (off topic, pitchers!), a garden club."""
    plants, baseball, garden = (f"http://{host}:{port}" for host in DEMO_HOSTS)
    drosera = _html(
        "Drosera - the sundews",
        "<h1>Sundews (Drosera)</h1><p>Drosera, the sundews, are carnivorous plants that catch insects "
        "with sticky glands. Sundews grow on every continent except Antarctica.</p>"
        f'<p>See also <a href="{plants}/nepenthes.html">Nepenthes</a>.</p>',
        keywords="drosera, sundew, carnivorous plants",
    )
    return {
        DEMO_HOSTS[0]: {
            "/robots.txt": Page("User-agent: *\nDisallow: /private/\n", headers={"Content-Type": "text/plain"}),
            "/": Page(_html(
                "Carnivorous plants of the world",
                "<h1>Carnivorous plants</h1><p>Carnivorous plants trap and digest insects. This site describes "
                "sundews, pitcher plants, the Venus flytrap and Drosophyllum.</p><ul>"
                f'<li><a href="{plants}/drosera.html">Sundews (Drosera)</a></li>'
                f'<li><a href="{plants}/nepenthes.html#care">Tropical pitcher plants</a></li>'
                f'<li><a href="http://127.0.0.2:{port}/sarracenia.html;jsessionid=A1B2C3D4">North American '
                "pitcher plants</a></li>"
                f'<li><a href="{plants}/drosophyllum.html">Drosophyllum lusitanicum</a></li>'
                f'<li><a href="{plants}/private/members.html">Members only</a></li>'
                f'<li><a href="{plants}/mirror/sundews.html">Sundews (mirror)</a></li>'
                f'<li><a href="{garden}/">The garden club</a></li>'
                f'<li><a href="{baseball}/">Our favourite pitchers</a></li></ul>',
                keywords="carnivorous plants, insectivorous plants",
            )),
            "/drosera.html": Page(drosera),
            "/mirror/sundews.html": Page(drosera),
            "/nepenthes.html": Page(_html(
                "Nepenthes - tropical pitcher plants",
                "<h1>Nepenthes</h1><p>Nepenthes are carnivorous plants whose pitchers hold a digestive "
                f'liquid.</p><p><a href="{plants}/">Back to carnivorous plants</a></p>',
            )),
            "/sarracenia.html": Page(_html(
                "Sarracenia",
                "<h1>Sarracenia, the trumpet pitchers</h1><p>Sarracenia are carnivorous plants of North "
                "American bogs.</p>",
            )),
            "/drosophyllum.html": Page(_html(
                "The dewy pine",
                "<h2>Drosophyllum</h2><p>D. californica is not a real species, but D.lusitanicum is a "
                "carnivorous plant of Portugal and Spain. The insectivorous dewy pine grows in dry soil.</p>",
            )),
            "/private/members.html": Page(_html(
                "Members", "<p>Carnivorous plants members area: this page is forbidden by robots.txt.</p>"
            )),
        },
        DEMO_HOSTS[1]: {
            "/": Page(_html(
                "Baseball pitchers",
                "<h1>Great pitchers</h1><p>The best pitcher of the baseball season threw 300 strikeouts. "
                "Pitchers and catchers report in February.</p>"
                f'<p><a href="{baseball}/stats.html">Season statistics</a></p>',
            )),
            "/stats.html": Page(_html(
                "Statistics",
                "<p>Earned run averages of every pitcher in the league.</p>"
                f'<p><a href="{garden}/hidden.html">A page about carnivorous plants</a></p>',
            )),
        },
        DEMO_HOSTS[2]: {
            "/": Page(_html(
                "Garden club: growing carnivorous plants",
                "<h1>Growing carnivorous plants</h1><p>Venus flytrap (Dionaea) and sundews need rain water "
                "and full sun. Our carnivorous plants show is in June.</p>"
                f'<p><a href="{plants}/">Carnivorous plants of the world</a></p>',
            )),
            "/hidden.html": Page(_html(
                "Carnivorous plants in the club greenhouse",
                "<p>Only linked from an off-topic page, so a focused crawl never gets here: carnivorous "
                "plants, Drosera, Nepenthes.</p>",
            )),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description="Serve the demo job's sample web on loopback.")
    parser.add_argument("--port", type=int, default=DEMO_PORT)
    args = parser.parse_args()
    web = LoopbackWeb(demo_sites(args.port), port=args.port).start()
    print(f"sample web on {', '.join(web.url(host) for host in DEMO_HOSTS)} (Ctrl-C stops it)", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        web.stop()


if __name__ == "__main__":
    main()
