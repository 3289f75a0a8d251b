"""The doc web: Debian documentation packages served as named hosts, one host a package.

Each :class:`Tree` is the HTML tree one package installs, served at the root
of its host (``python.docs.test/library/re.html``). Trees whose pages exist
in several languages keep the language as a path segment, as the real sites
do: the Debian Handbook and the Apache manual install one directory a
language already (``/fr-FR/...``, ``/fr/mod/core.html``); the Debian
Reference installs ``ch01.fr.html`` beside ``ch01.en.html``, served as
``/fr/ch01.html`` with its links rewritten to match. Absolute links to a
package's real site (``https://www.postgresql.org/docs/15/``), from its own
pages or another package's, are rewritten to its host, so they stay in the
web and join the hosts as the real sites are joined; links anywhere else
stay as they are. As the real servers negotiate content, a path without
its ``.html`` (``/git-grep``, ``/ftparchives``) and a Debian Reference page
by its file name (``/ch02.en.html``) are redirected (301) to the page.

Every file of a tree is served as it is (images, style sheets, scripts, PDF)
with the type its name says; ``x.html.gz`` is served decompressed as
``x.html``; a directory without ``index.html`` gets a generated listing, as
Apache's autoindex would; ``/robots.txt`` is missing (404, everything
allowed). The host ``portal.docs.test`` serves one page linking to every
host's home page. A request for any other host gets 502 (no such host).

A page's *key* is its host and path with the language taken out, so the
French and the English of one page are one page to the judge.
"""

from __future__ import annotations

import gzip
import heapq
import html
import itertools
import mimetypes
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urljoin, urlsplit

from bench.virtualweb.web import NO_SUCH_HOST, NOT_FOUND, Response

DOMAIN = ".docs.test"
PORTAL = "portal" + DOMAIN
HTML_TYPE = "text/html; charset=utf-8"
HREF = re.compile(rb"""<a\s[^>]*?href\s*=\s*["']([^"'#]*)""", re.IGNORECASE)


@dataclass(frozen=True)
class Tree:
    """One package's HTML tree and how it is served."""

    host: str  # without DOMAIN: "python" serves python.docs.test
    packages: tuple[str, ...]  # the Debian packages that install it
    root: str  # the directory served as the host's /
    title: str  # its name on the portal
    #: "dirs": the first path segment names the language (``/fr/...``); "suffix": files are ``name.LANG.html``,
    #: served as ``/LANG/name.html``; "": one language.
    language_layout: str = ""
    languages: tuple[str, ...] = ()
    #: The real site: (regular expression of an absolute URL prefix, the path on this host it stands for;
    #: ``\\1`` is the expression's first group).
    site: tuple[tuple[str, str], ...] = ()

    @property
    def name(self) -> str:
        return self.host + DOMAIN


HANDBOOK_LANGUAGES = ("ar-MA", "ca-ES", "cs-CZ", "da-DK", "de-DE", "el-GR", "en-US", "es-ES", "fa-IR", "fr-FR",
                      "hr-HR", "id-ID", "it-IT", "ja-JP", "ko-KR", "nb-NO", "nl-NL", "pl-PL", "pt-BR", "ro-RO",
                      "ru-RU", "sv-SE", "tr-TR", "vi-VN", "zh-CN", "zh-TW")
HTTPD_LANGUAGES = ("da", "de", "en", "es", "fr", "ja", "ko", "pt-br", "ru", "tr", "zh-cn")

