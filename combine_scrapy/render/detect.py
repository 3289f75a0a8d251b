"""Whether a fetched HTML page is a shell that scripts fill, and whether rendering a host pays off.

Pure code (lxml, no Scrapy): :func:`page_shape` measures a page (its visible
text, its links, its scripts), :func:`script_built` names the first sign that
the page is built by its scripts, and :class:`HostRenderLedger` remembers, per
host, whether rendering brought anything new, so that a host whose pages
render to what was fetched stops being rendered.

The signs, each cheap on a page already fetched:

- ``spa_root``: a known single-page-app root (``<div id="root">``, ``id="app"``,
  ``id="__next"``, ``id="__nuxt"``, ``ng-app``, ``<app-root>``) with no text in it;
- ``noscript``: a ``<noscript>`` that asks for JavaScript;
- ``little_text``: scripts, and little visible text against the page's size;
- ``links_in_scripts``: no ``<a href>`` in the page, but URLs in its scripts.

A page without any script is never script-built.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import lxml.etree

from combine_scrapy.document.htmltree import EmptyDocument, parse_html

SPA_ROOT = "spa_root"
NOSCRIPT = "noscript"
LITTLE_TEXT = "little_text"
LINKS_IN_SCRIPTS = "links_in_scripts"
#: Every sign, in the order :func:`script_built` tries them.
SIGNS = (SPA_ROOT, NOSCRIPT, LITTLE_TEXT, LINKS_IN_SCRIPTS)

#: Element ids that single-page-app frameworks mount into (React, Vue, Next.js, Nuxt, Svelte, Ember).
SPA_ROOT_IDS = frozenset({"root", "app", "__next", "__nuxt", "svelte", "ember-app", "main-app", "react-root"})
#: Attributes and elements of an Angular application's root.
_ANGULAR_ATTRIBUTES = ("ng-app", "data-ng-app", "ng-version")
_ANGULAR_ELEMENTS = frozenset({"app-root"})
_ASKS_FOR_SCRIPTS = re.compile(r"javascript|enable\s+js|\bjs\b.*(?:enable|required|disabled)", re.IGNORECASE)
# A URL in a script's text: absolute, or a quoted site path such as "/news/1.html".
_URL_IN_SCRIPT = re.compile(r"""https?://[^\s"'<>]+|["'`]/[\w\-./]+["'`]""")
#: Visible characters under which a page with scripts counts as having little text, whatever its size.
MIN_VISIBLE_TEXT = 200
#: Visible characters per byte of HTML under which a page with scripts counts as having little text.
MIN_TEXT_RATIO = 0.02
_INVISIBLE = frozenset({"script", "style", "noscript", "template", "head", "title", "meta", "link"})


@dataclass(frozen=True)
class PageShape:
    """What a page shows without running its scripts: its visible text, its links, its scripts."""

    size: int
    #: Characters of visible text, whitespace not counted.
    text_length: int
    links: frozenset[str]
    scripts: int
    script_text: str = ""
    empty_spa_root: bool = False
    noscript_asks: bool = False


def _text(element: lxml.etree._Element) -> str:
    return lxml.etree.tostring(element, method="text", encoding="unicode", with_tail=False)


def _visible_length(text: str) -> int:
    """Characters of ``text`` that are not whitespace (counted in C: no copy of the text is made)."""
    return len(text) - sum(text.count(space) for space in " \n\t\r\xa0")


def _is_spa_root(element: lxml.etree._Element) -> bool:
    tag = element.tag.lower() if isinstance(element.tag, str) else ""
    if tag in _ANGULAR_ELEMENTS or any(name in element.attrib for name in _ANGULAR_ATTRIBUTES):
        return True
    return (element.get("id") or "").lower() in SPA_ROOT_IDS


_SCRIPT_TAG = re.compile(r"<script", re.IGNORECASE)
# Elements that may be a single-page app's root: an id, Angular's attributes or element.
_SPA_CANDIDATES = lxml.etree.XPath("//*[@id or @ng-app or @data-ng-app or @ng-version] | //app-root")


def page_shape(html: str, *, skip_without_scripts: bool = True) -> PageShape:
    """Measure a page as fetched (its scripts not run).

    A page without a script tag is not script-built: unless ``skip_without_scripts`` is False (a rendered
    page, measured to compare), it is not parsed, and its shape says only its size.
    """
    size = len(html.encode("utf-8", errors="replace"))
    if skip_without_scripts and not _SCRIPT_TAG.search(html):
        return PageShape(size=size, text_length=0, links=frozenset(), scripts=0)
    try:
        root, _ = parse_html(html)
    except EmptyDocument:
        return PageShape(size=size, text_length=0, links=frozenset(), scripts=0)
    scripts = list(root.iter("script"))
    links = frozenset(href.strip() for element in root.iter("a") if (href := element.get("href")) and href.strip())
    # The scripts' text matters only to a page without links (links_in_scripts).
    script_text = "" if links else "\n".join(element.text or "" for element in scripts)
    noscript_asks = any(_ASKS_FOR_SCRIPTS.search(_text(element)) for element in root.iter("noscript"))
    lxml.etree.strip_elements(root, *_INVISIBLE, with_tail=False)
    candidates = _SPA_CANDIDATES(root)
    empty_spa_root = isinstance(candidates, list) and any(
        isinstance(element, lxml.etree._Element) and _is_spa_root(element) and not _text(element).strip() for element in candidates
    )
    return PageShape(size, _visible_length(_text(root)), links, len(scripts), script_text, empty_spa_root, noscript_asks)


def script_built(shape: PageShape) -> str | None:
    """The first sign that the page's scripts build it (one of :data:`SIGNS`), or None."""
    if not shape.scripts:
        return None
    if shape.empty_spa_root:
        return SPA_ROOT
    if shape.noscript_asks:
        return NOSCRIPT
    if shape.text_length < max(MIN_VISIBLE_TEXT, MIN_TEXT_RATIO * shape.size):
        return LITTLE_TEXT
    if not shape.links and _URL_IN_SCRIPT.search(shape.script_text):
        return LINKS_IN_SCRIPTS
    return None


#: Visible characters a render must add to count as bringing something new (a new link always counts).
NEW_TEXT_CHARACTERS = 100
#: Renders of a host in a row that brought nothing new, after which the host is no longer rendered.
FRUITLESS_RENDERS = 3


def brought_something(fetched: PageShape, rendered: PageShape) -> bool:
    """Whether the rendered page shows what the fetched one did not: new links, or more visible text."""
    return bool(rendered.links - fetched.links) or rendered.text_length - fetched.text_length >= NEW_TEXT_CHARACTERS


@dataclass
class HostRenderLedger:
    """Per host: renders in a row that brought nothing new; a host that reaches ``limit`` is given up."""

    limit: int = FRUITLESS_RENDERS
    _fruitless: dict[str, int] = field(default_factory=dict)
    given_up: set[str] = field(default_factory=set)

    def record(self, host: str, fruitful: bool) -> bool:
        """Note one render of ``host``; True when this render made the ledger give the host up."""
        if fruitful:
            self._fruitless.pop(host, None)
            return False
        count = self._fruitless.get(host, 0) + 1
        self._fruitless[host] = count
        if count >= self.limit and host not in self.given_up:
            self.given_up.add(host)
            return True
        return False

    def renders(self, host: str) -> bool:
        return host not in self.given_up
