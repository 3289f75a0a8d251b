"""The parse stage under crawl conditions: no native crash in worker threads, no page silently lost."""

from __future__ import annotations

import copy
import logging
import subprocess
import sys
import threading
import time

import lxml.etree
import pytest
from conftest import PROJECT
from parsestress import opened_stage
from twisted.internet import defer

from combine_scrapy.document import htmltree
from combine_scrapy.document.parse import parse_document
from combine_scrapy.frontier import Outcome
from combine_scrapy.itempipelines.parse import ParsePipeline
from combine_scrapy.items import Fetch

HTML = "text/html; charset=utf-8"


def parse(body: str | bytes, content_type: str = HTML):
    data = body.encode("utf-8") if isinstance(body, str) else body
    return parse_document("http://x.example/dir/page", data, {"content-type": content_type})


def test_the_issue_example_parses_in_full():
    html = b"<html><head><title>t</title></head><body><p>carnivorous plants</p><a href='/l'>l</a> <!-- c --> \x0c </body></html>"
    page = parse(html)
    assert page.title == "t" and "carnivorous" in page.text and page.links and not page.failure


@pytest.mark.parametrize("markup", ["<!-- c -->", "<![CDATA[ c ]]>", "<?pi c?>", "<!--[if IE]>c<![endif]-->"])
@pytest.mark.parametrize(
    ("control", "shown"),  # what a browser shows for it: nothing, or U+FFFD for NUL and surrogate references
    [("\x0c", ""), ("\x01", ""), ("\x1b", ""), ("\x00", ""), ("&#1;", ""), ("&#x1f;", ""), ("&#0;", "\ufffd"), ("&#xD800;", "\ufffd")],
)
def test_comments_with_control_characters_lose_nothing(markup, control, shown):
    page = parse(
        f"<html><head><title>Sundews{control}</title></head><body><h1>Drosera{control}</h1>{markup}"
        f"<p>carnivorous {control} plants</p>{markup}<a href='/next{control}' title='t{control}'>next {control}</a>{control}</body></html>"
    )
    assert not page.failure
    assert page.title == f"Sundews{shown}" and page.headings == [f"Drosera{shown}"]
    assert "carnivorous" in page.text and "plants" in page.text and "next" in page.text
    assert [link.url for link in page.links] == [f"http://x.example/next{shown}"]
    texts = [page.title, page.text, page.main_text, *page.headings, *(link.anchor + link.title for link in page.links)]
    assert not any(htmltree.sanitize(text) != text for text in texts)  # no control character comes out


@pytest.mark.parametrize(("opening", "count"), [("<font>", 300), ("<div>", 5000), ("<span><b>", 2000), ("<div><a href='/deep'>deep</a>", 3000)])
def test_deeply_nested_pages_keep_their_text_and_links(opening, count):
    page = parse(
        f"<html><head><title>Deep</title></head><body>{opening * count}"
        "<p>carnivorous plants after the limit</p><a href='/after'>after</a></body></html>"
    )
    assert not page.failure and page.title == "Deep"
    assert "carnivorous plants after the limit" in page.text
    assert "carnivorous plants after the limit" in page.main_text
    assert "http://x.example/after" in {link.url for link in page.links}


def test_the_flat_fallback_keeps_head_and_body_apart():
    root, fallback = htmltree.parse_html(
        "<html><head><title>T</title><meta name=keywords content=k></head><body>" + "<div>" * 3000 + "text &amp; more</body>"
    )
    assert fallback
    assert [child.tag for child in root] == ["head", "body"]
    assert [child.tag for child in root[0]] == ["title", "meta"]
    depth = deepest = 0
    for event, _ in lxml.etree.iterwalk(root, events=("start", "end")):
        depth += 1 if event == "start" else -1
        deepest = max(deepest, depth)
    assert deepest == htmltree.MAX_DEPTH + 1  # html, body, then MAX_DEPTH - 1 divs nested in body
    assert "text & more" in "".join(root[1].itertext())


def test_parsing_deep_copies_no_tree(monkeypatch):
    """lxml_html_clean's clean_html deep-copied every tree in the worker threads; that was where crawls died."""

    def no_deepcopy(*args, **kwargs):
        raise AssertionError("a tree was deep-copied")

    monkeypatch.setattr(copy, "deepcopy", no_deepcopy)
    page = parse("<html><head><title>T</title><script>x()</script></head><body><p>text</p><a href='/a'>a</a></body></html>")
    assert page.title == "T" and page.text == "text\na" and page.links


