"""Several harvester processes share one frontier in the real Redis server."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import uuid

import pytest
from conftest import PROJECT, SCRAPY, JobDir, free_port
from harvesters import (
    TOPIC,
    GatedPage,
    assert_clean_exit,
    delete_job_keys,
    expected_urls,
    harvester_command,
    host_gaps,
    hosts_web,
    page_fetches,
    redis_counts,
    start,
    stored_urls,
    wait_for,
    wait_until_opened,
)

from combine_scrapy.operations.sampleweb import LoopbackWeb

pytestmark = [pytest.mark.crawl, pytest.mark.services]  # job_dir clears the job's Redis keys

REDIS_URL = "redis://127.0.0.1:6379/0"
HOSTS = [f"127.0.0.{n}" for n in range(31, 37)]
WAIT = 0.5
# Enough pages that the crawl outlasts Scrapy's 5 s idle heartbeat, by which a waiting harvester looks again.
PAGES = 20


@pytest.fixture
def job_dir(tmp_path):
    job = JobDir(topics=tmp_path / "topics", data=tmp_path / "data", name=f"redis-{uuid.uuid4().hex[:8]}")
    yield job
    delete_job_keys(REDIS_URL, job.name)


def gated_web(port: int) -> tuple[dict, threading.Event]:
    sites = hosts_web(HOSTS, port, PAGES)
    gate = threading.Event()
    sites[HOSTS[0]]["/robots.txt"] = GatedPage("User-agent: *\nAllow: /\n", gate)
    return sites, gate


def test_four_harvesters_from_the_harvest_command_share_the_frontier_and_keep_the_host_interval(tmp_path, job_dir):
    port = free_port(HOSTS[0])
    sites, gate = gated_web(port)
    logs = [tmp_path / "logs" / f"harvester-{n}.log" for n in range(1, 5)]
    with LoopbackWeb(sites, port=port) as web:
        job_dir.write(f"WaitIntervalHost = {WAIT}\nAllowPrivateAddresses = 1\n", TOPIC, [web.url(HOSTS[0])])
        command = [
            *SCRAPY, "harvest", job_dir.name, "-n", "4", "--log-dir", str(tmp_path / "logs"),
            "-s", f"COMBINE_TOPICS_DIR={job_dir.topics}", "-s", f"COMBINE_DATA_DIR={job_dir.data}",
            "-s", f"REDIS_URL={REDIS_URL}", "-s", "COMBINE_IDLE_HORIZON=90",  # > the 60 s lease: wait for URLs other harvesters hold
        ]
        harvest = subprocess.Popen(
            command, cwd=PROJECT, env={**os.environ, "PYTHONPATH": str(PROJECT)},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        wait_for(lambda: all(log.exists() for log in logs) or harvest.poll() is not None, 60, "four harvester logs")
        wait_until_opened(logs, [harvest] * 4)
        gate.set()
        stdout, stderr = harvest.communicate(timeout=150)
        hits = list(web.hits)
    assert harvest.returncode == 0, stdout + stderr
    assert stdout.count("started, pid") == 4 and stdout.count("ended with status 0") == 4, stdout
    outputs = [log.read_text() for log in logs]
    assert not [text for text in outputs if "Traceback" in text]
    fetched = page_fetches(hits)
    assert set(fetched) == expected_urls(sites)
    assert max(fetched.values()) == 1                                     # every URL fetched exactly once
    assert sum("'scheduler/dequeued/frontier'" in text for text in outputs) >= 3  # the work was shared
    for host, gaps in host_gaps(hits).items():
        assert all(gap >= WAIT * 0.95 for gap in gaps), (host, gaps)     # no two requests to a host within WaitIntervalHost
    assert redis_counts(REDIS_URL, job_dir.name)["marked"] == 0


def test_harvest_command_refuses_several_harvesters_without_redis(job_dir):
    job_dir.write("", TOPIC, ["http://127.0.0.31:1/"])
    result = job_dir.scrapy("harvest", job_dir.name, "-n", "2")
    assert result.returncode == 2
    assert "need a shared frontier: set REDIS_URL" in result.stderr


def test_a_harvester_killed_mid_crawl_loses_nothing(tmp_path, job_dir):
    """SIGKILL one of three harvesters: its leases run out, the others fetch what it held, every URL ends done once."""
    port = free_port(HOSTS[0])
    sites, gate = gated_web(port)
    logs = [tmp_path / f"harvester{n}.log" for n in range(3)]
    with LoopbackWeb(sites, port=port) as web:
        job_dir.write(f"WaitIntervalHost = {WAIT}\nAllowPrivateAddresses = 1\n", TOPIC, [web.url(HOSTS[0])])
        command = harvester_command(job_dir, REDIS_URL, "COMBINE_LEASE_SECONDS=3", "COMBINE_IDLE_HORIZON=30")
        harvesters = [start(command, log) for log in logs]
        wait_until_opened(logs, harvesters)
        gate.set()
        wait_for(lambda: len(web.hits) >= 40, 60, "40 fetches")
        harvesters[0].send_signal(signal.SIGKILL)
        for harvester in harvesters:
            harvester.wait(timeout=120)
        hits = list(web.hits)
    assert harvesters[0].returncode == -signal.SIGKILL
    for harvester, log in zip(harvesters[1:], logs[1:]):
        assert_clean_exit(harvester, log)
    fetched = page_fetches(hits)
    assert set(fetched) == expected_urls(sites)                          # nothing lost
    # Only a URL the dead harvester held (at most one per host) can have been fetched a second time.
    assert sum(count - 1 for count in fetched.values()) <= len(HOSTS)
    counts = redis_counts(REDIS_URL, job_dir.name)
    assert counts["marked"] == 0 and counts["done"] == counts["urls"] == len(expected_urls(sites))
    urls = stored_urls(job_dir)
    assert len(urls) == len(set(urls)) == len(expected_urls(sites))  # every page on a record, once
    for host, gaps in host_gaps(hits).items():
        assert all(gap >= WAIT * 0.95 for gap in gaps), (host, gaps)
