"""The Combine tools, run as a user runs them (`scrapy ...` in a subprocess) on a loopback web: newjob,
stats, rank, reclassify, incremental export with deletions, and the counts every summary shares."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import sqlite3
import time
import uuid
import xml.dom.minidom

import pytest
from conftest import PROJECT, JobDir, free_port
from scrapy.http import HtmlResponse
from test_store import MYSQL_URL, drop_mysql_tables

from combine_scrapy.commands.newjob import create_job
from combine_scrapy.commands.search import relative_scores
from combine_scrapy.extensions.progress import Progress
from combine_scrapy.job import GROUPS, VARIABLES, load_job
from combine_scrapy.operations.control import CommandError
from combine_scrapy.operations.debug import score
from combine_scrapy.operations.harvestlog import format_rate, harvest_rate
from combine_scrapy.operations.sampleweb import DEMO_HOSTS, LoopbackWeb, Page, demo_sites
from combine_scrapy.records.store import open_store
from combine_scrapy.records.store.mysql import table_prefix

PLANTS = DEMO_HOSTS[0]
DEMO_TOPIC = (PROJECT / "topics" / "demo" / "topicdefinition.txt").read_text()
CONFIG = "WaitIntervalHost = 0.1\nAllowPrivateAddresses = 1\n"
#: The edited topic: only pages that name Drosera (or sundews) stay on topic.
DROSERA_TOPIC = "200: drosera=CP.Drosera\n100: sundews?=CP.Drosera\n"


@pytest.fixture(scope="module")
def crawled(tmp_path_factory):
    """The demo web crawled once with the demo topic; tests copy it before they change it."""
    port = free_port()
    with LoopbackWeb(demo_sites(port), port=port) as web:
        job = JobDir(topics=tmp_path_factory.mktemp("topics"), data=tmp_path_factory.mktemp("data"))
        job.write(CONFIG, DEMO_TOPIC, [web.url(PLANTS)])
        summary = job.crawl().stdout
        yield job, summary, web


@pytest.fixture
def job_copy(crawled, tmp_path) -> JobDir:
    job, _, _ = crawled
    copy = JobDir(topics=tmp_path / "topics", data=tmp_path / "data", name=job.name)
    shutil.copytree(job.topics, copy.topics)
    shutil.copytree(job.data, copy.data)
    return copy


def run(job: JobDir, *args: str):
    result = job.scrapy(*args)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def jsonl(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


# -- newjob -------------------------------------------------------------------------------------------------


@pytest.mark.crawl
def test_newjob_writes_every_variable_at_its_default_and_refuses_to_overwrite(tmp_path):
    job = JobDir(topics=tmp_path / "topics", data=tmp_path / "data")
    job.topics.mkdir()
    created = run(job, "newjob", "plants")
    directory = job.topics / "plants"
    assert created.stdout == f"created {directory}\n"
    assert sorted(p.name for p in directory.iterdir()) == ["combine.cfg", "seeds.txt", "topicdefinition.txt"]
    config = (directory / "combine.cfg").read_text()
    listed = re.findall(r"^# (\w+) =", config, re.MULTILINE)
    assert listed == list(VARIABLES)
    assert "WEIGHT: TERMS=CLASS-LIST" in (directory / "topicdefinition.txt").read_text()
    assert "@and" in (directory / "topicdefinition.txt").read_text()

    again = job.scrapy("newjob", "plants")
    assert again.returncode == 1 and again.stderr.startswith(f"error: {directory} already exists")
    assert (directory / "combine.cfg").read_text() == config

    # Uncommented, every listed value is the default: the job loads exactly as with an empty combine.cfg.
    (directory / "topicdefinition.txt").write_text("100: carnivorous plants=CP\n")
    (directory / "seeds.txt").write_text("http://example.org/\n")
    defaults = load_job("plants", job.topics)
    (directory / "combine.cfg").write_text(re.sub(r"^# (\w+ =)", r"\1", config, flags=re.MULTILINE))
    uncommented = load_job("plants", job.topics)
    unset = {"tot_cutoff", "cutoff_norm", "cutoff_rel", "max_urls_per_host"}
    for group in GROUPS:
        for field in dataclasses.fields(getattr(defaults, group)):
            if field.name != "converters":
                value, default = getattr(getattr(uncommented, group), field.name), getattr(getattr(defaults, group), field.name)
                assert value == default or field.name in unset, (group, field.name)
    assert uncommented.url_rules.max_url_length == defaults.url_rules.max_url_length


def test_newjob_refuses_a_bad_name(tmp_path):
    with pytest.raises(CommandError, match="bad job name '../x'"):
        create_job("../x", tmp_path)
    assert list(tmp_path.iterdir()) == []


# -- stats, rank, search ------------------------------------------------------------------------------------


@pytest.mark.crawl
def test_stats_counts_records_per_term_and_class(crawled):
    job, _, _ = crawled
    with job.records() as db:
        terms = [json.loads(row[0]) for row in db.execute("SELECT terms FROM records")]
        with_cp = db.execute("SELECT COUNT(DISTINCT record) FROM topics WHERE class = 'CP'").fetchone()[0]
    lines = run(job, "stats", "t").stdout.splitlines()
    assert lines[0] == f"job t: {len(terms)} records"
    middle = lines.index("classes (records classified in):")
    assert lines[1] == "terms (records found in):"
    term_counts = dict(reversed(line.split(None, 1)) for line in lines[2:middle])
    class_counts = dict(reversed(line.split(None, 1)) for line in lines[middle + 1:])
    found = sum("carnivorous plants?" in matched for matched in terms)
    assert found > 0 and term_counts["carnivorous plants?"] == str(found)
    assert term_counts["pitcher[^\\s]* @and baseball"] == "0"  # in the definition, never matched
    assert class_counts["CP"] == str(with_cp)


@pytest.mark.crawl
def test_rank_stores_pagerank_and_ipagerank_and_export_sorts_by_them(job_copy):
    result = run(job_copy, "rank", "t")
    assert re.match(r"job t: ranked \d+ records over \d+ links between them; ranks stored", result.stdout)
    exported = jsonl(run(job_copy, "export", "t", "--sort", "pagerank").stdout)
    ranks = [record["pagerank"] for record in exported]
    assert len(ranks) > 2 and ranks == sorted(ranks, reverse=True)
    assert sum(ranks) == pytest.approx(1.0) and sum(r["ipagerank"] for r in exported) == pytest.approx(1.0)
    home = next(record for record in exported if record["urls"] == [f"http://{PLANTS}:{record['urls'][0].split(':')[2]}"])
    assert exported[0]["key"] == home["key"]  # every page links back to the home page: it ranks first
    by_topic = jsonl(run(job_copy, "export", "t", "--sort", "ipagerank").stdout)
    assert [r["ipagerank"] for r in by_topic] == sorted((r["ipagerank"] for r in by_topic), reverse=True)
    alvis = run(job_copy, "export", "t", "--format", "alvis-light").stdout
    assert '<property name="pagerank">' in alvis and '<property name="ipagerank">' in alvis
    bad = job_copy.scrapy("export", "t", "--sort", "size")
    assert bad.returncode == 2 and bad.stderr.startswith("error: unknown --sort 'size'")


@pytest.mark.crawl
def test_search_shows_relevance_relative_to_the_best_hit(crawled):
    job, _, _ = crawled
    result = run(job, "search", "t", "carnivorous plants")
    shares = re.findall(r"\[relevance (\d+)%, record \d+\]", result.stdout)
    assert shares[0] == "100" and len(shares) > 2 and all(0 < int(share) <= 100 for share in shares), result.stdout
    assert relative_scores([2e-6, 1e-6, 0.0]) == ["100%", "50%", "0%"]
    assert relative_scores([0.0, 0.0]) == ["-", "-"]


# -- reclassify and incremental export ------------------------------------------------------------------------


@pytest.mark.crawl
def test_reclassify_deletes_what_the_edited_topic_refuses_and_export_since_lists_the_deletions(job_copy):
    before = time.time()
    (job_copy.topics / "t" / "topicdefinition.txt").write_text(DROSERA_TOPIC)
    with job_copy.records() as db:
        keys = {key for (key,) in db.execute("SELECT key FROM records")}
    dry = run(job_copy, "reclassify", "t", "--dry-run")
    assert "(dry run: nothing changed)" in dry.stdout
    with job_copy.records() as db:
        assert {key for (key,) in db.execute("SELECT key FROM records")} == keys

    result = run(job_copy, "reclassify", "t")
    with job_copy.records() as db:
        kept = {key for (key,) in db.execute("SELECT key FROM records")}
        classes = {name for (name,) in db.execute("SELECT class FROM topics")}
    deleted = keys - kept
    assert kept and deleted
    assert classes == {"CP.Drosera"}
    assert f"{len(deleted)} no longer pass (deleted)" in result.stdout
    assert run(job_copy, "reclassify", "t").stdout.startswith(f"job t: {len(kept)} records judged")

    since = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(before - 1))
    lines = jsonl(run(job_copy, "export", "t", "--since", since).stdout)
    tombstones = [line for line in lines if line.get("status") == "deleted"]
    assert {line["key"] for line in tombstones} == deleted
    assert all(line["urls"] and line["deleted"] >= before for line in tombstones)
    dc = run(job_copy, "export", "t", "--since", since, "--format", "dc")
    document = xml.dom.minidom.parseString(dc.stdout)
    statuses = [e.getAttribute("status") for e in document.getElementsByTagName("documentRecord")]
    assert statuses.count("deleted") == len(deleted)
    assert f"and {len(deleted)} deletions" in dc.stderr
    assert not any(line.get("status") for line in jsonl(run(job_copy, "export", "t").stdout))  # full export: none

    reset = run(job_copy, "export", "t", "--reset")
    assert reset.stdout == f"job t: forgot {len(deleted)} deletions; a --since export now lists none before this moment\n"
    assert not [line for line in jsonl(run(job_copy, "export", "t", "--since", since).stdout) if line.get("status")]


@pytest.mark.crawl
def test_reclassify_flag_keeps_failing_records_flagged(job_copy):
    (job_copy.topics / "t" / "topicdefinition.txt").write_text(DROSERA_TOPIC)
    with job_copy.records() as db:
        count = db.execute("SELECT COUNT(*) FROM records").fetchone()[0]
    result = run(job_copy, "reclassify", "t", "--flag")
    assert "(flagged off_topic)" in result.stdout
    records = jsonl(run(job_copy, "export", "t").stdout)
    assert len(records) == count
    flagged = [r for r in records if r["off_topic"]]
    assert flagged and all(r["score"] < 90 for r in flagged)
    assert all(not r["off_topic"] for r in records if any(c["name"] == "CP.Drosera" for c in r["classes"]))


@pytest.mark.crawl
@pytest.mark.services
def test_tools_on_the_mariadb_store(tmp_path):
    """rank, reclassify, stats and the tombstones on MariaDB, crawled there."""
    name = f"tools{uuid.uuid4().hex[:10]}"
    port = free_port()
    job = JobDir(topics=tmp_path / "topics", data=tmp_path / "data", name=name)
    mysql = ("-s", f"MYSQL_URL={MYSQL_URL}")
    try:
        with LoopbackWeb(demo_sites(port), port=port) as web:
            job.write(CONFIG, DEMO_TOPIC, [web.url(PLANTS)])
            job.crawl(*mysql)
        assert re.match(rf"job {name}: ranked \d+ records", run(job, "rank", name, *mysql).stdout)
        assert run(job, "stats", name, *mysql).stdout.startswith(f"job {name}: ")
        ranked = jsonl(run(job, "export", name, "--sort", "pagerank", *mysql).stdout)
        assert [r["pagerank"] for r in ranked] == sorted((r["pagerank"] for r in ranked), reverse=True)
        before = time.time()
        (job.topics / name / "topicdefinition.txt").write_text(DROSERA_TOPIC)
        run(job, "reclassify", name, *mysql)
        store = open_store(name, job.data, MYSQL_URL)
        try:
            left = {record.key for record in store}
            tombstones = store.deleted_since(before)
        finally:
            store.close()
        assert tombstones and {t.key for t in tombstones} == {r["key"] for r in ranked} - left
        since = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(before - 1))
        exported = jsonl(run(job, "export", name, "--since", since, *mysql).stdout)
        assert sum(line.get("status") == "deleted" for line in exported) == len(tombstones)
    finally:
        drop_mysql_tables(table_prefix(name))


# -- what every summary counts --------------------------------------------------------------------------------


@pytest.mark.crawl
def test_max_pages_counts_pages_not_robots_txt(tmp_path):
    port = free_port()
    with LoopbackWeb(demo_sites(port), port=port) as web:
        job = JobDir(topics=tmp_path / "topics", data=tmp_path / "data")
        job.write("WaitIntervalHost = 0\nAllowPrivateAddresses = 1\n", DEMO_TOPIC, [web.url(PLANTS)])
        result = job.crawl("-a", "max_pages=5")
        fetched = [hit for host in DEMO_HOSTS for hit in web.hits_for(host) if hit.path != "/robots.txt"]
    assert "pages fetched: 5 " in result.stdout
    assert len(fetched) == 5
    with sqlite3.connect(job.data / "t" / "harvest_log.sqlite") as db:
        assert db.execute("SELECT COUNT(status) FROM fetches").fetchone()[0] == 5


@pytest.mark.crawl
def test_a_revisit_of_304s_counts_its_pages_in_the_summary_status_and_report(tmp_path):
    host = "127.0.0.23"
    page = Page("<html><head><title>Carnivorous plants</title></head><body>carnivorous plants</body></html>",
                headers={"Content-Type": "text/html", "Last-Modified": "Wed, 21 Oct 2015 07:28:00 GMT"})
    port = free_port(host)
    job = JobDir(topics=tmp_path / "topics", data=tmp_path / "data")
    with LoopbackWeb({host: {"/": page}}, port=port) as web:
        job.write("WaitIntervalHost = 0\n", "100: carnivorous plants=CP\n", [web.url(host)])
        assert "pages fetched: 1   relevant: 1   harvest rate: 100%" in job.crawl().stdout
        run(job, "reharvest", "t")
        again = job.crawl().stdout
    assert "pages fetched: 1   relevant: 0   harvest rate: n/a" in again
    status = run(job, "status", "t").stdout
    assert "  pages fetched:   2, 1 relevant of 1 judged (harvest rate 100%)" in status
    report = run(job, "report", "t")
    assert "2 pages fetched" in report.stdout
    index = (job.data / "t" / "report" / "index.html").read_text()
    assert "<td>pages fetched</td><td>2</td>" in index
    assert "<td>relevant pages</td><td>1 of 1 judged (harvest rate 100%)</td>" in index


@pytest.mark.crawl
def test_one_harvest_rate_for_summary_progress_status_and_report(crawled):
    job, summary, _ = crawled
    fetched, relevant, rate = re.search(r"pages fetched: (\d+)\s+relevant: (\d+)\s+harvest rate: (\S+)", summary).groups()
    status = run(job, "status", "t").stdout
    assert f"harvest rate {rate})" in status and f"  pages fetched:   {fetched}, {relevant} relevant" in status
    run(job, "report", "t", "--output", str(job.data / "report"))
    assert f"(harvest rate {rate})</td>" in (job.data / "report" / "index.html").read_text()
    assert format_rate(harvest_rate(7, 8)) == "88%" and format_rate(harvest_rate(0, 0)) == "n/a"


def test_progress_line_says_how_long_when_every_host_waits():
    waiting = Progress("glass", 0, 0.0, 0, 0, 0, 5, 5, 0, 2, 2, next_host_free=57.6)
    assert waiting.log_line().endswith("frontier 5 URLs, 5 due, 0 locked until due again; "
                                       "2 of 2 hosts waiting their turn (the next in 58 s)")
    some_free = Progress("glass", 3, 1.0, 1, 2, 1, 5, 5, 0, 2, 1, next_host_free=10)
    assert some_free.log_line().endswith("1 of 2 hosts waiting their turn")


# -- harvest, trial, shell -----------------------------------------------------------------------------------


@pytest.mark.crawl
def test_harvest_prints_each_harvesters_summary(job_copy):
    result = run(job_copy, "harvest", "t", "-n", "1")
    assert "harvest: harvester 1 ended with status 0" in result.stdout
    assert "  == combine-scrapy: job t finished (finished) ==" in result.stdout
    assert (job_copy.data / "t" / "harvester-1.out").read_text().startswith("== combine-scrapy: job t finished")


@pytest.mark.crawl
def test_trial_leaves_the_jobs_harvest_log_alone_and_warns_of_nothing(job_copy):
    log = job_copy.data / "t" / "harvest_log.sqlite"
    with sqlite3.connect(log) as db:
        rows = db.execute("SELECT COUNT(*) FROM fetches").fetchone()[0]
    result = job_copy.scrapy("trial", "t", "--pages", "2")
    assert "same object" not in result.stderr
    with sqlite3.connect(log) as db:
        assert db.execute("SELECT COUNT(*) FROM fetches").fetchone()[0] == rows
    assert not list((job_copy.data / "t" / "harvesters").glob("*.pid"))


@pytest.mark.crawl
def test_shell_score_echoes_as_its_text(crawled):
    job, _, web = crawled
    url = web.url(PLANTS)
    body = (b"<html><head><title>Sundews</title></head><body><p>Carnivorous plants: sundews, drosera.</p></body></html>")
    scored = score(HtmlResponse(url, body=body, encoding="utf-8"), "t", job.topics)
    assert repr(scored) == str(scored) and repr(scored).startswith(f"{url} (job t)\ntitle: 'Sundews'\nrelevant: yes")
