"""The virtual web (bench/virtualweb): deterministic, big, with every feature a crawler must meet, served as a proxy."""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
import socket
import statistics
import subprocess
import sys
from urllib.parse import urljoin, urlsplit

import lxml.html
import pytest
from conftest import PROJECT

from bench.virtualweb import VirtualWeb
from bench.virtualweb.job import write_job
from bench.virtualweb.server import ServerThread
from bench.virtualweb.web import (
    ALIAS,
    BORDERLINE,
    BROKEN,
    CALENDAR,
    COPY,
    NEAR_DUPLICATE,
    PRINT,
    REDIRECT_LOOP,
    REPEAT_TRAP,
    ROBOTS_NAMES,
    TOPIC,
)

TOPIC_DEFINITION = PROJECT / "bench" / "virtualweb" / "topicdefinition.txt"


@pytest.fixture(scope="module")
def web() -> VirtualWeb:
    return VirtualWeb()  # the default size: seed 1, 1,000 hosts, 100,000 pages


@pytest.fixture(scope="module")
def proxy(web):
    with ServerThread(web) as server:
        yield server


def pages_with(web: VirtualWeb, flag: int) -> list[int]:
    return [page for page, flags in enumerate(web.page_flags) if flags & flag]


def hosts_with(web: VirtualWeb, flag: int) -> list[int]:
    return [host for host, flags in enumerate(web.host_flags) if flags & flag]


def fetch(web: VirtualWeb, url: str):
    response = web.resolve(url)
    return response.status, response.body


# ---- determinism and size -----------------------------------------------------


def test_same_seed_gives_the_same_web_and_another_seed_another():
    first, second, other = VirtualWeb(5, 40, 4000), VirtualWeb(5, 40, 4000), VirtualWeb(6, 40, 4000)
    assert first.link_numbers == second.link_numbers and first.page_count == second.page_count
    assert first.tunnels == second.tunnels and first.source == second.source
    assert all(first.render(page) == second.render(page) for page in range(0, 4000, 37))
    assert first.link_numbers != other.link_numbers
    assert first.render(1) != other.render(1)


@pytest.mark.crawl
def test_pages_do_not_depend_on_the_process_hash_seed():
    script = (
        "import hashlib; from bench.virtualweb import VirtualWeb; w = VirtualWeb(3, 30, 3000); "
        "print(hashlib.md5(b''.join(w.render(p) for p in range(0, 3000, 7))).hexdigest())"
    )
    digests = {
        subprocess.run(
            [sys.executable, "-c", script], cwd=PROJECT, capture_output=True, text=True, check=True,
            env={**os.environ, "PYTHONHASHSEED": hash_seed},
        ).stdout
        for hash_seed in ("1", "2")
    }
    assert len(digests) == 1


def test_default_web_has_a_thousand_hosts_and_a_hundred_thousand_addressable_pages(web):
    assert (web.hosts, web.pages) == (1000, 100_000)
    assert len({web.host_name(host) for host in range(web.hosts)}) == 1000
    for page in [0, 1, 99_999, *range(13, 100_000, 997)]:
        response = web.resolve(web.url(page))
        broken = web.page_flags[page] & BROKEN
        assert (response.status, response.page) == ((500, None) if broken else (200, page)), web.url(page)
    assert fetch(web, "http://h1000.web.test/")[0] == 502
    assert fetch(web, f"http://{web.host_name(0)}/articles/{web.page_count[0]}.html")[0] == 404


def test_pages_have_realistic_sizes_and_link_counts(web):
    sample = range(0, web.pages, 101)
    sizes = [len(web.render(page)) for page in sample]
    assert 10_000 <= statistics.median(sizes) <= 30_000
    assert min(sizes) >= 2_000 and max(sizes) <= 160_000
    link_counts = [len(web.links(page)) for page in sample]
    assert min(link_counts) >= 10 and max(link_counts) <= 60
    same_host = sum(
        1 for page in sample for _, _, target in web.links(page)
        if target is not None and web.host_of(target) == web.host_of(page)
    )
    assert 0.6 < same_host / sum(link_counts) < 0.9


# ---- features -----------------------------------------------------------------


