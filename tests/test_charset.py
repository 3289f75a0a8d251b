"""Character sets: every page comes out as the same Unicode text, declared or not.

Order: a BOM wins, then bytes that are UTF-8, then the Content-Type
charset, then the page's ``<meta>``, then detection; a declaration the
bytes contradict is passed over. Web labels mean what browsers make of them (ISO-8859-1 reads as
Windows-1252, GB2312 as GB18030, Shift_JIS as cp932).
"""

from __future__ import annotations

import re

import pytest
from conftest import JobDir, free_port

from combine_scrapy.document.parse import decode_body, parse_document
from combine_scrapy.operations.sampleweb import LoopbackWeb, Page
from combine_scrapy.records.store.sql.tables import stored_text

SAMPLES = {
    "iso-8859-1": ("Skärgården är vacker och havet är blått. Fåglar flyger över öarna.", "cp1252"),
    "windows-1252": ("Le café coûte 3 € – “très cher”, dit-il. Œuvre complète.", "cp1252"),
    "gb2312": ("食肉植物是一种能够捕获并消化动物的植物。它们通常生长在贫瘠的土壤中。", "gb18030"),
    "big5": ("食蟲植物是一種能夠捕獲並消化動物的植物。它們通常生長在貧瘠的土壤中。", "big5hkscs"),
    "shift_jis": ("食虫植物は、昆虫などの小動物を捕らえて消化する植物です。湿地に多く生えています。", "cp932"),
    "utf-8": ("Skärgården – 食虫植物 – Œuvre complète – 食蟲植物", "utf-8"),
}


def page_bytes(encoding: str, meta: bool = False) -> bytes:
    text = SAMPLES[encoding][0]
    declaration = f'<meta http-equiv="Content-Type" content="text/html; charset={encoding}">' if meta else ""
    return f"<html><head>{declaration}<title>T</title></head><body><p>{text}</p></body></html>".encode(encoding)


@pytest.mark.parametrize("encoding", SAMPLES)
@pytest.mark.parametrize("declared", ["header", "meta", "nowhere"])
def test_each_encoding_declared_or_not_gives_the_same_text(encoding, declared):
    content_type = f"text/html; charset={encoding}" if declared == "header" else "text/html"
    page = parse_document("http://x/", page_bytes(encoding, meta=declared == "meta"), {"content-type": content_type})
    text, charset = SAMPLES[encoding]
    assert page.text == text
    assert page.charset == charset


@pytest.mark.parametrize(("bom", "codec"), [(b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be")])
def test_a_bom_wins_over_every_declaration(bom, codec):
    body = bom + "<html><head><meta charset='koi8-r'><title>Œuvre</title></head></html>".encode(codec)
    page = parse_document("http://x/", body, {"content-type": "text/html; charset=iso-8859-1"})
    assert page.title == "Œuvre"


def test_the_header_wins_over_meta():
    body = '<html><head><meta charset="utf-8"><title>Skärgård</title></head></html>'.encode("iso-8859-1")
    assert parse_document("http://x/", body, {"content-type": "text/html; charset=iso-8859-1"}).title == "Skärgård"


@pytest.mark.parametrize("encoding", ["big5", "shift_jis", "gb2312"])
def test_a_declaration_the_bytes_contradict_is_passed_over(encoding):
    page = parse_document("http://x/", page_bytes(encoding), {"content-type": "text/html; charset=utf-8"})
    assert (page.text, page.charset) == SAMPLES[encoding]


def test_utf8_bytes_win_over_a_wrong_declaration_and_survive_a_stray_byte():
    body = page_bytes("utf-8")
    page = parse_document("http://x/", body, {"content-type": "text/html; charset=iso-8859-1"})
    assert page.text == SAMPLES["utf-8"][0] and page.charset == "utf-8"
    sentence = "Skärgården är vacker och havet är blått. "
    stray = (sentence * 3).encode() + b"\xff"
    page = parse_document("http://x/", stray, {"content-type": "text/plain; charset=utf-8"})
    assert page.text == (sentence * 3).strip() + " \ufffd" and page.charset == "utf-8"


def test_an_unknown_charset_label_falls_back_to_detection():
    page = parse_document("http://x/", page_bytes("gb2312"), {"content-type": "text/html; charset=x-no-such-thing"})
    assert page.text == SAMPLES["gb2312"][0]


def test_plain_text_in_legacy_encodings():
    for encoding in ("shift_jis", "big5", "windows-1252"):
        text, charset = SAMPLES[encoding]
        assert decode_body(text.encode(encoding), "text/plain") == (text, charset)


def test_an_xhtml_page_with_an_xml_encoding_declaration():
    body = (
        '<?xml version="1.0" encoding="iso-8859-1"?>\n<!DOCTYPE html>'
        '<html xmlns="http://www.w3.org/1999/xhtml"><head><title>Skärgård</title></head><body><p>Öar</p></body></html>'
    ).encode("iso-8859-1")
    page = parse_document("http://x/", body, {"content-type": "application/xhtml+xml"})
    assert (page.title, page.text) == ("Skärgård", "Öar")


@pytest.mark.crawl
def test_pages_in_six_encodings_are_stored_as_utf8_text(tmp_path):
    job_dir = JobDir(topics=tmp_path / "topics", data=tmp_path / "data")
    host, port = "127.0.0.2", free_port()
    site = {"/robots.txt": Page("", status=404)}
    links = []
    for encoding in SAMPLES:
        for declared in (True, False):
            path = f"/{encoding}-{'declared' if declared else 'undeclared'}.html"
            content_type = f"text/html; charset={encoding}" if declared else "text/html"
            site[path] = Page(page_bytes(encoding), headers={"Content-Type": content_type})
            links.append(f'<a href="{path}">{path}</a>')
    site["/"] = Page(f"<html><title>Start</title><body>{''.join(links)}</body></html>")
    with LoopbackWeb({host: site}, port=port) as web:
        job_dir.write("WaitIntervalHost = 0.05\n", "100: plants=CP\n", [web.url(host)], **{"sitesOK.txt": f"{host}\n"})
        job_dir.crawl()
    with job_dir.records() as db:
        rows = db.execute("SELECT u.url, r.text FROM record_urls u JOIN records r ON r.key = u.key").fetchall()
    stored = {re.sub(r"^.*/", "", url): (stored_text(text),) for url, text in rows}
    for encoding, (text, _) in SAMPLES.items():
        for state in ("declared", "undeclared"):
            assert stored[f"{encoding}-{state}.html"][0] == text, (encoding, state)
