"""Scrapy feed exports of a crawl (-O out.xml:oai_dc, FEEDS) write the records `scrapy export` writes;
irrelevant pages kept (saveIrrelevant = 1) stay out of every export and train `scrapy train --crawled`."""

from __future__ import annotations

import json
import sqlite3

import pytest
from conftest import PROJECT, JobDir, free_port
from lxml import etree

from combine_scrapy.operations.sampleweb import DEMO_HOSTS, LoopbackWeb, demo_sites
from combine_scrapy.records.export.dc import DC_NAMESPACE, OAI_DC_NAMESPACE
from combine_scrapy.records.export.feeds import RecordKeys
from combine_scrapy.records.export.schemas import oai_dc_schema
from combine_scrapy.records.irrelevant import IRRELEVANT_FILE, IrrelevantPage, IrrelevantPages
from combine_scrapy.topic.text import Document

CONFIG = "WaitIntervalHost = 0.2\nclassifyPlugIn = plain\nAllowPrivateAddresses = 1\n"
TOPIC = (PROJECT / "topics" / "demo" / "topicdefinition.txt").read_text()


def canonical(element: etree._Element) -> bytes:
    return etree.tostring(element, method="c14n")


@pytest.fixture(scope="module")
def crawled_with_feeds(tmp_path_factory):
    """One crawl of the demo web, keeping irrelevant pages, writing a Dublin Core feed (-O) and JSON Lines and ALVIS (FEEDS)."""
    base = tmp_path_factory.mktemp("feeds")
    job_dir = JobDir(topics=base / "topics", data=base / "data")
    port = free_port()
    feeds = {
        str(base / "out.jsonl"): {"format": "jsonl"},
        str(base / "out-alvis.xml"): {"format": "alvis"},
        str(base / "out-main.jsonl"): {"format": "jsonl", "item_export_kwargs": {"text": "main"}},
        str(base / "out.md"): {"format": "markdown"},
    }
    with LoopbackWeb(demo_sites(port), port=port):
        job_dir.write(CONFIG + "saveIrrelevant = 1\n", TOPIC, [f"http://{DEMO_HOSTS[0]}:{port}/"])
        job_dir.crawl("-O", f"{base / 'out.xml'}:oai_dc", "-s", f"FEEDS={json.dumps(feeds)}")
    return job_dir, base


@pytest.mark.crawl
def test_oai_dc_feed_validates_and_equals_scrapy_export(crawled_with_feeds):
    job_dir, base = crawled_with_feeds
    feed = etree.parse(str(base / "out.xml")).getroot()
    elements = list(feed.iter(f"{{{OAI_DC_NAMESPACE}}}dc"))
    assert len(elements) >= 5
    assert all(oai_dc_schema().validate(element) for element in elements)
    sundews = next(e for e in elements if e.findtext(f"{{{DC_NAMESPACE}}}title") == "Drosera - the sundews")
    assert len(sundews.findall(f"{{{DC_NAMESPACE}}}identifier")) == 2  # the mirror URL joined later is on it

    exported = base / "export.xml"
    assert job_dir.scrapy("export", "t", "-f", "dc", "-o", str(exported)).returncode == 0
    export = etree.parse(str(exported)).getroot()
    assert sorted(map(canonical, feed)) == sorted(map(canonical, export))
    assert [r.get("id") for r in feed] == [r.get("id") for r in export]  # and in the same order


@pytest.mark.crawl
def test_feeds_setting_writes_jsonl_and_alvis_records(crawled_with_feeds):
    job_dir, base = crawled_with_feeds
    documents = [json.loads(line) for line in (base / "out.jsonl").read_text().splitlines()]
    exported = job_dir.scrapy("export", "t", "-f", "jsonl")
    assert documents == [json.loads(line) for line in exported.stdout.splitlines()]
    assert all("body" not in d and "urls" in d for d in documents)  # records, not raw fetches
    alvis = etree.parse(str(base / "out-alvis.xml")).getroot()
    assert len(alvis) == len(documents)


@pytest.mark.crawl
def test_feeds_write_the_main_content_and_markdown_as_scrapy_export_does(crawled_with_feeds):
    job_dir, base = crawled_with_feeds
    main = [json.loads(line) for line in (base / "out-main.jsonl").read_text().splitlines()]
    exported = job_dir.scrapy("export", "t", "-f", "jsonl", "--text", "main")
    assert exported.returncode == 0, exported.stderr
    assert main == [json.loads(line) for line in exported.stdout.splitlines()]
    full = {d["key"]: d for d in map(json.loads, (base / "out.jsonl").read_text().splitlines())}
    assert all(d["main_text"] and d["text"] == d["main_text"] == full[d["key"]]["main_text"] for d in main)
    assert any(len(d["text"]) < len(full[d["key"]]["text"]) for d in main)  # menus and footers left out

    markdown = job_dir.scrapy("export", "t", "-f", "markdown")
    assert markdown.returncode == 0, markdown.stderr
    assert (base / "out.md").read_text() == markdown.stdout
    assert markdown.stdout.count("\n---\n") == len(main) - 1
    assert "# Drosera - the sundews\n" in markdown.stdout


