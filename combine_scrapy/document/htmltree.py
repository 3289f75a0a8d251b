"""Decoded HTML into an lxml tree, safely from any thread and whatever the page holds.

Three things make lxml unsafe on pages of the open web, and this module is
the one place that deals with them:

- lxml parser objects must not be shared between threads (a crawl parses in
  the reactor's worker threads), so each thread gets its own parser; a tree
  stays in the thread that parsed it.
- lxml refuses C0 control characters (other than tab, newline and carriage
  return) in any string it is given, and libxml2 keeps those written as
  character references (``&#1;``) in the tree; they are removed from the
  text before parsing (a form feed, HTML whitespace, becomes a space) and
  :func:`sanitize` removes them from what comes out of the tree.
- libxml2 stops parsing at 2048 nested elements (256 without its
  ``huge_tree`` option), silently dropping the rest of the page. A page that
  reaches the limit is parsed again by the standard library's tokenizer
  into a tree nested at most :data:`MAX_DEPTH` deep: elements opened deeper
  become siblings, so every text and link is kept.
- libxml2 checks each attribute of a tag against all earlier ones, so a tag
  with 100,000 attributes takes minutes. A page with a tag of more than
  :data:`MAX_ATTRIBUTES` goes to the same fallback parser, which keeps the
  first MAX_ATTRIBUTES of each tag.

Comments and processing instructions are dropped while parsing.
"""

from __future__ import annotations

import html.parser
import re
import threading

import lxml.etree

#: Elements nested deeper than this in a page libxml2 gave up on are flattened into siblings.
MAX_DEPTH = 512
#: Attributes of one tag read at most; a page with more in a tag is read by the fallback parser.
MAX_ATTRIBUTES = 1000
# A tag with more than MAX_ATTRIBUTES "=" signs: scanned in linear time, since tags do not overlap.
_MANY_ATTRIBUTES = re.compile(rf"<[a-zA-Z](?:[^<>=]*=){{{MAX_ATTRIBUTES + 1}}}")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
_CONTROL_REPLACEMENTS = {"\x0c": " "}  # a form feed is whitespace in HTML
_TAG_NAME = re.compile(r"[a-z][a-z0-9._-]*\Z")
_VOID_TAGS = frozenset(
    "area base basefont bgsound br col embed frame hr image img input keygen link meta param source track wbr".split()
)
_HEAD_TAGS = frozenset("base basefont bgsound link meta noscript script style template title".split())
_THREAD = threading.local()


class EmptyDocument(ValueError):
    """The page has no element and no text."""


def sanitize(text: str) -> str:
    """``text`` without the control characters lxml refuses; a form feed becomes a space."""
    if _CONTROL.search(text) is None:
        return text
    return _CONTROL.sub(lambda match: _CONTROL_REPLACEMENTS.get(match.group(), ""), text)


def _parser() -> lxml.etree.HTMLParser:
    """This thread's parser.

    lxml.etree's, not lxml.html's: its elements are plain ones, while
    lxml.html's looks up a Python class each time an element is reached
    (every element, in every walk over the tree), and nothing here needs
    lxml.html's element methods.
    """
    parser = getattr(_THREAD, "parser", None)
    if parser is None:
        parser = _THREAD.parser = lxml.etree.HTMLParser(
            encoding="utf-8", huge_tree=True, remove_comments=True, remove_pis=True
        )
    return parser


def parse_html(text: str) -> tuple[lxml.etree._Element, bool]:
    """(root, fallback): the page's tree; ``fallback`` when libxml2 could not read it (too deep, too many attributes).

    Raises :class:`EmptyDocument` for a page without content.
    """
    text = sanitize(text)
    parser = _parser()
    if _MANY_ATTRIBUTES.search(text):
        return _FlatTreeBuilder(parser).build(text), True
    # Parsed as UTF-8 bytes: lxml refuses a str that carries an XML encoding declaration.
    body = text.encode("utf-8", errors="replace")
    try:
        root = lxml.etree.fromstring(body, parser=parser)
    except lxml.etree.ParserError as error:
        raise EmptyDocument(str(error)) from None
    if root is None:
        raise EmptyDocument("Document is empty")
    if any(entry.type == lxml.etree.ErrorTypes.ERR_RESOURCE_LIMIT for entry in parser.error_log):
        return _FlatTreeBuilder(parser).build(text), True
    return root, False


class _FlatTreeBuilder(html.parser.HTMLParser):
    """A tree from the standard library's tokenizer, nested at most MAX_DEPTH deep, MAX_ATTRIBUTES a tag.

    Used only for pages libxml2 cannot read; it knows the head, the body and
    void elements, and closes an end tag's nearest open element, which is
    all that text and link extraction need.
    """

    def __init__(self, parser: lxml.etree.HTMLParser):
        super().__init__(convert_charrefs=True)
        self.root = parser.makeelement("html")
        self.head = lxml.etree.SubElement(self.root, "head")
        self.body = lxml.etree.SubElement(self.root, "body")
        self.open = [self.head]
        self.pending: list[str] = []

    def build(self, text: str) -> lxml.etree._Element:
        self.feed(text)
        self.close()
        self._flush()
        return self.root

    def _flush(self) -> None:
        """Put the text read since the last tag after the last child of the open element, or into it."""
        if not self.pending:
            return
        text, self.pending = sanitize("".join(self.pending)), []
        parent = self.open[-1]
        if len(parent):
            parent[-1].tail = (parent[-1].tail or "") + text
        else:
            parent.text = (parent.text or "") + text

    def _enter_body(self) -> None:
        if self.open[0] is self.head:
            self._flush()
            self.open = [self.body]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("html", "head"):
            return
        if tag == "body" or tag not in _HEAD_TAGS:
            self._enter_body()
            if tag == "body":
                return
        if not _TAG_NAME.match(tag):
            return
        self._flush()
        if len(self.open) >= MAX_DEPTH:
            self.open.pop()  # the deepest element closes: the new one becomes its sibling
        element = lxml.etree.SubElement(self.open[-1], tag)
        for name, value in attrs[:MAX_ATTRIBUTES]:
            try:
                element.set(name, sanitize(value or ""))
            except ValueError:  # a name XML does not allow
                continue
        if tag not in _VOID_TAGS:
            self.open.append(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        for depth in range(len(self.open) - 1, 0, -1):
            if self.open[depth].tag == tag:
                self._flush()
                del self.open[depth:]
                return

    def handle_data(self, data: str) -> None:
        if len(self.open) == 1 and self.open[0] is self.head and data.strip():
            self._enter_body()
        self.pending.append(data)
