"""The job commands (seed, status, recycle, reharvest, stop, shell) run as a user runs them: `scrapy ...` in a subprocess."""

from __future__ import annotations

import os
import subprocess
import time
import uuid

import pytest
from conftest import PROJECT, SCRAPY, JobDir, free_port
from crawling import crawl_command
from harvesters import delete_job_keys
from scrapy.cmdline import execute
from scrapy.http import HtmlResponse

from combine_scrapy.job import load_job
from combine_scrapy.operations.control import harvesters_dir, running_harvesters, write_pid_file
from combine_scrapy.operations.debug import score
from combine_scrapy.operations.sampleweb import DEMO_HOSTS, LoopbackWeb, demo_sites

PLANTS, BASEBALL, GARDEN = DEMO_HOSTS
REDIS_URL = "redis://127.0.0.1:6379/0"
DEMO_TOPIC = (PROJECT / "topics" / "demo" / "topicdefinition.txt").read_text()
CONFIG = "WaitIntervalHost = 0.2\nclassifyPlugIn = plain\nAllowPrivateAddresses = 1\n"
COMMANDS = ("seed", "stop", "status", "recycle", "reharvest", "report")


def scrapy(job_dir: JobDir, *args: str, stdin: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """`scrapy ARGS` in the project, with the job's topics and data directories."""
    return subprocess.run(
        [*SCRAPY, *args, "-s", f"COMBINE_TOPICS_DIR={job_dir.topics}", "-s", f"COMBINE_DATA_DIR={job_dir.data}"],
        cwd=PROJECT, input=stdin, capture_output=True, text=True, timeout=timeout,
        env={**os.environ, "PYTHONPATH": str(PROJECT)},
    )


def scrapy_all(job_dir: JobDir, commands: list[list[str]]) -> list[subprocess.CompletedProcess]:
    """Several `scrapy` commands at once (each takes a second to start); their results in order."""
    processes = [
        subprocess.Popen(
            [*SCRAPY, *args, "-s", f"COMBINE_TOPICS_DIR={job_dir.topics}", "-s", f"COMBINE_DATA_DIR={job_dir.data}"],
            cwd=PROJECT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
            env={**os.environ, "PYTHONPATH": str(PROJECT)},
        )
        for args in commands
    ]
    results = []
    for args, process in zip(commands, processes):
        stdout, stderr = process.communicate(timeout=120)
        results.append(subprocess.CompletedProcess(args, process.returncode, stdout, stderr))
    return results


def marked_urls(job_dir: JobDir) -> set[str]:
    with job_dir.frontier() as db:
        return {url for (url,) in db.execute("SELECT url FROM url_states WHERE marked = 1")}


@pytest.fixture
def web():
    port = free_port()
    with LoopbackWeb(demo_sites(port), port=port) as web:
        yield web


@pytest.mark.crawl
def test_every_command_explains_itself(job_dir, capsys, monkeypatch):
    listing = subprocess.run(SCRAPY, cwd=PROJECT, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(PROJECT)})
    for command in (*COMMANDS, "shell"):
        assert f"\n  {command} " in listing.stdout
    monkeypatch.chdir(PROJECT)
    monkeypatch.setenv("SCRAPY_SETTINGS_MODULE", "combine_scrapy.settings")
    for command in (*COMMANDS, "shell"):  # in this process: the parser Scrapy builds, without a second's start-up each
        with pytest.raises(SystemExit) as exit:
            execute(["scrapy", command, "--help"])
        assert exit.value.code == 0
        usage = capsys.readouterr().out
        assert f"scrapy {command} [options]" in usage, usage
        if command == "report":
            assert "--output DIR" in usage and "--compare JOB" in usage
        if command == "shell":
            assert "--job JOB" in usage