def test_copies_print_versions_aliases_and_session_ids_serve_identical_bytes(web):
    copies = pages_with(web, COPY)
    assert len(copies) > 500
    for copy in copies[:50]:
        assert fetch(web, web.url(copy))[1] == fetch(web, web.url(web.source[copy]))[1]
    assert any(web.host_of(copy) != web.host_of(web.source[copy]) for copy in copies)
    printable = [p for p in pages_with(web, PRINT) if not web.page_flags[p] & BROKEN and web.path(p) != "/"][:20]
    for page in printable:
        host = web.host_name(web.host_of(page))
        local = page - web.first_page[web.host_of(page)]
        assert fetch(web, f"http://{host}/print/{local}.html")[1] == fetch(web, web.url(page))[1]
    alias_host = hosts_with(web, ALIAS)[0]
    home = web.url(web.first_page[alias_host])
    assert fetch(web, home.replace("http://", "http://www."))[1] == fetch(web, home)[1]
    without_alias = next(h for h in range(web.hosts) if not web.host_flags[h] & ALIAS)
    assert fetch(web, f"http://www.{web.host_name(without_alias)}/")[0] == 502
    body = fetch(web, home)[1]
    for suffix in (";jsessionid=0123ABCD", "?PHPSESSID=99ff", "?sid=42"):
        assert fetch(web, home + suffix)[1] == body
    assert fetch(web, home + "?page=2")[0] == 404


def test_links_carry_session_ids_and_server_aliases(web):
    hrefs = [href for page in range(0, 30_000, 3) for href, _, _ in web.links(page)]
    for marker in (";jsessionid=", "?PHPSESSID=", "?sid=", "http://www."):
        decorated = [href for href in hrefs if marker in href]
        assert len(decorated) > 50, marker
    page = next(p for p in range(30_000) if any(";jsessionid=" in h for h, _, _ in web.links(p)))
    href, _, target = next(link for link in web.links(page) if ";jsessionid=" in link[0])
    assert web.page_of(urljoin(web.url(page), href)) == target


def test_near_duplicates_differ_only_in_date_and_advert(web):
    near = [p for p in pages_with(web, NEAR_DUPLICATE) if not web.page_flags[web.source[p]] & BROKEN]
    assert len(near) > 1000
    for page in near[:20]:
        copy, original = fetch(web, web.url(page))[1].decode(), fetch(web, web.url(web.source[page]))[1].decode()
        assert copy != original
        changed = [line for line in difflib.ndiff(original.splitlines(), copy.splitlines()) if line[:1] in "+-"]
        assert 0 < len(changed) <= 6, changed
        assert web.is_relevant(web.url(page)) == web.is_relevant(web.url(web.source[page]))


def test_calendar_trap_never_ends(web):
    host = web.host_name(hosts_with(web, CALENDAR)[0])
    url, seen = f"http://{host}/calendar/2024/01.html", set()
    for _ in range(61):
        status, body = fetch(web, url)
        assert status == 200 and body not in seen
        seen.add(body)
        next_month = lxml.html.fromstring(body).xpath("//ul/li[2]/a/@href")[0]
        url = urljoin(url, next_month)
    assert url.endswith("/calendar/2029/02.html")
    assert fetch(web, f"http://{host}/calendar/9999/12.html")[0] == 200
    assert not web.is_relevant(url)


def test_repeated_segment_trap_grows_forever_with_the_same_bytes(web):
    host = hosts_with(web, REPEAT_TRAP)[0]
    page = next(p for p in range(web.first_page[host] + 1, web.first_page[host + 1]) if not web.page_flags[p])
    url, body = web.url(page), fetch(web, web.url(page))[1]
    for _depth in range(10):
        permalink = lxml.html.fromstring(fetch(web, url)[1]).xpath('//a[text()="Permalink"]/@href')[0]
        url = urljoin(url, permalink)
        assert fetch(web, url) == (200, body)
        assert web.page_of(url) == page
    section = urlsplit(url).path.split("/")[1]
    assert urlsplit(url).path.startswith(f"/{section}/{section}/{section}/{section}/")
    other = next(h for h in range(web.hosts) if not web.host_flags[h] & REPEAT_TRAP)
    _, section, leaf = web.path(web.first_page[other] + 1).split("/")
    assert fetch(web, f"http://{web.host_name(other)}/{section}/{section}/{leaf}")[0] == 404


def test_every_robots_variant_is_served(web, proxy):
    seen = {}
    for host in range(web.hosts):
        seen.setdefault(ROBOTS_NAMES[web.host_robots[host]], host)
    assert set(seen) == set(ROBOTS_NAMES)
    robots = {name: web.resolve(f"http://{web.host_name(host)}/robots.txt") for name, host in seen.items()}
    assert robots["missing"].status == 404 and robots["server-error"].status == 500
    assert b"Crawl-delay: 5" in robots["crawl-delay"].body
    assert robots["disallow-all"].body == b"User-agent: *\nDisallow: /\n"
    assert robots["empty"].status == 200 and robots["empty"].body == b""
    assert b"\x00" in robots["garbage"].body
    redirect = robots["redirect"]
    assert redirect.status == 301
    assert web.resolve(redirect.location).body == b"User-agent: *\nDisallow: /private/\n"
    private = next(p for p in range(web.pages) if "/private/" in web.url(p))
    assert not web.robots_allows(web.url(private))


