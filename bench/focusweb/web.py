"""The focus web: a generated web where the topics hide deep behind off-topic pages, and its ground truth.

Everything follows from the seed. Three portals (the crawl's seeds) list the
home pages of about forty sites. Every site is mostly off-topic: news with
paginated archives, a product catalogue, support articles, an about section
and a tree of numbered document series (``/r/<id>/``), directory pages whose
anchors are codes (``TN-4.2``, ``§ 3.1``, ``mod_kq2``). For each topic two or
three sites hold the topical pages, in clusters of 5-14 pages that link to
each other and to other clusters of the topic; a cluster is listed on one
directory page 1-4 levels down the tree, so its pages are 3-6 links from the
seeds and every way to them runs through off-topic directory pages. Some
off-topic sites (decoys) and the directories on the way to a cluster mention
a topic in passing, one term under the cut-off.

The structure is drawn once into a list of :class:`Page`; a page's bytes are
rendered when asked, from a random stream of its own, so the same request
always gets the same bytes. The ground truth is by construction: a page is
relevant to a topic when it was written from that topic's vocabulary.
"""

from __future__ import annotations

import collections
import heapq
import itertools
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from email.utils import formatdate
from html import escape

from bench.focusweb.vocabulary import (
    CORPORATE,
    MODULE_SYLLABLES,
    NAME_HEADS,
    NAME_TAILS,
    SERIES_CODES,
    THEMES,
    TOPICS,
    Topic,
)
from bench.virtualweb.vocabulary import Vocabulary
from bench.virtualweb.web import NO_SUCH_HOST, NOT_FOUND, Response, mix

DOMAIN = ".focusweb.test"
PORTALS = 3
SITES = 36
DECOYS = 7
#: The shape of a site (low, high of a uniform draw): few pages near the home page, long archives behind them.
NEWS = (30, 120)
PRODUCT_CATEGORIES = (1, 2)
PRODUCTS = (6, 30)
SUPPORT_CATEGORIES = (1, 2)
SUPPORT_ARTICLES = (4, 20)
PER_LISTING = 5
SUBDIRECTORIES = {2: (2, 3), 3: (1, 2), 4: (0, 2)}  # per directory of the level above
DOCUMENTS = (2, 4)  # off-topic documents per directory
#: Share of a topic's pages whose cluster is listed 1, 2, 3, 4 directories below the home page (/resources/ is
#: the first): 3, 4, 5, 6 links from the seeds.
CLUSTER_LEVEL_SHARES = {1: 0.3, 2: 0.5, 3: 0.12, 4: 0.08}
TOPICAL_PAGES = (50, 100)  # per topic
CLUSTER_SIZE = (5, 14)
#: Share of links between topical pages whose anchor is the target's title (which names topic terms).
TITLE_ANCHOR_SHARE = 0.15
ROBOTS = b"User-agent: *\nDisallow: /cgi-bin/\n"
POOL_SIZE = 48


@dataclass
class Page:
    host: int
    path: str
    kind: str  # portal, home, news, article, listing, product, kb, about, directory, document, topical
    vocabulary: str  # a key of FocusWeb.vocabularies
    title: str
    code: str = ""  # how directory pages and topical pages name it in anchors
    topic: int = -1  # the topic it is about (-1: off-topic)
    mention: int = -1  # the topic it mentions once in passing (-1: none)
    links: list[tuple[int, str]] = field(default_factory=list)  # (target page, anchor text)


@dataclass
class Host:
    name: str  # s07.focusweb.test
    label: str  # Oak Works
    role: str  # portal, topical, decoy, plain
    theme: int  # index into THEMES
    topic: int = -1  # topical sites: the topic they hold


