"""A loopback web of several hosts and harvester processes to crawl it: shared by the scale-out and recovery tests."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path

from conftest import PROJECT, JobDir
from crawling import crawl_command

from combine_scrapy.frontier.redis import RedisFrontier
from combine_scrapy.operations.sampleweb import Hit, Page

TOPIC = "100: carnivorous plants=CP\n"


class GatedPage(Page):
    """A page served only once ``gate`` is set: the crawl starts when every harvester is up."""

    def __init__(self, body: str, gate: threading.Event):
        super().__init__(body, headers={"Content-Type": "text/plain"})
        self.gate = gate

    def payload(self) -> bytes:
        self.gate.wait(timeout=60)
        return super().payload()


def hosts_web(hosts: list[str], port: int, pages: int) -> dict[str, dict[str, Page]]:
    """Every host: a home page linking its ``pages`` topical pages and the other hosts' home pages."""
    paths = [f"/p{i}.html" for i in range(pages)]
    sites = {}
    for host in hosts:
        others = "".join(f'<a href="http://{other}:{port}/">{other}</a> ' for other in hosts if other != host)
        own = "".join(f'<a href="{path}">page {path}</a> ' for path in paths)
        site = {"/": Page(f"<html><head><title>Carnivorous plants at {host}</title></head><body>{own}{others}</body></html>")}
        for path in paths:
            site[path] = Page(f"<html><head><title>Carnivorous plants {host}{path}</title></head><body>Sundews.</body></html>")
        sites[host] = site
    return sites


def expected_urls(sites: dict[str, dict[str, Page]]) -> set[tuple[str, str]]:
    return {(host, path) for host, site in sites.items() for path in site if path != "/robots.txt"}


def page_fetches(hits: list[Hit]) -> Counter:
    return Counter((hit.host, hit.path) for hit in hits if hit.path != "/robots.txt")


def host_gaps(hits: list[Hit]) -> dict[str, list[float]]:
    """Seconds between consecutive requests to each host."""
    times: dict[str, list[float]] = {}
    for hit in hits:
        times.setdefault(hit.host, []).append(hit.time)
    return {host: [b - a for a, b in zip(sorted(ts), sorted(ts)[1:])] for host, ts in times.items()}


def harvester_command(job_dir: JobDir, redis_url: str | None, *settings: str) -> list[str]:
    """The job's crawl with ``settings`` (NAME=VALUE), sharing the frontier at ``redis_url`` when one is given."""
    if redis_url:
        settings = (f"REDIS_URL={redis_url}", *settings)
    return crawl_command(job_dir, *(word for setting in settings for word in ("-s", setting)))


def start(command: list[str], log: Path) -> subprocess.Popen:
    with log.open("w") as stderr:
        return subprocess.Popen(
            command, cwd=PROJECT, env={**os.environ, "PYTHONPATH": str(PROJECT)},
            stdout=subprocess.DEVNULL, stderr=stderr,
        )


def wait_for(condition, timeout: float = 60, what: str = "condition"):
    """What ``condition()`` gave once it was true; AssertionError after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def wait_until_opened(logs: list[Path], processes: list[subprocess.Popen], timeout: float = 60) -> None:
    """Return when every harvester has logged 'Spider opened' (or exited)."""
    wait_for(
        lambda: all(p.poll() is not None or (log.exists() and "Spider opened" in log.read_text()) for log, p in zip(logs, processes)),
        timeout, "every harvester to open",
    )


def assert_clean_exit(process: subprocess.Popen, log: Path) -> str:
    text = log.read_text()
    assert process.returncode == 0, text[-3000:]
    assert "Traceback" not in text, text[-3000:]
    return text


def stored_urls(job_dir: JobDir) -> list[str]:
    """The URLs on the job's records (a near-duplicate page joins a record: its URL is there, not a record of its own)."""
    return [url for (url,) in job_dir.records().execute("SELECT url FROM record_urls")]


def redis_counts(redis_url: str, job: str, **settings) -> dict[str, int]:
    """The shared frontier's counters: URLs known, marked (still to fetch), done."""
    frontier = RedisFrontier.from_settings({"REDIS_URL": redis_url, **settings}, job)
    try:
        counts = frontier.counts(time.time())
    finally:
        frontier.server.close()
    return {"urls": counts.urls, "marked": counts.marked, "done": counts.done}


def delete_job_keys(redis_url: str, job: str, **settings) -> None:
    """Remove every Redis key of the job, so a test leaves nothing behind on the shared server."""
    frontier = RedisFrontier.from_settings({"REDIS_URL": redis_url, **settings}, job)
    try:
        frontier.delete_all()
    finally:
        frontier.server.close()
