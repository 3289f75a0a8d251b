"""The main content block of an HTML page, without navigation, headers, footers and boilerplate.

Most pages say where their content is: schema.org's ``itemprop="articleBody"``,
a class such as ``entry-content`` or ``article-body``, ``<article>``,
``<main>``. The first such element (in that order) with MIN_CONTAINER_WORDS
words is the content, read whole but for its headline (``<h1>``, the
record's title), its boilerplate and its blocks mostly made of links; an
article cut into parts of one class is read whole.

A page that says nothing is read by body text extraction, the densest run
of words: the page as a sequence of tokens, each a tag (1) or a word (0), and
the span ``[i, j)`` that maximises the tags before ``i``, the words inside
and the tags after ``j``; the main text is the plateau of words in the middle.
Two refinements make navigation look like markup: words inside links count
as tags (link density; a ``#fragment`` link such as a heading's permalink is
no link away), and so does everything inside elements that are
boilerplate by their tag (``nav``, ``header``, ``footer``, ``aside``), their
ARIA role, a class or id such as ``cookie-banner``, ``gallery`` or
``sidebar`` (the last kind unless the element holds most of the words: a
layout named so), or that are hidden.
Inside the span, blocks mostly made of links are dropped too.

Measured by ``python -m bench.extraction`` on two public sets (Zyte's article
benchmark, Mozilla Readability's real-site pages): shingle F1 0.958 and
0.951, against trafilatura's 0.962 and 0.943, at a fraction of its CPU.

Pure code on lxml; a few milliseconds for an ordinary page. The parser
(:mod:`combine_scrapy.document.parse`) calls :func:`main_content_of` on the tree it
has already built, so a page is parsed once. :func:`main_content_markdown`
renders the same blocks as Markdown (headings, list items, links), for exports.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

import lxml.etree
import regex

from combine_scrapy.document.htmltree import EmptyDocument, parse_html

_BLOCK_TAGS = frozenset(
    "address article aside blockquote body br dd div dl dt fieldset figcaption figure footer form "
    "h1 h2 h3 h4 h5 h6 header hr li main nav ol p pre section table tbody td tfoot th thead tr ul".split()
)
_HEADINGS = frozenset("h1 h2 h3 h4 h5 h6".split())
_SKIPPED_TAGS = frozenset("script style noscript template head select button svg iframe object".split())
_BOILERPLATE_TAGS = frozenset("nav header footer aside menu".split())
_BOILERPLATE_ROLES = frozenset("navigation banner contentinfo complementary search menu menubar toolbar".split())
# Words of a class or id that mark boilerplate, unless a content word is in the same name.
_BOILERPLATE_WORDS = frozenset(
    """nav navbar navigation menu breadcrumb breadcrumbs footer header masthead sidebar banner ad ads byline
    credit dateline timestamp advert advertisement sponsor sponsored promo share sharing social skip toolbar
    login comment""".split()
)
# Words (or starts of words) of a class or id that mark boilerplate however many of the page's words it holds
# (a photo gallery's captions).
_ALWAYS_WORDS = tuple(
    "gallery carousel slideshow modal player cookie related comments popup newsletter subscribe".split()
)
_UNLESS_WRAPPER, _ALWAYS = 1, 2
_CONTENT_WORDS = frozenset("content main article post entry story text body".split())
_PAGE_TAGS = frozenset("html body".split())
# Never boilerplate, and a header or footer inside them is the article's own (its title, byline).
_ARTICLE_TAGS = frozenset("main article".split())
_OWN_PARTS = frozenset("header footer".split())
_HIDDEN_STYLE = regex.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", regex.IGNORECASE)
_NAME_PARTS = regex.compile(r"[^a-z0-9]+")
# A CJK character is a word of its own; other words are runs of non-space.
_TOKEN = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}]|[^\s\p{Han}\p{Hiragana}\p{Katakana}]+")
_CJK = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}]")
# A class that says its element holds the content ("entry-content", "ArticleBody", "post__content").
_CONTENT_CLASS = regex.compile(
    r"(?:article|entry|post|story)[-_]*(?:body|content|text)|content[-_]*body|post[-_]*entry", regex.IGNORECASE
)
# The elements that may say so: schema.org's articleBody, a class, <article>, <main>.
_CANDIDATE_ELEMENTS = lxml.etree.XPath('//*[@class or @itemprop="articleBody" or @role="main"] | //article | //main')
#: Content containers of each kind looked at, and the words one needs to be taken for the page's content.
CANDIDATES = 5
MIN_CONTAINER_WORDS = 80
#: Parts of an article cut into several elements of one class taken at most.
PARTS = 50
#: An element named boilerplate that holds more than this share of the words is a layout; at most so many checked.
WRAPPER_SHARE = 0.7
WRAPPER_CHECKS = 20
# Schemes a Markdown link is written for; others (javascript:, data:) leave their text only.
_LINK_SCHEMES = frozenset(("http", "https", "ftp", "mailto"))
# What would make a line of text Markdown markup: a heading, quote, list item, rule, code fence, table row.
_MARKUP_START = regex.compile(r"^(\s*)([#>*+\-=|`~]|\d+[.)])")
_LIST_ITEM = regex.compile(r"- |1\. ")
_EMPTY_LINK = regex.compile(r"\[\s*\]\([^)]*\)")
#: Words (between dashes, underscores...) of a class or id beyond which it names no component.
MAX_NAME_PARTS = 4
# A block whose words are more than this share link text is navigation.
MAX_LINK_DENSITY = 0.5


@dataclass
class _Block:
    """Text between two block-level tags, and where its words are in the token sequence."""

    chunks: list[str] = field(default_factory=list)  # text outside boilerplate elements
    spans: list[tuple[int, int]] = field(default_factory=list)  # token index ranges [i, j) of its content words
    words: int = 0
    link_words: int = 0
    prefix: str = ""  # in Markdown, what starts its line: "## " for a heading, "- " for a list item


def _is_boilerplate(element: lxml.etree._Element, wraps_content: Callable[[lxml.etree._Element], bool]) -> bool:
    """Navigation or boilerplate by its tag, its ARIA role, or the words of its class or id.

    A class or id names a layout as often as boilerplate ("two-col-sidebar-right"
    around a whole article), so an element it names is boilerplate only when it
    does not ``wraps_content``.
    """
    tag = element.tag
    if tag in _PAGE_TAGS or tag in _ARTICLE_TAGS:
        return False
    if tag in _BOILERPLATE_TAGS:
        return tag not in _OWN_PARTS or not any(a.tag in _ARTICLE_TAGS for a in element.iterancestors())
    role = element.get("role")
    if role and role.strip().lower() in _BOILERPLATE_ROLES:
        return True
    if element.get("hidden") is not None or element.get("aria-hidden") == "true":  # no reader sees it
        return True
    style = element.get("style")
    if style and _HIDDEN_STYLE.search(style):
        return True
    if tag not in _BLOCK_TAGS or tag in _HEADINGS:  # a link or heading of class "header" is no page header
        return False
    classes, name = element.get("class"), element.get("id")
    if not (classes or name):
        return False
    named = _names_boilerplate(classes or "", name or "")
    return named == _ALWAYS or (named == _UNLESS_WRAPPER and not wraps_content(element))


@functools.lru_cache(maxsize=4096)
def _names_boilerplate(classes: str, name: str) -> int:
    """Whether a class attribute or an id names boilerplate (pages of a site repeat the same few).

    _ALWAYS for a gallery or comments, whatever they hold; _UNLESS_WRAPPER for
    a name layouts share (``sidebar``, ``ad``); 0 for none. A name of more than
    MAX_NAME_PARTS words is a heading's slug or a layout
    (``sharing-with-a-single-developer``), not the name of a component.
    """
    named = 0
    for word in classes.split() + [name]:
        parts = _NAME_PARTS.split(word.lower())
        if len(parts) > MAX_NAME_PARTS or not _CONTENT_WORDS.isdisjoint(parts):
            continue
        if any(part.startswith(_ALWAYS_WORDS) for part in parts):  # "relatedposts", "cookiebanner" too
            return _ALWAYS
        if not _BOILERPLATE_WORDS.isdisjoint(parts):
            named = _UNLESS_WRAPPER
    return named


def _count_tokens(text: str) -> int:
    """How many tokens (_TOKEN) ``text`` has; str.split counts them when there is no CJK character."""
    if text.isascii():
        return len(text.split())
    return len(_TOKEN.findall(text)) if _CJK.search(text) else len(text.split())


def _content_containers(root: lxml.etree._Element) -> list[lxml.etree._Element]:
    """The elements that say they hold the page's content, when one has words enough (empty: none does).

    The most specific kind first; at most CANDIDATES of each kind are counted,
    so a page of thousands of ``<article>`` elements costs a few walks, not
    thousands. An article cut into parts (several ``<div class="article-text">``)
    gives all its parts: the elements of the same tag and content class, none inside another.
    """
    kinds: tuple[list[lxml.etree._Element], ...] = ([], [], [], [])  # articleBody, content class, article, main
    for element in _CANDIDATE_ELEMENTS(root):  # one query for all kinds, in document order
        if element.get("itemprop") == "articleBody":
            kinds[0].append(element)
        elif element.tag == "article":
            kinds[2].append(element)
        elif element.tag == "main" or element.get("role") == "main":
            kinds[3].append(element)
        if _CONTENT_CLASS.search(element.get("class") or ""):
            kinds[1].append(element)
    for kind, candidates in enumerate(kinds):
        for element in candidates[:CANDIDATES]:
            if _count_tokens("".join(element.itertext())) >= MIN_CONTAINER_WORDS:
                return _parts(root, element) if kind == 1 else [element]
    return []


def _parts(root: lxml.etree._Element, first: lxml.etree._Element) -> list[lxml.etree._Element]:
    """``first`` and the other elements of its tag and content class, in document order, none inside another (at most PARTS).

    The content class is the word of the class attribute that names content
    (``article-text`` in ``article-text c-gray-1``): the other words vary between the parts.
    """
    # _CONTENT_CLASS matches no whitespace, so the word it found in the attribute is one of its words.
    token = next(word for word in (first.get("class") or "").split() if _CONTENT_CLASS.search(word))
    parts: list[lxml.etree._Element] = []
    same = (element for element in root.iter(str(first.tag)) if token in (element.get("class") or "").split())
    for element in itertools.islice(same, 2 * PARTS):  # nested ones are looked at too, but never more than this
        if not any(part in parts for part in element.iterancestors()):
            parts.append(element)
            if len(parts) == PARTS:
                break
    return parts


def _markdown_open(element: lxml.etree._Element, tag: str, block: _Block, base: str) -> str:
    """Start ``element``'s Markdown in ``block`` (a heading's or list item's prefix, a link's bracket); returns its end."""
    if tag in _HEADINGS:
        block.prefix = "#" * int(tag[1]) + " "
    elif tag == "li":
        parent = element.getparent()
        block.prefix = "1. " if parent is not None and parent.tag == "ol" else "- "
    elif tag == "a":
        url = urljoin(base, (element.get("href") or "").strip())
        if urlsplit(url).scheme in _LINK_SCHEMES:
            block.chunks.append("[")
            return "](" + url.replace(" ", "%20").replace("(", "%28").replace(")", "%29") + ")"
    return ""


def _tokens(
    root: lxml.etree._Element, trusted: bool = False, markdown: str | None = None
) -> tuple[list[tuple[int, int]], list[_Block]]:
    """The page under ``root`` as runs of tag/word bits, cut into blocks, in document order.

    With ``markdown`` (the page's URL, which links are resolved against), the
    blocks' chunks are Markdown: headings, list items and links marked.

    A run is (bit, how many in a row): 1 a tag (or a link word), 0 a word.
    Iterative, so any depth is safe. The run being counted (``bit``,
    ``count``) is kept in locals and appended when the bit changes: the walk
    visits every element of the page, so it does no more per element than it must.
    """
    runs: list[tuple[int, int]] = []
    block = _Block()
    blocks = [block]
    bit, count, length = 1, 0, 0  # the open run: a run of no tokens is never appended
    outer: list[tuple[bool, bool]] = []  # (in_link, in_boilerplate) around each open element
    in_link = in_boilerplate = False
    skipped = 0  # depth inside a skipped element
    closers: list[str] = []  # in Markdown, how each open element ends
    scope_words: list[int] = []  # the words under root, counted when first needed
    checks = WRAPPER_CHECKS

    def wraps_content(element: lxml.etree._Element) -> bool:
        """Whether ``element`` holds most of the words under root (counted for the first WRAPPER_CHECKS asked)."""
        nonlocal checks
        if not checks:
            return False
        checks -= 1
        words = _count_tokens("".join(element.itertext()))
        if words < MIN_CONTAINER_WORDS:  # an advert or a footer: no need to count the whole page
            return False
        if not scope_words:
            scope_words.append(_count_tokens("".join(root.itertext())))
        return words > WRAPPER_SHARE * scope_words[0]

    for event, element in lxml.etree.iterwalk(root, events=("start", "end")):
        tag = element.tag if isinstance(element.tag, str) else ""
        if event == "start":
            if skipped or not tag or tag in _SKIPPED_TAGS or (trusted and tag == "h1"):
                skipped += 1
                continue
            outer.append((in_link, in_boilerplate))
            in_link = in_link or (tag == "a" and not (element.get("href") or "#").startswith("#"))
            in_boilerplate = in_boilerplate or (not (trusted and element is root) and _is_boilerplate(element, wraps_content))
            if tag in _BLOCK_TAGS and block.words:
                block = _Block()
                blocks.append(block)
            if markdown is not None:
                closers.append("" if in_boilerplate else _markdown_open(element, tag, block, markdown))
            if bit:
                count += 1
            else:
                runs.append((bit, count))
                bit, count = 1, 1
            length += 1
            text = element.text
        else:
            if skipped:
                skipped -= 1
                if skipped:
                    continue
            else:
                if bit:
                    count += 1
                else:
                    runs.append((bit, count))
                    bit, count = 1, 1
                length += 1
                if markdown is not None and (closer := closers.pop()):
                    block.chunks.append(closer)
                if tag in _BLOCK_TAGS and block.words:
                    block = _Block()
                    blocks.append(block)
                in_link, in_boilerplate = outer.pop()
            if element is root:
                continue
            text = element.tail
        if not text:
            continue
        words = _count_tokens(text)
        if not words:
            if not in_boilerplate:  # the space between two inline elements (<em>one</em> <b>two</b>) parts their words
                block.chunks.append(" ")
            continue
        outside = in_link or in_boilerplate
        if not outside:
            block.spans.append((length, length + words))
        if outside == bool(bit) or not count:
            count += words
            bit = 1 if outside else 0
        else:
            runs.append((bit, count))
            bit, count = (1 if outside else 0), words
        length += words
        if not in_boilerplate:
            block.chunks.append(text)
            block.words += words
            if in_link:
                block.link_words += words
    if count:
        runs.append((bit, count))
    return runs, blocks


def _densest_span(runs: list[tuple[int, int]]) -> tuple[int, int]:
    """``[i, j)`` maximising tags before i, words inside and tags after j, over runs of (bit, count).

    With A(x) = tags - words among the first x tokens, the objective is
    A(i) - A(j) + all tags, so one pass keeping the best A(i) so far finds it.
    A falls through a run of words and rises through a run of tags, so only
    the end of each run can improve either: a run costs one step, not one per token.
    """
    best_i = best_start = best_end = 0
    best_gain = 0
    a = best_a = position = 0
    for bit, count in runs:
        position += count
        a += count if bit else -count
        if best_a - a > best_gain:
            best_gain, best_start, best_end = best_a - a, best_i, position
        if a > best_a:
            best_a, best_i = a, position
    return best_start, best_end


def _main_lines(root: lxml.etree._Element, markdown: str | None = None) -> list[str]:
    """The lines of the main content block, one a block (Markdown ones with ``markdown``, the page's URL).

    When an element says it holds the content (schema.org's articleBody, a
    class such as ``entry-content``, ``<article>``, ``<main>``) and has words
    enough, the content is its blocks that are neither boilerplate nor mostly
    links; otherwise the densest run of words over the whole page.
    """
    containers = _content_containers(root)
    lines = []
    for scope in containers or [root]:
        runs, blocks = _tokens(scope, trusted=bool(containers), markdown=markdown)
        start, end = (0, sum(count for _, count in runs)) if containers else _densest_span(runs)
        for block in blocks:
            inside = any(first < end and last > start for first, last in block.spans)
            if inside and block.link_words <= MAX_LINK_DENSITY * block.words:
                line = " ".join("".join(block.chunks).split())
                if markdown is not None:
                    line = _EMPTY_LINK.sub("", line).strip()
                    line = block.prefix + markdown_escaped(line) if line else ""
                lines.append(line)
    return [line for line in lines if line]


def markdown_escaped(line: str) -> str:
    """A line of text that Markdown reads as the same text: a leading markup character (``#``, ``-``, ``1.``) escaped."""
    return _MARKUP_START.sub(lambda match: match.group(1) + "\\" + match.group(2), line)


def main_content_of(root: lxml.etree._Element) -> str:
    """Text of the main content block of a parsed page, one line per block; empty when it is all boilerplate."""
    return "\n".join(_main_lines(root))


def main_content_markdown(html: str, url: str) -> str:
    """The page's main content block as Markdown: headings, list items and links (resolved against ``url``) kept.

    Parsed as :mod:`combine_scrapy.document.parse` parses a page (scripts and
    styles removed), so the blocks are those of the record's main text.
    """
    try:
        root, _ = parse_html(html)
    except EmptyDocument:
        return ""
    lxml.etree.strip_elements(root, "script", "style", with_tail=False)
    parts: list[str] = []
    for line in _main_lines(root, markdown=url):
        if parts:  # the items of a list on consecutive lines, every other block a paragraph of its own
            parts.append("\n" if _LIST_ITEM.match(line) and _LIST_ITEM.match(parts[-1]) else "\n\n")
        parts.append(line)
    return "".join(parts)


def main_content(html: str) -> str:
    """Text of the page's main content block (:func:`main_content_of` the parsed ``html``)."""
    try:
        root, _ = parse_html(html)
    except EmptyDocument:
        return ""
    return main_content_of(root)