@pytest.mark.crawl
def test_errors_are_one_line_with_a_non_zero_status(job_dir, tmp_path):
    job_dir.write(CONFIG, DEMO_TOPIC, ["http://127.0.0.2:1/"])
    cases = [
        (["status", "nosuch"], 2, "error: bad job: ", "no such job; known jobs: t"),
        (["seed"], 2, "error: name the job", "scrapy seed [options] <job> [FILE|-]"),
        (["status", "t", "--hosts", "many"], 2, "error: argument --hosts: invalid int value: 'many'", ""),
        (["seed", "t", str(tmp_path / "missing.txt")], 2, "error: cannot read seed file", "No such file or directory"),
        (["seed", "t", "--priority", "nan"], 2, "error: argument --priority: priority 'nan' is not a finite number", ""),
        (["seed", "t", "--priority", "inf"], 2, "error: argument --priority: priority 'inf' is not a finite number", ""),
        (["seed", "t", "--priority", "1e308"], 2, "error: argument --priority: priority '1e308' is out of range", ""),
        (["reharvest", "t", "-s", "REDIS_URL=redis://127.0.0.1:1/0"], 1, "error: cannot reach Redis at redis://127.0.0.1:1/0", "refused"),
        (["recycle", "t", "-s", "REDIS_URL=http://127.0.0.1/"], 2, "error: bad REDIS_URL 'http://127.0.0.1/'", ""),
        (["status", "t", "-s", "MYSQL_URL=mysql://root@127.0.0.1:1/combine"], 1, "error: cannot reach MySQL: ", "127.0.0.1"),
    ]
    for (args, status, start, detail), result in zip(cases, scrapy_all(job_dir, [args for args, *_ in cases])):
        lines = result.stderr.splitlines()
        assert result.returncode == status, (args, result.stderr)
        assert len(lines) == 1 and lines[0].startswith(start) and detail in lines[0], (args, result.stderr)
        assert result.stdout == "", args


@pytest.mark.crawl
def test_every_command_names_a_missing_job_in_one_line_and_exits_2(job_dir, tmp_path):
    job_dir.write(CONFIG, DEMO_TOPIC, ["http://127.0.0.2:1/"])
    missing = f"{job_dir.topics / 'nosuch'}: no such job; known jobs: t"
    commands = [
        ["crawl", "focused", "-a", "job=nosuch"], ["trial", "nosuch"], ["shell", "--job", "nosuch", "http://127.0.0.2:1/"],
        ["status", "nosuch"], ["train", "nosuch", "--positive", str(tmp_path), "--negative", str(tmp_path)],
    ]
    for args, result in zip(commands, scrapy_all(job_dir, commands)):
        expected = f"error: {missing}" if args[0] == "train" else f"error: bad job: {missing}"
        assert result.returncode == 2 and result.stderr.splitlines()[-1] == expected, (args, result.stderr[-2000:])
        assert "Traceback" not in result.stderr and result.stdout == "", args


@pytest.mark.crawl
def test_seed_loads_urls_from_a_file_and_from_stdin_through_the_url_rules(job_dir, tmp_path):
    job_dir.write(CONFIG + "<exclude>\nURL \\.zip$\n</exclude>\n", DEMO_TOPIC, ["http://127.0.0.2:1/"])
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(
        "# more start pages\n"
        "http://Example.ORG:80/a/../plants.html#top\n"   # canonicalized to http://example.org/plants.html
        "http://example.org/plants.html\n"               # the same URL again
        "http://example.org/files/all.zip\n"             # excluded by the job's rule
        "mailto:someone@example.org\n"                   # not a crawlable scheme
        "\n"
    )
    result = scrapy(job_dir, "seed", "t", str(seeds))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "job t: 2 URLs accepted (1 new, 1 already known), 2 refused"
    assert len(lines) == 3 and all(line.startswith("  refused, ") for line in lines[1:])
    assert marked_urls(job_dir) == {"http://example.org/plants.html"}

    again = scrapy(job_dir, "seed", "t", "-", stdin="http://example.org/plants.html\nhttp://example.net/\n")
    assert again.stdout.splitlines() == ["job t: 2 URLs accepted (1 new, 1 already known), 0 refused"]
    assert marked_urls(job_dir) == {"http://example.org/plants.html", "http://example.net/"}


@pytest.mark.crawl
def test_recycle_marks_the_links_of_stored_records_and_reharvest_marks_their_pages(job_dir, web):
    # AutoRecycleLinks = 0: the crawl keeps the seed page but follows none of its links.
    job_dir.write(CONFIG + "AutoRecycleLinks = 0\n", DEMO_TOPIC, [web.url(PLANTS)])
    job_dir.crawl()
    assert marked_urls(job_dir) == set()

    status = scrapy(job_dir, "status", "t")
    assert status.returncode == 0, status.stderr
    assert "  records:         1 (" in status.stdout
    assert "  pages fetched:   1, 1 relevant of 1 judged (harvest rate 100%)" in status.stdout
    assert "  harvesters:      0 running here" in status.stdout

    recycle = scrapy(job_dir, "recycle", "t")
    assert recycle.returncode == 0, recycle.stderr
    assert recycle.stdout.startswith("job t: 8 links of 1 records, 8 URLs newly marked, 0 refused"), recycle.stdout
    marked = marked_urls(job_dir)
    assert web.url(PLANTS, "/drosera.html") in marked and web.url(GARDEN) in marked
    assert web.url(PLANTS, "/nepenthes.html") in marked  # canonical: the #care fragment is gone

    status = scrapy(job_dir, "status", "t", "--hosts", "2")
    assert "  marked, due:     8" in status.stdout
    assert f"    {PLANTS}:{web.port}" in status.stdout and "hosts with marked URLs:" in status.stdout

    reharvest = scrapy(job_dir, "reharvest", "t")
    assert reharvest.returncode == 0, reharvest.stderr
    assert reharvest.stdout.splitlines() == ["job t: 1 URLs of 1 records marked for harvesting again"]
    assert web.url(PLANTS) in marked_urls(job_dir)


