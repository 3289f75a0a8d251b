"""Main-content extraction (topicText = main) and doAnalyse, from the block finder to a crawl."""

from __future__ import annotations

import itertools

import pytest
from conftest import PROJECT, JobDir, free_port
from hypothesis import given
from hypothesis import strategies as st
from parsestress import opened_stage

from combine_scrapy.document.content import PARTS, _densest_span, main_content
from combine_scrapy.document.neardup import simhash
from combine_scrapy.document.parse import parse_document
from combine_scrapy.itempipelines.record import RecordPipeline
from combine_scrapy.items import Fetch
from combine_scrapy.job import JobConfigError, load_job
from combine_scrapy.operations.sampleweb import LoopbackWeb, Page
from combine_scrapy.topic import Classification, Document

NEWS_PAGE = """<!DOCTYPE html><html><head><title>Sourdough at home</title>
<style>.nav { color: red }</style><script>var tracking = "carnivorous";</script></head>
<body class="has-sidebar">
<header class="site-header"><a href="/">Home</a> <a href="/shop">Shop</a> <a href="/about">About us</a></header>
<nav><ul><li><a href="/plants">Carnivorous plants</a></li><li><a href="/sundews">Sundews</a></li>
<li><a href="/pitchers">Pitcher plants</a></li></ul></nav>
<div id="cookie-banner">We use cookies to remember your settings. Accept all cookies to carry on reading.</div>
<div class="content"><article>
<header><h1>Baking sourdough bread</h1><p class="byline">By Anna Berg, 3 May</p></header>
<p>Sourdough bread rises with a starter of wild yeast and lactic acid bacteria. Feed the starter with
flour and water every day for a week before you bake with it, and keep it in a warm place.</p>
<div class="ad-slot">Cheap flights to Rome! Book your hotel now and save up to 40 percent.</div>
<p>Mix the starter with flour, water and salt, fold the dough a few times over some hours, shape a
loaf and let it rise overnight in the fridge. Our <a href="/ovens">guide to ovens</a> tells how hot to bake it.</p>
<ul class="tags"><li><a href="/t/bread">bread</a></li><li><a href="/t/baking">baking</a></li></ul>
</article></div>
<aside><h3>Popular</h3><p>Ten tips for growing orchids on a cold windowsill, and why they need so little water.</p></aside>
<footer><p>Copyright 2024 Home Baking Ltd. <a href="/privacy">Privacy</a> <a href="/terms">Terms</a></p></footer>
</body></html>"""


def test_main_content_keeps_the_article_and_drops_the_rest():
    text = main_content(NEWS_PAGE)
    assert "Sourdough bread rises with a starter of wild yeast" in text
    assert "Our guide to ovens tells how hot to bake it." in text  # an inline link is part of the sentence
    # The headline and byline are the record's title and meta, not its body (as the extraction benchmarks count it).
    for noise in ("Carnivorous", "Sundews", "Home", "cookies", "Cheap flights", "orchids", "Copyright", "tracking", "color",
                  "Baking sourdough bread", "Anna Berg"):
        assert noise not in text, noise
    assert "bread\nbaking" not in text  # the tag list is all links


def test_table_layout_without_semantic_tags():
    page = """<html><body><table>
    <tr><td colspan=2><img src=logo.gif> <a href=/>Home</a> | <a href=/p>Plants</a> | <a href=/c>Contact</a></td></tr>
    <tr><td width=150><a href=/a>Drosera</a><br><a href=/b>Nepenthes</a><br><a href=/c>Sarracenia</a><br>
    <a href=/d>Dionaea</a><br><a href=/e>Pinguicula</a></td>
    <td><h2>Growing orchids on a windowsill</h2><p>Orchids like bright light but no direct sun at midday.
    Water them once a week with rain water and let the pot drain.<p>Most orchids bloom once a year;
    after flowering cut the spike above a node and a new one may grow.</td></tr>
    <tr><td colspan=2><a href=/1>Drosera</a> <a href=/2>Nepenthes</a> <a href=/3>Heliamphora</a> <a href=/4>Cephalotus</a></td></tr>
    </table></body></html>"""
    assert main_content(page).splitlines() == [
        "Growing orchids on a windowsill",
        "Orchids like bright light but no direct sun at midday. Water them once a week with rain water and let the pot drain.",
        "Most orchids bloom once a year; after flowering cut the spike above a node and a new one may grow.",
    ]


