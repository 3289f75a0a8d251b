"""What a person sees of a crawl: the harvest log, the harvest report (`scrapy report`) and the live progress line."""

from __future__ import annotations

import io
import logging
import re
import sqlite3
import struct
import uuid

import pytest
from conftest import PROJECT, JobDir, free_port
from harvesters import delete_job_keys

from combine_scrapy.extensions.progress import PageRate, Progress, TerminalLine
from combine_scrapy.frontier import FrontierCounts
from combine_scrapy.operations.harvestlog import FetchRow, HarvestLog, HostRow
from combine_scrapy.operations.report import ReportData, render, thin, windowed_rate
from combine_scrapy.operations.sampleweb import DEMO_HOSTS, LoopbackWeb, demo_sites

PLANTS, BASEBALL, GARDEN = DEMO_HOSTS
DEMO_TOPIC = (PROJECT / "topics" / "demo" / "topicdefinition.txt").read_text()
REDIS_URL = "redis://127.0.0.1:6379/0"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
FRONTIER = FrontierCounts(urls=9, marked_ready=0, marked_locked=0, done=8, hosts=3)


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == PNG_SIGNATURE
    return struct.unpack(">II", data[16:24])


@pytest.fixture(scope="module")
def crawled(tmp_path_factory):
    base = tmp_path_factory.mktemp("report")
    job_dir = JobDir(topics=base / "topics", data=base / "data")
    port = free_port()
    with LoopbackWeb(demo_sites(port), port=port) as web:
        # Combine's crawl (links of relevant pages only), so the page counts below are the demo web's 8.
        job_dir.write("WaitIntervalHost = 0.2\nAllowPrivateAddresses = 1\nCrawlStrategy = BreadthFirstTime\n"
                      "LinkStrategy = propagate\n", DEMO_TOPIC, [web.url(PLANTS)])
        job_dir.crawl()
        yield job_dir, web


@pytest.mark.crawl
def test_the_crawl_logs_every_fetch(crawled):
    job_dir, web = crawled
    with sqlite3.connect(job_dir.data / "t" / "harvest_log.sqlite") as db:
        rows = db.execute("SELECT url, status, outcome, relevant, class FROM fetches ORDER BY time").fetchall()
    by_url = {url: row for url, *row in rows}
    assert by_url[web.url(PLANTS)][:3] == [200, "success", 1]
    assert by_url[web.url(BASEBALL)][:3] == [200, "success", 0]      # fetched, judged irrelevant
    assert by_url[web.url(PLANTS, "/private/members.html")][:2] == [None, "robots"]  # refused, never fetched
    assert by_url[web.url(PLANTS, "/drosera.html")][3] == "CP.Drosera"
    assert len(rows) == len(by_url)  # each URL once


