"""The generated web: its structure, every page's bytes, and the ground truth.

Everything follows from ``(seed, hosts, pages)``. The structure (pages per
host, host roles, page topics, duplicates, tunnels, robots.txt variants) is
drawn once into compact arrays; a page's bytes are rendered when asked from a
per-page random stream and a slice of one pre-drawn array of 64-bit link
numbers, so the web needs no files and little memory. Pages are never stored:
the same request always yields the same bytes.

Hosts are ``h0000.web.test`` ... (the ``.test`` TLD never resolves), some with
a server alias ``www.h0042.web.test``. Topical clusters are groups of hosts
about the topic whose on-topic pages link only within the cluster; clusters
are joined by tunnels, chains of one to three off-topic pages.
"""

from __future__ import annotations

import bisect
import itertools
import math
import random
from array import array
from dataclasses import dataclass
from email.utils import formatdate
from urllib.parse import urlsplit

from bench.virtualweb.vocabulary import (
    ADVERTS,
    MONTHS,
    PASSING_MENTIONS,
    TOPIC,
    VOCABULARIES,
    paragraph_pools,
)

DOMAIN = ".web.test"
SITE_VOCABULARY = len(VOCABULARIES) - 1  # shop/contact pages of on-topic hosts
SECTIONS = ("articles",) * 6 + ("docs",) * 4 + ("news",) * 4 + ("guides",) * 3 + ("archive",) * 2 + ("private",)
SESSION_QUERY_NAMES = ("PHPSESSID", "sid")
SESSION_FORMS = (";jsessionid=", "?PHPSESSID=", "?sid=")  # how links carry a session id
POOL_SIZE = 512  # paragraphs per vocabulary
CALENDAR_YEARS = range(1, 10_000)

# Page flags (bytearray, one byte a page).
PRINT = 1  # also served, byte for byte, at /print/N.html
BROKEN = 2  # answers 500
BORDERLINE = 4  # off the topic, with one passing mention of a topic term
NEAR_DUPLICATE = 8  # another page of its host with a different date and advert
COPY = 16  # byte-identical copy of a page of another host in the same group

# Host flags.
ALIAS = 1  # also answers as www.<name>
CALENDAR = 2  # endless /calendar/YEAR/MONTH.html trap
REPEAT_TRAP = 4  # a relative link that grows /articles/articles/.../17.html forever
REDIRECT_LOOP = 8  # /loop/1.html <-> /loop/2.html

# robots.txt variants: (name, share of hosts).
ROBOTS_VARIANTS = (
    ("disallow-private", 0.50),
    ("crawl-delay", 0.10),
    ("missing", 0.15),
    ("empty", 0.05),
    ("agent-specific", 0.06),
    ("disallow-all", 0.03),
    ("server-error", 0.03),
    ("garbage", 0.04),
    ("redirect", 0.04),
)
ROBOTS_NAMES = tuple(name for name, _ in ROBOTS_VARIANTS)
ROBOTS_BODIES = {
    "disallow-private": b"User-agent: *\nDisallow: /private/\n",
    "crawl-delay": b"User-agent: *\nCrawl-delay: 5\nDisallow: /private/\n",
    "agent-specific": b"User-agent: badbot\nDisallow: /\n\nUser-agent: *\nDisallow: /private/\nDisallow: /print/\n",
    "disallow-all": b"User-agent: *\nDisallow: /\n",
    "empty": b"",
    "garbage": b"<html><body>\x00\x01 Welcome! {{robots}} ]]> Disallow everything?? <p>Allow\n</body></html>",
}
STANDARD_ROBOTS = ROBOTS_NAMES.index("disallow-private")

_MASK = (1 << 64) - 1


def mix(*values: int) -> int:
    """A 64-bit hash of integers (splitmix64 rounds): stable across runs, unlike hash()."""
    h = 0x9E3779B97F4A7C15
    for value in values:
        h = ((h ^ (value & _MASK)) * 0xBF58476D1CE4E5B9) & _MASK
        h ^= h >> 31
        h = (h * 0x94D049BB133111EB) & _MASK
        h ^= h >> 29
    return h


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes = b""
    content_type: str = "text/html; charset=utf-8"
    location: str | None = None
    last_modified: str | None = None
    page: int | None = None  # the page whose content this is, for the ground truth
    kind: str = "page"