def test_redirects_loops_dead_links_and_server_errors(web):
    moved = web.resolve(f"http://{web.host_name(0)}/old/3.html")
    assert moved.status == 301 and moved.location == web.url(3)
    loop_host = web.host_name(hosts_with(web, REDIRECT_LOOP)[0])
    first = web.resolve(f"http://{loop_host}/loop/1.html")
    assert web.resolve(first.location).location == f"http://{loop_host}/loop/1.html"
    dead = [
        urljoin(web.url(page), href) for page in range(2000) for href, _, target in web.links(page) if target is None
        and "/calendar/" not in href and "/loop/" not in href
    ]
    assert dead and all(fetch(web, url)[0] == 404 for url in dead[:50])
    broken = pages_with(web, BROKEN)
    assert len(broken) > 100 and fetch(web, web.url(broken[0]))[0] == 500


def test_tunnels_join_clusters_through_off_topic_pages(web):
    assert len(web.clusters) >= 10 and len(web.tunnels) >= len(web.clusters)
    ring = {(web.host_cluster[web.host_of(t[0])], web.host_cluster[web.host_of(t[-1])]) for t in web.tunnels}
    assert all((c, (c + 1) % len(web.clusters)) in ring for c in range(len(web.clusters)))
    for chain in web.tunnels:
        start, *middle, end = chain
        assert 1 <= len(middle) <= 3
        assert web.is_relevant(web.url(start)) and web.is_relevant(web.url(end))
        assert web.host_cluster[web.host_of(start)] != web.host_cluster[web.host_of(end)]
        assert all(not web.is_relevant(web.url(p)) and web.host_cluster[web.host_of(p)] < 0 for p in middle)
        for page, next_page in zip(chain, chain[1:]):
            assert web.url(next_page).encode() in fetch(web, web.url(page))[1]


def test_on_topic_pages_link_across_hosts_only_within_their_cluster(web):
    tunnel_starts = {chain[0] for chain in web.tunnels}
    for page in range(0, web.pages, 53):
        host = web.host_of(page)
        if web.page_vocabulary[page] != TOPIC or web.host_cluster[host] < 0 or page in tunnel_starts:
            continue
        for _, _, target in web.links(page):
            if target is not None:
                assert web.host_cluster[web.host_of(target)] in (web.host_cluster[host], -1)


# ---- ground truth -------------------------------------------------------------

def topic_rows() -> list[tuple[int, list[re.Pattern]]]:
    """The shipped topic definition as (weight, [term patterns]), read with Combine's row grammar."""
    row = re.compile(r"^\s*(-?\d+):\s+([^=]+)\s*=\s*(.*)$")
    matches = (row.match(line) for line in TOPIC_DEFINITION.read_text().splitlines() if not line.startswith("#"))
    return [
        (int(m.group(1)), [re.compile(rf"\b{term.strip()}\b") for term in m.group(2).split("@and")])
        for m in matches
        if m
    ]


TOPIC_ROWS = topic_rows()


def plain_score(html: bytes, path: str) -> int:
    """Combine's Algorithm 1 with the shipped topic definition: title 10, meta 4, headings 2, text 1."""
    doc = lxml.html.fromstring(html)
    fields = (
        (" ".join(doc.xpath("//title/text()")), 10),
        (" ".join(doc.xpath("//meta/@content")), 4),
        (" ".join(t for h in doc.xpath("//h1|//h2|//h3") for t in h.itertext()), 2),
        (" ".join(doc.find("body").itertext()), 1),
        (path.replace("/", " "), 1),
    )
    score = 0
    for text, location_weight in fields:
        words = re.sub(r"[^\w/'\-]|_|\b\d+\b", " ", text).lower()
        for weight, terms in TOPIC_ROWS:
            score += min(len(term.findall(words)) for term in terms) * weight * location_weight
    return score


def test_ground_truth_agrees_with_the_page_text(web):
    relevant = [web.page_of(url) for url in web.relevant_urls()[::400]]
    sample = [*range(0, web.pages, 701), *pages_with(web, BORDERLINE)[:40], *pages_with(web, COPY)[:20], *relevant]
    on = off = 0
    for page in sample:
        url = web.url(page)
        status, body = fetch(web, url)
        if status != 200:
            continue
        score = plain_score(body, urlsplit(url).path)
        if web.is_relevant(url):
            on += 1
            assert score >= 500, (url, score)
        else:
            off += 1
            assert score < 90, (url, score)
    assert on > 40 and off > 150


