"""Commands as a new user runs them: the `scrapy` program in a project directory, the default settings (the
relative data/ directory), on the sample web. Each test here failed before the fix it names."""

from __future__ import annotations

import json
import marshal
import math
import pickle
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.request
import uuid
import xml.etree.ElementTree as ElementTree
from datetime import UTC, datetime

import pytest
from conftest import PROJECT, free_port
from harvesters import delete_job_keys
from test_store import MYSQL_URL, drop_mysql_tables
from test_store import record as store_record
from userproject import SCRAPY_PROGRAM, UserProject, user_environment

from combine_scrapy.operations.sampleweb import LoopbackWeb, demo_sites
from combine_scrapy.records.store import open_store
from combine_scrapy.records.store.mysql import table_prefix

pytestmark = pytest.mark.crawl

REDIS_URL = "redis://127.0.0.1:6379/0"
FEED_FILES = ("out.json", "out.jsonl", "out.csv", "out.xml", "out.marshal", "out.pickle")


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo job crawled once in a user's project directory, writing a feed in each of Scrapy's formats."""
    port = free_port()
    project = UserProject.create(tmp_path_factory.mktemp("project"), port)
    with LoopbackWeb(demo_sites(port), port=port):
        feeds = [arg for name in FEED_FILES for arg in ("-O", name)]
        crawl = project.scrapy("crawl", "focused", "-a", "job=demo", *feeds)
        assert crawl.returncode == 0, crawl.stderr[-3000:]
        yield project, crawl


def exported(project: UserProject) -> list[dict]:
    result = project.scrapy("export", "demo")
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def serve(project: UserProject, job: str):
    """`scrapy serve JOB` in the project; its process and base URL once it listens."""
    port = free_port("127.0.0.1")
    console = project.popen("serve", job, "--port", str(port), "--token", "test-token-0123",
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    line = ""
    while not line.startswith("console of job"):
        line = console.stdout.readline()
        if not line:
            console.kill()
            raise AssertionError("scrapy serve ended before listening")
    return console, f"http://127.0.0.1:{port}"


def get_page(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def seed_of(project: UserProject, job: str) -> str:
    return next(line for line in (project.root / "topics" / job / "seeds.txt").read_text().splitlines()
                if line.startswith("http"))


def test_crawl_keeps_its_data_in_the_relative_data_directory(demo):
    project, crawl = demo
    assert (project.root / "data" / "demo" / "records.sqlite").is_file()
    assert "Traceback" not in crawl.stderr


def test_console_on_default_settings_answers_status_and_hosts(demo):
    """Issue 28 (1): the harvest log opened as a file URI failed on the relative data directory (500)."""
    project, _ = demo
    console, url = serve(project, "demo")
    try:
        for path in ("/api/status", "/api/hosts"):
            status, text = get_page(url + path)
            assert status == 200, text
            answer = json.loads(text)
            if path == "/api/status":
                assert answer["fetched"] > 0 and answer["records"] > 0, answer
            else:
                assert any(host["fetched"] for host in answer), answer
    finally:
        console.terminate()
        output, _ = console.communicate(timeout=30)
    assert "Traceback" not in output, output


def test_scrapy_feed_formats_write_one_item_a_record_with_the_export_fields(demo):
    """Issue 28 (2): -O out.json wrote [] (bytes are not JSON), csv and xml wrote the internal fetch items."""
    project, crawl = demo
    records = exported(project)
    assert len(records) >= 5
    by_key = {record["key"]: record for record in records}
    fields = list(records[0])

    def check(items: list[dict]) -> None:
        assert sorted(item["key"] for item in items) == sorted(by_key)
        for item in items:
            assert list(item) == fields

    for name in ("out.json", "out.marshal", "out.pickle", "out.jsonl"):
        path = project.root / name
        if name == "out.json":
            items = json.loads(path.read_text())
        elif name == "out.jsonl":
            items = [json.loads(line) for line in path.read_text().splitlines()]
        elif name == "out.marshal":
            items = []
            with path.open("rb") as file:
                while True:
                    try:
                        items.append(marshal.load(file))
                    except EOFError:
                        break
        else:
            items = []
            with path.open("rb") as file:
                while True:
                    try:
                        items.append(pickle.load(file))
                    except EOFError:
                        break
        check(items)
        assert items == [by_key[item["key"]] for item in items], name  # the very values scrapy export writes

    csv_lines = (project.root / "out.csv").read_text().splitlines()
    assert csv_lines[0].split(",")[: len(fields)] == fields
    xml = ElementTree.parse(project.root / "out.xml").getroot()
    assert sorted(item.findtext("key") for item in xml) == sorted(by_key)
    assert all(item.findtext("url") in by_key[item.findtext("key")]["urls"] for item in xml)

    counts = dict(re.findall(r"Stored (\w+) feed \((\d+) items\)", crawl.stderr))
    assert counts == {name.split(".")[1]: str(len(records)) for name in FEED_FILES}, crawl.stderr[-3000:]
    assert " ERROR: " not in crawl.stderr and "Traceback" not in crawl.stderr


def test_crawl_without_a_job_is_one_usage_error(tmp_path):
    """Issue 28 (3): the usage error was followed by a RuntimeError traceback (Crawler.stats is not set yet)."""
    project = UserProject.create(tmp_path / "project", 1)
    result = project.scrapy("crawl", "focused")
    assert result.returncode == 2
    assert result.stderr.count("error: name the job to crawl: scrapy crawl focused -a job=NAME\n") == 1
    assert "Traceback" not in result.stderr and "Error" not in result.stderr.replace("error: name", "")


@pytest.mark.parametrize("command", ["serve", "trial", "export"])
def test_help_underlines_only_the_section_headings(tmp_path, command):
    """Issue 28 (8): an option's description wrapped after '(default:' came out as an underlined heading."""
    project = UserProject.create(tmp_path / "project", 1)
    for columns in ("80", "120"):
        result = subprocess.run(
            ["bash", "-c", f"COLUMNS={columns} scrapy {command} -h"],
            cwd=project.root, capture_output=True, text=True, env=user_environment(), timeout=60,
        )
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        headings = [lines[i - 1] for i in range(1, len(lines)) if lines[i] and set(lines[i]) <= set("=-")]
        assert set(headings) <= {"Usage", "Options", "Global Options"}, (columns, headings)


@pytest.mark.parametrize("command", [["status", "demo"], ["rank", "demo", "--top", "1"], ["export", "demo"]])
def test_a_reader_that_goes_away_ends_the_command_quietly(demo, command):
    """Issue 28 (9): `scrapy status J | head -8` ended in a BrokenPipeError traceback."""
    project, _ = demo
    process = project.popen(*command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    process.stdout.close()  # the reader is gone before the command writes anything, as when head has its lines
    _, errors = process.communicate(timeout=120)
    assert process.returncode == 0, errors
    assert "Traceback" not in errors and "BrokenPipe" not in errors, errors


def test_status_says_the_job_is_paused(demo):
    project, _ = demo
    assert project.scrapy("pause", "demo").returncode == 0
    try:
        status = project.scrapy("status", "demo")
        assert status.stdout.splitlines()[0].startswith("job demo (paused")
    finally:
        assert project.scrapy("resume", "demo").returncode == 0
    assert "paused" not in project.scrapy("status", "demo").stdout


def test_package_imports_from_any_directory(tmp_path):
    """README: `from combine_scrapy.operations.debug import score` works with the environment active, anywhere
    (scripts/setup.sh installs the package in editable mode)."""
    environment = {key: value for key, value in user_environment().items() if key != "PYTHONPATH"}
    result = subprocess.run(
        ["python", "-c", "import combine_scrapy; from combine_scrapy.operations.debug import score; "
                         "print(combine_scrapy.__file__)"],
        cwd=tmp_path, capture_output=True, text=True, env=environment, timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(PROJECT / "combine_scrapy" / "__init__.py")


def test_shell_banner_is_short_and_lists_score(demo):
    """Issue 28 (smaller): the banner printed the whole job object (about 4 KB) and did not list score."""
    project, _ = demo
    result = subprocess.run(
        [str(SCRAPY_PROGRAM), "shell", seed_of(project, "demo"), "--job", "demo", "--nolog"],
        input="print(score(response).relevant)\n", cwd=project.root, capture_output=True, text=True, timeout=120,
        env={**user_environment(), "SCRAPY_PYTHON_SHELL": "python"},
    )
    assert result.returncode == 0, result.stderr
    banner = [line for line in (result.stdout + result.stderr).splitlines() if line.startswith("[s]")]
    assert len("\n".join(banner)) < 1500, banner
    assert any("score(response): what the topic filter of job demo makes of the page" in line for line in banner)
    assert "True" in result.stdout


def test_trial_says_when_it_learns_no_rule(demo):
    """Issue 28 (smaller): `scrapy trial` wrote an empty rules file and said nothing about it."""
    project, _ = demo
    result = project.scrapy("trial", "demo", "--pages", "2")  # fewer pages than a rule needs
    assert result.returncode == 0, result.stderr
    assert "learned no rule from" in result.stdout and "(fetch more with --pages)" in result.stdout, result.stdout


def test_a_one_word_host_is_refused_as_a_seed(demo):
    """Issue 28 (smaller): `ftp://x` was accepted as a seed."""
    project, _ = demo
    result = project.scrapy("seed", "demo", "-", input="http://x/\nftp://x/pub/\n")
    assert result.returncode == 0, result.stderr
    assert "0 URLs accepted" in result.stdout and "refused, one_word_host: 2" in result.stdout, result.stdout


def test_rescored_records_come_in_export_since_and_oai_from(demo):
    """Issue 28 (7): after `scrapy reclassify` rescored records, `scrapy export J --since <before>` gave none of
    them, nor did OAI-PMH `from` (the datestamp stayed the crawl's check time). Runs last on the shared crawl."""
    project, _ = demo
    topic = project.root / "topics" / "demo" / "topicdefinition.txt"
    topic.write_text(topic.read_text().replace("50: sundews?=CP.Drosera", "60: sundews?=CP.Drosera"))
    since = math.ceil(time.time())
    time.sleep(since - time.time())  # every check of the crawl is before `since`, to the second OAI-PMH counts in
    reclassify = project.scrapy("reclassify", "demo")
    rescored = int(re.search(r"(\d+) rescored", reclassify.stdout)[1])
    assert reclassify.returncode == 0 and rescored >= 2, reclassify.stdout + reclassify.stderr
    moment = datetime.fromtimestamp(since, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    export = project.scrapy("export", "demo", "--since", moment)
    assert export.returncode == 0, export.stderr
    assert len(export.stdout.splitlines()) == rescored
    console, url = serve(project, "demo")
    try:
        status, listed = get_page(f"{url}/oai?verb=ListIdentifiers&metadataPrefix=oai_dc&from={moment}")
    finally:
        console.terminate()
        console.communicate(timeout=30)
    assert status == 200 and listed.count("<identifier>") == rescored, listed


@pytest.mark.services
def test_commands_read_the_stores_the_crawl_used(tmp_path):
    """Issue 28 (4): after a crawl with MYSQL_URL, `scrapy export J` exported "0 of 0 records" and `scrapy status J`
    showed 0 records: without the same -s they read the empty SQLite files."""
    job = f"stores{uuid.uuid4().hex[:8]}"
    port = free_port()
    project = UserProject.create(tmp_path / "project", port)
    shutil.copytree(project.root / "topics" / "demo", project.root / "topics" / job)
    try:
        with LoopbackWeb(demo_sites(port), port=port):
            crawl = project.scrapy("crawl", "focused", "-a", f"job={job}", "-s", f"MYSQL_URL={MYSQL_URL}",
                                   "-s", f"REDIS_URL={REDIS_URL}")
        assert crawl.returncode == 0, crawl.stderr[-3000:]
        recorded = json.loads((project.root / "data" / job / "stores.json").read_text())
        assert recorded == {"REDIS_URL": {"url": REDIS_URL, "password": False},
                            "MYSQL_URL": {"url": MYSQL_URL, "password": False}}

        status = project.scrapy("status", job)
        assert status.returncode == 0, status.stderr
        records = int(re.search(r"records: +(\d+) \(mysql://", status.stdout)[1])
        assert records >= 5 and f"records in MySQL at {MYSQL_URL}" in status.stderr
        assert re.search(r"URLs known: +[1-9]", status.stdout), status.stdout  # the Redis frontier
        assert not (project.root / "data" / job / "records.sqlite").exists()

        export = project.scrapy("export", job, "-o", f"{job}.jsonl")
        assert export.returncode == 0 and f"exported {records} of {records} records" in export.stderr, export.stderr
        assert len((project.root / f"{job}.jsonl").read_text().splitlines()) == records
        search = project.scrapy("search", job, "sundews")
        assert search.returncode == 0 and "1. " in search.stdout, search.stdout + search.stderr
    finally:
        drop_mysql_tables(table_prefix(job))
        delete_job_keys(REDIS_URL, job)


def test_train_an_svm_job_made_by_newjob(tmp_path):
    """Issue 28 (5): docs/configuration.md's `scrapy train JOB --positive plants/ --negative baseball/` on a job
    made by `scrapy newjob` failed: "no term rows" (svm reads no topic definition), then relative folders."""
    project = UserProject.create(tmp_path / "project", 1)
    assert project.scrapy("newjob", "sv").returncode == 0
    config = project.root / "topics" / "sv" / "combine.cfg"
    config.write_text(config.read_text() + "\nclassifyPlugIn = svm\n")
    for folder, text in (("plants", "Sundews and pitcher plants catch insects"), ("baseball", "The pitcher threw")):
        (project.root / folder).mkdir()
        for number in range(3):
            (project.root / folder / f"{number}.txt").write_text(f"{text} {number}.")
    result = project.scrapy("train", "sv", "--positive", "plants/", "--negative", "baseball/")
    assert result.returncode == 0, result.stderr
    assert (project.root / "topics" / "sv" / "svm-model.joblib").is_file()


def test_console_search_pages_through_every_record_found(tmp_path):
    """Issue 28 (6): the console's search showed "50 records" where 119 matched, with no paging; an empty query
    showed nothing; scores were raw numbers where `scrapy search` shows shares of the best."""
    project = UserProject.create(tmp_path / "project", 1)
    store = open_store("demo", project.root / "data")
    for number in range(119):
        store.store(store_record(f"http://127.0.0.2/{number}", text=f"sundews number {number} " + "sundews " * (number % 7)))
    store.close()
    console, url = serve(project, "demo")
    try:
        status, first = get_page(f"{url}/search?q=sundews")
        assert status == 200 and "119 records, 1 to 50 shown" in first
        assert first.count('<li><a class="title"') == 50 and 'rel="next"' in first and 'rel="prev"' not in first
        assert "relevance 100%" in first and "score " not in first
        status, last = get_page(f"{url}/search?q=sundews&page=3")
        assert status == 200 and "119 records, 101 to 119 shown" in last
        assert last.count('<li><a class="title"') == 19 and 'rel="prev"' in last and 'rel="next"' not in last
        status, empty = get_page(f"{url}/search?q=")
        assert status == 400 and "give words to search for" in empty
    finally:
        console.terminate()
        console.communicate(timeout=30)