TREES: tuple[Tree, ...] = (
    Tree("handbook", ("debian-handbook",), "/usr/share/doc/debian-handbook/html", "The Debian Administrator's Handbook",
         "dirs", HANDBOOK_LANGUAGES,
         ((r"https?://debian-handbook\.info/browse/([a-z]{2}-[A-Z]{2})/stable/", "/\\1/"),
          (r"https?://debian-handbook\.info/browse/stable/", "/en-US/"))),
    Tree("httpd", ("apache2-doc",), "/usr/share/doc/apache2-doc/manual", "Apache HTTP Server 2.4 documentation",
         "dirs", HTTPD_LANGUAGES,
         ((r"https?://httpd\.apache\.org/docs/(?:2\.4|current|trunk)/(?:en/)?", "/en/"),)),
    Tree("python", ("python3.11-doc",), "/usr/share/doc/python3.11/html", "Python 3.11 documentation",
         site=((r"https?://docs\.python\.org/(?:3(?:\.\d+)?/)?", "/"),)),
    Tree("postgresql", ("postgresql-doc-15",), "/usr/share/doc/postgresql-doc-15/html", "PostgreSQL 15 documentation",
         site=((r"https?://www\.postgresql\.org/docs/(?:[0-9.]+|current)/(?:static/)?", "/"),)),
    Tree("sqlite", ("sqlite3-doc",), "/usr/share/doc/sqlite3", "SQLite documentation",
         site=((r"https?://(?:www\.)?sqlite\.org/(?!src/|docsrc/|forum/)", "/"),)),  # not its repository or forum
    Tree("git", ("git-doc",), "/usr/share/doc/git-doc", "Git documentation",
         site=((r"https?://git-scm\.com/docs/", "/"), (r"https?://(?:www\.)?kernel\.org/pub/software/scm/git/docs/", "/"))),
    Tree("bash", ("bash-doc",), "/usr/share/doc/bash", "GNU Bash documentation",
         site=((r"https?://www\.gnu\.org/software/bash/manual/", "/"),)),
    Tree("faq", ("debian-faq",), "/usr/share/doc/debian/FAQ", "The Debian GNU/Linux FAQ",
         site=((r"https?://www\.debian\.org/doc/(?:manuals/debian-faq|FAQ)/", "/"),)),
    Tree("devref", ("developers-reference",), "/usr/share/developers-reference", "Debian Developer's Reference",
         site=((r"https?://www\.debian\.org/doc/(?:manuals/)?developers-reference/", "/"),)),
    Tree("maint", ("maint-guide",), "/usr/share/doc/maint-guide/html", "Debian New Maintainers' Guide",
         site=((r"https?://www\.debian\.org/doc/(?:manuals/)?maint-guide/", "/"),)),
    Tree("reference", ("debian-reference-en", "debian-reference-fr", "debian-reference-de"), "/usr/share/debian-reference",
         "Debian Reference", "suffix", ("en", "fr", "de"),
         ((r"https?://www\.debian\.org/doc/(?:manuals/)?debian-reference/", "/"),)),
)


def packages(trees: tuple[Tree, ...] = TREES) -> list[str]:
    """The Debian packages the trees come from."""
    return [package for tree in trees for package in tree.packages]


@dataclass(frozen=True)
class Served:
    """What a served path is: the file, whether it is gzipped HTML, and the language of the page."""

    file: Path
    gzipped: bool = False
    language: str = ""


#: A rewriting of links: an absolute URL prefix of a real site, and what replaces it (a ``re.sub`` template).
SiteLink = tuple[re.Pattern[bytes], bytes]


def site_links(trees: tuple[Tree, ...]) -> list[SiteLink]:
    """Every tree's real site, pointing to its host."""
    return [(re.compile(pattern.encode()), f"http://{tree.name}{path}".encode())
            for tree in trees for pattern, path in tree.site]