class FocusWeb:
    """A deterministic web of ~45 hosts and ~9,000 pages with the topics of ``TOPICS`` hidden in it."""

    def __init__(self, seed: int = 1, topics: tuple[Topic, ...] = TOPICS):
        self.seed = seed
        self.topics = topics
        self.vocabularies: dict[str, Vocabulary] = {
            **{topic.key: topic.vocabulary for topic in topics},
            **{vocabulary.name: vocabulary for vocabulary in THEMES},
            **CORPORATE,
        }
        self.pages: list[Page] = []
        self.hosts: list[Host] = []
        self._paths: list[dict[str, int]] = []
        self._by_name: dict[str, int] = {}
        self._levels: list[dict[int, list[int]]] = []  # per host: directories by level below the home page
        self._content: list[list[int]] = []  # per host: its news, products and support articles
        self._entries: dict[int, int] = collections.Counter()  # documents listed so far per directory
        rng = random.Random(mix(seed, 71))
        self._make_hosts(rng)
        for host in range(PORTALS, len(self.hosts)):
            self._build_site(rng, host)
        for topic in range(len(topics)):
            self._place_topic(rng, topic)
        self._build_portals(rng)
        self._pools = {key: _paragraph_pool(vocabulary, mix(seed, 73, index))
                       for index, (key, vocabulary) in enumerate(sorted(self.vocabularies.items()))}

    # ---- structure ----------------------------------------------------------

    def _make_hosts(self, rng: random.Random) -> None:
        roles = [("topical", topic) for topic in range(len(self.topics)) for _ in range(rng.choice((2, 3)))]
        roles += [("decoy", -1)] * DECOYS
        roles += [("plain", -1)] * (SITES - len(roles))
        rng.shuffle(roles)
        labels = rng.sample([f"{head} {tail}" for head in NAME_HEADS for tail in NAME_TAILS], PORTALS + SITES)
        for number in range(PORTALS):
            self._add_host(f"portal{number + 1}{DOMAIN}", f"{labels[number]} Directory", "portal", 0)
        for number, (role, topic) in enumerate(roles):
            name = f"s{number + 1:02d}{DOMAIN}"
            self._add_host(name, labels[PORTALS + number], role, rng.randrange(len(THEMES)), topic)

    def _add_host(self, name: str, label: str, role: str, theme: int, topic: int = -1) -> None:
        self._by_name[name] = len(self.hosts)
        self.hosts.append(Host(name, label, role, theme, topic))
        self._paths.append({})
        self._levels.append({})
        self._content.append([])

    def _add(self, host: int, path: str, kind: str, vocabulary: str, title: str, **fields) -> int:
        if path in self._paths[host]:
            raise ValueError(f"two pages at {self.hosts[host].name}{path}")
        self._paths[host][path] = len(self.pages)
        self.pages.append(Page(host, path, kind, vocabulary, title, **fields))
        return len(self.pages) - 1

    def _title(self, rng: random.Random, vocabulary: str) -> str:
        words = self.vocabularies[vocabulary]
        return f"{rng.choice(words.title_subjects)}: {rng.choice(words.title_aspects)}"

    def _link(self, source: int, target: int, anchor: str | None = None) -> None:
        self.pages[source].links.append((target, anchor if anchor is not None else self.pages[target].title))

    def _build_site(self, rng: random.Random, host: int) -> None:
        """Home, news, products, support, about and the document tree of one site: all off-topic."""
        site = self.hosts[host]
        theme = THEMES[site.theme].name
        home = self._add(host, "/", "home", theme, f"{site.label}: welcome")
        news = self._paginated(rng, host, home, "news", "news", theme, rng.randint(*NEWS), PER_LISTING)
        catalogue = self._add(host, "/products/", "listing", "products", f"{site.label}: products")
        products = []
        for category in range(rng.randint(*PRODUCT_CATEGORIES)):
            products += self._paginated(rng, host, catalogue, f"products/c{category + 1}", "product", "products",
                                        rng.randint(*PRODUCTS), PER_LISTING)
        support = self._add(host, "/support/", "listing", "support", f"{site.label}: support")
        articles = []
        for category in range(rng.randint(*SUPPORT_CATEGORIES)):
            articles += self._paginated(rng, host, support, f"support/k{category + 1}", "kb", "support",
                                        rng.randint(*SUPPORT_ARTICLES), PER_LISTING)
        about = [self._add(host, f"/about/{name}", "about", theme, f"{site.label}: {title}")
                 for name, title in (("", "about us"), ("contact.html", "contact"), ("careers.html", "careers"),
                                     ("history.html", "history"))]
        self._site_tree(rng, host, home)
        self._content[host] = news + products + articles
        for target, anchor in ((catalogue, "Products"), (support, "Support"), (about[0], "About us"),
                               (self._paths[host]["/resources/"], "Resources")):
            self._link(home, target, anchor)
        for target in news[:2] + products[:1]:  # the newest: the rest of an archive is only reached through it
            self._link(home, target)
        for page in about[1:]:
            self._link(about[0], page)
        for page in (catalogue, support):
            self._link(page, home, "Home")
        for group in (news, products, articles):
            for number, page in enumerate(group):
                self._link(page, home, "Home")
                for other in rng.sample(group[: max(1, number)], min(2, number)):
                    self._link(page, other)  # older items only: no shortcut to the deep end of an archive
        for page in about:
            self._link(page, home, "Home")

    def _paginated(self, rng: random.Random, host: int, parent: int, base: str, kind: str, vocabulary: str,
                   items: int, per_page: int) -> list[int]:
        """``items`` pages listed ``per_page`` a listing page, each listing linking to the next: an archive."""
        listings = []
        pages = []
        for first in range(0, items, per_page):
            number = len(listings) + 1
            path = f"/{base}/" if number == 1 else f"/{base}/page-{number}.html"
            title = f"{self.hosts[host].label}: {base.split('/')[0]}, page {number}"
            listing = self._add(host, path, "listing", vocabulary, title)
            if listings:
                self._link(listings[-1], listing, f"Older ({number})")
                self._link(listing, listings[0], "Newest")
            else:
                self._link(parent, listing, f"{base.split('/')[-1].capitalize()}")
            listings.append(listing)
            for item in range(first, min(items, first + per_page)):
                page = self._add(host, f"/{base}/{item + 1}.html", kind, vocabulary, self._title(rng, vocabulary))
                self._link(listing, page)
                self._link(page, listing, "Back to the list")
                pages.append(page)
        return pages

    def _site_tree(self, rng: random.Random, host: int, home: int) -> None:
        """The document series: /resources/ and directories down to level 4, each listing coded documents."""
        root = self._directory(rng, host, "/resources/")
        self._link(root, home, "Home")
        self._levels[host][1] = [root]
        for level, (low, high) in SUBDIRECTORIES.items():
            self._levels[host][level] = []
            for parent in self._levels[host][level - 1]:
                for _ in range(rng.randint(low, high)):
                    self._levels[host][level].append(self._subdirectory(rng, host, parent))
        theme = THEMES[self.hosts[host].theme].name
        for directories in self._levels[host].values():
            for directory in directories:
                for _ in range(rng.randint(*DOCUMENTS)):
                    self._document(rng, host, directory, "document", rng.choice((theme, "products", "support")))

    def _directory(self, rng: random.Random, host: int, path: str) -> int:
        """A directory page of a document series, named by its code (``RD-17``)."""
        code = f"{rng.choice(SERIES_CODES)}-{rng.randint(1, 40)}"
        return self._add(host, path, "directory", "directory", f"{code}: document register", code=code)

    def _subdirectory(self, rng: random.Random, host: int, parent: int) -> int:
        while True:
            path = f"/r/{rng.randrange(100, 1000)}/"
            if path not in self._paths[host]:
                break
        page = self._directory(rng, host, path)
        self._link(parent, page, _series_anchor(rng, self.pages[page].code))
        self._link(page, parent, "Up")
        self._link(page, self._paths[host]["/"], "Home")
        return page

    def _document(self, rng: random.Random, host: int, directory: int, kind: str, vocabulary: str,
                  topic: int = -1, title: str | None = None) -> int:
        """A coded entry of a directory: ``/r/<id>/<n>.html``, named in anchors by its code."""
        base = self.pages[directory].path
        base = "/r/0/" if base == "/resources/" else base
        self._entries[directory] += 1
        number = self._entries[directory]
        code = _document_code(rng, self.pages[directory].code, number)
        page = self._add(host, f"{base}{number}.html", kind, vocabulary, title or self._title(rng, vocabulary),
                         code=code, topic=topic)
        self._link(directory, page, code)
        self._link(page, directory, "Index")
        self._link(page, self._paths[host]["/"], "Home")
        return page

    def _place_topic(self, rng: random.Random, topic: int) -> None:
        """The topic's clusters on its sites: listed on a directory 1-4 levels down, linking to each other."""
        key = self.topics[topic].key
        sites = [host for host, site in enumerate(self.hosts) if site.role == "topical" and site.topic == topic]
        size = rng.randint(*TOPICAL_PAGES)
        clusters: list[list[int]] = []
        placed = dict.fromkeys(CLUSTER_LEVEL_SHARES, 0)
        while size > 0:
            count = min(size, rng.randint(*CLUSTER_SIZE))
            host = sites[len(clusters) % len(sites)]
            total = sum(placed.values()) + count  # the level furthest below its share after this cluster
            level = max(placed, key=lambda level: CLUSTER_LEVEL_SHARES[level] * total - placed[level])
            placed[level] += count
            directory = self._deep_directory(rng, host, level)
            clusters.append([self._document(rng, host, directory, "topical", key, topic, self._title(rng, key))
                             for _ in range(count)])
            for ancestor in self._ancestors(directory):
                if rng.random() < 0.5:
                    self.pages[ancestor].mention = topic
            size -= count
        for number, cluster in enumerate(clusters):
            following = clusters[(number + 1) % len(clusters)]
            for page in cluster:
                siblings = [other for other in cluster if other != page]
                for target in rng.sample(siblings, min(len(siblings), rng.randint(2, 5))):
                    self._topical_link(rng, page, target)
                if rng.random() < 0.4:
                    self._topical_link(rng, page, rng.choice(rng.choice(clusters)))
                for target in rng.sample(self._content[self.pages[page].host], 2):
                    self._link(page, target)
            self._topical_link(rng, cluster[-1], following[0])  # the topic's clusters form a ring
        for host in sites:
            if rng.random() < 0.7:
                self.pages[self._paths[host]["/"]].mention = topic

    def _topical_link(self, rng: random.Random, source: int, target: int) -> None:
        if source != target:
            page = self.pages[target]
            self._link(source, target, page.title if rng.random() < TITLE_ANCHOR_SHARE else page.code)

    def _deep_directory(self, rng: random.Random, host: int, level: int) -> int:
        """A directory of the site's tree at ``level``, made (below one of the level above) if there is none."""
        levels = self._levels[host]
        if not levels.get(level):
            parent = self._deep_directory(rng, host, level - 1)
            directory = self._subdirectory(rng, host, parent)
            levels.setdefault(level, []).append(directory)
            for _ in range(rng.randint(2, 5)):
                self._document(rng, host, directory, "document", "products")
            return directory
        return rng.choice(levels[level])

    def _ancestors(self, directory: int) -> list[int]:
        """The directory and those above it up to /resources/ (its "Up" links)."""
        chain = [directory]
        while self.pages[chain[-1]].path != "/resources/":
            chain.append(next(target for target, anchor in self.pages[chain[-1]].links if anchor == "Up"))
        return chain

    def _build_portals(self, rng: random.Random) -> None:
        """Each site's home on one portal's home page (and some on more), categories and portal news."""
        sites = list(range(PORTALS, len(self.hosts)))
        rng.shuffle(sites)
        for portal in range(PORTALS):
            home = self._add(portal, "/", "portal", "news", f"{self.hosts[portal].label}: the web's best sites")
            listed = sites[portal::PORTALS] + rng.sample(sites, 6)
            rng.shuffle(listed)
            for site in dict.fromkeys(listed):
                self._link(home, self._paths[site]["/"], self.hosts[site].label)
            for number in range(1, 5):
                category = self._add(portal, f"/cat/{number}.html", "portal", "directory",
                                     f"{self.hosts[portal].label}: category {number}")
                self._link(home, category, f"Category {number}")
                for site in rng.sample(sites, 8):
                    self._link(category, self._paths[site]["/"], self.hosts[site].label)
                self._link(category, home, "Home")
            for number in range(1, 5):
                item = self._add(portal, f"/news/{number}.html", "article", "news", self._title(rng, "news"))
                self._link(home, item)
                self._link(item, home, "Home")
                self._link(item, self._paths[rng.choice(sites)]["/"], "Visit the site")
        for item in self.pages:
            if self.hosts[item.host].role == "decoy" and (item.kind == "home" or rng.random() < 0.12):
                item.mention = rng.randrange(len(self.topics))
            elif item.topic < 0 and item.mention < 0 and rng.random() < 0.01:
                item.mention = rng.randrange(len(self.topics))

    # ---- names and serving --------------------------------------------------

    def url(self, page: int) -> str:
        item = self.pages[page]
        return f"http://{self.hosts[item.host].name}{item.path}"

    def href(self, source: int, target: int) -> str:
        """How ``source`` writes its link to ``target``: root-relative on the same host, absolute across."""
        if self.pages[source].host == self.pages[target].host:
            return self.pages[target].path
        return self.url(target)

    def page_at(self, host_name: str, path: str) -> int | None:
        """The page at ``http://host_name/path``, or None."""
        host = self._by_name.get(host_name.lower())
        return None if host is None else self._paths[host].get(path)

    def respond(self, host_name: str, target: str) -> Response:
        """The answer to ``GET target`` on ``host_name`` (the virtual web's server calls this)."""
        host = self._by_name.get(host_name)
        if host is None:
            return NO_SUCH_HOST
        if target == "/robots.txt":
            return Response(200, ROBOTS, content_type="text/plain", kind="robots")
        page = self._paths[host].get(target)
        if page is None:
            return NOT_FOUND
        return Response(200, self.render(page), last_modified=formatdate(1_600_000_000 + 86_400 * (page % 900),
                                                                         usegmt=True), page=page)

    def render(self, page: int) -> bytes:
        """A page's HTML: paragraphs of its vocabulary, its links in lists between them, a passing mention."""
        item = self.pages[page]
        rng = random.Random(mix(self.seed, page, 5))
        own = self._pools[item.vocabulary]
        furniture = self._pools["news"]
        count = {"topical": rng.randint(5, 8), "directory": rng.randint(1, 2), "portal": 1}.get(item.kind,
                                                                                                 rng.randint(2, 5))
        paragraphs = [rng.choice(own) for _ in range(count)]
        if item.kind == "topical":
            paragraphs.insert(rng.randrange(count + 1), rng.choice(furniture))
        if item.mention >= 0:
            mentions = self.topics[item.mention].mentions
            paragraphs.insert(rng.randrange(len(paragraphs) + 1), f"<p>{rng.choice(mentions)}</p>\n")
        links = [f'<li><a href="{escape(self.href(page, target))}">{escape(anchor)}</a></li>'
                 for target, anchor in item.links]
        body = []
        for number, paragraph in enumerate(paragraphs):
            body.append(paragraph)
            if number % 2 == 1 and links:
                body.append(f'<ul class="links">{"".join(links[:8])}</ul>\n')
                del links[:8]
        if links:
            body.append(f'<ul class="links">{"".join(links)}</ul>\n')
        site = self.hosts[item.host].label
        title = escape(item.title)
        head = (
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
            f"<title>{title}</title>\n"
            f'<meta name="description" content="{escape(site)}: {title}">\n'
            f'</head>\n<body>\n<div class="nav"><a href="/">{escape(site)}</a></div>\n<h1>{title}</h1>\n'
        )
        tail = f'<div class="footer"><p>{escape(site)}. All rights reserved.</p></div>\n</body></html>\n'
        return (head + "".join(body) + tail).encode()

    # ---- ground truth -------------------------------------------------------

    def seeds(self) -> list[str]:
        """The portals' home pages: off-topic hubs."""
        return [self.url(self._paths[portal]["/"]) for portal in range(PORTALS)]

    def relevant_pages(self, topic: int) -> list[int]:
        """The pages about ``topic`` (index into ``topics``): recall is over these."""
        return [page for page, item in enumerate(self.pages) if item.topic == topic]

    def topic_index(self, key: str) -> int:
        for index, topic in enumerate(self.topics):
            if topic.key == key:
                return index
        raise KeyError(f"no topic {key!r}; known: {', '.join(topic.key for topic in self.topics)}")

    def depths(self) -> list[int]:
        """Links from the nearest seed to each page (-1: unreachable), by breadth-first search."""
        depth = [-1] * len(self.pages)
        queue = collections.deque()
        for portal in range(PORTALS):
            start = self._paths[portal]["/"]
            depth[start] = 0
            queue.append(start)
        while queue:
            page = queue.popleft()
            for target, _ in self.pages[page].links:
                if depth[target] < 0:
                    depth[target] = depth[page] + 1
                    queue.append(target)
        return depth

    def crawl_order(self, rank: Callable[[int], int] | None = None, limit: int | None = None) -> list[int]:
        """Pages in the order an idealised crawl from the seeds fetches them: the offline references.

        Without ``rank``, strict breadth-first (links in page order). With it, best-first: a link
        inherits the rank of the page it was found on (first finding counts), higher first,
        breadth-first within a rank.
        """
        heap: list[tuple[int, int, int]] = []
        order: list[int] = []
        seen: set[int] = set()
        counter = itertools.count()
        for portal in range(PORTALS):
            start = self._paths[portal]["/"]
            seen.add(start)
            heapq.heappush(heap, (0, next(counter), start))
        while heap and (limit is None or len(order) < limit):
            _, _, page = heapq.heappop(heap)
            order.append(page)
            priority = -rank(page) if rank else 0
            for target, _ in self.pages[page].links:
                if target not in seen:
                    seen.add(target)
                    heapq.heappush(heap, (priority, next(counter), target))
        return order

    def score_guided_order(self, topic: int, limit: int | None = None) -> list[int]:
        """Best-first by the topic score of the page a link is on: relevant > a passing mention > none.

        No learning and no anchor text: what the structure gives a crawler that only scores pages.
        """
        def rank(page: int) -> int:
            return 2 if self.pages[page].topic == topic else int(self.pages[page].mention == topic)

        return self.crawl_order(rank, limit)

    def offline_references(self, topic: int) -> dict[str, dict[str, int]]:
        """Fetches to 50/80/100% recall of ``topic`` in a strict breadth-first and a score-guided crawl order."""
        pages = set(self.relevant_pages(topic))
        references = {}
        for name, order in (("strict_breadth_first", self.crawl_order()),
                            ("score_guided_best_first", self.score_guided_order(topic))):
            positions = [number for number, page in enumerate(order, start=1) if page in pages]
            references[name] = {
                f"{share:.0%}": positions[pages_for_recall(len(pages), share) - 1] for share in (0.5, 0.8, 1.0)
            }
        return references

    def counts(self) -> dict[str, object]:
        roles = collections.Counter(host.role for host in self.hosts)
        return {
            "seed": self.seed,
            "hosts": len(self.hosts),
            "pages": len(self.pages),
            "links": sum(len(page.links) for page in self.pages),
            "roles": dict(roles),
            "relevant": {topic.key: len(self.relevant_pages(index)) for index, topic in enumerate(self.topics)},
            "passing_mentions": sum(1 for page in self.pages if page.mention >= 0),
        }