def test_chinese_article_beside_its_navigation():
    page = """<html><body><div class="menu"><a href=/>首页</a> <a href=/a>食虫植物</a> <a href=/b>猪笼草</a></div>
    <div><p>面包是用面粉、水和酵母做成的。把面团揉好以后放在温暖的地方发酵两个小时，然后放进烤箱烤三十分钟。</p></div>
    </body></html>"""
    assert main_content(page) == "面包是用面粉、水和酵母做成的。把面团揉好以后放在温暖的地方发酵两个小时，然后放进烤箱烤三十分钟。"


def test_permalinked_headings_and_xhtml_declarations_are_content():
    page = """<?xml version="1.0" encoding="iso-8859-1"?>
    <html xmlns="http://www.w3.org/1999/xhtml"><body>
    <div class="sidebar"><ol><li><a href="/1.html">Introduction</a></li><li><a href="/2.html">Växter</a></li></ol></div>
    <main><h1 id="care"><a class="header" href="#care">Care of sundews</a></h1>
    <p>Sundews want rain water, full sun and a wet peat bed all summer long.</p></main></body></html>"""
    assert main_content(page) == "Care of sundews\nSundews want rain water, full sun and a wet peat bed all summer long."


ARTICLE_WORDS = " ".join(f"word{n}" for n in range(40)) + "."


def test_a_layout_named_like_boilerplate_around_the_article_is_no_boilerplate():
    """A class names a layout as often as boilerplate: the wrapper of the whole page is no advertisement."""
    page = f"""<html><body><div class="page-ad-margins"><div class="two-col-sidebar-right">
    <div class="menu"><a href=/a>Plants</a> <a href=/b>Shop</a></div>
    <div class="ArticleBody-body"><p>{ARTICLE_WORDS}</p><p>{ARTICLE_WORDS}</p><p>{ARTICLE_WORDS}</p><p>{ARTICLE_WORDS}</p>
    <div class="elementor-widget-container"><p>Sundews want rain water and full sun.</p></div>
    <div class="related-links"><p>Ten tips for orchids on a cold windowsill.</p></div></div>
    <div class="sidebar"><p>Popular: growing orchids on a windowsill in winter.</p></div></div></div></body></html>"""
    lines = main_content(page).splitlines()
    assert lines == [ARTICLE_WORDS] * 4 + ["Sundews want rain water and full sun."]


def test_a_gallery_is_boilerplate_however_many_words_its_captions_have():
    captions = "".join(f"<li>{n}/60 A caption of a photograph of the day, words and words and words.</li>" for n in range(60))
    page = f"""<html><body><div itemprop="articleBody"><p>{ARTICLE_WORDS}</p><p>{ARTICLE_WORDS}</p>
    <div class="full-gallery"><ul>{captions}</ul></div><div id="jp-relatedposts"><p>Stack Overflow survey</p></div>
    <p>Sundews <em>catch</em> <b>insects</b> <span>on</span>\n<span>sticky</span> glands.</p></div></body></html>"""
    assert main_content(page).splitlines() == [ARTICLE_WORDS, ARTICLE_WORDS, "Sundews catch insects on sticky glands."]


def test_an_article_cut_into_parts_is_read_whole():
    """Several elements of one content class (an advertisement between them) are one article."""
    part = f'<div class="story-body-supplemental"><p>{ARTICLE_WORDS}</p><p>{ARTICLE_WORDS}</p></div>'
    page = f"""<html><body><div class="menu"><a href=/a>Plants</a></div>{part}
    <div class="ad"><p>Cheap flights to Rome, book now.</p></div>{part}{part}</body></html>"""
    assert main_content(page).splitlines() == [ARTICLE_WORDS] * 6


def test_the_article_body_schema_org_marks_wins_over_the_densest_text():
    """A container is read without its headline (the record's title), as the extraction benchmarks count the body."""
    long_comment = " ".join(f"comment{n}" for n in range(300))
    page = f"""<html><body><div itemprop="articleBody"><h1>Sundews</h1><p>{ARTICLE_WORDS * 4}</p></div>
    <div class="discussion"><p>{long_comment}</p></div></body></html>"""
    assert main_content(page) == ARTICLE_WORDS * 4