class DocTree:
    """One tree indexed: served path -> file, the directories' children for listings."""

    def __init__(self, tree: Tree, root: Path | None = None, sites: list[SiteLink] | None = None):
        self.tree = tree
        self.root = root or Path(tree.root)
        self.sites = site_links((tree,)) if sites is None else sites
        self.files: dict[str, Served] = {}
        self.children: dict[str, set[str]] = {}
        self._index()
        self._suffix_link = (
            re.compile(rb'(href=")([A-Za-z0-9_.-]+)\.(' + "|".join(map(re.escape, tree.languages)).encode()
                       + rb')\.html([#"])')
            if tree.language_layout == "suffix" else None
        )

    def _index(self) -> None:
        if not self.root.is_dir():
            raise FileNotFoundError(f"{self.root}: not installed (packages {', '.join(self.tree.packages)})")
        suffix = re.compile(r"^(.+)\.(" + "|".join(map(re.escape, self.tree.languages)) + r")\.html$")
        for directory, dirnames, filenames in os.walk(self.root, followlinks=True):
            dirnames.sort()
            relative = Path(directory).relative_to(self.root).as_posix()
            prefix = "/" if relative == "." else f"/{relative}/"
            for filename in sorted(filenames):
                file = Path(directory) / filename
                if not file.is_file():  # a dangling symbolic link
                    continue
                language = ""
                if self.tree.language_layout == "dirs":
                    first = prefix.split("/")[1]
                    language = first if first in self.tree.languages else ""
                if filename.endswith(".html.gz"):
                    self._add(prefix + filename[: -len(".gz")], Served(file, True, language))
                    continue
                matched = suffix.match(filename) if self.tree.language_layout == "suffix" else None
                if matched:
                    self._add(f"/{matched[2]}{prefix}{matched[1]}.html", Served(file, False, matched[2]))
                else:
                    self._add(prefix + filename, Served(file, False, language))

    def _add(self, path: str, served: Served) -> None:
        self.files[path] = served
        parts = path.split("/")
        for depth in range(1, len(parts)):
            directory = "/".join(parts[:depth]) + "/"
            child = parts[depth] + ("/" if depth < len(parts) - 1 else "")
            self.children.setdefault(directory, set()).add(child)

    @property
    def pages(self) -> int:
        return sum(1 for path in self.files if path.endswith(".html"))

    def resolve(self, path: str) -> Served | None:
        """The file a served path names; a language path of a suffix tree falls back to the shared files."""
        if path.endswith("/"):
            path += "index.html"
        served = self.files.get(path)
        if served is None and self.tree.language_layout == "suffix":
            language, _, rest = path[1:].partition("/")
            if language in self.tree.languages and rest:
                served = self.files.get("/" + rest)
        return served

    def respond(self, target: str) -> Response:
        path = target.split("?", 1)[0].split("#", 1)[0]
        if path == "/robots.txt":
            return NOT_FOUND
        served = self.resolve(path)
        if served is None:
            moved = self.moved(path)
            if moved:
                return Response(301, b"", location=f"http://{self.tree.name}{moved}", kind="redirect")
            if path.endswith("/") and path in self.children:
                return Response(200, self.listing(path), kind="listing")
            return NOT_FOUND
        body = served.file.read_bytes()
        if served.gzipped:
            body = gzip.decompress(body)
        name = served.file.name.removesuffix(".gz") if served.gzipped else served.file.name
        content_type = content_type_of(name)
        if content_type == HTML_TYPE:
            body = self.rewrite(body)
        return Response(200, body, content_type=content_type)

    def moved(self, path: str) -> str | None:
        """Where a path that names no file is redirected, as the real server would answer it, or None.

        A directory without its slash; a page without ``.html`` (or the Debian sites' ``.en.html``); in a
        suffix tree, a page by its file name (``/ch02.fr.html``) or without its language (``/ch02``).
        """
        if path.endswith("/"):
            return None
        if path + "/" in self.children:
            return path + "/"
        directory, _, name = path.rpartition("/")
        if "." not in name:
            for candidate in (f"{path}.html", f"{path}.en.html"):
                if candidate in self.files:
                    return candidate
        if self.tree.language_layout == "suffix":
            stem, dot, language = name.removesuffix(".html").rpartition(".")
            if dot and language in self.tree.languages and name.endswith(".html"):
                return f"/{language}{directory}/{stem}.html"
            if "." not in name and f"/en{path}.html" in self.files:
                return f"/en{path}.html"
        return None

    def rewrite(self, body: bytes) -> bytes:
        """Links to a real site point to its host; a suffix tree's ``x.LANG.html`` links to ``/LANG/x.html``."""
        for pattern, replacement in self.sites:
            body = pattern.sub(replacement, body)
        if self._suffix_link is not None:
            body = self._suffix_link.sub(lambda m: m[1] + b"/" + m[3] + b"/" + m[2] + b".html" + m[4], body)
        return body

    def listing(self, directory: str) -> bytes:
        """An autoindex page of a directory."""
        names = sorted(self.children[directory])
        items = "".join(f'<li><a href="{html.escape(name)}">{html.escape(name)}</a></li>\n' for name in names)
        title = f"Index of {html.escape(directory)}"
        return (f"<html><head><title>{title}</title></head><body><h1>{title}</h1>\n<ul>\n{items}</ul>"
                f"</body></html>\n").encode()

    def key(self, path: str) -> str:
        """The page a path shows, whatever its language: ``/fr/mod/core.html`` -> ``/mod/core.html``."""
        path = path.split("?", 1)[0].split("#", 1)[0]
        if path.endswith("/"):
            path += "index.html"
        if path.endswith(".html.gz"):
            path = path[: -len(".gz")]
        if self.tree.language_layout:
            language, _, rest = path[1:].partition("/")
            if language in self.tree.languages and rest:
                return "/" + rest
        return path