def test_relevant_urls_and_counts(web):
    counts = web.counts()
    relevant = web.relevant_urls()
    polite = web.relevant_urls(polite=True)
    assert len(relevant) == counts["relevant_distinct"] and 10_000 < len(relevant) < 30_000
    assert len(polite) < len(relevant) and set(polite) <= set(relevant)
    assert all(web.is_relevant(url) for url in relevant[::97])
    assert all(web.is_relevant(url) for url in web.seeds())
    assert counts["tunnels"] == len(web.tunnels) and counts["hosts"] == 1000


@pytest.mark.crawl
def test_truth_and_job_commands(tmp_path):
    small = ["--hosts", "40", "--pages", "4000", "--seed", "2"]

    def run(*args: str) -> None:
        command = [sys.executable, "-m", "bench.virtualweb", *args, *small]
        subprocess.run(command, cwd=PROJECT, capture_output=True, text=True, check=True)

    run("truth", "--out", str(tmp_path / "truth.txt"))
    truth = (tmp_path / "truth.txt").read_text().split()
    assert truth == VirtualWeb(2, 40, 4000).relevant_urls()
    run("job", "--out", str(tmp_path / "topics" / "vweb"), "--port", "8999", "--wait", "2.5",
        "--set", "CrawlStrategy=PageRank", "--serveralias")
    job = tmp_path / "topics" / "vweb"
    config = (job / "combine.cfg").read_text()
    assert "WaitIntervalHost = 2.5" in config and "http_proxy=http://127.0.0.1:8999" in config
    assert "CrawlStrategy = PageRank" in config and "<serveralias>" in config
    assert (job / "topicdefinition.txt").read_text() == TOPIC_DEFINITION.read_text()
    seeds = (job / "seeds.txt").read_text().split()
    assert len(seeds) == 3 and all(VirtualWeb(2, 40, 4000).is_relevant(url) for url in seeds)


# ---- the proxy server ---------------------------------------------------------


