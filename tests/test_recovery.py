"""A harvester killed at any moment, or a Redis restarted under it, loses nothing."""

from __future__ import annotations

import signal
import subprocess
import time

import pytest
from conftest import free_port
from harvesters import (
    TOPIC,
    assert_clean_exit,
    expected_urls,
    harvester_command,
    host_gaps,
    hosts_web,
    page_fetches,
    redis_counts,
    start,
    stored_urls,
    wait_for,
)

from combine_scrapy.operations.sampleweb import LoopbackWeb

pytestmark = pytest.mark.crawl

HOSTS = [f"127.0.0.{n}" for n in range(41, 45)]
WAIT = 0.3


def test_sqlite_harvester_killed_mid_crawl_resumes_and_fetches_everything(tmp_path, job_dir):
    """SIGKILL the one harvester, start it again: the URLs it held come back when their lease ends."""
    port = free_port(HOSTS[0])
    sites = hosts_web(HOSTS, port, 15)
    with LoopbackWeb(sites, port=port) as web:
        job_dir.write(f"WaitIntervalHost = {WAIT}\nAllowPrivateAddresses = 1\n", TOPIC, [web.url(HOSTS[0])])
        command = harvester_command(job_dir, None, "COMBINE_LEASE_SECONDS=2")
        first = start(command, tmp_path / "first.log")
        wait_for(lambda: len(web.hits) >= 25 or first.poll() is not None, 60, "25 fetches")
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
        killed_at = len(web.hits)
        second = start(command, tmp_path / "second.log")
        second.wait(timeout=120)
        hits = list(web.hits)
    assert first.returncode == -signal.SIGKILL
    log = assert_clean_exit(second, tmp_path / "second.log")
    assert killed_at < len(expected_urls(sites)) and "'scheduler/dequeued/frontier'" in log  # the second run had work left
    fetched = page_fetches(hits)
    assert set(fetched) == expected_urls(sites)
    assert sum(count - 1 for count in fetched.values()) <= len(HOSTS)  # at most the URLs in flight (one a host)
    frontier = job_dir.frontier()
    assert frontier.execute("SELECT COUNT(*) FROM urls WHERE marked = 1").fetchone()[0] == 0
    assert frontier.execute("SELECT COUNT(*) FROM url_states WHERE status IS NOT NULL").fetchone()[0] == len(expected_urls(sites))
    urls = stored_urls(job_dir)
    assert len(urls) == len(set(urls)) == len(expected_urls(sites))  # every page on a record, once
    for host, gaps in host_gaps(hits).items():
        assert all(gap >= WAIT * 0.95 for gap in gaps), (host, gaps)


@pytest.fixture
def private_redis(tmp_path):
    """A Redis of this test's own (append-only file on), which the test may stop and start again."""
    port = free_port("127.0.0.1")
    command = [
        "redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
        "--appendonly", "yes", "--appendfsync", "always", "--dir", str(tmp_path),
    ]

    class Server:
        url = f"redis://127.0.0.1:{port}/0"

        def start(self):
            self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
            wait_for(self._answers, 10, "Redis to start")

        def stop(self):
            self.process.terminate()  # a clean shutdown: the append-only file is complete
            self.process.wait(timeout=10)

        def _answers(self):
            import redis
            try:
                return redis.Redis.from_url(self.url).ping()
            except redis.ConnectionError:
                return False

    server = Server()
    server.start()
    yield server
    if server.process.poll() is None:
        server.stop()


@pytest.mark.services
def test_harvesters_wait_out_a_redis_restart(tmp_path, job_dir, private_redis):
    port = free_port(HOSTS[0])
    sites = hosts_web(HOSTS, port, 15)
    logs = [tmp_path / f"harvester{n}.log" for n in range(2)]
    with LoopbackWeb(sites, port=port) as web:
        job_dir.write(f"WaitIntervalHost = {WAIT}\nAllowPrivateAddresses = 1\n", TOPIC, [web.url(HOSTS[0])])
        command = harvester_command(job_dir, private_redis.url, "COMBINE_IDLE_HORIZON=90")
        harvesters = [start(command, log) for log in logs]
        wait_for(lambda: len(web.hits) >= 20, 60, "20 fetches")
        private_redis.stop()
        down_at = len(web.hits)
        time.sleep(5)
        private_redis.start()
        for harvester in harvesters:
            harvester.wait(timeout=120)
        hits = list(web.hits)
    texts = [assert_clean_exit(harvester, log) for harvester, log in zip(harvesters, logs)]
    assert any("Redis unreachable" in text for text in texts)
    assert any("Redis reachable again" in text for text in texts)
    assert down_at < len(hits)                                           # the crawl went on after the restart
    fetched = page_fetches(hits)
    assert set(fetched) == expected_urls(sites)
    counts = redis_counts(private_redis.url, job_dir.name)
    assert counts["marked"] == 0 and counts["done"] == counts["urls"] == len(expected_urls(sites))
    urls = stored_urls(job_dir)
    assert len(urls) == len(set(urls)) == len(expected_urls(sites))  # every page on a record, once
