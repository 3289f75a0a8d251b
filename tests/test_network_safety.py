"""Private addresses, politeness across redirects, Retry-After and adaptive back-off.

Pure rules first (addresses.py, politeness.py, the lock table), then crawls
of loopback servers: a seed on 127.0.0.2 whose links and redirects lead to
other loopback hosts the job does not name, a redirect chain on one host
timed by the server, and a host that answers 429 with Retry-After.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import socketserver
import threading
from types import SimpleNamespace

import pytest
from conftest import free_port

from combine_scrapy.access.addresses import (
    AddressPolicy,
    canonical_endpoint,
    endpoint,
    non_public,
    parse_ip,
    scheme_refusal,
)
from combine_scrapy.access.politeness import MAX_RETRY_AFTER, MIN_BACKOFF, HostPace, parse_retry_after
from combine_scrapy.access.urls import SCHEMES, UrlRule
from combine_scrapy.frontier import Outcome, locks_for, outcome_for_status
from combine_scrapy.job import Fetching, LockIntervals
from combine_scrapy.operations.sampleweb import LoopbackWeb, Page

TOPIC = "100: carnivorous plants=CP\n"


def html(title: str, links: str = "") -> Page:
    return Page(f"<html><head><title>{title}</title></head><body><p>{title} carnivorous plants</p>{links}</body></html>")


# --- addresses.py -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("host, address", [
    ("127.0.0.1", "127.0.0.1"),
    ("2130706433", "127.0.0.1"),          # one decimal number
    ("0x7f.1", "127.0.0.1"),              # hex, two parts
    ("0177.0.0.1", "127.0.0.1"),          # octal
    ("127.1", "127.0.0.1"),
    ("0x7f000001", "127.0.0.1"),
    ("0", "0.0.0.0"),
    ("[::1]", "::1"),
    ("[::ffff:127.0.0.1]", "::ffff:7f00:1"),
    ("[fe80::1%25eth0]", "fe80::1"),
    ("169.254.169.254.", "169.254.169.254"),
])
def test_address_literals_are_read_as_the_resolver_reads_them(host, address):
    assert parse_ip(host) == ipaddress.ip_address(address)


@pytest.mark.parametrize("host", ["example.com", "127.0.0.1.example", "1.2.3.4.5", "256.1.1.1", "08.1.1.1", "0x", "[::g]", ""])
def test_names_are_not_addresses(host):
    assert parse_ip(host) is None


@pytest.mark.parametrize("host", ["0x7f.1", "127.1", "0", "1.16777215", "1.16777216", "0x.1", "1.0x", "00x1", "0377.0xff.255.1"])
def test_ipv4_spellings_agree_with_the_c_library(host):
    try:
        expected = ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        expected = None
    assert parse_ip(host) == expected


@pytest.mark.parametrize("address, kind", [
    ("127.0.0.1", "loopback"), ("10.1.2.3", "private"), ("172.16.0.1", "private"), ("192.168.1.1", "private"),
    ("169.254.169.254", "link-local"), ("0.0.0.0", "unspecified"), ("::", "unspecified"), ("::1", "loopback"),
    ("fd00::1", "unique-local"), ("fe80::1", "link-local"), ("::ffff:127.0.0.1", "loopback"),
    ("::ffff:10.0.0.1", "private"), ("64:ff9b::7f00:1", "loopback"), ("2002:7f00:1::", "loopback"),
    ("224.0.0.1", "multicast"), ("100.64.0.1", "reserved"), ("::127.0.0.1", "reserved"),
    ("8.8.8.8", None), ("2606:4700::1", None), ("::ffff:8.8.8.8", None),
])
def test_non_public_addresses_and_why(address, kind):
    assert non_public(ipaddress.ip_address(address)) == kind


def _policy(seeds=("http://127.0.0.2:8000/",), sites_ok=(), allow=(), allow_all=False) -> AddressPolicy:
    rules = SimpleNamespace(allow=tuple(UrlRule.parse(rule) for rule in allow) or (UrlRule.parse("HOST: .*$"),))
    job = SimpleNamespace(seeds=seeds, sites_ok=frozenset(sites_ok), url_rules=rules, fetching=Fetching(allow_private_addresses=allow_all))
    return AddressPolicy.for_job(job)


def test_private_hosts_the_job_does_not_name_are_refused():
    policy = _policy()
    assert policy.refusal("http://127.0.0.2:8000/page.html") is None          # the seed's host
    assert policy.refusal("http://127.0.0.2:6379/") == "127.0.0.2 is loopback"  # same address, another port
    assert policy.refusal("http://127.0.0.3:8000/") == "127.0.0.3 is loopback"
    assert policy.refusal("http://[::1]:8000/") == "::1 is loopback"
    assert policy.refusal("http://2130706433/") == "2130706433 (127.0.0.1) is loopback"
    assert policy.refusal("http://169.254.169.254/latest/meta-data/") == "169.254.169.254 is link-local"
    assert policy.refusal("http://example.com/") is None
    assert policy.refusal("http://intranet.example/", [ipaddress.ip_address("10.0.0.5")]) == "intranet.example (10.0.0.5) is private"
    assert policy.refusal("http://www.example.com/", [ipaddress.ip_address("93.184.216.34")]) is None


def test_hosts_the_job_names_may_be_private():
    assert _policy(sites_ok=["127.0.0.3"]).refusal("http://127.0.0.3:9/") is None
    assert _policy(sites_ok=["127.0.0.3:9"]).refusal("http://127.0.0.3:10/") is not None
    assert _policy(allow=[r"HOST: ^127\.0\.0\.3$"]).refusal("http://127.0.0.3:9/") is None
    assert _policy(allow=[r"HOST: ^10\."]).refusal("http://10.9.9.9/") is None
    assert _policy(allow=["HOST: .*$"]).refusal("http://127.0.0.3:9/") is not None     # allows all, names none
    assert _policy(allow=[r"HOST: \d"]).refusal("http://127.0.0.3:9/") is not None      # any address at all
    assert _policy(allow=[r"URL \.html$"]).refusal("http://127.0.0.3/a.html") is not None
    assert _policy(allow_all=True).refusal("http://169.254.169.254/") is None


# --- politeness.py ----------------------------------------------------------------------------------------------


def test_retry_after_in_seconds_or_as_a_date_and_bounded():
    now = 1_000_000_000.0  # Sun, 09 Sep 2001 01:46:40 GMT
    assert parse_retry_after("2", now) == 2
    assert parse_retry_after(" 120 ", now) == 120
    assert parse_retry_after("Sun, 09 Sep 2001 01:47:40 GMT", now) == 60
    assert parse_retry_after("Sun, 09 Sep 2001 01:00:00 GMT", now) == 0      # already past
    assert parse_retry_after("99999999999", now) == MAX_RETRY_AFTER
    for nonsense in (None, "", "soon", "-5", "1.5", "1e999", "Sun, 99 Foo 2001", "Sun, 09 Sep 2001 01:47:40"):
        assert parse_retry_after(nonsense, now) is None, nonsense


def test_a_host_waits_its_interval_after_each_request_and_answer():
    pace = HostPace(1.0)
    assert pace.reserve("a", 100.0) == 100.0
    assert pace.reserve("a", 100.2) == 101.0       # the next request to the host waits
    assert pace.reserve("b", 100.2) == 100.2       # another host does not
    pace.answered("a", 101.5, 200, latency=0.01)
    assert pace.next_turn("a") == 102.5            # counted from the answer


def test_overload_backs_off_retry_after_holds_and_success_decays():
    pace = HostPace(0.5)
    first = pace.answered("a", 10.0, 429, retry_after=30)
    assert first.overloaded and first.retry_after == 30 and first.report
    assert pace.next_turn("a") == 40.0 and pace.interval("a") == MIN_BACKOFF
    pace.answered("a", 41.0, 503)
    pace.answered("a", 42.0, 503)
    assert pace.interval("a") == 4 * MIN_BACKOFF
    for now in range(43, 50):
        last = pace.answered("a", float(now), 200, latency=0.01)
    assert pace.interval("a") == 0.5 and pace.delay("a") is None and last.interval == 0.5


def test_a_slow_host_gets_a_longer_interval_and_the_frontier_hears_of_big_changes():
    pace = HostPace(1.0)
    assert not pace.answered("a", 1.0, 200, latency=0.9).report     # under a second says nothing of load
    slow = pace.answered("a", 2.0, 200, latency=2.0)
    assert slow.report and pace.delay("a") == 10.0
    assert not pace.answered("a", 3.0, 200, latency=2.1).report     # a 5% change is not worth a write
    assert pace.answered("a", 4.0, 200, latency=0.1).report and pace.delay("a") is None
    assert pace.set_crawl_delay("a", 3.0) == 3.0 and pace.interval("a") == 3.0


def test_retry_after_replaces_the_day_long_unavailable_lock():
    intervals = LockIntervals(host=5, unavailable=86_400, success=1, not_modified=1, not_found=1, robot_rules=1)
    assert locks_for(Outcome.UNAVAILABLE, intervals) == (locks := locks_for(Outcome.UNAVAILABLE, intervals, None))
    assert locks.url == 86_400 and locks.host == 50
    held = locks_for(Outcome.UNAVAILABLE, intervals, retry_after=120)
    assert held.url == 120 and held.host == 120
    assert locks_for(Outcome.UNAVAILABLE, intervals, retry_after=1).host == 5       # never sooner than WaitIntervalHost
    gone = locks_for(Outcome.NOT_FOUND, intervals, retry_after=120)                 # out of retries: the URL is gone,
    assert gone.url == 1 and gone.host == 120                                 # its host still held as asked


@pytest.mark.parametrize("status, outcome", [
    (200, Outcome.SUCCESS), (404, Outcome.NOT_FOUND), (503, Outcome.UNAVAILABLE), (999, Outcome.UNAVAILABLE),
    (-1, Outcome.UNAVAILABLE), (150, Outcome.UNAVAILABLE), (0, Outcome.UNAVAILABLE), (None, Outcome.UNAVAILABLE),
])
def test_statuses_http_has_no_room_for_are_unavailable(status, outcome):
    assert outcome_for_status(status) is outcome


# --- crawls -----------------------------------------------------------------------------------------------------


class RecordingServer:
    """A TCP server on 127.0.0.1 that answers every connection with a small page and records that it came."""

    def __init__(self):
        self.hits: list[bytes] = []
        hits = self.hits

        class Handler(socketserver.StreamRequestHandler):
            def handle(self):
                hits.append(self.rfile.readline())
                self.wfile.write(b"HTTP/1.0 200 OK\r\nContent-Type: text/html\r\n\r\n<p>internal secret</p>")

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]

    def __enter__(self):
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


SEED, OTHER, NAMED = "127.0.0.2", "127.0.0.3", "127.0.0.4"


@pytest.mark.crawl
def test_links_and_redirects_to_private_hosts_the_job_does_not_name_are_refused(job_dir):
    port = free_port(SEED)
    with RecordingServer() as internal:
        secret = f"http://127.0.0.1:{internal.port}"
        site = {
            "/robots.txt": Page("", status=404),
            "/": html("Start", "".join(f'<a href="{href}">x</a>' for href in (
                f"http://{OTHER}:{port}/", f"http://[::1]:{internal.port}/", f"http://2130706433:{internal.port}/",
                f"http://0x7f.1:{internal.port}/", "/moved.html", "/ftp.html", "/js.html", f"http://{NAMED}:{port}/",
                f"http://localhost:{internal.port}/",
            ))),
            "/moved.html": Page("", status=302, headers={"Location": f"{secret}/"}),
            "/ftp.html": Page("", status=301, headers={"Location": "ftp://example.org/file"}),
            "/js.html": Page("", status=302, headers={"Location": "javascript:alert(1)"}),
        }
        other = {"/": html("Other")}
        named = {"/robots.txt": Page("", status=302, headers={"Location": f"{secret}/robots.txt"}), "/": html("Named")}
        with LoopbackWeb({SEED: site, OTHER: other, NAMED: named}, port=port) as web:
            job_dir.write(
                "WaitIntervalHost = 0\nUserAgentFollowRedirects = 1\nHarvestRetries = 3\n", TOPIC, [web.url(SEED)],
                **{"sitesOK.txt": f"{NAMED}\n"},
            )
            result = job_dir.crawl()
            stats = result.stats
            other_hits = web.hits_for(OTHER)
            named_hits = [hit.path for hit in web.hits_for(NAMED)]
            seed_hits = [hit.path for hit in web.hits_for(SEED)]
    assert internal.hits == [] and other_hits == []
    # OTHER, [::1] and both spellings of 127.0.0.1 at mark time; localhost (a name), the redirect and NAMED's
    # robots.txt redirect at fetch time
    assert stats["urls/rejected/private_address"] == 7
    assert re.search(r"refused page http://localhost:\d+/: localhost \(127.0.0.1\) is loopback", result.stderr)
    assert "refused redirect http://127.0.0.1:" in result.stderr
    assert "refused robots.txt http://127.0.0.1:" in result.stderr
    assert named_hits == ["/robots.txt"]                   # named (sitesOK), but its robots.txt led to 127.0.0.1: closed
    assert stats["urls/rejected/scheme"] == 2              # ftp: and javascript: refused once each
    assert seed_hits.count("/ftp.html") == seed_hits.count("/js.html") == seed_hits.count("/moved.html") == 1
    with job_dir.frontier() as db:
        done = dict(db.execute("SELECT url, marked FROM url_states WHERE url LIKE '%.html'"))
    assert done == {f"http://{SEED}:{port}/{name}.html": 0 for name in ("moved", "ftp", "js")}  # completed, not retried


@pytest.mark.crawl
def test_every_redirect_hop_waits_its_hosts_turn(job_dir):
    port = free_port(SEED)
    url = f"http://{SEED}:{port}"
    site = {
        "/robots.txt": Page("", status=404),
        "/": html("Start", '<a href="/a.html">a</a>'),
        "/a.html": Page("", status=302, headers={"Location": f"{url}/b.html"}),
        "/b.html": Page("", status=302, headers={"Location": f"{url}/c.html"}),
        "/c.html": html("C"),
    }
    with LoopbackWeb({SEED: site}, port=port) as web:
        job_dir.write("WaitIntervalHost = 1\nUserAgentFollowRedirects = 1\n", TOPIC, [web.url(SEED)])
        result = job_dir.crawl()
        times = [hit.time for hit in web.hits_for(SEED)]
        paths = [hit.path for hit in web.hits_for(SEED)]
    assert paths == ["/robots.txt", "/", "/a.html", "/b.html", "/c.html"]
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert all(gap >= 0.95 for gap in gaps), gaps
    assert result.stats["politeness/waited"] >= 2


class BusyOnce(Page):
    """429 with Retry-After: 2 the first time; serving it puts the real page in its place."""

    def __init__(self, site: dict, path: str, then: Page):
        super().__init__("busy", status=429, headers={"Retry-After": "2", "Content-Type": "text/plain"})
        self.site, self.path, self.then = site, path, then

    def payload(self) -> bytes:
        self.site[self.path] = self.then
        return super().payload()


@pytest.mark.crawl
def test_retry_after_is_honoured_and_the_url_stays_marked(job_dir):
    port = free_port(SEED)
    site = {"/robots.txt": Page("", status=404), "/": html("Start", '<a href="/busy.html">b</a>')}
    site["/busy.html"] = BusyOnce(site, "/busy.html", html("Busy no more"))
    with LoopbackWeb({SEED: site}, port=port) as web:
        job_dir.write("WaitIntervalHost = 0.2\n", TOPIC, [web.url(SEED)])
        result = job_dir.crawl()
        busy_times = [hit.time for hit in web.hits_for(SEED) if hit.path == "/busy.html"]
    stats = result.stats
    assert len(busy_times) == 2 and busy_times[1] - busy_times[0] >= 2 * 0.95   # the server's two seconds, not a day
    assert stats["politeness/retry_after"] == 1 and stats["politeness/overloaded"] == 1
    assert "held 2 s by Retry-After" in result.stderr
    with job_dir.records() as db:
        assert db.execute("SELECT 1 FROM records WHERE title = 'Busy no more'").fetchone()


@pytest.mark.crawl
def test_a_hop_whose_host_is_not_free_within_the_lease_is_marked_instead(job_dir):
    port = free_port(SEED)
    site = {
        "/robots.txt": Page("", status=404),
        "/": html("Start", '<a href="/a.html">a</a>'),
        "/a.html": Page("", status=301, headers={"Location": "/b.html"}),
        "/b.html": html("B"),
    }
    with LoopbackWeb({SEED: site}, port=port) as web:
        job_dir.write("WaitIntervalHost = 1.5\nUserAgentFollowRedirects = 1\n", TOPIC, [web.url(SEED)])
        result = job_dir.crawl("-s", "COMBINE_LEASE_SECONDS=1")
        hits = web.hits_for(SEED)
    assert [hit.path for hit in hits] == ["/robots.txt", "/", "/a.html", "/b.html"]
    assert all(b.time - a.time >= 1.5 * 0.95 for a, b in zip(hits, hits[1:]))
    assert result.stats["fetch/redirect_deferred"] == 1
    assert re.search(r"redirect of http://\S+/a.html to http://\S+/b.html not followed now", result.stderr)
    with job_dir.records() as db:
        assert db.execute("SELECT u.url FROM records r JOIN record_urls u ON u.key = r.key WHERE r.title = 'B'").fetchone()[0].endswith("/b.html")


@pytest.mark.crawl
def test_scrapy_seed_refuses_private_hosts_the_job_does_not_name(job_dir, tmp_path):
    job_dir.write("WaitIntervalHost = 1\n", TOPIC, [f"http://{SEED}:8000/"], **{"sitesOK.txt": f"{NAMED}\n"})
    seeds = tmp_path / "more.txt"
    seeds.write_text(f"http://{SEED}:8000/more.html\nhttp://{NAMED}/\nhttp://{OTHER}/\nhttp://[::1]/\nhttp://example.org/\n")
    result = job_dir.scrapy("seed", "t", str(seeds))
    assert result.returncode == 0, result.stderr
    assert "3 URLs accepted (3 new, 0 already known), 2 refused" in result.stdout
    assert "refused, private_address: 2" in result.stdout


# --- schemes ----------------------------------------------------------------------------------------------------


def test_only_web_schemes_and_the_jobs_ftp_urls_are_fetched():
    assert scheme_refusal("https://example.org/") is None and scheme_refusal("HTTP://example.org/") is None
    assert scheme_refusal("file:///proc/self/environ") == "scheme 'file' is not one of http, https"
    assert scheme_refusal("ftp://example.org/a") == "scheme 'ftp' is not one of http, https"
    assert scheme_refusal("ftp://example.org/a", SCHEMES) is None
    for url in ("data:text/plain,x", "s3://bucket/key", "gopher://x/", "javascript:alert(1)", "//x/", "no scheme"):
        assert scheme_refusal(url, SCHEMES) is not None, url


@pytest.mark.crawl
def test_robots_txt_redirected_to_a_local_file_is_refused_even_with_private_addresses_allowed(job_dir, tmp_path):
    """AllowPrivateAddresses = 1 trusts every host, never a scheme: nothing of the file is read, stored or obeyed."""
    port = free_port(SEED)
    with RecordingServer() as canary:
        local = tmp_path / "local-robots.txt"
        local.write_text(f"User-agent: *\nAllow: /\nSitemap: http://127.0.0.1:{canary.port}/sitemap.xml\n# LOCAL-SECRET\n")
        site = {"/robots.txt": Page("", status=302, headers={"Location": "file:///proc/self/environ"}), "/": html("Start")}
        other = {"/robots.txt": Page("", status=302, headers={"Location": local.as_uri()}), "/": html("Other")}
        with LoopbackWeb({SEED: site, OTHER: other}, port=port) as web:
            job_dir.write(
                "WaitIntervalHost = 0\nAllowPrivateAddresses = 1\nSitemaps = 1\nsaveWARC = 1\n", TOPIC,
                [web.url(SEED), web.url(OTHER)],
            )
            result = job_dir.crawl()
        assert canary.hits == []                                  # the file's Sitemap: line was never read
    assert result.stats["urls/rejected/scheme"] == 2
    assert "refused robots.txt file:///proc/self/environ: scheme 'file' is not one of http, https" in result.stderr
    with job_dir.frontier() as db:
        stored = db.execute("SELECT host, status, body FROM robots").fetchall()
    assert sorted(host for host, _, _ in stored) == sorted([f"{SEED}:{port}", f"{OTHER}:{port}"])
    assert all(status is None and body is None for _, status, body in stored)   # unreachable, nothing of the files
    archived = b"".join(path.read_bytes() for path in (job_dir.data / job_dir.name).rglob("*.warc*"))
    assert b"file:" not in archived and b"LOCAL-SECRET" not in archived and b"PATH=" not in archived


@pytest.mark.crawl
def test_retry_after_on_robots_txt_holds_the_host_until_then_not_for_a_day(job_dir):
    port = free_port(SEED)
    robots = Page(f"User-agent: *\nAllow: /\nSitemap: http://{SEED}:{port}/sitemap.xml\n", headers={"Content-Type": "text/plain"})
    site = {"/": html("Start"), "/sitemap.xml": Page(f"http://{SEED}:{port}/listed.html\n", headers={"Content-Type": "text/plain"}),
            "/listed.html": html("Listed")}
    site["/robots.txt"] = BusyOnce(site, "/robots.txt", robots)
    with LoopbackWeb({SEED: site}, port=port) as web:
        job_dir.write("WaitIntervalHost = 0.2\nSitemaps = 1\nSitemapGuess = 1\n", TOPIC, [web.url(SEED)])
        result = job_dir.crawl()
        hits = web.hits_for(SEED)
    first = hits[0]
    assert first.path == "/robots.txt" and [hit.path for hit in hits[1:]].count("/robots.txt") == 1
    assert all(hit.time - first.time >= 2 * 0.95 for hit in hits[1:]), [(h.path, h.time - first.time) for h in hits]
    assert {"/", "/sitemap.xml", "/listed.html"} <= {hit.path for hit in hits}   # read after the two seconds
    assert result.stats["robots/retry_after"] == 1
    assert f"robots.txt of 127.0.0.2:{port} answered 429: read again in 2 s (Retry-After)" in result.stderr
    with job_dir.frontier() as db:
        assert db.execute("SELECT status FROM robots").fetchall() == [(200,)]      # the 429 was never cached
        assert db.execute("SELECT COUNT(*) FROM url_states WHERE status = 200").fetchone()[0] == 2


@pytest.mark.parametrize("url", ["http://example.org/", "https://example.org:8443/a", "http://127.0.0.2:8000/x?y",
                                 "http://[::1]:8080/", "https://[2001:db8::7]/", "ftp://files.example/pub/", "http://a.b"])
def test_the_endpoint_of_a_canonical_url_is_read_as_urlsplit_reads_it(url):
    assert canonical_endpoint(url) == endpoint(url)