@pytest.mark.crawl
@pytest.mark.services
def test_seed_and_status_with_the_frontier_in_redis(job_dir):
    name = f"cmd-{uuid.uuid4().hex[:8]}"
    job_dir.name = name
    job_dir.write(CONFIG, DEMO_TOPIC, ["http://127.0.0.2:1/"])
    try:
        result = scrapy(job_dir, "seed", name, "-s", f"REDIS_URL={REDIS_URL}", stdin="http://example.org/\nhttp://example.org/b\n")
        assert result.stdout.splitlines() == [f"job {name}: 2 URLs accepted (2 new, 0 already known), 0 refused"]
        status = scrapy(job_dir, "status", name, "-s", f"REDIS_URL={REDIS_URL}")
        assert "  URLs known:      2 on 1 hosts" in status.stdout and "  marked, due:     2" in status.stdout
        assert not (job_dir.data / name / "frontier.sqlite").exists()
    finally:
        delete_job_keys(REDIS_URL, name)


@pytest.mark.crawl
def test_stop_ends_running_harvesters_cleanly(job_dir, web):
    job_dir.write("WaitIntervalHost = 60\nAllowPrivateAddresses = 1\n", DEMO_TOPIC, [web.url(PLANTS)])  # it waits a minute for each host's next page
    nothing = scrapy(job_dir, "stop", "t")
    assert nothing.stdout == "job t: no harvester is running\n"

    stale = write_pid_file(harvesters_dir(job_dir.data, "t"), 2**22 + 1)  # above any Linux pid: a crashed harvester's file
    harvester = subprocess.Popen(
        crawl_command(job_dir), cwd=PROJECT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(PROJECT)},
    )
    try:
        pid_file = harvesters_dir(job_dir.data, "t") / f"{harvester.pid}.pid"
        deadline = time.monotonic() + 60
        while not pid_file.exists() and harvester.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert pid_file.exists(), harvester.stderr.read() if harvester.poll() is not None else "no pid file"

        stop = scrapy(job_dir, "stop", "t")
        assert stop.returncode == 0, stop.stderr
        assert stop.stdout.splitlines() == [
            f"job t: stopping 1 harvester ({harvester.pid})",
            "job t: all harvesters stopped",
        ]
        stdout, stderr = harvester.communicate(timeout=30)
    finally:
        if harvester.poll() is None:
            harvester.kill()
    assert harvester.returncode == 0
    assert "== combine-scrapy: job t finished (shutdown) ==" in stdout
    assert "Traceback" not in stderr
    assert not pid_file.exists() and not stale.exists()
    assert running_harvesters(harvesters_dir(job_dir.data, "t")) == []


@pytest.mark.crawl
def test_shell_uses_the_project_settings_and_scores_a_page_with_the_job(job_dir, web):
    job_dir.write(CONFIG, DEMO_TOPIC, [web.url(PLANTS)])
    result = scrapy(job_dir, "shell", web.url(PLANTS), "--job", "t", "--nolog", "-c", "score(response)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[1:3] == [
        "title: 'Carnivorous plants of the world'",
        "relevant: yes  (score 2310, normalized 444.75, algorithm Std)",
    ]
    assert web.hits_for(PLANTS)[0].headers["User-Agent"] == "combine-scrapy/0.1"  # the job's, not Scrapy's


def test_score_helper_scores_a_response_as_the_crawl_would(job_dir):
    job_dir.write(CONFIG, DEMO_TOPIC, ["http://127.0.0.2:1/"])
    job = load_job("t", job_dir.topics)
    on_topic = HtmlResponse(
        "http://plants.example/", encoding="utf-8",
        body=b"<html><head><title>Carnivorous plants</title></head><body>Sundews and Venus flytrap.</body></html>",
    )
    off_topic = HtmlResponse(
        "http://baseball.example/", encoding="utf-8",
        body=b"<html><head><title>Baseball pitchers</title></head><body>The pitcher threw.</body></html>",
    )
    kept, dropped = score(on_topic, job), score(off_topic, "t", job_dir.topics)
    assert kept.relevant and kept.score > 0 and kept.title == "Carnivorous plants"
    assert not dropped.relevant
    text = str(kept)
    assert text.startswith("http://plants.example/ (job t)\n") and "matched terms: " in text and "class CP" in text
