"""Job input: every number checked, job files read safely, topic definitions loaded fast.

The wider table of bad inputs is tests/test_hostile_jobs.py; these tests pin
down each rule: which values a numeric variable refuses, what the file reader
refuses and accepts, that loading a topic definition compiles no plain term,
and that Scrapy's remote-control server is off.
"""

from __future__ import annotations

import logging
import os
import threading

import pytest
import regex

from combine_scrapy import settings
from combine_scrapy.job import VARIABLES, JobConfigError, load_job
from combine_scrapy.jobfiles import EXCERPT_CHARACTERS, JobFileError, excerpt, read_job_file
from combine_scrapy.topic import Document, PlainMatcher, definition, parse_topic_definition

TOPIC = "50: carnivorous plants=CP\n"


def write_job(tmp_path, config: str, seeds: str = "http://127.0.0.2:8931/\n"):
    directory = tmp_path / "j"
    directory.mkdir(exist_ok=True)
    (directory / "combine.cfg").write_text(config)
    (directory / "topicdefinition.txt").write_text(TOPIC)
    (directory / "seeds.txt").write_text(seeds)
    return directory


def is_numeric(name: str) -> bool:
    try:
        value = VARIABLES[name].parse("1")
    except ValueError:
        return False
    return isinstance(value, (int, float)) and not isinstance(value, bool)


NUMERIC = sorted(name for name in VARIABLES if is_numeric(name))


def test_the_numeric_variables_are_found():
    assert {"WaitIntervalHost", "tot_cutoff", "maxUrlLength", "LinkThreshold", "nearDuplicateDistance"} <= set(NUMERIC)
    assert "saveHTML" not in NUMERIC and "UserAgent" not in NUMERIC


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", "Infinity", "1e999", ""])
@pytest.mark.parametrize("name", NUMERIC)
def test_every_numeric_variable_refuses_nan_infinity_and_nothing(tmp_path, name, value):
    directory = write_job(tmp_path, f"# line 1\n{name} = {value}\n")
    with pytest.raises(JobConfigError) as raised:
        load_job("j", tmp_path)
    message = str(raised.value)
    assert message.startswith(f"{directory / 'combine.cfg'}:2: {name}: ")
    assert ("expected" in message) if value else ("no value; leave the line out" in message)


@pytest.mark.parametrize(
    ("name", "value", "allowed"),
    [
        ("WaitIntervalHost", "-1", "a number of seconds from 0 to"),
        ("UAtimeout", "0", "a number of seconds > 0"),
        ("ConverterTimeout", "-0.5", "a number of seconds > 0"),
        ("maxUrlLength", "0", "a whole number from 1 to"),
        ("HubContentLinks", "-1", "a whole number from 0 to"),
        ("LinkPageWeight", "1.5", "a number from 0 to 1"),
        ("UrlRuleThreshold", "-2", "a number >= 0"),
        ("nearDuplicateDistance", "8", "a number of bits from 0 to 7"),
    ],
)
def test_a_value_out_of_range_says_what_is_allowed(tmp_path, name, value, allowed):
    write_job(tmp_path, f"{name} = {value}\n")
    with pytest.raises(JobConfigError, match=rf":1: {name}: expected {allowed}.*, got '{value}'"):
        load_job("j", tmp_path)


def test_values_in_range_are_read(tmp_path):
    write_job(tmp_path, "WaitIntervalHost = 0\nUAtimeout = 0.5\ntot_cutoff = -3.5\nHarvestRetries = 1_000\n")
    job = load_job("j", tmp_path)
    assert (job.locks.host, job.fetching.timeout, job.topic.tot_cutoff, job.fetching.harvest_retries) == (0, 0.5, -3.5, 1000)


@pytest.mark.parametrize("name", sorted(set(VARIABLES) - {"OperatorEmail", "HeadOnlyExtensions"}))
def test_an_empty_value_is_refused_unless_it_means_something(tmp_path, name):
    write_job(tmp_path, f"{name} =\n")
    with pytest.raises(JobConfigError, match=f":1: {name}: no value"):
        load_job("j", tmp_path)


def test_empty_head_only_extensions_means_none(tmp_path):
    write_job(tmp_path, "HeadOnlyExtensions =\n")
    assert load_job("j", tmp_path).fetching.head_only_extensions == frozenset()


# The file reader

def test_a_bom_is_dropped_and_crlf_kept_for_splitlines(tmp_path):
    path = tmp_path / "seeds.txt"
    path.write_bytes(b"\xef\xbb\xbfhttp://a.example/\r\n")
    assert read_job_file(path) == "http://a.example/\r\n"


def test_an_absent_file_is_none_and_a_dangling_link_an_error(tmp_path):
    assert read_job_file(tmp_path / "sitesOK.txt") is None
    os.symlink(tmp_path / "nowhere", tmp_path / "stopwords.txt")
    with pytest.raises(JobFileError, match="is a symbolic link to .*nowhere', which does not exist"):
        read_job_file(tmp_path / "stopwords.txt")


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    os.mkfifo(tmp_path / "seeds.txt")
    outcome = []
    reader = threading.Thread(target=lambda: outcome.append(pytest.raises(JobFileError, read_job_file, tmp_path / "seeds.txt")))
    reader.start()
    reader.join(30)
    assert outcome, "reading a FIFO blocked"
    assert str(outcome[0].value) == f"{tmp_path / 'seeds.txt'}: is a FIFO (named pipe), not a regular file"


def test_a_file_larger_than_its_bound_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "combine.cfg"
    path.write_text("#" * 2000)
    assert read_job_file(path, max_bytes=2000)
    with pytest.raises(JobFileError, match="too large: 2,001 bytes, at most 2,000 bytes"):
        path.write_text("#" * 2001)
        read_job_file(path, max_bytes=2000)


