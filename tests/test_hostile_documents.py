"""Hostile documents through the parser and the parse stage: nothing escapes, no page is lost in silence.

Each row is one kind of bad document the web serves. Whatever comes in,
parse_document returns a page (it never raises), and the page either holds
what a reader would find (``expect`` names text, a title or links) or says
why it could not be read (``failure``), which is logged and counted by
ParsePipeline as ``parse/failed/<reason>``. A page with no title, text or
links and no failure would be a silent loss, and no row may give one.
"""

from __future__ import annotations

import gzip
import logging
import time
from dataclasses import dataclass, field

import docfixtures
import pytest
from parsestress import opened_stage
from twisted.internet import defer

from combine_scrapy.document.parse import parse_document
from combine_scrapy.frontier import Outcome
from combine_scrapy.itempipelines.parse import ParsePipeline
from combine_scrapy.items import Fetch

URL = "http://hostile.example/dir/page.html"
HTML = "text/html"
WORDS = "Carnivorous plants catch insects in bogs and on wet heaths. " * 8


def page(body: str, title: str = "Hostile") -> bytes:
    return f"<html><head><title>{title}</title></head><body><p>{body}</p><a href='/next'>next</a></body></html>".encode()


@dataclass
class Case:
    body: bytes
    content_type: str = HTML
    title: str | None = None       # the title that must come out
    text: tuple[str, ...] = ()     # words that must be in the text
    links: tuple[str, ...] = ()    # URLs that must be among the links
    no_links: tuple[str, ...] = ()  # URL prefixes that must not be
    failure: str = ""              # the reason, when the document cannot be read
    headers: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()    # what was odd about a document that was read


NEXT = "http://hostile.example/next"
CASES = {
    "nul bytes": Case(page("carni\x00vorous \x00plants"), text=("carnivorous plants",), links=(NEXT,)),
    "every C0 control": Case(page(WORDS + "".join(map(chr, range(32))) + " tail"), text=("insects", "tail"), links=(NEXT,)),
    "every C0 control as a reference": Case(
        page(WORDS + "".join(f"&#{n};" for n in range(32)) + " tail"), text=("insects", "tail"), links=(NEXT,)),
    "comment and form feed (the issue)": Case(page("carnivorous <!-- c --> \x0c plants"), title="Hostile", text=("carnivorous", "plants")),
    "lone surrogate references": Case(page("sundew &#xD800;&#xDFFF; &#55296; pitcher"), text=("sundew", "pitcher"), links=(NEXT,)),
    "invalid UTF-8": Case(page("Skärgård \xff bog").replace(b"\xc3\xbf", b"\xff\xfe"), "text/html; charset=utf-8",
                          text=("Skärgård",), links=(NEXT,)),
    "wrong declared charset": Case(page("Skärgård och kärr " * 5).decode().encode("iso-8859-1"), "text/html; charset=utf-8",
                                   text=("Skärgård och kärr",)),
    "UTF-16 without BOM": Case(page("sundews in bogs").decode().encode("utf-16-le"), title="Hostile", text=("sundews in bogs",),
                               links=(NEXT,)),
    "BOM and a conflicting meta": Case(
        b"\xef\xbb\xbf<meta charset='iso-8859-1'>" + page("Skärgård"), title="Hostile", text=("Skärgård",)),
    "10 MB on one line": Case(page("word " * 2_000_000 + "lastword"), text=("lastword",), links=(NEXT,)),
    "100,000 links": Case(page("".join(f"<a href='/l{n}'>l</a>" for n in range(100_000))),
                          links=("http://hostile.example/l0", "http://hostile.example/l99999", NEXT)),
    "100,000 attributes on a tag": Case(
        page("before <a href='/many' " + " ".join(f"a{n}=1" for n in range(100_000)) + ">many</a> after"),
        text=("before", "after"), links=("http://hostile.example/many", NEXT)),
    "unclosed comment": Case(page("before <!-- never closed <a href='/hidden'>x</a> after"), text=("before",),
                             no_links=("http://hostile.example/hidden",)),
    "CDATA in HTML": Case(page("before <![CDATA[ <a href='/cdata'>x</a> ]]> after"), text=("before", "after")),
    "XML declaration with a bad encoding": Case(b'<?xml version="1.0" encoding="no-such-thing"?>' + page("sundews"),
                                                title="Hostile", text=("sundews",)),
    "base href javascript:": Case(b"<base href='javascript:alert(1)'>" + page("x"), links=(NEXT,), no_links=("javascript:",)),
    "base href relative": Case(b"<base href='/other/'><a href='rel'>r</a>" + page("x"), links=("http://hostile.example/other/rel",)),
    "base href malformed": Case(b"<base href='http://['><a href='rel'>r</a>" + page("x"), links=("http://hostile.example/dir/rel",)),
    "huge title": Case(page("x", title="Title " * 200_000), text=("x",), links=(NEXT,)),
    "empty body": Case(b"", failure="empty"),
    "body of only whitespace": Case(b" \r\n\t " * 100, failure="empty"),
    "markup without content": Case(b"<html><head></head><body><div><span></span></div></body></html>", failure="empty"),
    "binary garbage as text/html": Case(bytes(range(256)) * 64, failure="binary"),
    "gzip bytes as text/html": Case(gzip.compress(page(WORDS)), failure="binary"),
    "broken entities": Case(page("a &amp b &lt; &#; &#x; &#99999999; &bogus; & &#x110000; z"), text=("a & b <", "z"), links=(NEXT,)),
    "5,000 nested divs": Case(page("<div>" * 5000 + "deep words"), text=("deep words",), links=(NEXT,)),
    "300 unclosed fonts": Case(page("<font>" * 300 + "deep words"), text=("deep words",), links=(NEXT,)),
    "10,000 framesets": Case(b"<html><head><title>F</title></head>" + b"<frameset>" * 10_000 + b"<frame src='/frame'>",
                             title="F", links=("http://hostile.example/frame",)),
    "SVG and MathML": Case(page("<svg><a href='/svg'><text>svg words</text></a></svg><math><mi>x</mi></math> after"),
                           text=("svg words", "after"), links=(NEXT,)),
    "meta refresh to itself": Case(b"<meta http-equiv='refresh' content='0; url=page.html'>", links=(URL,)),
    "script, data and mail links": Case(
        page("<a href='javascript:x()'>j</a><a href='data:text/html,<b>x</b>'>d</a><a href=' JaVa\tScRiPt:y'>j</a>"
             "<a href='mailto:a@b.example'>m</a>"),
        links=(NEXT, "mailto:a@b.example"), no_links=("javascript:", "data:", " ")),
    "malformed URLs in href": Case(page("<a href='http://['>a</a><a href='http://a:99999/'>b</a><a href='http://]x'>c</a>"),
                                   links=(NEXT,), text=("a", "b", "c")),
    "a 100 KB URL in href": Case(page(f"<a href='/{'x' * 100_000}'>long</a>"), links=(NEXT, "http://hostile.example/xxxx")),
    "unterminated tag at the end": Case(page("words")[:-30] + b"<a href='/cut", text=("words",)),
    "text/plain with control characters": Case(b"sundews \x01\x02 in bogs\x0c\nsee http://hostile.example/more\x1b", "text/plain",
                                               text=("sundews in bogs",), links=("http://hostile.example/more",)),
    "binary garbage as text/plain": Case(bytes(range(256)) * 16, "text/plain", failure="binary"),
    "truncated PDF": Case(docfixtures.pdf("Carnivorous plants")[:40], "application/pdf", failure="convert"),
    "zero-byte PDF": Case(b"", "application/pdf", failure="empty"),
    "image with a bogus header": Case(b"\x89PNG\r\n\x1a\nnot really", "image/png", failure="image"),
    # Types no parser or converter reads: said and counted, not an empty page in silence.
    "XML document": Case(b"<?xml version='1.0'?><plants><p>sundews</p></plants>", "application/xml", failure="unsupported"),
    "JSON document": Case(b'{"plants": ["sundews"]}', "application/json", failure="unsupported"),
    "ZIP archive": Case(b"PK\x03\x04" + bytes(200), "application/zip", failure="unsupported"),
    "MP4 video": Case(bytes(8) + b"ftypisom" + bytes(200), "video/mp4", failure="unsupported"),
    "UTF-16 BOM before UTF-8 bytes": Case(b"\xff\xfe" + page("Drosera \u00e9t\u00e9", "Caf\u00e9"),
                                          "text/html; charset=utf-8", title="Caf\u00e9", text=("Drosera \u00e9t\u00e9",),
                                          links=(NEXT,), notes=("stray_bom",)),
}


