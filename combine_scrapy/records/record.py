"""A stored document record and its content key.

Combine keyed records by the MD5 of their visible content, so one page served
under several URLs is one record with all its URLs. The simhash ``fingerprint`` finds near-duplicates, which
the MD5 cannot (combine_scrapy.document.neardup).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from combine_scrapy.access.urls import host_of
from combine_scrapy.document import content
from combine_scrapy.topic.text import NON_TOPICAL_META, Document


def content_key(title: str, text: str, url: str, mime_type: str) -> str:
    """Upper-case hex MD5 of text plus title with all whitespace removed.

    A page without text (an image, an empty page) is keyed by its URL and
    MIME type instead, so distinct empty pages do not collapse into one.
    """
    visible = "".join((text + title).split())  # str.split's whitespace is re's \s: the key of every stored record
    material = visible if visible else url + mime_type
    return hashlib.md5(material.encode("utf-8")).hexdigest().upper()


@dataclass(frozen=True)
class RecordLink:
    url: str
    anchor: str
    kind: str


@dataclass(frozen=True)
class TopicClass:
    name: str
    absolute: float
    relative: float
    terms: tuple[str, ...]


@dataclass
class Record:
    """What the crawler keeps of one relevant document."""

    key: str
    url: str
    title: str
    text: str
    mime_type: str
    main_text: str | None = None  # an HTML page's main content (the article without menus); None for other documents
    headings: list[str] = field(default_factory=list)
    meta: dict[str, list[str]] = field(default_factory=dict)
    links: list[RecordLink] = field(default_factory=list)
    html: str | None = None
    charset: str = ""
    server: str = ""
    modified: float | None = None
    expires: float | None = None
    checked: float = 0.0
    score: float = 0.0
    normalized: float = 0.0
    algorithm: str = ""
    classes: list[TopicClass] = field(default_factory=list)
    terms: list[str] = field(default_factory=list)
    language: str | None = None
    country: str | None = None
    fingerprint: int | None = None  # 64-bit simhash of the text; None when too short to compare
    pagerank: float | None = None   # rank in the records' link graph, from scrapy rank (None: not ranked)
    ipagerank: float | None = None  # the same, topic-weighted (iPageRank)
    off_topic: bool = False         # scrapy reclassify --flag found it no longer passes the topic filter
    rendered: bool = False          # the page was rendered in a browser (Render) before it was parsed
    # When what an export writes of it last changed (stored, checked again, rescored, ranked, a URL added or gone):
    # its datestamp for export --since and OAI-PMH. Set by the store; not part of what a record is (compare=False).
    changed: float | None = field(default=None, compare=False)


def record_document(record: Record, main_content: bool = False) -> Document:
    """A stored record as the topic filter read its page when it was crawled (:meth:`Document.from_page`): meta
    elements that instruct the browser left out, the host for sitesOK.txt, and with ``main_content`` (topicText =
    main) the page's main content block (the stored one, else found again in the kept HTML with saveHTML = 1).

    Training examples (``scrapy train``) and ``scrapy reclassify`` both read a record through it.
    """
    text = record.text
    if main_content:
        if record.main_text is not None:
            text = record.main_text
        elif record.html is not None:
            text = content.main_content(record.html)
    return Document(
        url=record.url,
        title=record.title,
        meta=" ".join(value for name, values in record.meta.items() if name not in NON_TOPICAL_META for value in values),
        headings=" ".join(record.headings),
        text=text,
        host=host_of(record.url),
    )