def test_nested_and_countless_content_elements_give_their_words_once():
    """A hostile page of nested or countless content-class elements: each word once, at most PARTS parts read."""
    nested = '<div class="article-body">' * 5000 + ARTICLE_WORDS * 3 + "</div>" * 5000
    assert main_content(f"<html><body>{nested}</body></html>") == ARTICLE_WORDS * 3
    part = f'<div class="article-body"><p>{ARTICLE_WORDS}</p><p>{ARTICLE_WORDS} {{n}}</p></div>'
    many = "".join(part.format(n=n) for n in range(PARTS * 4))
    lines = main_content(f"<html><body>{many}</body></html>").splitlines()
    assert lines == [line for n in range(PARTS) for line in (ARTICLE_WORDS, f"{ARTICLE_WORDS} {n}")]


@given(st.lists(st.integers(0, 1), max_size=40))
def test_densest_span_is_the_best_span(bits):
    """The one-pass search finds the span the objective rates highest (checked by brute force)."""
    def objective(i, j):
        return sum(bits[:i]) + bits[i:j].count(0) + sum(bits[j:])

    best = max(objective(i, j) for i in range(len(bits) + 1) for j in range(i, len(bits) + 1))
    assert objective(*_densest_span([(bit, 1) for bit in bits])) == best
    assert objective(*_densest_span([(bit, len(list(run))) for bit, run in itertools.groupby(bits)])) == best


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        ("<html><body>Just a few words of plain text</body></html>", "Just a few words of plain text"),
        ("Text without any markup at all", "Text without any markup at all"),
        ("<ul><li><a href=/a>One</a></li><li><a href=/b>Two</a></li><li><a href=/c>Three</a></li></ul>", ""),
        ("<nav><p>Only navigation, written as a long sentence of plain words here.</p></nav>", ""),
        ("", ""),
        ("\x00\x00", ""),
    ],
)
def test_small_and_degenerate_pages(html, expected):
    assert main_content(html) == expected


def test_document_reads_the_main_content_only_when_asked():
    page = parse_document("http://example.com/bread.html", NEWS_PAGE.encode(), {"content-type": "text/html; charset=utf-8"})
    whole = Document.from_page(page)
    main = Document.from_page(page, main_content=True)
    assert "Carnivorous plants" in whole.text
    assert "Carnivorous plants" not in main.text
    assert "wild yeast" in main.text
    assert (main.title, main.headings, main.meta) == (whole.title, whole.headings, whole.meta)
    text_page = parse_document("http://example.com/a.txt", b"Plain words, no markup.", {"content-type": "text/plain"})
    assert Document.from_page(text_page, main_content=True).text == "Plain words, no markup."


def test_a_page_is_parsed_once_for_its_text_and_its_main_content(monkeypatch):
    """The parser keeps the main content block on the page; the topic filter and the fingerprint read it there."""
    page = parse_document("http://example.com/bread.html", NEWS_PAGE.encode(), {"content-type": "text/html; charset=utf-8"})
    assert page.main_text == main_content(NEWS_PAGE)

    def no_second_parse(*args, **kwargs):
        raise AssertionError("the page was parsed again")

    monkeypatch.setattr("combine_scrapy.document.htmltree.parse_html", no_second_parse)
    monkeypatch.setattr("combine_scrapy.document.content.parse_html", no_second_parse)
    assert Document.from_page(page, main_content=True).text == page.main_text
    item = Fetch(url=page.url, host="example.com", fetched_at=0.0, page=page, classification=Classification(True, 1.0, 1.0))
    assert opened_stage(RecordPipeline)._record(item).fingerprint == simhash(page.main_text)


def _job(tmp_path, config: str):
    directory = tmp_path / "j"
    directory.mkdir(exist_ok=True)
    (directory / "combine.cfg").write_text(config)
    (directory / "topicdefinition.txt").write_text("50: carnivorous plants=CP\n")
    (directory / "seeds.txt").write_text("http://127.0.0.2:8931/\n")
    return directory


def test_topic_text_is_read_from_the_job(tmp_path):
    assert load_job("j", _job(tmp_path, "WaitIntervalHost = 1\n").parent).topic.text == "all"
    assert load_job("j", _job(tmp_path, "topicText = main\n").parent).topic.text == "main"


