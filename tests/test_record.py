"""The content key: stored records are found again by it, so it must not change; and how a stored record is read
again as the page the topic filter judged."""

from __future__ import annotations

import re
import sys

from combine_scrapy.access.urls import host_of
from combine_scrapy.document.parse import parse_document
from combine_scrapy.records.irrelevant import IRRELEVANT_FILE, IrrelevantPage, IrrelevantPages, crawl_examples
from combine_scrapy.records.record import Record, content_key, record_document
from combine_scrapy.records.store import open_store
from combine_scrapy.topic.text import Document


def test_content_keys_are_those_stored_before():
    text = "Drosera\u00a0capensis \u2003grows\n in bogs\x1c\x1f and\u3000fens"
    assert content_key("Sundews", text, "http://x/", "text/html") == "726F2130DC2BC3668C16CCA37381A71A"
    assert content_key("", " \n\t", "http://x/a", "text/html") == "68D483AE2823CCB9B6AC961565ED21EE"  # by URL


def test_the_key_leaves_out_what_re_calls_whitespace_and_nothing_else():
    """The key once removed re's ``\\s``; it now splits the text: the two agree on every character."""
    assert content_key("", "a\u2003b\x1cc", "u", "m") == content_key("", "abc", "u", "m")
    whitespace = re.compile(r"\s")
    split_apart = [chr(code) for code in range(sys.maxunicode + 1) if len(f"a{chr(code)}b".split()) == 2]
    assert split_apart == [chr(code) for code in range(sys.maxunicode + 1) if whitespace.match(chr(code))]


HTML = b"""<html><head><title>Sundews</title>
<meta http-equiv="Content-Type" content="text/html; charset=UTF-8">
<meta name="viewport" content="width=device-width"><meta name="keywords" content="carnivorous plants">
</head><body><nav><a href="/">Home</a> <a href="/shop">Shop</a></nav>
<article><h1>Drosera</h1><p>Sundews catch insects with sticky glands on their leaves, and grow in bogs and fens.</p>
<p>Their leaves curl around the prey within minutes; the plant digests it over several days.</p></article>
</body></html>"""


def _stored(page, url: str) -> Record:
    """The record RecordPipeline makes of a parsed page (its topic-relevant fields), the HTML kept (saveHTML = 1)."""
    return Record(
        key=content_key(page.title, page.text, url, page.mime_type), url=url, title=page.title, text=page.text,
        mime_type=page.mime_type, main_text=page.main_text, headings=list(page.headings),
        meta={name: list(values) for name, values in page.meta.items()}, html=page.html,
    )


def test_training_and_reclassify_read_a_record_as_the_crawl_read_its_page(tmp_path):
    """One reading of a stored record (record_document): the document the topic filter judged when the page was
    crawled (host for sitesOK.txt, no browser-instructing meta, the main content with topicText = main), and the
    same positive example for `scrapy train` (crawl_examples) as for `scrapy reclassify`."""
    url = "http://bog.example:8080/drosera"
    page = parse_document(url, HTML, {"content-type": "text/html; charset=utf-8"})
    assert page.main_text is not None and "Shop" in page.text and "Shop" not in page.main_text
    store = open_store("j", tmp_path)
    store.store(_stored(page, url))
    store.close()
    pages = IrrelevantPages(tmp_path / "j" / IRRELEVANT_FILE)
    pages.keep(IrrelevantPage(Document("http://bog.example:8080/shop", "Shop", text="pots and soil"), 0.1, 1.0))
    pages.close()
    for main_content in (False, True):
        crawled = Document.from_page(page, host_of(url), main_content=main_content)
        assert "viewport" not in crawled.meta and crawled.host == "bog.example:8080"
        store = open_store("j", tmp_path, create=False)
        try:
            (record,) = store.records()
        finally:
            store.close()
        assert record_document(record, main_content) == crawled
        positive, _ = crawl_examples("j", tmp_path, main_content=main_content)
        assert positive == [crawled]