def parse(case: Case):
    return parse_document(URL, case.body, {"content-type": case.content_type, **case.headers})


def check(page, case: Case) -> None:
    links = [link.url for link in page.links]
    assert page.failure == case.failure
    if case.title is not None:
        assert page.title == case.title
    for words in case.text:
        assert words in page.text
    for url in case.links:
        assert any(link.startswith(url) for link in links), url
    for prefix in case.no_links:
        assert not any(link.startswith(prefix) for link in links), prefix
    assert page.failure or page.title or page.text or page.links, "a silent empty page"
    assert tuple(page.notes) == case.notes


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_hostile_document(case, caplog):
    with caplog.at_level(logging.WARNING):
        page = parse(case)
    check(page, case)
    if page.failure:
        assert URL in caplog.text


def test_there_are_thirty_kinds_at_least():
    assert len(CASES) >= 30


@pytest.mark.parametrize(
    "name", ["comment and form feed (the issue)", "5,000 nested divs", "empty body", "gzip bytes as text/html",
             "truncated PDF", "image with a bogus header", "100,000 attributes on a tag", "JSON document", "MP4 video",
             "UTF-16 BOM before UTF-8 bytes"],
)
def test_hostile_documents_through_the_parse_stage(name, monkeypatch):
    """ParsePipeline gives every item a page and counts its failure; deferToThread runs the parser inline here."""
    monkeypatch.setattr("combine_scrapy.itempipelines.parse.deferToThread", lambda f, *a, **k: defer.maybeDeferred(f, *a, **k))
    case = CASES[name]
    pipeline = opened_stage(ParsePipeline)
    item = Fetch(url=URL, host="hostile.example", fetched_at=time.time(), status=200,
                 headers={"content-type": case.content_type}, body=case.body)
    item.outcome = Outcome.SUCCESS
    results = []
    defer.Deferred.fromCoroutine(pipeline.process_item(item)).addBoth(results.append)
    assert results == [item] and item.record_key
    check(item.page, case)
    failed = {key: n for key, n in pipeline.stats.counts.items() if key.startswith("parse/failed/")}
    assert failed == ({f"parse/failed/{case.failure}": 1} if case.failure else {})
    noted = {key: n for key, n in pipeline.stats.counts.items() if key.startswith("parse/note/")}
    assert noted == {f"parse/note/{note}": 1 for note in case.notes}