@pytest.mark.crawl
def test_feed_of_a_crawl_that_stores_nothing_is_an_empty_collection(tmp_path):
    job_dir = JobDir(topics=tmp_path / "topics", data=tmp_path / "data")
    port = free_port()
    with LoopbackWeb(demo_sites(port), port=port):
        job_dir.write(CONFIG, "100: nothing on this web=X\n", [f"http://{DEMO_HOSTS[1]}:{port}/"])
        job_dir.crawl("-O", f"{tmp_path / 'out.xml'}:oai_dc")
    root = etree.parse(str(tmp_path / "out.xml")).getroot()
    assert root.tag == "documentCollection" and len(root) == 0


@pytest.mark.crawl
def test_unknown_feed_format_names_the_known_ones(tmp_path):
    job_dir = JobDir(topics=tmp_path / "topics", data=tmp_path / "data")
    job_dir.write(CONFIG, TOPIC, ["http://127.0.0.2:1/"])
    result = job_dir.run_crawl("-O", f"{tmp_path / 'out.xml'}:oai-dc")
    assert result.returncode != 0
    assert "oai_dc" in result.stderr and "alvis-light" in result.stderr


def test_record_keys_keep_first_sight_order_once():
    keys = RecordKeys()
    for key in ["B", "A", "B", "C", "A"] + [f"K{i}" for i in range(1200)]:
        keys.add(key)
    seen = list(keys)
    keys.close()
    assert seen[:3] == ["B", "A", "C"] and len(seen) == 1203


# --- irrelevant pages (saveIrrelevant = 1) --------------------------------------------------------


@pytest.mark.crawl
def test_irrelevant_pages_are_kept_apart_and_never_exported(crawled_with_feeds):
    job_dir, base = crawled_with_feeds
    with sqlite3.connect(job_dir.data / "t" / IRRELEVANT_FILE) as db:
        kept = dict(db.execute("SELECT url, title FROM pages"))
    assert "Baseball pitchers" in kept.values()
    with job_dir.records() as db:
        assert not set(kept) & {row[0] for row in db.execute("SELECT url FROM record_urls")}
    for path in ("out.xml", "out.jsonl", "out-alvis.xml"):
        assert "Baseball pitchers" not in (base / path).read_text()
    assert "Baseball pitchers" not in job_dir.scrapy("export", "t", "-f", "jsonl").stdout


@pytest.mark.crawl
def test_train_learns_from_the_crawls_records_and_irrelevant_pages(crawled_with_feeds):
    job_dir, _ = crawled_with_feeds
    result = job_dir.scrapy("train", "t", "--crawled")
    assert result.returncode == 0, result.stderr
    with job_dir.records() as db:
        records = db.execute("SELECT COUNT(*) FROM records").fetchone()[0]
    assert f"from the crawl of t: {records} records, 1 irrelevant pages" in result.stdout
    assert f"trained on {records} positive and 1 negative examples" in result.stdout
    assert (job_dir.topics / "t" / "svm-model.joblib").exists()


@pytest.mark.crawl
def test_train_crawled_without_kept_pages_says_how_to_get_them(tmp_path):
    job_dir = JobDir(topics=tmp_path / "topics", data=tmp_path / "data")
    job_dir.write(CONFIG, TOPIC, ["http://127.0.0.2:1/"])
    result = job_dir.scrapy("train", "t", "--crawled")
    assert result.returncode == 2
    assert "kept no irrelevant pages" in result.stderr and "saveIrrelevant = 1" in result.stderr


def test_irrelevant_pages_are_bounded_updated_and_forgotten(tmp_path):
    pages = IrrelevantPages(tmp_path / IRRELEVANT_FILE, max_pages=2)
    page = lambda url, text: IrrelevantPage(Document(url, "T", "m", "h", text), -5.0, 1.0)  # noqa: E731
    assert pages.keep(page("http://a/1", "one")) and pages.keep(page("http://a/2", "two \ud800"))
    assert not pages.keep(page("http://a/3", "three"))  # full
    assert pages.keep(page("http://a/1", "one again"))  # a known URL is updated
    assert [(p.document.url, p.document.text) for p in pages] == [("http://a/1", "one again"), ("http://a/2", "two \ud800")]
    assert pages.forget("http://a/1") and not pages.forget("http://a/1")
    assert pages.keep(page("http://a/3", "three")) and len(pages) == 2
    pages.close()
    assert len(IrrelevantPages(tmp_path / IRRELEVANT_FILE)) == 2