@pytest.mark.crawl
def test_report_renders_html_with_plots_and_tables(crawled, tmp_path):
    job_dir, web = crawled
    result = job_dir.scrapy("report", "t", "--output", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"job t: 8 pages fetched; report written to {tmp_path / 'out' / 'index.html'}\n"
    page = (tmp_path / "out" / "index.html").read_text()
    for image in ("relevant.png", "timeline.png", "harvest_rate.png"):
        assert f'<img src="{image}"' in page
        data = (tmp_path / "out" / image).read_bytes()
        assert len(data) > 5000 and png_size(data) == (700, 420)
    assert "<td>pages fetched</td><td>8</td>" in page
    assert "<td>relevant pages</td><td>7 of 8 judged (harvest rate 88%)</td>" in page
    # host, pages fetched, relevant, new records, duplicates (relevant pages that joined a record), harvest rate
    assert f"<tr><td>{PLANTS}:{web.port}</td><td>6</td><td>6</td><td>5</td><td>1</td><td>100%</td></tr>" in page
    assert f"<tr><td>{BASEBALL}:{web.port}</td><td>1</td><td>0</td><td>0</td><td>0</td><td>0%</td></tr>" in page
    assert "<h2>What the link model learned</h2>" in page and "Nothing learned yet (or another LinkStrategy)" in page
    assert "<td>CP.Drosera</td><td>2</td>" in page


@pytest.mark.crawl
def test_report_of_a_job_not_crawled_yet_says_so(job_dir):
    job_dir.write("", DEMO_TOPIC, ["http://127.0.0.2:1/"])
    result = job_dir.scrapy("report", "t")
    assert result.returncode == 0, result.stderr
    out = job_dir.data / "t" / "report"
    assert "No fetches logged yet" in (out / "index.html").read_text()
    assert not list(out.glob("*.png"))


def test_compared_jobs_share_the_main_plot(tmp_path):
    ours = [(1000.0 + i, i + 1, (i + 1) // 2) for i in range(50)]
    theirs = [(1000.0 + i, i + 1, i // 4) for i in range(80)]
    data = ReportData("glass", ours, [HostRow("a.example", 50, 25, 50)], [("D.2", 25)], 25, FRONTIER,
                      compared={"glass-pagerank": theirs}, generated=2000.0)
    page = render(data, tmp_path).read_text()
    assert "<td>compared: glass-pagerank</td><td>19 relevant of 80 judged (24%)</td>" in page
    assert "<td>D.2</td><td>25</td><td>100%</td>" in page
    assert png_size((tmp_path / "relevant.png").read_bytes()) == (700, 420)


def test_report_escapes_what_the_web_wrote(tmp_path):
    data = ReportData("j", [(1.0, 1, 1)], [HostRow("<b>evil</b>", 1, 1, 1)], [("<script>", 1)], 1, FRONTIER)
    page = render(data, tmp_path).read_text()
    assert "<b>evil" not in page and "&lt;b&gt;evil&lt;/b&gt;" in page and "<script>" not in page


def test_thin_keeps_the_ends_and_at_most_the_points_asked():
    curve = [(float(i), i, i) for i in range(10_001)]
    thinned = thin(curve, 1000)
    assert len(thinned) <= 1001 and thinned[0] == curve[0] and thinned[-1] == curve[-1]
    assert thin(curve[:5], 1000) == curve[:5]


def test_windowed_rate_is_the_share_of_relevant_pages_among_the_last_ones():
    relevant = [1, 1, 0, 0, 0, 0]
    curve, total = [], 0
    for i, r in enumerate(relevant):
        total += r
        curve.append((float(i), i + 1, total))
    assert windowed_rate(curve, 2) == [(3, 0.5), (4, 0.0), (5, 0.0), (6, 0.0)]


def test_harvest_log_counts_curves_hosts_and_classes(tmp_path):
    log = HarvestLog(tmp_path / "log.sqlite")
    rows = [
        FetchRow(100.0, "http://a/1", "a", 200, "success", True, 120.0, "X", 1),
        FetchRow(110.0, "http://a/2", "a", 200, "success", False, 3.0, None, 1),
        FetchRow(170.0, "http://b/", "b", 200, "success", True, 95.0, "Y", 2),
        FetchRow(175.0, "http://b/x", "b", None, "robots", None, None, None, 2),
        FetchRow(180.0, "http://c/", "c", 404, "not_found", None, None, None, 2),
    ]
    log.append(rows[:2])
    log.append(rows[2:])
    totals = log.totals(now=200.0, window=60.0)
    assert (totals.fetched, totals.judged, totals.relevant, totals.recent_fetched) == (4, 3, 2, 2)
    assert totals.harvest_rate == pytest.approx(2 / 3) and totals.recent_per_minute == 2.0
    assert log.curve() == [(100.0, 1, 1), (110.0, 2, 1), (170.0, 3, 2)]  # pages judged: not the 404
    assert log.top_hosts(2) == [HostRow("a", 2, 1, 2), HostRow("b", 1, 1, 1)]
    assert log.top_classes(5) == [("X", 1), ("Y", 1)]
    log.close()


def progress(**changes) -> Progress:
    values = dict(job="glass", pages=120, per_minute=35.4, relevant=42, judged=100, records=40,
                  frontier_urls=900, due=12, locked=30, hosts_marked=20, hosts_waiting=4)
    return Progress(**{**values, **changes})


def test_progress_lines_show_rate_harvest_rate_new_records_lately_frontier_and_waiting_hosts():
    assert progress(recent_new_rate=0.062).log_line() == (
        "progress: 120 pages (35/min), 42 relevant (harvest rate 42%), 40 records (6.2% of the last 500 fetches "
        "new); frontier 900 URLs, 12 due, 30 locked until due again; 4 of 20 hosts waiting their turn"
    )
    assert progress().terminal_line() == (
        "glass: 120 pages, 35/min, harvest rate 42%, 40 records | frontier 900 URLs, 12 due, hosts waiting 4/20"
    )
    assert "harvest rate n/a" in progress(relevant=0, judged=0).terminal_line()


PROGRESS_LINE = re.compile(r"progress: (\d+) pages .* frontier (\d+) URLs, (\d+) due, (\d+) locked until due again; "
                           r"(\d+) of (\d+) hosts waiting their turn")


@pytest.mark.crawl
@pytest.mark.parametrize("backend", ["sqlite", pytest.param("redis", marks=pytest.mark.services)])
def test_the_progress_line_counts_a_live_frontier(backend, tmp_path):
    """The progress line read from the crawl's own frontier as it runs, on the embedded frontier and on Redis:
    its counts agree with one another and never pass the crawl's summary."""
    job_dir = JobDir(topics=tmp_path / "topics", data=tmp_path / "data", name=f"progress-{uuid.uuid4().hex[:12]}")
    port = free_port()
    redis = ["-s", f"REDIS_URL={REDIS_URL}"] if backend == "redis" else []
    try:
        with LoopbackWeb(demo_sites(port), port=port) as web:
            job_dir.write("WaitIntervalHost = 0.6\nAllowPrivateAddresses = 1\n", DEMO_TOPIC, [web.url(PLANTS)])
            result = job_dir.crawl("-s", "COMBINE_PROGRESS_INTERVAL=0.3", *redis)
    finally:
        if backend == "redis":
            delete_job_keys(REDIS_URL, job_dir.name)
    lines = [tuple(map(int, match.groups())) for match in PROGRESS_LINE.finditer(result.stderr)]
    fetched = int(re.search(r"pages fetched: (\d+)", result.stdout).group(1))
    known, known_hosts = map(int, re.search(r"frontier: (\d+) URLs on (\d+) hosts", result.stdout).groups())
    assert len(lines) >= 3 and known_hosts == 3, result.stderr[-3000:]
    for pages, urls, due, locked, waiting, hosts in lines:
        assert pages <= fetched and due + locked <= urls <= known
        assert waiting <= hosts <= known_hosts
    assert any(hosts == 3 for *_, hosts in lines)  # every host had a URL due at some point
    assert any(pages > 0 and urls > 1 for pages, urls, *_ in lines)


def test_page_rate_counts_the_last_minute_only():
    rate = PageRate(window=60)
    assert rate.add(0.0, 0) == 0.0
    assert rate.add(30.0, 10) == 20.0
    assert rate.add(60.0, 30) == 30.0
    assert rate.add(120.0, 40) == pytest.approx(10.0)  # only the last minute: 30 -> 40 pages


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_terminal_line_redraws_in_place_and_makes_room_for_log_records():
    stream = FakeTerminal()
    line = TerminalLine(stream)
    handler = logging.StreamHandler(stream)
    handler.addFilter(line)
    logger = logging.getLogger("test_terminal_line")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        line.draw("10 pages")
        line.draw("20 pages")
        logger.warning("a log record")
        line.draw("30 pages")
    finally:
        logger.removeHandler(handler)
    assert stream.getvalue() == "\r\x1b[K10 pages\r\x1b[K20 pages\r\x1b[Ka log record\n\r\x1b[K30 pages"