def test_each_thread_has_its_own_parser():
    parsers = []
    threads = [threading.Thread(target=lambda: parsers.append(htmltree._parser())) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({id(parser) for parser in parsers + [htmltree._parser()]}) == 4


def test_scripts_styles_and_script_links_are_not_content():
    page = parse(
        "<html><head><title>T<script>no</script></title><style>h1{}</style></head><body>"
        "<h1>Head<script>document.write('no')</script></h1>"
        "<a href='/a'>A<style>a{}</style></a> <a href=' java\tscript:x()'>js</a> <a href='JAVASCRIPT:y'>js</a>"
        "<a href='&#1;javascript:z'>js</a> <a href='vbscript:x'>vb</a> <img src='data:image/png;base64,AAAA' alt='inline'>"
        "</body></html>"
    )
    assert page.headings == ["Head"]
    assert [(link.url, link.anchor) for link in page.links] == [("http://x.example/a", "A")]
    assert "no" not in page.text.split() and "a{}" not in page.text


def test_a_meta_refresh_is_a_redirect_link():
    page = parse('<html><head><meta http-equiv="refresh" content="0; URL=\'/moved\'"><meta http-equiv=refresh content=5></head></html>')
    assert [(link.url, link.kind) for link in page.links] == [("http://x.example/moved", "redirect")]


@pytest.mark.parametrize(
    ("body", "content_type", "reason"),
    [
        (b"", HTML, "empty"),
        (b"  \n\t ", HTML, "empty"),
        (b"<!-- only a comment -->", HTML, "empty"),
        (b"<html><body></body></html>", HTML, "empty"),
        (bytes(range(256)) * 8, HTML, "binary"),
        (b"\x1f\x8b\x08\x00" + bytes(range(1, 30)) * 40, "text/plain", "binary"),
        (b"   ", "text/plain", "empty"),
        (b"GIF89a garbage", "image/gif", "image"),
    ],
)
def test_unreadable_documents_say_why_and_are_logged(body, content_type, reason, caplog):
    with caplog.at_level(logging.WARNING, logger="combine_scrapy.document.parse"):
        page = parse(body, content_type)
    assert page.failure == reason
    assert f"cannot parse http://x.example/dir/page ({content_type.split(';')[0]}): {reason}" in caplog.text


def run_pipeline(pipeline: ParsePipeline, item: Fetch) -> Fetch:
    """ParsePipeline.process_item on a reactor-less thread: deferToThread replaced by a direct call."""
    result = []
    defer.Deferred.fromCoroutine(pipeline.process_item(item)).addBoth(result.append)
    assert result, "the pipeline waited for something"
    if isinstance(result[0], Exception):
        raise result[0]
    return result[0]


@pytest.fixture
def pipeline(monkeypatch):
    monkeypatch.setattr("combine_scrapy.itempipelines.parse.deferToThread", lambda f, *a, **k: defer.maybeDeferred(f, *a, **k))
    return opened_stage(ParsePipeline)


def fetch(body: bytes, content_type: str = HTML) -> Fetch:
    item = Fetch(url="http://x.example/", host="x.example", fetched_at=time.time(), status=200,
                 headers={"content-type": content_type}, body=body)
    item.outcome = Outcome.SUCCESS
    return item


def test_the_pipeline_counts_each_failure_by_reason(pipeline):
    for body in (b"", b"<html></html>", bytes(range(256)) * 8, b"<title>fine</title>"):
        run_pipeline(pipeline, fetch(body))
    failed = {key: n for key, n in pipeline.stats.counts.items() if key.startswith("parse/failed/")}
    assert failed == {"parse/failed/empty": 2, "parse/failed/binary": 1}


def test_a_parser_exception_costs_one_page_and_is_logged_and_counted(pipeline, monkeypatch, caplog):
    def broken(*args, **kwargs):
        raise RuntimeError("bug")

    monkeypatch.setattr("combine_scrapy.itempipelines.parse.parse_document", broken)
    with caplog.at_level(logging.ERROR, logger="combine_scrapy.itempipelines.parse"):
        item = run_pipeline(pipeline, fetch(b"<title>T</title>"))
    assert item.page.failure == "error" and item.page.mime_type == "text/html" and item.record_key
    assert pipeline.stats.counts["parse/failed/error"] == 1
    assert "parsing http://x.example/ failed" in caplog.text and "RuntimeError: bug" in caplog.text


@pytest.mark.crawl
def test_thousands_of_varied_pages_through_ten_worker_threads():
    """In a subprocess: a native crash (SIGABRT) fails this test instead of killing pytest."""
    result = subprocess.run(
        [sys.executable, "-X", "faulthandler", str(PROJECT / "tests" / "parsestress.py"), "--pages", "2000", "--threads", "10"],
        capture_output=True, text=True, timeout=600, cwd=PROJECT,
    )
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert result.stdout.startswith("2000 pages, 10 threads")