def pages_for_recall(relevant: int, share: float) -> int:
    """How many relevant pages make ``share`` recall of ``relevant``: 80% of 52 is 42."""
    return max(1, math.ceil(round(share * relevant, 9)))


def _series_anchor(rng: random.Random, code: str) -> str:
    series, _, number = code.partition("-")
    return rng.choice((f"{code} index", f"Series {series}/{number}", f"§ {number}", f"{series} register {number}"))


def _document_code(rng: random.Random, directory_code: str, number: int) -> str:
    series, _, section = directory_code.partition("-")
    style = rng.randrange(4)
    if style == 0:
        return f"{series}-{section}.{number}"
    if style == 1:
        return f"§ {section}.{number}"
    if style == 2:
        return f"mod_{rng.choice(MODULE_SYLLABLES)}{number}"
    return f"{series} {section}/{number} rev {rng.choice('ABC')}"


def _paragraph_pool(vocabulary: Vocabulary, seed: int) -> tuple[str, ...]:
    """``POOL_SIZE`` ready ``<p>`` paragraphs of 3-6 sentences."""
    rng = random.Random(seed)
    pool = []
    for _ in range(POOL_SIZE):
        sentences = [
            f"{rng.choice(vocabulary.subjects)} {rng.choice(vocabulary.verbs)} {rng.choice(vocabulary.objects)} "
            f"{rng.choice(vocabulary.qualifiers)}."
            for _ in range(rng.randint(3, 6))
        ]
        pool.append(f"<p>{escape(' '.join(sentences))}</p>\n")
    return tuple(pool)
