"""Near-duplicates in a crawl, and the record commands (search, sanity, delete, aliases) on what it stored.

One loopback web: host A has an index, an article (a), the same article with
another date (b) and with another advert (c), and a different article (d); host
B serves A's a and d unchanged (a server alias) and one page of its own (e).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import shutil
import sqlite3
import uuid

import pytest
from conftest import PROJECT, JobDir, free_port
from scrapy.settings import Settings
from test_store import MYSQL_URL, drop_mysql_tables

from combine_scrapy.context import CrawlContext
from combine_scrapy.job import load_job
from combine_scrapy.operations.sampleweb import LoopbackWeb, Page
from combine_scrapy.records.store.mysql import table_prefix
from combine_scrapy.records.store.sqlite import SqliteRecordStore

A, B = "127.0.0.2", "127.0.0.3"
TOPIC = (PROJECT / "topics" / "demo" / "topicdefinition.txt").read_text()
CONFIG = "WaitIntervalHost = 0.2\nclassifyPlugIn = plain\nAllowPrivateAddresses = 1\n"
ARTICLE = (
    "Sundews catch insects with sticky glands on their leaves. The glands glisten like dew and lure flies, "
    "which stick to the mucilage; the tentacles then bend over the prey and enzymes digest it over days. "
    "Drosera capensis is the easiest of the carnivorous plants to grow on a sunny windowsill, in a pot of peat "
    "and sand kept standing in rain water. Feed it a fly now and then in spring, let it rest cooler in winter, "
    "and it flowers every summer with small pink blooms on long stalks, setting seed that sprouts readily. "
    "Other sundews are harder. The pygmy sundews of Western Australia form tiny rosettes that make gemmae "
    "in autumn, little green discs you can scatter on fresh soil to raise a whole tray of new plants. The "
    "tuberous species die back to an underground tuber each summer and return with the winter rains, so "
    "they must be kept bone dry while dormant. Tropical sundews from the highlands of Venezuela want warmth "
    "and high humidity all year, and will sulk in a cold greenhouse. Whichever you grow, never use tap water "
    "or fertiliser on the soil, since the roots are adapted to poor, acid bogs and burn easily. "
    "Propagation is simple. Leaf cuttings laid on wet sphagnum moss under a clear lid grow plantlets within "
    "a month, and root cuttings of the larger species sprout from every piece. Seed needs light to germinate, "
    "so sow it on the surface and never cover it; many temperate species also need a few weeks of cold first. "
    "Pests are few, but aphids sometimes hide in the flower buds and fungus gnats breed in soggy moss. A "
    "healthy sundew is covered in glistening dew; a dry one is telling you the air or the soil is too dry, "
    "or that the light is too weak for it to make the mucilage at all. Repot every spring into fresh mix."
)
PITCHERS = (
    "Sarracenia, the North American pitcher plants, are carnivorous plants of bogs and wet pine savannas. "
    "Their leaves are tall trumpets with a slippery rim and downward hairs; insects drawn by nectar fall in "
    "and drown in the fluid at the bottom, where bacteria break them down. Grow them outdoors in full sun, "
    "in peat kept wet with rain water, and give them a cold dormant winter, or they weaken and die in a year."
)
NEPENTHES = (
    "Nepenthes, the tropical pitcher plants, are carnivorous plants that climb through the rain forest of "
    "Borneo and Sumatra. Each leaf ends in a tendril carrying a lidded pitcher; the largest hold two litres "
    "and now and then drown a rat. Highland species want cool nights and humid air, lowland ones warmth all year."
)


def page(title: str, text: str, links: str = "") -> Page:
    return Page(f"<html><head><title>{title}</title></head><body><p>{text}</p>{links}</body></html>")


def article(date: str, advert: str) -> Page:
    return page("Growing sundews", f"Posted {date}. {ARTICLE}", f'<div class="advert">{advert}</div>')


def sites(port: int) -> dict[str, dict[str, Page]]:
    a, b = f"http://{A}:{port}", f"http://{B}:{port}"
    links = "".join(
        f'<a href="{url}">{url}</a> '
        for url in (f"{a}/a.html", f"{a}/b.html", f"{a}/c.html", f"{a}/d.html", f"{b}/a.html", f"{b}/d.html", f"{b}/e.html")
    )
    original = article("23 November 2026", "cheap plastic pots, ten for a pound, this week only")
    pitchers = page("Pitcher plants", PITCHERS)
    return {
        A: {
            "/": page("Carnivorous plants", "An index of our carnivorous plants pages: sundews, pitcher plants, "
                      "Nepenthes, the Venus flytrap and their friends, grown by members since 1998.", links),
            "/a.html": original,
            "/b.html": article("24 December 2025", "cheap plastic pots, ten for a pound, this week only"),
            "/c.html": article("23 November 2026", "garden gloves and a free trowel with every order"),
            "/d.html": pitchers,
        },
        B: {"/a.html": original, "/d.html": pitchers, "/e.html": page("Nepenthes", NEPENTHES)},
    }


@pytest.fixture(scope="module")
def web():
    port = free_port()
    with LoopbackWeb(sites(port), port=port) as served:
        yield served


def crawl(base, web, config: str = CONFIG) -> JobDir:
    job_dir = JobDir(topics=base / "topics", data=base / "data")
    job_dir.write(config, TOPIC, [web.url(A)])
    job_dir.crawl()
    return job_dir


@pytest.fixture(scope="module")
def crawled_base(tmp_path_factory, web):
    return crawl(tmp_path_factory.mktemp("crawled"), web)


@pytest.fixture
def job_dir(crawled_base, tmp_path) -> JobDir:
    """A copy of the crawled job for one test to change."""
    shutil.copytree(crawled_base.topics, tmp_path / "topics")
    shutil.copytree(crawled_base.data, tmp_path / "data")
    return JobDir(topics=tmp_path / "topics", data=tmp_path / "data")


def command(job_dir: JobDir, name: str, *argv: str) -> tuple[int, str, str]:
    """Run ``scrapy NAME ARGV...`` in this process, as Scrapy runs it: ``(exit status, stdout, stderr)``."""
    runner = importlib.import_module(f"combine_scrapy.commands.{name}").Command()
    settings = Settings()
    settings.setmodule("combine_scrapy.settings")
    settings.set("COMBINE_TOPICS_DIR", str(job_dir.topics))
    settings.set("COMBINE_DATA_DIR", str(job_dir.data))
    runner.settings = settings
    parser = argparse.ArgumentParser()
    runner.add_options(parser)
    opts, args = parser.parse_known_args(list(argv))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        runner.run(args, opts)
    return runner.exitcode, out.getvalue(), err.getvalue()


def urls_by_record(job_dir: JobDir) -> dict[str, set[str]]:
    """``{title: {url path with host letter}}`` of every record."""
    store = SqliteRecordStore(job_dir.data / "t" / "records.sqlite")
    try:
        names = {A: "A", B: "B"}
        return {
            record.title: {names[url.split("/")[2].split(":")[0]] + url.split("/", 3)[3] for url in store.urls(record.key)}
            for record in store
        }
    finally:
        store.close()


@pytest.mark.crawl
def test_near_duplicates_join_the_record_and_different_pages_do_not(crawled_base):
    assert urls_by_record(crawled_base) == {
        "Carnivorous plants": {"A"},
        "Growing sundews": {"Aa.html", "Ab.html", "Ac.html", "Ba.html"},
        "Pitcher plants": {"Ad.html", "Bd.html"},
        "Nepenthes": {"Be.html"},
    }


@pytest.mark.crawl
def test_near_duplicates_switched_off_are_records_of_their_own(tmp_path, web):
    job_dir = crawl(tmp_path, web, CONFIG + "nearDuplicates = 0\n")
    with job_dir.records() as db:
        assert db.execute("SELECT COUNT(*) FROM records WHERE title = 'Growing sundews'").fetchone() == (3,)


@pytest.mark.crawl
def test_search_ranks_records_and_explains_errors(crawled_base):
    result = crawled_base.scrapy("search", "t", "slippery trumpets")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("  1. Pitcher plants")
    assert "[slippery]" in lines[2] and "[trumpets]" in lines[2]
    assert len([line for line in lines if line[:5].strip().endswith(".")]) == 1
    failed = crawled_base.scrapy("search", "nope", "x")
    assert failed.returncode == 2 and len(failed.stderr.strip().splitlines()) == 1 and "no such job" in failed.stderr
    assert "no record of job t matches" in command(crawled_base, "search", "t", "orchids")[1]
    status, _, err = command(crawled_base, "search", "t", "!!")
    assert status == 2 and err == "error: no word to search for in '!!'\n"


@pytest.mark.crawl
def test_sanity_finds_and_restores_disagreements(job_dir, web):
    d_url, e_url, index = web.url(A, "/d.html"), web.url(B, "/e.html"), web.url(A)
    with sqlite3.connect(job_dir.data / "t" / "frontier.sqlite") as db:
        db.execute("UPDATE fetches SET status = 404 WHERE seq = (SELECT seq FROM url_states WHERE url = ?)", (d_url,))
        db.execute("DELETE FROM urls WHERE seq = (SELECT seq FROM url_states WHERE url = ?)", (e_url,))
    with job_dir.records() as db:
        db.execute("DELETE FROM record_urls WHERE url = ?", (index,))

    status, out, _ = command(job_dir, "sanity", "t")
    assert status == 1
    assert f"1 record URLs the frontier found gone:\n    {d_url}" in out
    assert f"1 record URLs the frontier does not know:\n    {e_url}" in out
    assert "1 records without a URL" in out

    assert command(job_dir, "sanity", "t", "--restore")[0] == 0
    status, out, _ = command(job_dir, "sanity", "t")
    assert status == 0 and "records and frontier agree (3 records)" in out
    assert urls_by_record(job_dir)["Pitcher plants"] == {"Bd.html"}
    with job_dir.frontier() as db:
        assert db.execute("SELECT marked FROM url_states WHERE url = ?", (e_url,)).fetchone() == (1,)


@pytest.mark.crawl
def test_delete_by_host_path_md5_and_id(job_dir):
    status, out, _ = command(job_dir, "delete", "t", "--netloc", f"{B}:{job_dir_port(job_dir)}")
    assert status == 0 and "removed 3 URLs; 1 records went with their last URL" in out
    assert set(urls_by_record(job_dir)) == {"Carnivorous plants", "Growing sundews", "Pitcher plants"}
    assert "removed 2 URLs" in command(job_dir, "delete", "t", "--path", r"^/[bc]\.html$")[1]
    assert urls_by_record(job_dir)["Growing sundews"] == {"Aa.html"}
    with job_dir.records() as db:
        (key,) = db.execute("SELECT key FROM records WHERE title = 'Pitcher plants'").fetchone()
        (record_id,) = db.execute("SELECT id FROM records WHERE title = 'Growing sundews'").fetchone()
    assert f"deleted record {key} and its 1 URLs" in command(job_dir, "delete", "t", "--md5", key.lower())[1]
    assert command(job_dir, "delete", "t", "--id", str(record_id))[0] == 0
    assert set(urls_by_record(job_dir)) == {"Carnivorous plants"}

    for args, expected, message in (
        (("--id", "999"), 1, "job t has no record with id 999"),
        (("--path", "(["), 2, "is not a regular expression"),
        (("--md5", "0" * 32), 1, f"job t has no record with MD5 {'0' * 32}"),
    ):
        status, _, err = command(job_dir, "delete", "t", *args)
        assert status == expected and message in err and len(err.splitlines()) == 1, err
    status, _, err = command(job_dir, "delete", "t")
    assert status == 2 and "say what to delete" in err


def job_dir_port(job_dir: JobDir) -> int:
    return int((job_dir.topics / "t" / "seeds.txt").read_text().split(":")[2].strip(" /\n"))


@pytest.mark.crawl
def test_aliases_found_written_to_the_config_and_resolved(job_dir):
    port = job_dir_port(job_dir)
    status, out, _ = command(job_dir, "aliases", "t")
    assert status == 0 and out.splitlines()[0] == f"{A}:{port} {B}:{port}"

    status, out, err = command(job_dir, "aliases", "t", "--write")
    assert status == 0, err
    assert "renamed 3 record URLs" in out  # all of B's; a.html and d.html were on A already
    config = (job_dir.topics / "t" / "combine.cfg").read_text()
    assert f"<serveralias>\n{A}:{port} {B}:{port}\n</serveralias>" in config
    assert urls_by_record(job_dir) == {
        "Carnivorous plants": {"A"},
        "Growing sundews": {"Aa.html", "Ab.html", "Ac.html"},
        "Pitcher plants": {"Ad.html"},
        "Nepenthes": {"Ae.html"},
    }
    assert "no server aliases found" in command(job_dir, "aliases", "t")[1]


@pytest.mark.parametrize("name, option", [("search", "--limit"), ("sanity", "--restore"), ("delete", "--netloc"), ("aliases", "--write")])
def test_commands_have_help(name, option):
    """The help ``scrapy NAME --help`` prints, built as Scrapy builds it (without a process per command)."""
    command = importlib.import_module(f"combine_scrapy.commands.{name}").Command()
    command.settings = Settings()
    parser = argparse.ArgumentParser(usage=f"scrapy {name} {command.syntax()}", description=command.long_desc())
    command.add_options(parser)
    assert option in parser.format_help() and "<job>" in parser.format_help()


@pytest.mark.crawl
@pytest.mark.services
def test_harvest_opens_the_record_store_mysql_url_names(tmp_path):
    """MYSQL_URL reaches the store through CrawlContext.open: the job's records go to its MariaDB tables."""
    job_dir = JobDir(topics=tmp_path / "topics", data=tmp_path / "data", name=f"t{uuid.uuid4().hex[:12]}")
    job_dir.write(CONFIG, TOPIC, ["http://127.0.0.2/"])
    job = load_job(job_dir.name, job_dir.topics)
    context = CrawlContext.open(job, job_dir.data, mysql_url=MYSQL_URL)
    try:
        assert context.store.location == f"{MYSQL_URL} (tables {table_prefix(job.name)}*)"
        assert context.store.count() == 0
    finally:
        context.close()
        drop_mysql_tables(table_prefix(job.name))
    assert not (job_dir.data / job_dir.name / "records.sqlite").exists()
