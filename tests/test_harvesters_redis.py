"""Several harvester processes share one frontier in the real Redis server."""

from __future__ import annotations

import os
import subprocess
import threading
import time
import uuid
from collections import Counter

import pytest
import redis

from combine_scrapy.sampleweb import LoopbackWeb, Page
from conftest import PROJECT, SCRAPY, JobDir, free_port

REDIS_URL = "redis://127.0.0.1:6379/0"
HOSTS = [f"127.0.0.{n}" for n in range(31, 37)]
WAIT = 0.5
# Enough pages that the crawl outlasts Scrapy's 5 s idle heartbeat, by which a waiting harvester looks again.
PAGES = [f"/p{i}.html" for i in range(20)]


class GatedPage(Page):
    """A page served only once ``gate`` is set: the crawl starts when every harvester is up."""

    def __init__(self, body: str, gate: threading.Event):
        super().__init__(body, headers={"Content-Type": "text/plain"})
        self.gate = gate

    def payload(self) -> bytes:
        self.gate.wait(timeout=60)
        return super().payload()


def wait_until_opened(logs: list, harvesters: list[subprocess.Popen], timeout: float = 60) -> None:
    """Return when every harvester has logged 'Spider opened' (or exited)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(harvester.poll() is not None or "Spider opened" in log.read_text() for log, harvester in zip(logs, harvesters)):
            return
        time.sleep(0.1)


def site(port: int, host: str) -> dict[str, Page]:
    others = "".join(f'<a href="http://{other}:{port}/">{other}</a> ' for other in HOSTS if other != host)
    own = "".join(f'<a href="{path}">page {path}</a> ' for path in PAGES)
    pages = {"/": Page(f"<html><head><title>Carnivorous plants at {host}</title></head><body>{own}{others}</body></html>")}
    for path in PAGES:
        pages[path] = Page(f"<html><head><title>Carnivorous plants {path}</title></head><body>Sundews.</body></html>")
    return pages


@pytest.fixture
def job_name():
    name = f"redis-{uuid.uuid4().hex[:8]}"
    yield name
    server = redis.Redis.from_url(REDIS_URL)
    for key in server.scan_iter(match=f"combine:{{{name}}}:*", count=1000):
        server.delete(key)


def test_harvesters_share_the_frontier_and_keep_the_host_interval(tmp_path, job_name):
    job_dir = JobDir(topics=tmp_path / "topics", data=tmp_path / "data", name=job_name)
    port = free_port(HOSTS[0])
    sites = {host: site(port, host) for host in HOSTS}
    gate = threading.Event()
    sites[HOSTS[0]]["/robots.txt"] = GatedPage("User-agent: *\nAllow: /\n", gate)
    with LoopbackWeb(sites, port=port) as web:
        job_dir.write(f"WaitIntervalHost = {WAIT}\n", "100: carnivorous plants=CP\n", [web.url(HOSTS[0])])
        command = [
            *SCRAPY, "crawl", "focused", "-a", f"job={job_name}",
            "-s", f"COMBINE_TOPICS_DIR={job_dir.topics}", "-s", f"COMBINE_DATA_DIR={job_dir.data}",
            "-s", f"REDIS_URL={REDIS_URL}", "-s", "COMBINE_IDLE_HORIZON=90",  # > the 60 s lease: wait for URLs other harvesters hold
        ]
        env = {**os.environ, "PYTHONPATH": str(PROJECT)}
        logs = [tmp_path / f"harvester{n}.log" for n in range(3)]
        harvesters = []
        for log in logs:
            with log.open("w") as stderr:
                harvesters.append(subprocess.Popen(command, cwd=PROJECT, env=env, stdout=subprocess.DEVNULL, stderr=stderr))
        wait_until_opened(logs, harvesters)
        gate.set()
        for harvester in harvesters:
            harvester.wait(timeout=120)
        hits = list(web.hits)
    outputs = [(None, log.read_text()) for log in logs]
    for harvester, (_, stderr) in zip(harvesters, outputs):
        assert harvester.returncode == 0, stderr[-3000:]
        assert "Traceback" not in stderr, stderr[-3000:]
    fetched = Counter((hit.host, hit.path) for hit in hits if hit.path != "/robots.txt")
    assert set(fetched) == {(host, path) for host in HOSTS for path in ["/", *PAGES]}
    assert max(fetched.values()) == 1                              # every URL fetched exactly once
    assert sum("'scheduler/dequeued/frontier'" in stderr for _, stderr in outputs) >= 2  # the work was shared
    for host in HOSTS:
        times = sorted(hit.time for hit in hits if hit.host == host)
        gaps = [b - a for a, b in zip(times, times[1:])]
        assert all(gap >= WAIT * 0.95 for gap in gaps), (host, gaps)
