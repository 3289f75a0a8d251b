"""Loading jobs: the shipped ones load, and every kind of bad file names its file and line."""

from __future__ import annotations

import dataclasses
import functools
import ipaddress
import re
from urllib.parse import urlsplit

import pytest
from conftest import PROJECT

from combine_scrapy.access.urls import UrlRules, check_url
from combine_scrapy.job import Job, JobConfigError, LockIntervals, TopicConfig, build_job, load_config, load_job
from combine_scrapy.job.seeds import canonical_host_name, one_word_host

TOPIC = "50: carnivorous plants=CP\n"


def write_job(tmp_path, config="", topic=TOPIC, seeds="http://127.0.0.2:8931/\n", **files):
    directory = tmp_path / "j"
    directory.mkdir()
    (directory / "combine.cfg").write_text(config)
    if topic is not None:
        (directory / "topicdefinition.txt").write_text(topic)
    if seeds is not None:
        (directory / "seeds.txt").write_text(seeds)
    for name, text in files.items():
        (directory / name).write_text(text)
    return directory


@pytest.mark.parametrize("name", ["glass", "demo"])
def test_shipped_jobs_load(name):
    job = load_job(name, PROJECT / "topics")
    assert job.name == name
    assert job.seeds
    assert job.definition is not None


def test_glass_job_uses_combine_defaults():
    job = load_job("glass", PROJECT / "topics")
    assert job.locks.host == 60
    assert job.locks.success == 1_000_000
    assert job.url_rules.max_url_length == 250
    assert job.crawling.auto_recycle_links and job.archive.save_html and not job.analysis.do_analyse


def test_values_and_blocks_are_read(tmp_path):
    directory = write_job(
        tmp_path,
        "WaitIntervalHost = 2.5\nsaveHTML = 0\nmaxUrlLength = 100\n"
        "<exclude>\nURL \\.pdf$\n</exclude>\n<sessionids>\nmysid\n</sessionids>\n",
        **{"sitesOK.txt": "www.Example.org\n"},
    )
    job = load_job("j", tmp_path)
    assert job.locks.host == 2.5
    assert job.archive.save_html is False
    assert job.url_rules.max_url_length == 100
    assert [rule.text for rule in job.url_rules.exclude] == ["URL \\.pdf$"]
    assert job.url_rules.sessionids == ("mysid",)
    assert job.sites_ok == frozenset({"www.example.org"})
    assert directory.name == job.name


@pytest.mark.parametrize(
    ("config", "line", "message"),
    [
        ("WaitIntervalHots = 5\n", 1, "unknown variable 'WaitIntervalHots' (did you mean WaitIntervalHost?)"),
        ("# comment\nWaitIntervalHost = soon\n", 2, "WaitIntervalHost: expected a number, got 'soon'"),
        ("WaitIntervalHost = -1\n", 1, "WaitIntervalHost: expected a number of seconds from 0 to 3,153,600,000 (100 years), got '-1'"),
        ("saveHTML = maybe\n", 1, "saveHTML: expected 0 or 1"),
        ("maxUrlLength = 0\n", 1, "maxUrlLength: expected a whole number from 1 to 2,147,483,647, got '0'"),
        ("WaitIntervalHost = 1\nWaitIntervalHost = 2\n", 2, "WaitIntervalHost already set on line 1"),
        ("just some words\n", 1, "expected 'Name = value' or '<block>'"),
        ("<exclude>\nURL (unclosed\n</exclude>\n", 2, "bad exclude rule 'URL (unclosed'"),
        ("<exclude>\nURL x\n", 1, "<exclude> is never closed"),
        ("<exclude>\n</allow>\n", 2, "</allow> closes <exclude> opened on line 1"),
        ("<excludes>\n</excludes>\n", 1, "unknown variable 'excludes' (did you mean exclude?)"),
        ("CrawlStrategy = Random\n", 1, "unknown strategy 'Random'"),
        ("classifyPlugIn = no.such.module:classify\n", 1, "classifyPlugIn 'no.such.module:classify'"),
    ],
)
def test_bad_configuration_names_file_line_and_problem(tmp_path, config, line, message):
    directory = write_job(tmp_path, config)
    with pytest.raises(JobConfigError) as raised:
        load_job("j", tmp_path)
    assert str(raised.value).startswith(f"{directory / 'combine.cfg'}:{line}: ")
    assert message in str(raised.value)


def test_bad_topic_definition_names_its_line(tmp_path):
    directory = write_job(tmp_path, topic="# fine\n50: good=A\nnot a row\n")
    with pytest.raises(JobConfigError) as raised:
        load_job("j", tmp_path)
    assert str(raised.value).startswith(f"{directory / 'topicdefinition.txt'}:3: ")


def test_refused_seed_is_kept_aside_with_its_line_and_reason(tmp_path):
    directory = write_job(tmp_path, seeds="http://127.0.0.2/\nmailto:someone@example.org\n")
    job = load_job("j", tmp_path)
    assert job.seeds == ("http://127.0.0.2/",)
    [refused] = job.refused_seeds
    assert str(refused) == (
        f"{directory / 'seeds.txt'}:2: seed 'mailto:someone@example.org' refused: "
        "scheme: scheme 'mailto' is not one of http, https, ftp"
    )