def test_bad_topic_text_names_file_and_line(tmp_path):
    directory = _job(tmp_path, "WaitIntervalHost = 1\ntopicText = article\n")
    with pytest.raises(JobConfigError) as error:
        load_job("j", directory.parent)
    assert str(error.value) == f"{directory / 'combine.cfg'}:2: topicText: expected all or main, got 'article'"


# A web under real-looking names, reached through the loopback server acting as the crawl's HTTP proxy.
SITE = "http://www.example.se"
DEMO_TOPIC = (PROJECT / "topics" / "demo" / "topicdefinition.txt").read_text()
PLANT_NAV = ('<nav><a href="/plants.html">Carnivorous plants</a> | <a href="/sundews.html">Sundews</a> | '
             '<a href="/drosera.html">Drosera</a> | <a href="/nepenthes.html">Nepenthes</a></nav>')
WEB = {
    "/": Page(
        "<html><head><title>Carnivorous plants of Sweden</title></head><body>"
        f"{PLANT_NAV}<h1>Carnivorous plants</h1><p>Carnivorous plants trap and digest insects. Sundews grow in "
        "Swedish bogs, where the soil is too poor in nitrogen for most other plants, and butterworts on wet rocks.</p>"
        f'<p>Our members also bake: read <a href="{SITE}/bread.html">the bread page</a>.</p></body></html>'
    ),
    "/bread.html": Page(
        "<html><head><title>Surdegsbröd</title></head><body>"
        f"{PLANT_NAV}<article><p>Surdegsbröd jäser med en surdeg av vilda jästsvampar och mjölksyrabakterier. "
        "Mata surdegen med mjöl och vatten varje dag i en vecka innan du bakar med den, och låt den stå varmt.</p>"
        "<p>Blanda surdegen med mjöl, vatten och salt, vik degen några gånger under eftermiddagen, forma en limpa "
        "och låt den jäsa över natten i kylskåpet. Grädda brödet i en het ugn i ungefär fyrtio minuter.</p>"
        "</article></body></html>"
    ),
}


@pytest.fixture
def proxied_web(monkeypatch):
    port = free_port()
    with LoopbackWeb({"127.0.0.2": WEB}, port=port) as web:
        monkeypatch.setenv("http_proxy", f"http://127.0.0.2:{port}")
        monkeypatch.delenv("no_proxy", raising=False)
        monkeypatch.delenv("NO_PROXY", raising=False)
        yield web


def _stored(job_dir: JobDir) -> dict[str, tuple]:
    with job_dir.records() as db:
        return {url: (title, language, country) for url, title, language, country in db.execute(
            "SELECT u.url, r.title, r.language, r.country FROM records r JOIN record_urls u ON u.key = r.key"
        )}


@pytest.mark.crawl
def test_crawl_scores_main_content_and_stores_language_and_country(tmp_path, proxied_web):
    """Topic words only in the navigation make a page relevant with topicText = all, not with main."""
    config = "WaitIntervalHost = 0.1\nclassifyPlugIn = plain\ndoAnalyse = 1\n"
    everything = JobDir(topics=tmp_path / "topics", data=tmp_path / "data", name="all")
    everything.write(config, DEMO_TOPIC, [f"{SITE}/"]).crawl()
    main_only = JobDir(topics=tmp_path / "topics", data=tmp_path / "data", name="main")
    main_only.write(config + "topicText = main\n", DEMO_TOPIC, [f"{SITE}/"]).crawl()

    assert _stored(everything) == {
        f"{SITE}/": ("Carnivorous plants of Sweden", "en", "SE"),
        f"{SITE}/bread.html": ("Surdegsbröd", "sv", "SE"),
    }
    assert _stored(main_only) == {f"{SITE}/": ("Carnivorous plants of Sweden", "en", "SE")}
    assert [hit.path for hit in proxied_web.hits].count(f"{SITE}/bread.html") == 2  # fetched by both, kept by one


def test_each_cjk_character_counts_as_a_word():
    """A paragraph of Japanese has no spaces; counted as one word it would lose to the navigation."""
    navigation = "".join(f'<li><a href="/p{n}">Page number {n}</a></li>' for n in range(12))
    article = "食虫植物は虫を捕まえて栄養にする植物で、湿地や沼に多く生えている。" * 3
    page = f"<html><body><ul>{navigation}</ul><div><p>{article}</p></div><p>Contact us</p></body></html>"
    assert main_content(page) == article
