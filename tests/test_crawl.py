"""End-to-end focused crawls of loopback webs on the embedded backends, run as `scrapy crawl`."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from conftest import PROJECT, JobDir, free_port

from combine_scrapy.operations.sampleweb import DEMO_HOSTS, LoopbackWeb, Page, demo_sites

pytestmark = pytest.mark.crawl

PLANTS, BASEBALL, GARDEN = DEMO_HOSTS
WAIT = 0.5
DEMO_TOPIC = (PROJECT / "topics" / "demo" / "topicdefinition.txt").read_text()
# Combine's crawl: breadth-first by time, links of relevant pages only.
CONFIG = f"""
WaitIntervalHost = {WAIT}
AllowPrivateAddresses = 1
classifyPlugIn = plain
CrawlStrategy = BreadthFirstTime
LinkStrategy = propagate
<sessionids>
jsessionid
</sessionids>
"""


@pytest.fixture
def demo_web():
    port = free_port()
    with LoopbackWeb(demo_sites(port), port=port) as web:
        yield web


@pytest.fixture(scope="module")
def crawled(tmp_path_factory):
    """One crawl of the demo web, shared by the tests that only look at its results."""
    base = tmp_path_factory.mktemp("crawled")
    job_dir = JobDir(topics=base / "topics", data=base / "data")
    port = free_port()
    with LoopbackWeb(demo_sites(port), port=port) as web:
        job_dir.write(CONFIG, DEMO_TOPIC, [web.url(PLANTS)])
        result = job_dir.crawl()
        yield job_dir, web, result


def page_paths(web: LoopbackWeb, host: str) -> list[str]:
    return [hit.path for hit in web.hits_for(host) if hit.path != "/robots.txt"]



def test_only_relevant_pages_are_stored(crawled):
    job_dir, web, _ = crawled
    with job_dir.records() as db:
        titles = {row[0] for row in db.execute("SELECT title FROM records")}
    assert "Carnivorous plants of the world" in titles
    assert "Garden club: growing carnivorous plants" in titles
    assert "Baseball pitchers" not in titles  # "pitcher" cancelled by "pitcher @and baseball"


def test_links_of_irrelevant_pages_are_not_followed(crawled):
    _, web, _ = crawled
    assert page_paths(web, BASEBALL) == ["/"]  # fetched, judged irrelevant, its links left alone
    assert "/hidden.html" not in page_paths(web, GARDEN)


def test_robots_txt_is_obeyed(crawled):
    job_dir, web, _ = crawled
    assert not any(path.startswith("/private/") for path in page_paths(web, PLANTS))
    assert [hit.path for hit in web.hits_for(PLANTS)].count("/robots.txt") == 1
    with job_dir.frontier() as db:
        status = db.execute("SELECT status FROM url_states WHERE url LIKE '%/private/members.html'").fetchone()
    assert status == (None,)  # refused before any fetch, and recorded as done


def test_duplicate_content_is_one_record_with_both_urls(crawled):
    job_dir, _, _ = crawled
    with job_dir.records() as db:
        keys = db.execute("SELECT key FROM records WHERE title = 'Drosera - the sundews'").fetchall()
        assert len(keys) == 1
        urls = {row[0] for row in db.execute("SELECT url FROM record_urls WHERE key = ?", keys[0])}
    assert {u.split(":", 2)[2].split("/", 1)[1] for u in urls} == {"drosera.html", "mirror/sundews.html"}


def test_each_page_is_fetched_once_under_its_canonical_url(crawled):
    _, web, _ = crawled
    paths = page_paths(web, PLANTS)
    assert Counter(paths).most_common(1)[0][1] == 1, paths
    assert "/sarracenia.html" in paths  # the ;jsessionid= link, stripped
    assert "/nepenthes.html" in paths  # the #care link, fragment dropped


def test_host_interval_is_respected(crawled):
    _, web, _ = crawled
    for host in DEMO_HOSTS:
        times = [hit.time for hit in web.hits_for(host)]
        gaps = [b - a for a, b in zip(times, times[1:])]
        assert all(gap >= WAIT * 0.95 for gap in gaps), (host, gaps)


def test_summary_names_counts_and_where_records_are(crawled):
    job_dir, _, result = crawled
    assert "harvest rate" in result.stdout
    assert str(job_dir.data / "t" / "records.sqlite") in result.stdout
    assert "scrapy export t" in result.stdout


def test_export_writes_every_record_with_its_urls(crawled, tmp_path):
    job_dir, _, _ = crawled
    out = tmp_path / "t.jsonl"
    result = job_dir.scrapy("export", "t", "-o", str(out))
    assert result.returncode == 0, result.stderr
    documents = [json.loads(line) for line in out.read_text().splitlines()]
    with job_dir.records() as db:
        assert len(documents) == db.execute("SELECT COUNT(*) FROM records").fetchone()[0]
    sundews = next(d for d in documents if d["title"] == "Drosera - the sundews")
    assert len(sundews["urls"]) == 2


def test_second_run_resumes_where_the_first_stopped(job_dir, demo_web):
    job_dir.write(CONFIG, DEMO_TOPIC, [demo_web.url(PLANTS)])
    job_dir.crawl("-a", "max_pages=3")
    first = len(page_paths(demo_web, PLANTS))
    assert 1 <= first < 7
    job_dir.crawl()
    paths = page_paths(demo_web, PLANTS)
    assert len(paths) > first
    assert Counter(paths).most_common(1)[0][1] == 1, paths  # nothing fetched twice across the runs
    assert [hit.path for hit in demo_web.hits_for(PLANTS)].count("/robots.txt") == 1  # cached across runs


def test_broken_job_configuration_gives_one_clear_error(job_dir):
    job_dir.write("WaitIntervalHost = 1\nWaitIntervalHots = 5\n", DEMO_TOPIC, ["http://127.0.0.2:1/"])
    result = job_dir.run_crawl()
    assert result.returncode == 2
    assert f"{job_dir.topics / 't' / 'combine.cfg'}:2: unknown variable 'WaitIntervalHots' (did you mean WaitIntervalHost?)" in result.stderr
    assert "Traceback" not in result.stderr


def test_unavailable_page_stays_marked_and_server_errors_do_not_stop_the_crawl(job_dir):
    port = free_port()
    site = {
        "/": Page('<html><head><title>carnivorous plants</title></head><body>carnivorous plants '
                  f'<a href="http://127.0.0.2:{port}/broken.html">b</a> '
                  f'<a href="http://127.0.0.2:{port}/ok.html">ok</a></body></html>'),
        "/broken.html": Page("boom", status=500),
        "/ok.html": Page("<html><head><title>carnivorous plants</title></head><body>sundews</body></html>"),
    }
    with LoopbackWeb({"127.0.0.2": site}, port=port) as web:
        job_dir.write(CONFIG, DEMO_TOPIC, [web.url("127.0.0.2")])
        job_dir.crawl()
        assert "/ok.html" in page_paths(web, "127.0.0.2")
    with job_dir.frontier() as db:
        context, status, retries = db.execute(
            "SELECT marked, status, retries FROM url_states WHERE url LIKE '%broken.html'"
        ).fetchone()
    assert (context, status, retries) == (1, 500, 1)  # kept for a later retry, as Combine did


def test_the_spider_callbacks_return_no_value():
    """The focused spider turns off Scrapy's check of this for every response; the check is made here once."""
    from scrapy.utils.misc import is_generator_with_return_value

    from combine_scrapy.spiders.focused import FocusedSpider

    assert not is_generator_with_return_value(FocusedSpider.parse)
    assert not is_generator_with_return_value(FocusedSpider.fetch_failed)
