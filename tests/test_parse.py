"""Parsing fetched bodies into structured pages: charset, title, headings, meta, text, links."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from combine_scrapy.document.parse import Link, parse_document

HTML = """<!DOCTYPE html>
<html><head>
<title>Carnivorous   plants</title>
<base href="http://plants.example/guide/">
<meta name="Keywords" content="sundew, pitcher plant">
<meta name="description" content="All about them">
<meta name="DC.Creator" content="A. Gardener">
<meta http-equiv="Expires" content="Thu, 01 Dec 2033 16:00:00 GMT">
<style>.x { color: red }</style>
<script>var hidden = "carnivorous";</script>
</head><body>
<h1>Sundews</h1><h2>Growing  <em>Drosera</em></h2>
<p>Gl<b>ass</b>  houses suit them.</p>
<p>See <a href="../nepenthes.html#top">Nepenthes <i>pitchers</i></a> and
<a href="mailto:x@y.z">mail</a>, <a href="#self">here</a>,
<img src="sundew.jpg" alt="A sundew"> and http://other.example/list.txt.</p>
<map><area href="/area.html" alt="Area"></map>
<iframe src="/frame.html"></iframe>
<!-- a comment -->
</body></html>"""


def parse(body, content_type="text/html; charset=utf-8", **headers):
    data = body.encode("utf-8") if isinstance(body, str) else body
    return parse_document("http://plants.example/guide/index.html", data, {"content-type": content_type, **headers})


def test_title_headings_meta_and_text():
    page = parse(HTML)
    assert page.mime_type == "text/html" and page.charset == "utf-8"
    assert page.title == "Carnivorous plants"
    assert page.headings == ["Sundews", "Growing Drosera"]
    assert page.meta["keywords"] == ["sundew, pitcher plant"]
    assert page.meta["dc.creator"] == ["A. Gardener"]
    assert "Glass houses suit them." in page.text.splitlines()
    assert "var hidden" not in page.text and "color: red" not in page.text and "comment" not in page.text
    assert page.expires == datetime(2033, 12, 1, 16, 0, tzinfo=UTC)


def test_links_with_anchor_text_resolved_against_base():
    links = parse(HTML).links
    assert Link("http://plants.example/nepenthes.html#top", "Nepenthes pitchers", "a") in links
    assert Link("http://plants.example/guide/sundew.jpg", "A sundew", "img") in links
    assert Link("http://plants.example/area.html", "Area", "area") in links
    assert Link("http://plants.example/frame.html", "", "frame") in links
    assert Link("http://other.example/list.txt", "", "text") in links
    assert not any(link.url.endswith("#self") for link in links)


def test_links_in_text_only_when_asked():
    page = parse_document("http://x/", HTML.encode(), {"content-type": "text/html"}, extract_links_from_text=False)
    assert not any(link.kind == "text" for link in page.links)


@pytest.mark.parametrize(
    ("body", "content_type", "charset"),
    [
        ("<html><head><title>Skärgård</title></head></html>".encode("iso-8859-1"), "text/html; charset=iso-8859-1", "cp1252"),
        ('<html><head><meta charset="iso-8859-1"><title>Skärgård</title></head></html>'.encode("iso-8859-1"), "text/html", "cp1252"),
        ("\ufeff<html><head><title>Skärgård</title></head></html>".encode("utf-8"), "text/html; charset=iso-8859-1", "utf-8"),
        ("<html><head><title>Skärgård</title></head><body>" .encode() + "Skärgården är vacker. ".encode() * 20, "text/html", "utf-8"),
    ],
)
def test_character_sets_come_out_as_text(body, content_type, charset):
    page = parse(body, content_type)
    assert page.title == "Skärgård"
    assert page.charset == charset


def test_robots_meta_and_header():
    page = parse('<html><head><meta name="robots" content="NOINDEX, follow"></head></html>')
    assert page.robots_noindex and not page.robots_nofollow
    assert parse('<meta name="robots" content="none">').robots_nofollow
    assert parse("<p>x</p>", **{"x-robots-tag": "nofollow"}).robots_nofollow
    assert not parse('<meta name="robots" content="nonexistent">').robots_noindex


def test_dates_and_server_from_headers():
    page = parse("<p>x</p>", **{"last-modified": "Wed, 21 Oct 2015 07:28:00 GMT", "server": "Apache", "expires": "garbage"})
    assert page.modified == datetime(2015, 10, 21, 7, 28, tzinfo=UTC)
    assert page.server == "Apache"
    assert page.expires is None


def test_plain_text_and_its_urls():
    page = parse_document(
        "http://x/a.txt", "Sundews, see http://x.example/d.html.\nNothing else.".encode("utf-16"), {"content-type": "text/plain"}
    )
    assert page.mime_type == "text/plain"
    assert page.text == "Sundews, see http://x.example/d.html.\nNothing else."
    assert [link.url for link in page.links] == ["http://x.example/d.html"]


@pytest.mark.parametrize("body", [b"", b"\x00\x01\x02", b"<html", b"<<<>>>", "<p>ü</p>".encode()[:-5]])
def test_broken_bodies_do_not_raise(body):
    page = parse(body)
    assert isinstance(page.text, str)


def test_a_body_without_content_type_that_looks_like_html_is_html():
    assert parse_document("http://x/", b"<html><title>T</title></html>", {}).title == "T"


def test_html_is_cleaned_before_parsing():
    page = parse(
        '<html><head><title>T</title><script>document.write("injected")</script></head><body>'
        '<p onclick="steal()">Visible</p><a href="javascript:steal()">click</a> <a href="/ok.html">ok</a>'
        "<!--[if IE]><p>conditional</p><![endif]--><style>p{}</style>"
        "<div><p>Unclosed <b>bold<p>next</div></body></html>"
    )
    assert [link.url for link in page.links] == ["http://plants.example/ok.html"]
    assert "injected" not in page.text and "conditional" not in page.text and "steal" not in page.text
    assert page.text.splitlines() == ["Visible", "click ok", "Unclosed bold", "next"]


def test_urls_in_plain_text_become_links_once_without_trailing_punctuation():
    text = (
        "Sundews (see http://a.example/sundews.html), ftp://files.example/list.txt; "
        "again http://a.example/sundews.html. Not a link: www.b.example or mailto:x@y.z\n"
        "Query https://c.example/search?q=drosera&lang=en!"
    )
    page = parse_document("http://x/a.txt", text.encode(), {"content-type": "text/plain"})
    assert [(link.url, link.kind) for link in page.links] == [
        ("http://a.example/sundews.html", "text"),
        ("ftp://files.example/list.txt", "text"),
        ("https://c.example/search?q=drosera&lang=en", "text"),
    ]
    assert parse_document("http://x/a.txt", text.encode(), {"content-type": "text/plain"}, extract_links_from_text=False).links == []


def test_urls_in_html_text_are_links_unless_already_linked():
    page = parse('<p>Read <a href="http://a.example/x">http://a.example/x</a> and http://b.example/y.</p>')
    assert [(link.url, link.kind) for link in page.links] == [("http://a.example/x", "a"), ("http://b.example/y", "text")]


@pytest.mark.parametrize(
    ("url", "body", "content_type", "mime_type"),
    [
        ("http://x/download", b"%PDF-1.4 ...", "application/octet-stream", "application/pdf"),
        ("http://x/paper", b"%!PS-Adobe-3.0", None, "application/postscript"),
        ("http://x/paper.tex", b"\\section{x}", "application/octet-stream", "text/x-tex"),
        ("http://x/page", b"  <p>hi</p>", None, "text/html"),
        ("http://x/data.bin", b"\x00\x01", "", "application/octet-stream"),
        ("http://x/a.pdf", b"<html>", "text/html", "text/html"),  # a type the server states is believed
    ],
)
def test_the_mime_type_comes_from_the_header_else_magic_bytes_else_the_extension(url, body, content_type, mime_type):
    headers = {"content-type": content_type} if content_type is not None else {}
    assert parse_document(url, body, headers).mime_type == mime_type


def test_a_page_without_server_header_or_text_still_has_strings_for_its_record():
    page = parse_document("http://x/a.zip", b"", {"content-type": "application/zip"})
    assert (page.server, page.charset, page.text) == ("", "", "")