def exchange(port: int, raw: bytes) -> bytes:
    """Send raw bytes, read until the server closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(raw)
        chunks = []
        while chunk := connection.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_proxy_answers_absolute_uri_and_host_header_requests(web, proxy):
    page = web.first_page[web.seed_hosts[0]] + 1
    url, body = web.url(page), web.render(page)
    host, path = urlsplit(url).netloc, urlsplit(url).path
    absolute = exchange(proxy.port, f"GET {url} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
    origin = exchange(proxy.port, f"GET {path} HTTP/1.1\r\nHost: {host}:8950\r\nConnection: close\r\n\r\n".encode())
    assert absolute.startswith(b"HTTP/1.1 200 OK\r\n") and absolute.endswith(body)
    assert origin.split(b"\r\n\r\n", 1)[1] == body
    last_modified = re.search(rb"Last-Modified: ([^\r]+)", absolute).group(1).decode()
    pipelined = exchange(proxy.port, (
        f"GET {url} HTTP/1.1\r\nHost: {host}\r\n\r\n"
        f"HEAD {url} HTTP/1.1\r\nHost: {host}\r\n\r\n"
        f"GET {url} HTTP/1.1\r\nHost: {host}\r\nIf-Modified-Since: {last_modified}\r\n\r\n"
        f"GET http://nowhere.web.test/ HTTP/1.1\r\nHost: nowhere.web.test\r\nConnection: close\r\n\r\n"
    ).encode())
    statuses = re.findall(rb"HTTP/1.1 (\d{3})", pipelined)
    assert statuses == [b"200", b"200", b"304", b"502"]
    assert pipelined.count(body) == 1
    connect = exchange(proxy.port, b"CONNECT h0001.web.test:443 HTTP/1.1\r\nHost: h0001.web.test\r\n\r\n")
    assert connect.startswith(b"HTTP/1.1 405")


def get(port: int, url: str) -> bytes:
    """The body of a proxied ``GET url`` on a connection of its own."""
    host = urlsplit(url).netloc
    answer = exchange(port, f"GET {url} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
    return answer.split(b"\r\n\r\n", 1)[1]


def test_control_host_serves_the_request_log_and_stats(web, proxy):
    get(proxy.port, "http://control.test/reset")
    robots = f"http://{web.host_name(7)}/robots.txt"
    get(proxy.port, robots)
    entries = [json.loads(line) for line in get(proxy.port, "http://control.test/log").splitlines()]
    expected = [(web.host_name(7), "/robots.txt", web.resolve(robots).status)]
    assert [(entry["host"], entry["path"], entry["status"]) for entry in entries] == expected
    assert entries[0]["t"] > 0
    assert get(proxy.port, f"http://control.test/log?since={entries[0]['seq'] + 1}") == b""
    assert json.loads(get(proxy.port, "http://control.test/stats"))["pages"] == web.pages
    assert entries[0]["in_flight"] == 1 and entries[0]["done"] >= entries[0]["t"]


def test_a_held_answer_shows_the_requests_to_one_host_in_flight_at_once(web):
    host, other = web.host_name(3), web.host_name(4)
    with ServerThread(web, latency=0.3) as server:
        sockets = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(3)]
        for connection, name in zip(sockets, (host, host, other)):  # two to one host at once, one elsewhere
            connection.sendall(f"GET http://{name}/ HTTP/1.1\r\nHost: {name}\r\nConnection: close\r\n\r\n".encode())
        for connection in sockets:
            while connection.recv(65536):
                pass
            connection.close()
        entries = [json.loads(line) for line in get(server.port, "http://control.test/log").splitlines()]
        stats = json.loads(get(server.port, "http://control.test/stats"))
    assert sorted((entry["host"], entry["in_flight"]) for entry in entries) == [(host, 1), (host, 2), (other, 1)]
    assert all(entry["done"] - entry["t"] >= 0.29 for entry in entries)
    assert stats["most_in_flight_per_host"] == 2 and stats["latency"] == 0.3


SPIDER = '''
import hashlib, json, sys
import scrapy
from scrapy.crawler import CrawlerProcess

class Fetch(scrapy.Spider):
    name = "fetch"
    start_urls = json.loads(sys.argv[1])

    def parse(self, response):
        yield {"url": response.url, "status": response.status, "md5": hashlib.md5(response.body).hexdigest()}
        if response.meta["depth"] < 1:
            for href in response.css("a::attr(href)").getall()[:6]:
                yield response.follow(href, self.parse)

process = CrawlerProcess(settings={
    "FEEDS": {sys.argv[2]: {"format": "jsonlines"}}, "LOG_LEVEL": "ERROR", "ROBOTSTXT_OBEY": False,
    "REDIRECT_ENABLED": False, "HTTPERROR_ALLOW_ALL": True, "CLOSESPIDER_TIMEOUT": 30, "TELNETCONSOLE_ENABLED": False,
})
process.crawl(Fetch)
process.start()
'''


@pytest.mark.crawl
def test_scrapy_fetches_through_the_proxy_with_http_proxy_middleware(web, proxy, tmp_path):
    script, items = tmp_path / "fetch.py", tmp_path / "items.jsonl"
    script.write_text(SPIDER)
    result = subprocess.run(
        [sys.executable, str(script), json.dumps(web.seeds()), str(items)],
        capture_output=True, text=True, timeout=60, env={**os.environ, "http_proxy": proxy.proxy, "no_proxy": ""},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    fetched = [json.loads(line) for line in items.read_text().splitlines()]
    assert len(fetched) > 10
    assert {item["url"] for item in fetched} >= set(web.seeds())
    for item in fetched:
        expected = web.resolve(item["url"])
        assert item["status"] == expected.status, item
        assert item["md5"] == hashlib.md5(expected.body).hexdigest(), item


@pytest.mark.crawl
def test_selfbench_reports_requests_per_second(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "bench.virtualweb", "selfbench", "--seconds", "1", "--connections", "8",
         "--hosts", "40", "--pages", "4000", "--results", str(tmp_path)],
        cwd=PROJECT, capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    figures = json.loads((tmp_path / "virtualweb.json").read_text())
    assert figures["requests_per_second"] > 500 and figures["status"]["200"] > 0
    assert "requests per second" in (tmp_path / "virtualweb.md").read_text()


def test_job_takes_more_variables_and_declares_the_server_aliases(tmp_path):
    from combine_scrapy.job import load_job

    web = VirtualWeb(2, 40, 4000)
    aliased = web.alias_hosts()
    assert aliased and all(web.host_index(f"www.{web.host_name(host)}") == host for host in aliased)
    write_job(web, tmp_path / "vweb", 8999, 0.5, {"CrawlStrategy": "BestFirst", "LinkStrategy": "RW"}, serveralias=True)
    job = load_job("vweb", tmp_path)
    assert (job.crawling.strategy, job.links.method, job.locks.host) == ("BestFirst", "RW", 0.5)
    assert dict(job.url_rules.serveralias) == {f"www.{web.host_name(host)}": web.host_name(host) for host in aliased}
    write_job(web, tmp_path / "plain", 8999, 0.5)
    assert not load_job("plain", tmp_path).url_rules.serveralias