def test_missing_pieces_are_named(tmp_path):
    write_job(tmp_path, seeds=None)
    with pytest.raises(JobConfigError, match="seeds.txt: missing"):
        load_job("j", tmp_path)
    with pytest.raises(JobConfigError, match="no such job; known jobs: j"):
        load_job("nope", tmp_path)
    with pytest.raises(JobConfigError, match="bad job name"):
        load_job("../etc", tmp_path)


def test_non_utf8_file_is_named(tmp_path):
    directory = write_job(tmp_path)
    (directory / "combine.cfg").write_bytes(b"WaitIntervalHost = 1\n\xff\xfe\n")
    with pytest.raises(JobConfigError, match="combine.cfg:2: not UTF-8"):
        load_job("j", tmp_path)


def test_spider_trap_bounds_are_read(tmp_path):
    write_job(tmp_path, "maxPathDepth = 5\nmaxRepeatedSegments = 2\nmaxUrlsPerHost = 300\n")
    job = load_job("j", tmp_path)
    assert (job.url_rules.max_path_depth, job.url_rules.max_repeated_segments) == (5, 2)
    assert job.crawling.max_urls_per_host == 300


def test_the_configuration_builds_nothing_and_the_job_builds_its_filter_once(tmp_path):
    directory = write_job(tmp_path, "# a filter whose model is not trained yet\nclassifyPlugIn = svm\nLearnedUrlRules = 1\n")
    config = load_config("j", tmp_path)   # neither the SVM model nor learned_urls.txt is read
    assert (config.topic.classify_plugin, config.learning.use_learned_url_rules) == ("svm", True)
    assert config.locks == LockIntervals() and config.fetching.user_agent == "combine-scrapy/0.1"
    with pytest.raises(JobConfigError, match=re.escape(f"{directory / 'combine.cfg'}:2: classifyPlugIn 'svm': ")):
        build_job(config)
    with pytest.raises(JobConfigError, match=re.escape(f"{directory / 'combine.cfg'}:2: classifyPlugIn 'svm': ")):
        load_job("j", tmp_path)

    job = Job.of(dataclasses.replace(config, topic=TopicConfig()))   # the plain filter: it needs no model
    assert job.topic_filter is job.topic_filter     # built once, when first used
    with pytest.raises(JobConfigError, match=re.escape(f"{directory / 'combine.cfg'}:3: LearnedUrlRules = 1, but ")):
        _ = job.learned_url_rules


def test_a_newjob_topic_definition_counts_as_none_for_filters_that_read_none(tmp_path):
    """docs/configuration.md: svm and vector need no topicdefinition.txt; the comments-only one `scrapy newjob`
    writes is taken as none (issue 28: `scrapy train` on such a job failed with "no term rows")."""
    from combine_scrapy.commands.newjob import create_job

    directory = create_job("sv", tmp_path)
    config = directory / "combine.cfg"
    config.write_text(config.read_text() + "\nclassifyPlugIn = svm\n")
    assert load_config("sv", tmp_path).definition is None
    config.write_text(config.read_text().replace("classifyPlugIn = svm", "classifyPlugIn = plain"))
    with pytest.raises(JobConfigError, match="no term rows"):
        load_config("sv", tmp_path)


def test_a_seed_with_a_one_word_host_is_refused_with_a_reason(tmp_path):
    """Issue 28: `ftp://x` and `http://x` were accepted as seeds; localhost and addresses (the sample web's) are not
    one-word hosts."""
    seeds = "http://x/\nftp://x/pub/\nhttp://localhost:8000/\nhttp://127.0.0.2:8931/\nhttp://[::1]:8080/\n"
    write_job(tmp_path, seeds=seeds)
    config = load_config("j", tmp_path)
    assert config.seeds == ("http://localhost:8000/", "http://127.0.0.2:8931/", "http://[::1]:8080/")
    assert [(refused.line, refused.reason) for refused in config.refused_seeds] == [
        (1, "host 'x' is one word: a seed names a full host (www.example.org), an IP address or localhost"),
        (2, "host 'x' is one word: a seed names a full host (www.example.org), an IP address or localhost"),
    ]


def test_the_host_of_a_canonical_url_is_read_off_its_text():
    """A seed's host is read off check_url's canonical URL, not split out of it again (seeds.txt may hold a
    million lines): for every URL the canonicalization table accepts, and for user information, ports, IPv6,
    IDNA and aliased hosts, it is the host name urlsplit reads, so the same seeds are refused as one-word."""
    rules = dataclasses.replace(UrlRules(), exclude=(), serveralias={"mirror:8080": "x:81", "other.example": "y"})
    table = (PROJECT / "tests" / "data" / "canonical_urls.tsv").read_text(encoding="utf-8").splitlines()
    urls = [line.split("\t")[0] for line in table if line and not line.startswith("#")]
    urls += ["http://User:pw@Intranet:8080/a", "HTTP://X", "http://x?a=1", "http://[FE80::1]:81/a", "http://[::1]",
             "http://bücher/", "http://x.:8080/", "http://mirror:8080/", "http://other.example/", "https://localhost:443/",
             "http://2130706433/", "ftp://x/pub/", "http://a@b@c/"]
    accepted = [verdict.url for verdict in map(functools.partial(check_url, rules=rules), urls) if verdict.ok]
    assert len(accepted) > 150
    for url in accepted:
        host = urlsplit(url).hostname or ""
        assert canonical_host_name(url) == host, url
        assert one_word_host(url) == (not ("." in host or ":" in host or host == "localhost" or _is_address(host))), url


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
