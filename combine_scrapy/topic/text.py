"""Text preparation shared by Combine's matching algorithms, as Combine does it.

Characters other than letters, digits, ``/``, ``'`` and ``-`` become spaces;
pure-number tokens go; text is lower-cased; stopwords go; no stemming.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

_NOT_WORD = re.compile(r"[^\w/'\-]|_")
_NUMBER = re.compile(r"^[\d/'\-]+$")


@dataclass(frozen=True)
class Document:
    """The parts of a page the topic filter looks at."""

    url: str
    title: str = ""
    meta: str = ""
    headings: str = ""
    text: str = ""
    host: str = ""

    @classmethod
    def from_page(cls, page, host: str = "", main_content: bool = False) -> Document:
        """The parts of a parsed page (:class:`combine_scrapy.parse.ParsedPage`) the filter reads.

        With ``main_content`` (topicText = main) the text of an HTML page is
        only its main content block, without navigation and boilerplate (found
        by the parser in the same pass, ``page.main_text``).
        """
        return cls(
            url=page.url,
            title=page.title,
            meta=" ".join(value for values in page.meta.values() for value in values),
            headings=" ".join(page.headings),
            text=page.main_text if main_content and page.main_text is not None else page.text,
            host=host,
        )


def tokens(text: str, stopwords: frozenset[str] = frozenset()) -> list[str]:
    """Prepared, lower-cased tokens of ``text``."""
    return [
        token
        for token in _NOT_WORD.sub(" ", text).lower().split()
        if not _NUMBER.match(token) and token not in stopwords
    ]


def url_path_text(url: str) -> str:
    """The URL path with ``/`` turned into spaces: Combine matched terms in it too."""
    return unquote(urlsplit(url).path).replace("/", " ")