def content_type_of(name: str) -> str:
    if name.endswith((".html", ".htm")):
        return HTML_TYPE
    guessed, _ = mimetypes.guess_type(name)
    if guessed and guessed.startswith("text/"):
        return guessed + "; charset=utf-8"
    return guessed or "application/octet-stream"


class DocWeb:
    """Every tree as a host, and the portal; the object bench/virtualweb's server serves."""

    seed = 0  # one web: nothing is drawn

    def __init__(self, trees: tuple[Tree, ...] = TREES):
        sites = site_links(trees)
        self.trees = {tree.name: DocTree(tree, sites=sites) for tree in trees}

    @property
    def hosts(self) -> int:
        return len(self.trees)

    @property
    def pages(self) -> int:
        return sum(tree.pages for tree in self.trees.values())

    def counts(self) -> dict[str, dict[str, int]]:
        """Per host: HTML pages and all files served."""
        return {name: {"pages": tree.pages, "files": len(tree.files)} for name, tree in self.trees.items()}

    def home(self, host: str) -> str:
        return f"http://{host}/"

    def homes(self) -> list[str]:
        return [self.home(host) for host in self.trees]

    def respond(self, host: str, target: str) -> Response:
        if host == PORTAL:
            return self._portal(target)
        tree = self.trees.get(host)
        if tree is None:
            return NO_SUCH_HOST
        return tree.respond(target)

    def _portal(self, target: str) -> Response:
        if target.split("?", 1)[0] != "/":
            return NOT_FOUND
        items = "".join(f'<li><a href="{self.home(name)}">{html.escape(tree.tree.title)}</a></li>\n'
                        for name, tree in self.trees.items())
        body = ("<html><head><title>Documentation portal</title></head><body><h1>Documentation portal</h1>\n"
                f"<p>Manuals installed on this system.</p>\n<ul>\n{items}</ul></body></html>\n")
        return Response(200, body.encode(), kind="portal")

    def key(self, host: str, path: str) -> tuple[str, str] | None:
        """The language-free page a request showed (host, path), or None for a host not in the web."""
        tree = self.trees.get(host)
        return (host, tree.key(path)) if tree else None

    def links(self, url: str, response: Response) -> list[str]:
        """The http links of a page (``<a href>``, made absolute, without fragments); a redirect's target."""
        if response.location:
            return [response.location]
        if response.status != 200 or not response.content_type.startswith("text/html"):
            return []
        found = (urljoin(url, html.unescape(href.decode("utf-8", "replace")).strip()) for href in HREF.findall(response.body))
        return [link for link in found if link.startswith("http://")]

    def links_within(self, url: str) -> list[str]:
        """The links of the page ``url`` (its redirect's target) to the web's hosts."""
        return [link for link in self.links(url, self.respond(*request_of(url)))
                if (urlsplit(link).hostname or "").endswith(DOMAIN)]

    def breadth_first(self, seeds: list[str], cap: int) -> list[tuple[str, str]]:
        """The first ``cap`` requests (host, path) of a strict breadth-first crawl of the web's hosts from ``seeds``.

        No crawler: the reference order, and which pages can be reached at all.
        """
        return [(parts.hostname or "", parts.path or "/")
                for parts in map(urlsplit, best_first(seeds, cap, self.links_within))]


def request_of(url: str) -> tuple[str, str]:
    """The (host, request target) a URL asks the web for."""
    parts = urlsplit(url)
    return parts.hostname or "", (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


def best_first(start: list[str], cap: int, out: Callable[[str], list[str]],
               rank: Callable[[str], float] = lambda url: 0) -> list[str]:
    """The first ``cap`` URLs a crawl from ``start`` fetches, following ``out``'s links of each page it fetched:
    best ``rank`` first, the first found between equals (with no rank, breadth-first)."""
    found = itertools.count()
    queue = [(-rank(url), next(found), url) for url in start]
    heapq.heapify(queue)
    seen, order = set(start), []
    while queue and len(order) < cap:
        url = heapq.heappop(queue)[2]
        order.append(url)
        for link in out(url):
            if link not in seen:
                seen.add(link)
                heapq.heappush(queue, (-rank(link), next(found), link))
    return order
