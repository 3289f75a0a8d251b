"""An example classifyPlugIn: write your own the same way.

A plug-in is any callable that takes a :class:`~combine_scrapy.topic.Document`
(url, title, meta, headings, text, host) and returns True/False, a score, or a
:class:`~combine_scrapy.topic.Classification`. Name it in combine.cfg as
``classifyPlugIn = package.module:function``, or put a file beside the job's
files and write ``classifyPlugIn = myfilter.py:classify``.
"""

from __future__ import annotations

from combine_scrapy.topic.text import Document

MIN_WORDS = 100


def needs_title_and_words(document: Document) -> bool:
    """Keep pages that have a title and at least MIN_WORDS words of text."""
    return bool(document.title.strip()) and len(document.text.split()) >= MIN_WORDS