NOT_FOUND = Response(
    404, b"<html><head><title>Not found</title></head><body><h1>Not found</h1></body></html>", kind="missing"
)
NO_SUCH_HOST = Response(502, b"<html><body><h1>Bad gateway: no such host</h1></body></html>", kind="no-such-host")
SERVER_ERROR = Response(500, b"<html><body><h1>Internal server error</h1></body></html>", kind="error")


class VirtualWeb:
    """A deterministic web of ``hosts`` hosts and ``pages`` pages, with its ground truth."""

    def __init__(self, seed: int = 1, hosts: int = 1000, pages: int = 100_000, topic_host_share: float = 0.15):
        if hosts < 10:
            raise ValueError(f"need at least 10 hosts, got {hosts}")
        if pages < 20 * hosts:
            raise ValueError(f"need at least 20 pages a host ({20 * hosts}), got {pages}")
        self.seed = seed
        self.hosts = hosts
        self.pages = pages
        self._width = max(4, len(str(hosts - 1)))
        rng = random.Random(mix(seed, 1))
        self._place_pages(rng)
        self._assign_hosts(rng, topic_host_share)
        self._assign_pages(rng)
        self._draw_links(rng)
        self._dig_tunnels(rng)
        self._pools = paragraph_pools(seed, POOL_SIZE)
        self._paragraph_size = sum(map(len, itertools.chain(*self._pools))) / (POOL_SIZE * len(self._pools))
        self._host_names = [self.host_name(host) for host in range(hosts)]

    # ---- structure ----------------------------------------------------------

    def _place_pages(self, rng: random.Random) -> None:
        """Heavy-tailed pages per host (log-normal), at least 5 each, summing exactly to ``pages``."""
        weights = [rng.lognormvariate(0, 1.0) for _ in range(self.hosts)]
        spare = self.pages - 5 * self.hosts
        total = sum(weights)
        counts = [5 + int(spare * w / total) for w in weights]
        for host in sorted(range(self.hosts), key=lambda h: -weights[h])[: self.pages - sum(counts)]:
            counts[host] += 1
        self.page_count = array("i", counts)
        self.first_page = array("i", itertools.accumulate(counts, initial=0))

    def _assign_hosts(self, rng: random.Random, topic_host_share: float) -> None:
        order = list(range(self.hosts))
        rng.shuffle(order)
        topical = order[: max(9, round(self.hosts * topic_host_share))]
        largest = max(3, len(topical) // 3)  # at least three clusters, for seeds and tunnels
        self.host_vocabulary = bytearray(rng.randrange(1, len(VOCABULARIES)) for _ in range(self.hosts))
        self.host_cluster = array("i", [-1] * self.hosts)
        self.clusters: list[list[int]] = []
        while topical:
            size = min(len(topical), rng.randint(3, 15), largest)
            if len(topical) - size < 3:
                size = len(topical)
            cluster, topical = topical[:size], topical[size:]
            for host in cluster:
                self.host_vocabulary[host] = TOPIC
                self.host_cluster[host] = len(self.clusters)
            self.clusters.append(sorted(cluster))
        self.off_topic_hosts = [h for h in range(self.hosts) if self.host_cluster[h] < 0]
        self.host_flags = bytearray(self.hosts)
        for host in range(self.hosts):
            flags = 0
            for flag, share in ((ALIAS, 0.05), (CALENDAR, 0.05), (REPEAT_TRAP, 0.05), (REDIRECT_LOOP, 0.02)):
                if rng.random() < share:
                    flags |= flag
            self.host_flags[host] = flags
        shares = list(itertools.accumulate(share for _, share in ROBOTS_VARIANTS))
        self.host_robots = bytearray(
            min(bisect.bisect(shares, rng.random() * shares[-1]), len(shares) - 1) for _ in range(self.hosts)
        )
        self.seed_hosts = [cluster[0] for cluster in self.clusters[:3]]
        for host in self.seed_hosts:  # a seed must be fetchable
            self.host_robots[host] = STANDARD_ROBOTS

    def _assign_pages(self, rng: random.Random) -> None:
        """Topic and flags of every page; duplicates stay in their host's group (cluster or off-topic)."""
        vocabulary = bytearray(self.pages)
        flags = bytearray(self.pages)
        for host in range(self.hosts):
            first, count = self.first_page[host], self.page_count[host]
            own = self.host_vocabulary[host]
            for page in range(first, first + count):
                if own == TOPIC:
                    vocabulary[page] = TOPIC if page == first or rng.random() < 0.85 else SITE_VOCABULARY
                else:
                    vocabulary[page] = TOPIC if page != first and rng.random() < 0.03 else own
                draw = rng.random()
                if draw < 0.10:
                    flags[page] |= PRINT
                if page != first and 0.10 <= draw < 0.103:
                    flags[page] |= BROKEN
                if vocabulary[page] != TOPIC and rng.random() < 0.05:
                    flags[page] |= BORDERLINE
        self.page_vocabulary = vocabulary
        self.page_flags = flags
        self.source: dict[int, int] = {}
        for share, flag in ((0.02, NEAR_DUPLICATE), (0.01, COPY)):
            for _ in range(int(self.pages * share)):
                copy = rng.randrange(self.pages)
                host = self.host_of(copy)
                if copy == self.first_page[host] or flags[copy] & (BROKEN | NEAR_DUPLICATE | COPY):
                    continue
                if flag == COPY:
                    cluster = self.host_cluster[host]
                    source_host = rng.choice(self.clusters[cluster] if cluster >= 0 else self.off_topic_hosts)
                else:
                    source_host = host
                original = self.first_page[source_host] + rng.randrange(1, self.page_count[source_host])
                if original == copy or flags[original] & (BROKEN | NEAR_DUPLICATE | COPY):
                    continue
                flags[copy] |= flag
                flags[copy] &= ~BORDERLINE & 0xFF
                flags[copy] |= flags[original] & BORDERLINE
                vocabulary[copy] = vocabulary[original]
                self.source[copy] = original
        self.page_section = [SECTIONS[b % len(SECTIONS)] for b in rng.randbytes(self.pages)]
        self._titles = [self._draw_title(self.source.get(page, page)) for page in range(self.pages)]

    def _draw_links(self, rng: random.Random) -> None:
        """10-50 links a page, each one 64-bit number drawn here and interpreted when the page is rendered."""
        self.link_count = bytearray(10 + b % 41 for b in rng.randbytes(self.pages))
        self.link_offset = array("q", itertools.accumulate(self.link_count, initial=0))
        self.link_numbers = array("Q")
        self.link_numbers.frombytes(rng.randbytes(8 * self.link_offset[-1]))

    def _dig_tunnels(self, rng: random.Random) -> None:
        """Join cluster i to cluster i+1 (a ring) and a few random pairs through 1-3 off-topic pages."""
        self.tunnels: list[list[int]] = []
        self.extra_links: dict[int, list[int]] = {}
        originals = set(self.source.values())  # a copied page would copy its tunnel link too
        count = len(self.clusters)
        pairs = [(c, (c + 1) % count) for c in range(count)] + [
            (rng.randrange(count), rng.randrange(count)) for _ in range(count // 2)
        ]
        for start, end in pairs:
            if start == end:
                continue
            chain = [self._plain_page(rng, self.clusters[start], True, originals)]
            chain += [self._plain_page(rng, self.off_topic_hosts, False, originals) for _ in range(rng.randint(1, 3))]
            chain.append(self._plain_page(rng, self.clusters[end], True, originals))
            for page, next_page in itertools.pairwise(chain):
                self.extra_links.setdefault(page, []).append(next_page)
            self.tunnels.append(chain)

    def _plain_page(self, rng: random.Random, hosts: list[int], on_topic: bool, avoid: set[int]) -> int:
        """A page on one of ``hosts``, on or off the topic, without flags and not in ``avoid``."""
        while True:
            host = rng.choice(hosts)
            page = self.first_page[host] + rng.randrange(self.page_count[host])
            if not self.page_flags[page] and page not in avoid and (self.page_vocabulary[page] == TOPIC) == on_topic:
                return page

    # ---- names --------------------------------------------------------------

    def host_name(self, host: int) -> str:
        return f"h{host:0{self._width}d}{DOMAIN}"

    def host_of(self, page: int) -> int:
        return bisect.bisect_right(self.first_page, page) - 1

    def path(self, page: int) -> str:
        host = self.host_of(page)
        local = page - self.first_page[host]
        return "/" if local == 0 else f"/{self.page_section[page]}/{local}.html"

    def url(self, page: int) -> str:
        """The canonical URL of a page."""
        return f"http://{self._host_names[self.host_of(page)]}{self.path(page)}"

    def host_index(self, name: str) -> int | None:
        """``h0042.web.test`` (or its alias ``www.``, when it has one) -> 42; anything else -> None."""
        name = name.lower().rpartition(":")[0] if ":" in name else name.lower()
        if not name.endswith(DOMAIN):
            return None
        label = name[: -len(DOMAIN)]
        alias = label.startswith("www.")
        if alias:
            label = label[4:]
        digits = label[1:]
        if label[:1] != "h" or len(digits) != self._width or not digits.isdigit():
            return None
        host = int(digits)
        if host >= self.hosts or (alias and not self.host_flags[host] & ALIAS):
            return None
        return host

    # ---- serving ------------------------------------------------------------

    def respond(self, host_name: str, target: str) -> Response:
        """The answer to ``GET target`` on ``host_name`` (target: path and query, origin form)."""
        host = self.host_index(host_name)
        if host is None:
            return NO_SUCH_HOST
        path, _, query = target.partition("?")
        if query and not all(p.partition("=")[0] in SESSION_QUERY_NAMES for p in query.split("&")):
            return NOT_FOUND
        if ";" in path:
            path, _, parameter = path.partition(";")
            if not parameter.lower().startswith("jsessionid="):
                return NOT_FOUND
        if path == "/":
            return self._page_response(self.first_page[host], "page")
        if path == "/robots.txt":
            return self._robots_response(host, host_name)
        parts = path.split("/")
        if len(parts) == 3:
            return self._leaf_response(host, host_name, parts[1], parts[2])
        flags = self.host_flags[host]
        if flags & CALENDAR and len(parts) == 4 and parts[1] == "calendar":
            return self._calendar_response(parts[2], parts[3])
        if flags & REPEAT_TRAP and len(parts) > 3 and all(p == parts[1] for p in parts[2:-1]):
            response = self._leaf_response(host, host_name, parts[-2], parts[-1])
            if response.status == 200:
                return Response(
                    200, response.body, last_modified=response.last_modified, page=response.page, kind="repeat-trap"
                )
        return NOT_FOUND

    def _leaf_response(self, host: int, host_name: str, directory: str, leaf: str) -> Response:
        if directory == "static" and leaf == "robots.txt" and ROBOTS_NAMES[self.host_robots[host]] == "redirect":
            return Response(200, ROBOTS_BODIES["disallow-private"], content_type="text/plain", kind="robots")
        number = leaf[:-5]
        if not leaf.endswith(".html") or not number.isdigit() or str(int(number)) != number:
            return NOT_FOUND
        local = int(number)
        if not 0 < local < self.page_count[host]:
            return NOT_FOUND
        page = self.first_page[host] + local
        if directory == "old":
            return Response(301, location=f"http://{host_name}{self.path(page)}", kind="redirect")
        if directory == "print":
            return self._page_response(page, "print") if self.page_flags[page] & PRINT else NOT_FOUND
        if directory == "loop" and self.host_flags[host] & REDIRECT_LOOP and local in (1, 2):
            return Response(302, location=f"http://{host_name}/loop/{3 - local}.html", kind="redirect-loop")
        if directory == self.page_section[page]:
            return self._page_response(page, "page")
        return NOT_FOUND

    def _page_response(self, page: int, kind: str) -> Response:
        if self.page_flags[page] & BROKEN:
            return SERVER_ERROR
        content = self.source.get(page, page) if self.page_flags[page] & COPY else page
        dated = page if self.page_flags[page] & NEAR_DUPLICATE else content
        return Response(200, self.render(page), last_modified=self._last_modified(dated), page=page, kind=kind)

    def _robots_response(self, host: int, host_name: str) -> Response:
        name = ROBOTS_NAMES[self.host_robots[host]]
        if name == "missing":
            return Response(404, NOT_FOUND.body, kind="robots")
        if name == "server-error":
            return Response(500, SERVER_ERROR.body, kind="robots")
        if name == "redirect":
            return Response(301, location=f"http://{host_name}/static/robots.txt", kind="robots")
        content_type = "text/html; charset=utf-8" if name == "garbage" else "text/plain"
        return Response(200, ROBOTS_BODIES[name], content_type=content_type, kind="robots")

    def _calendar_response(self, year_text: str, leaf: str) -> Response:
        """A month of an events diary: links to the months around it, for any year up to 9999."""
        if not (year_text.isdigit() and leaf.endswith(".html") and leaf[:-5].isdigit()):
            return NOT_FOUND
        year, month = int(year_text), int(leaf[:-5])
        if year not in CALENDAR_YEARS or not 1 <= month <= 12 or year_text != str(year) or leaf != f"{month:02d}.html":
            return NOT_FOUND
        previous = (year, month - 1) if month > 1 else (year - 1, 12)
        following = (year, month + 1) if month < 12 else (year + 1, 1)
        neighbours = [previous, following, (year + 1, month)]
        links = "".join(
            f'<li><a href="/calendar/{y}/{m:02d}.html">{MONTHS[m - 1]} {y}</a></li>'
            for y, m in neighbours
            if y in CALENDAR_YEARS
        )
        pool = self._pools[SITE_VOCABULARY]
        text = b"".join(pool[mix(self.seed, year, month, i) % len(pool)] for i in range(3))
        head = (
            f"<!DOCTYPE html>\n<html><head><title>Events calendar: {MONTHS[month - 1]} {year}</title></head>\n"
            f"<body><h1>Events in {MONTHS[month - 1]} {year}</h1>\n<p>No events are planned this month.</p>\n"
        )
        tail = f'<ul>{links}<li><a href="/">Home</a></li></ul>\n</body></html>\n'
        return Response(200, head.encode() + text + tail.encode(), kind="calendar-trap")

    # ---- pages --------------------------------------------------------------

    def title(self, page: int) -> str:
        return self._titles[page]

    def _draw_title(self, page: int) -> str:
        vocabulary = VOCABULARIES[self.page_vocabulary[page]]
        h = mix(self.seed, page, 1)
        subject = vocabulary.title_subjects[h % len(vocabulary.title_subjects)]
        return f"{subject}: {vocabulary.title_aspects[(h >> 16) % len(vocabulary.title_aspects)]}"

    def _date(self, page: int) -> int:
        """Seconds since the epoch of the page's last change: a day between 2015 and 2023."""
        return 1_420_070_400 + (mix(self.seed, page, 2) % 3000) * 86_400

    def _last_modified(self, page: int) -> str:
        return formatdate(self._date(page), usegmt=True)

    def links(self, page: int) -> list[tuple[str, str, int | None]]:
        """``(href, anchor text, target page or None)`` of every link on a page, in page order.

        Hrefs are as written in the HTML: root-relative, relative or absolute;
        a copy or near-duplicate has its original's links, with targets as
        seen from the original's host. An off-topic page never names an
        on-topic target in its anchor text, so the topic filter cannot see
        the topic through its links.
        """
        page = self.source.get(page, page)
        host = self.host_of(page)
        first, count = self.first_page[host], self.page_count[host]
        local = page - first
        vocabularies, sections, titles = self.page_vocabulary, self.page_section, self._titles
        first_pages, page_counts, host_flags = self.first_page, self.page_count, self.host_flags
        on_topic = vocabularies[page] == TOPIC
        cluster = self.host_cluster[host]
        away = self.clusters[cluster] if cluster >= 0 and on_topic else self.off_topic_hosts
        session = f"{mix(self.seed, page, 4):016X}"
        result: list[tuple[str, str, int | None]] = [("/", "Home", first)]
        if self.page_flags[page] & PRINT:
            result.append((f"/print/{local}.html", "Printer-friendly version", page))
        for number in self.link_numbers[self.link_offset[page] : self.link_offset[page + 1]]:
            kind = number & 1023
            choice = (number >> 10) & 0x3FFFFFFF
            decoration = (number >> 40) & 0xFF
            form = (number >> 48) & 0xFF
            if kind < 1000:
                target_host = host
                if kind >= 770:  # another host; an on-topic page's links leave its cluster one time in seven
                    hosts = away if kind < 965 else self.off_topic_hosts
                    target_host = hosts[choice % len(hosts)]
                    choice //= len(hosts)
                target_local = 0 if form < 64 and target_host != host else choice % page_counts[target_host]
                target = first_pages[target_host] + target_local
                path = f"/{sections[target]}/{target_local}.html" if target_local else "/"
                if decoration < 16:
                    path += SESSION_FORMS[decoration % 3] + session
                if target_host != host or form >= 180:
                    alias = "www." if host_flags[target_host] & ALIAS and form & 1 else ""
                    path = f"http://{alias}{self._host_names[target_host]}{path}"
            elif kind < 1013:
                target_local = 1 + choice % (count - 1)
                target = first + target_local
                path = f"/old/{target_local}.html"
            else:
                target = None
                path = f"/{SECTIONS[choice % len(SECTIONS)]}/{count + choice % 997}.html"
            named = target is not None and (on_topic or vocabularies[target] != TOPIC)
            anchor = titles[target] if named else "Read more"
            result.append((path, anchor, target))
        if host_flags[host] & REPEAT_TRAP and local:  # a permalink missing its leading slash
            result.append((f"{sections[page]}/{local}.html", "Permalink", page))
        if host_flags[host] & CALENDAR and local % 10 == 0:
            result.append((f"/calendar/2024/{1 + local % 12:02d}.html", "Events calendar", None))
        if host_flags[host] & REDIRECT_LOOP and local == 0:
            result.append(("/loop/1.html", "Moved page", None))
        for target in self.extra_links.get(page, ()):
            anchor = titles[target] if on_topic or vocabularies[target] != TOPIC else "Read more"
            result.append((self.url(target), anchor, target))
        return result

    def render(self, page: int) -> bytes:
        """The HTML of a page: a copy renders its original, a near-duplicate only its own date and advert."""
        dated = page
        if self.page_flags[page] & (COPY | NEAR_DUPLICATE):
            page = self.source[page]
            if self.page_flags[dated] & COPY:
                dated = page
        rng = random.Random(mix(self.seed, page, 5))
        vocabulary_index = self.page_vocabulary[page]
        vocabulary = VOCABULARIES[vocabulary_index]
        title = self._titles[page]
        size = min(150_000, max(3_000, rng.lognormvariate(math.log(16_000), 0.5)))
        links = self.links(page)
        paragraphs = max(2, int((size - 70 * len(links) - 900) / self._paragraph_size))
        own, furniture = self._pools[vocabulary_index], self._pools[SITE_VOCABULARY]
        body = []
        for number, draw in enumerate(array("H", rng.randbytes(2 * paragraphs))):
            pool = furniture if draw < 0x3000 else own  # about one paragraph in five is site furniture
            body.append(pool[draw % POOL_SIZE])
            if number % 3 == 2 and links:
                body.append(_link_list(links[:4]))
                del links[:4]
        if links:
            body.append(_link_list(links))
        if self.page_flags[page] & BORDERLINE:
            body.insert(rng.randrange(len(body)), f"<p>{rng.choice(PASSING_MENTIONS)}</p>\n".encode())
        h = mix(self.seed, dated, 6)
        updated = formatdate(self._date(dated), usegmt=True)[5:16]
        head = (
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
            f"<title>{title}</title>\n"
            f'<meta name="description" content="{title}, from {vocabulary.name} pages.">\n'
            f'<meta name="keywords" content="{vocabulary.name}, {title.split(":")[0].lower()}">\n'
            f'</head>\n<body>\n<h1>{title}</h1>\n<p class="updated">Last updated {updated}</p>\n'
        )
        tail = (
            f'<div class="advert"><p>{ADVERTS[h % len(ADVERTS)]}</p></div>\n'
            f'<div class="footer"><p>Page {h % 100_000:05d}. All rights reserved.</p></div>\n</body></html>\n'
        )
        return head.encode() + b"".join(body) + tail.encode()

    # ---- ground truth -------------------------------------------------------

    def resolve(self, url: str) -> Response:
        """What the server answers for an absolute URL."""
        parts = urlsplit(url)
        target = parts.path or "/"
        if parts.query:
            target += "?" + parts.query
        return self.respond(parts.netloc, target)

    def page_of(self, url: str) -> int | None:
        """The page whose content a URL serves (any of its names), or None when it serves none."""
        return self.resolve(url).page

    def is_on_topic_page(self, page: int) -> bool:
        return self.page_vocabulary[page] == TOPIC and not self.page_flags[page] & BROKEN

    def is_relevant(self, url: str) -> bool:
        """True when the URL answers 200 with an on-topic page, under whichever of the page's names."""
        page = self.page_of(url)
        return page is not None and self.is_on_topic_page(page)

    def robots_allows(self, url: str) -> bool:
        """Whether a crawler obeying robots.txt (RFC 9309; 5xx closes the site) may fetch the URL."""
        parts = urlsplit(url)
        host = self.host_index(parts.netloc)
        if host is None:
            return False
        name = ROBOTS_NAMES[self.host_robots[host]]
        path = parts.path or "/"
        if name in ("server-error", "disallow-all"):
            return False
        if name in ("disallow-private", "crawl-delay", "redirect", "agent-specific") and path.startswith("/private/"):
            return False
        return not (name == "agent-specific" and path.startswith("/print/"))

    def relevant_urls(self, polite: bool = False) -> list[str]:
        """Canonical URLs of the on-topic pages, one per distinct content (copies left out).

        ``polite``: only those a crawler obeying robots.txt may fetch.
        """
        urls = []
        for page in range(self.pages):
            if self.is_on_topic_page(page) and not self.page_flags[page] & COPY:
                url = self.url(page)
                if not polite or self.robots_allows(url):
                    urls.append(url)
        return urls

    def alias_hosts(self) -> list[int]:
        """Hosts that also answer as ``www.<name>``."""
        return [host for host, flags in enumerate(self.host_flags) if flags & ALIAS]

    def seeds(self) -> list[str]:
        """Home pages of one host in each of the first three clusters."""
        return [self.url(self.first_page[host]) for host in self.seed_hosts]

    def counts(self) -> dict[str, object]:
        def pages_with(flag: int) -> int:
            return sum(1 for f in self.page_flags if f & flag)

        def hosts_with(flag: int) -> int:
            return sum(1 for f in self.host_flags if f & flag)

        on_topic = [p for p in range(self.pages) if self.is_on_topic_page(p)]
        return {
            "seed": self.seed,
            "hosts": self.hosts,
            "pages": self.pages,
            "links": self.link_offset[-1],
            "on_topic_pages": len(on_topic),
            "relevant_distinct": sum(1 for p in on_topic if not self.page_flags[p] & COPY),
            "clusters": len(self.clusters),
            "cluster_hosts": sum(len(c) for c in self.clusters),
            "tunnels": len(self.tunnels),
            "print_versions": pages_with(PRINT),
            "broken_pages": pages_with(BROKEN),
            "borderline_pages": pages_with(BORDERLINE),
            "near_duplicates": pages_with(NEAR_DUPLICATE),
            "copies": pages_with(COPY),
            "alias_hosts": hosts_with(ALIAS),
            "calendar_trap_hosts": hosts_with(CALENDAR),
            "repeat_trap_hosts": hosts_with(REPEAT_TRAP),
            "redirect_loop_hosts": hosts_with(REDIRECT_LOOP),
            "robots": {name: self.host_robots.count(i) for i, name in enumerate(ROBOTS_NAMES)},
        }


def _link_list(links: list[tuple[str, str, int | None]]) -> bytes:
    items = "".join(f'<li><a href="{href}">{anchor}</a></li>' for href, anchor, _ in links)
    return f'<ul class="links">{items}</ul>\n'.encode()
