"""Deployment: the project goes to a real scrapyd with scrapyd-deploy and a job runs through schedule.json."""

from __future__ import annotations

import configparser
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

import pytest
from conftest import PROJECT, JobDir, free_port

from combine_scrapy.operations.sampleweb import DEMO_HOSTS, LoopbackWeb, demo_sites

pytestmark = pytest.mark.crawl

PLANTS = DEMO_HOSTS[0]
BIN = Path(sys.executable).parent
DEMO_TOPIC = (PROJECT / "topics" / "demo" / "topicdefinition.txt").read_text()


def call(base: str, endpoint: str, data: list[tuple[str, str]] | None = None) -> dict:
    body = urllib.parse.urlencode(data).encode() if data is not None else None
    with urllib.request.urlopen(f"{base}/{endpoint}", data=body, timeout=30) as response:
        return json.load(response)


def wait_for(check, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answer = check()
        if answer:
            return answer
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def scrapyd(tmp_path):
    """A scrapyd of its own on a free loopback port, in a temporary directory (its eggs, logs, queues)."""
    port = free_port("127.0.0.1")
    home = tmp_path / "scrapyd"
    home.mkdir()
    (home / "scrapyd.conf").write_text(
        f"[scrapyd]\nbind_address = 127.0.0.1\nhttp_port = {port}\npoll_interval = 0.2\nmax_proc = 1\n"
        "eggs_dir = eggs\nlogs_dir = logs\ndbs_dir = dbs\nitems_dir =\n"
    )
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}  # the project comes from the egg only
    with (home / "scrapyd.log").open("w") as log:
        server = subprocess.Popen([BIN / "scrapyd"], cwd=home, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"

    def up():
        try:
            return call(base, "daemonstatus.json")["status"] == "ok"
        except OSError:
            assert server.poll() is None, (home / "scrapyd.log").read_text()
            return False

    try:
        wait_for(up, 30, "scrapyd to answer")
        yield base, home
    finally:
        server.terminate()
        server.wait(timeout=30)


def deployable_copy(tmp_path: Path, url: str) -> Path:
    """The project (package, pyproject.toml and scrapy.cfg) in a directory of its own, its [deploy:local] target
    pointed at the test's scrapyd; scrapyd-deploy writes setup.py and build files there, not in the tree."""
    copy = tmp_path / "project"
    shutil.copytree(PROJECT / "combine_scrapy", copy / "combine_scrapy", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(PROJECT / "pyproject.toml", copy)
    config = configparser.ConfigParser()
    config.read(PROJECT / "scrapy.cfg")
    assert config["settings"]["default"] == "combine_scrapy.settings"
    assert urllib.parse.urlsplit(config["deploy:local"]["url"]).hostname == "127.0.0.1"
    config["deploy:local"]["url"] = url
    with (copy / "scrapy.cfg").open("w") as out:
        config.write(out)
    return copy


def test_deploy_to_scrapyd_and_run_a_job_through_schedule_json(scrapyd, tmp_path):
    base, home = scrapyd
    project = deployable_copy(tmp_path, base + "/")
    deploy = subprocess.run(
        [BIN / "scrapyd-deploy", "local", "--version", "1"], cwd=project, capture_output=True, text=True, timeout=120,
    )
    assert deploy.returncode == 0, deploy.stderr
    answer = json.loads(deploy.stdout)
    assert answer["status"] == "ok" and answer["project"] == "combine_scrapy" and answer["spiders"] == 1
    assert call(base, "listspiders.json?project=combine_scrapy")["spiders"] == ["focused"]
    with zipfile.ZipFile(home / "eggs" / "combine_scrapy" / "1.egg") as egg:
        files = set(egg.namelist())
        metadata = egg.read("EGG-INFO/PKG-INFO").decode()
    assert "Name: combine-scrapy" in metadata and "Version: 0.1" in metadata  # pyproject.toml's, not scrapyd-deploy's
    assert {
        "combine_scrapy/records/export/schemas/oai_dc.xsd", "combine_scrapy/operations/console/schemas/OAI-PMH.xsd",
        "combine_scrapy/operations/console/static/console.js", "combine_scrapy/frontier/lua/library.lua",
        "combine_scrapy/settings.py",
    } <= files
    assert not any(name.startswith("tests/") for name in files)

    job_dir = JobDir(topics=tmp_path / "topics", data=tmp_path / "data", name="glass")
    port = free_port()
    with LoopbackWeb(demo_sites(port), port=port) as web:
        job_dir.write("WaitIntervalHost = 0.2\nAllowPrivateAddresses = 1\n", DEMO_TOPIC, [web.url(PLANTS)])
        scheduled = call(base, "schedule.json", [
            ("project", "combine_scrapy"), ("spider", "focused"), ("job", "glass"),
            ("setting", f"COMBINE_TOPICS_DIR={job_dir.topics.resolve()}"),
            ("setting", f"COMBINE_DATA_DIR={job_dir.data.resolve()}"),
        ])
        assert scheduled["status"] == "ok", scheduled
        job_id = scheduled["jobid"]

        def finished():
            jobs = call(base, "listjobs.json?project=combine_scrapy")
            return next((job for job in jobs["finished"] if job["id"] == job_id), None)

        wait_for(finished, 90, "the scrapyd job to finish")
    log = (home / "logs" / "combine_scrapy" / "focused" / f"{job_id}.log").read_text()
    assert "Spider closed (finished)" in log and "Traceback" not in log, log[-3000:]
    with job_dir.records() as db:
        titles = {title for (title,) in db.execute("SELECT title FROM records")}
    assert "Carnivorous plants of the world" in titles and len(titles) >= 5
    pages_served = len([hit for hit in web.hits if hit.path != "/robots.txt"])
    logged = sqlite3.connect(job_dir.data / "glass" / "harvest_log.sqlite").execute("SELECT COUNT(status) FROM fetches")
    assert logged.fetchone()[0] == pages_served >= 8