@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"])
def test_bad_bytes_name_their_line_and_byte(tmp_path, bom):
    path = tmp_path / "topicdefinition.txt"
    path.write_bytes(bom + b"50: a=A\n50: b=B\n50: \xe9t\xe9=C\n")
    with pytest.raises(JobFileError) as raised:
        read_job_file(path)
    byte = len(bom) + 20
    assert (raised.value.line, raised.value.message) == (3, f"not UTF-8 text (invalid continuation byte at byte {byte}): save it as UTF-8")


def test_an_excerpt_is_short_one_line_and_says_how_long_the_text_was():
    assert excerpt("short") == "'short'"
    assert excerpt("HOST: example\\.org\tx\x1b") == "'HOST: example\\.org\\tx\\x1b'"  # regex as written, controls escaped
    long = "x" * 1000
    assert excerpt(long) == f"'{'x' * EXCERPT_CHARACTERS}'... (1,000 characters)"


# Topic definitions: linear loading, terms compiled on first use, progress for large ones

def test_loading_compiles_no_plain_term_and_checks_regular_expressions(monkeypatch):
    compiled = []
    original = definition._word_pattern
    monkeypatch.setattr(definition, "_word_pattern", lambda part: compiled.append(part) or original(part))
    rows = [f"10: word{n} @and other{n}=A" for n in range(1000)] + ["20: pitcher[^\\s]*=B", "30: \\p{L}+ flytrap=C"]
    parsed = parse_topic_definition("\n".join(rows))
    assert compiled == ["\\p{L}+ flytrap"]  # re checked the other regular expression; regex only what re cannot read
    compiled.clear()
    result = PlainMatcher(parsed).classify(Document(url="http://x.test/", title="", meta="", headings="",
                                                    text="word7 other7 pitchers venus flytrap"))
    assert set(result.terms) == {"word7 @and other7", "pitcher[^\\s]*", "\\p{L}+ flytrap"}
    assert set(compiled) == {"word7", "other7", "pitcher[^\\s]*", "\\p{L}+ flytrap"}  # only terms the page contains


def test_a_term_is_compiled_once_and_kept():
    term = parse_topic_definition("50: sundews?=A\n").terms[0]
    assert term.patterns is term.patterns
    assert isinstance(term.patterns[0], regex.Pattern)
    assert [m.group() for m in term.patterns[0].finditer("sundew and sundews")] == ["sundew", "sundews"]


def test_a_large_definition_logs_its_progress(monkeypatch, caplog):
    monkeypatch.setattr(definition, "LARGE_DEFINITION_ROWS", 100)
    monkeypatch.setattr(definition, "PROGRESS_INTERVAL", 0)
    with caplog.at_level(logging.INFO, logger="combine_scrapy.topic.definition"):
        parse_topic_definition("\n".join(f"5: term{n}=A" for n in range(2500)), "big.txt")
    messages = [record.getMessage() for record in caplog.records]
    assert messages[0] == "reading topic definition big.txt: 2,500 lines"
    assert "reading topic definition big.txt: line 2,000 of 2,500" in messages
    assert messages[-1].startswith("topic definition big.txt: 2,500 terms read in ")


def test_a_small_definition_logs_nothing(caplog):
    with caplog.at_level(logging.INFO, logger="combine_scrapy.topic.definition"):
        parse_topic_definition(TOPIC)
    assert not caplog.records


def test_a_catastrophic_term_is_abandoned_on_a_page_not_at_load(caplog):
    parsed = parse_topic_definition("100: (a|aa)+b=A\n50: plants=B\n")
    page = Document(url="http://x.test/", title="", meta="", headings="", text="a" * 40 + " plants")
    with caplog.at_level(logging.WARNING):
        result = PlainMatcher(parsed).classify(page)
    assert result.terms == ("plants",)
    assert "topic term on line 1 ((a|aa)+b) took too long on page http://x.test/ and was skipped" in caplog.text


# Seeds

def test_each_refused_seed_says_which_rule_refused_it_and_what_it_matched(tmp_path):
    config = "<allow>\nURL ^http://127\\.\nHOST: example\\.org\n</allow>\n<exclude>\nURL /private/\n</exclude>\nmaxPathDepth = 2\n"
    seeds = "http://127.0.0.2/\nhttp://127.0.0.2/private/x\nhttp://other.test/\nhttp://127.0.0.2/a/b/c/\nhttps://\n"
    directory = write_job(tmp_path, config, seeds)
    job = load_job("j", tmp_path)
    assert job.seeds == ("http://127.0.0.2/",)
    path = directory / "seeds.txt"
    assert [str(seed) for seed in job.refused_seeds] == [
        f"{path}:2: seed 'http://127.0.0.2/private/x' refused: excluded: exclude rule 'URL /private/' "
        "(combine.cfg line 6) matches URL 'http://127.0.0.2/private/x'",
        f"{path}:3: seed 'http://other.test/' refused: not_allowed: no allow rule matches host 'other.test' or URL "
        "'http://other.test/'; allow rules: 'URL ^http://127\\.' (combine.cfg line 2), 'HOST: example\\.org' (combine.cfg line 3)",
        f"{path}:4: seed 'http://127.0.0.2/a/b/c/' refused: too_deep: path '/a/b/c/' deeper than maxPathDepth = 2 segments",
        f"{path}:5: seed 'https://' refused: malformed: no host",
    ]


# What listens

def test_scrapys_remote_control_server_is_off_by_default():
    assert settings.REMOTE_CONTROL_ENABLED is False
