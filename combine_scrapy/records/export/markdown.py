"""Markdown export: each record's main content with its headings, lists and links, the text language models read.

A record is its title as a level-1 heading, its URLs, then its main content:
rendered from the original document when the record keeps it (saveHTML, the
default) by the same block finder that made its main text
(:func:`~combine_scrapy.document.content.main_content_markdown`), so it has
the same blocks with their headings, list items and links; from its main
text, one paragraph a line, when it does not; from its full text for a
document that has no main content (a PDF, plain text). Records are
separated by a thematic break (``---``). Deleted records (``--since``)
follow as HTML comments, which Markdown renders as nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TextIO

from combine_scrapy.document.content import main_content_markdown, markdown_escaped
from combine_scrapy.document.parse import HTML_TYPES
from combine_scrapy.records.export.xmltext import repair_surrogates
from combine_scrapy.records.record import Record
from combine_scrapy.records.store import Deletion

_COMMENT_END = re.compile(r"--+>")


def record_markdown(record: Record, urls: list[str]) -> str:
    """One record as Markdown: ``# title``, its URLs, its main content."""
    if record.html is not None and record.mime_type in HTML_TYPES:
        body = main_content_markdown(record.html, record.url)
    else:
        body = "\n\n".join(markdown_escaped(line) for line in (record.main_text or record.text).splitlines() if line.strip())
    title = " ".join(record.title.split()) or record.url
    sources = "\n".join(f"<{url}>" for url in urls or [record.url])
    return f"# {markdown_escaped(title).lstrip()}\n\n{sources}\n\n{body}\n".replace("\n\n\n", "\n\n")


def write_markdown(records: Iterable[tuple[Record, list[str]]], out: TextIO, deletions: Iterable[Deletion] = ()) -> int:
    """Write ``(record, urls)`` pairs as Markdown, a thematic break between them, then the deletions; returns the records."""
    count = 0
    for record, urls in records:
        if count:
            out.write("\n---\n\n")
        out.write(repair_surrogates(record_markdown(record, urls)))
        count += 1
    for deletion in deletions:
        listed = " ".join(_COMMENT_END.sub("", url) for url in deletion.urls)
        out.write(f"\n<!-- deleted {deletion.key} {deletion.deleted} {listed} -->\n")
    return count
