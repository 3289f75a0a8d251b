"""A marked URL's priority follows the best page that links to it, on both frontiers.

The first page to link a URL used to fix its priority for good: a topical
page linked first from an irrelevant page waited behind hundreds of others.
"""

from __future__ import annotations

import multiprocessing
import random
import threading
import uuid

import pytest
from harvesters import delete_job_keys

from combine_scrapy.frontier.redis import RedisFrontier
from combine_scrapy.frontier.sqlite import SqliteFrontier
from combine_scrapy.job import Crawling, Fetching

REDIS_URL = "redis://127.0.0.1:6379/0"


def connect(kind: str, where: str, job: str):
    """One more connection to a frontier: the SQLite file ``where``, or job ``job`` in the Redis at ``where``."""
    return SqliteFrontier(where) if kind == "sqlite" else RedisFrontier.from_url(where, job)


@pytest.fixture(params=["sqlite", pytest.param("redis", marks=pytest.mark.services)])
def backend(request, tmp_path):
    """``(kind, where, job)`` of a fresh frontier on each backend; the Redis job's keys go afterwards."""
    job = f"test-raise-{uuid.uuid4().hex}"
    where = str(tmp_path / "frontier.sqlite") if request.param == "sqlite" else REDIS_URL
    yield request.param, where, job
    if request.param == "redis":
        delete_job_keys(REDIS_URL, job)


@pytest.fixture
def frontier(backend):
    opened = connect(*backend)
    yield opened
    opened.close()


def stored(frontier, urls: list[str]) -> dict[str, tuple[float, int]]:
    """``url -> (priority, distance)`` as the frontier keeps them (on Redis a queued URL's priority is its queue's
    score, its record's as of when it last left the queue)."""
    if isinstance(frontier, SqliteFrontier):
        return {url: (priority, distance) for url, priority, distance in frontier.connection.db.execute(
            "SELECT url, priority, distance FROM url_states")}
    from combine_scrapy.frontier.redis.connection import LIBRARY

    read = frontier.server.register_script(LIBRARY + """
local host, r = ARGV[2], load(ARGV[2], ARGV[1])
local score = redis.call('ZSCORE', P .. 'q:' .. host, queue_member(host, ARGV[1], r.seq))
return {num(score and best_priority(score) or r.priority), r.distance or 0}""")
    found = {}
    for url in urls:
        priority, distance = read(keys=[frontier.prefix_of(url.split("/")[2])], args=[url, url.split("/")[2]])
        found[url] = (float(priority), int(distance))
    return found


def fetch_order(frontier, strategy="BestFirst", limit=1):
    """Fetch everything marked, the best first, completing each URL at once."""
    order, now = [], 100.0
    while ready := frontier.ready(now, strategy, limit):
        for entry in ready:
            assert frontier.claim(entry, now, 60)
            frontier.complete(entry.url, entry.host, now=now, url_lock_until=now + 1e6, host_lock_until=now, status=200)
            order.append(entry.url)
        now += 1
    return order


def test_a_better_in_link_raises_a_marked_url(frontier):
    frontier.mark([("http://a/topical", "a", 0.1), ("http://a/index", "a", 0.5)], distance=3)
    assert frontier.mark([("http://a/topical", "a", 0.9)], distance=0) == (0, 0, 1)
    entry = frontier.ready(0, "BestFirst", 1)[0]
    assert (entry.url, entry.priority, entry.distance) == ("http://a/topical", 0.9, 0)


def test_a_worse_in_link_changes_nothing_and_distance_only_shrinks(frontier):
    frontier.mark([("http://a/1", "a", 0.8)], distance=1)
    assert frontier.mark([("http://a/1", "a", 0.2)], distance=4) == (0, 0, 0)
    assert frontier.mark([("http://a/1", "a", 0.2)], distance=0) == (0, 0, 1)   # closer, not better
    entry = frontier.ready(0)[0]
    assert (entry.priority, entry.distance) == (0.8, 0)


def test_the_raise_reorders_the_hosts_queue_and_the_round(frontier):
    frontier.mark([("http://a/1", "a", 0.5), ("http://a/2", "a", 0.5), ("http://b/1", "b", 0.4)])
    frontier.mark([("http://a/2", "a", 0.7), ("http://b/1", "b", 0.9)])
    assert fetch_order(frontier) == ["http://b/1", "http://a/2", "http://a/1"]


def test_fetched_and_leased_urls(frontier):
    """A fetched URL is never raised; a leased one takes the raise when it comes back."""
    frontier.mark([("http://a/done", "a", 0.1), ("http://b/leased", "b", 0.1), ("http://c/other", "c", 0.5)])
    for entry in frontier.ready(0):
        assert frontier.claim(entry, 0, 10)
    frontier.complete("http://a/done", "a", now=1, url_lock_until=1e9, host_lock_until=1, status=200)
    frontier.complete("http://c/other", "c", now=1, url_lock_until=1e9, host_lock_until=1, status=200)
    assert frontier.mark([("http://a/done", "a", 0.9), ("http://b/leased", "b", 0.9)]) == (0, 0, 1)
    assert frontier.statuses(["http://a/done"]) == {"http://a/done": 200}
    assert frontier.ready(5) == []                                   # still leased
    assert [(e.url, e.priority) for e in frontier.ready(10)] == [("http://b/leased", 0.9)]


def test_an_irrelevant_first_in_link_no_longer_decides_the_order(frontier):
    """The issue's case: a topical page first linked at 0.335 by an irrelevant page, then by a relevant one."""
    frontier.mark([(f"http://index/{i}", "index", 0.5) for i in range(20)] + [("http://t/topical", "t", 0.335)])
    frontier.mark([("http://t/topical", "t", 0.95)])
    assert fetch_order(frontier)[0] == "http://t/topical"


def _mark_many(kind: str, where: str, job: str, seed: int, urls: list[str], rounds: int) -> None:
    """One harvester's marks: every URL over and over, each time with a random priority and distance."""
    frontier = connect(kind, where, job)
    rnd = random.Random(seed)
    for _ in range(rounds):
        batch = rnd.sample(urls, len(urls))
        frontier.mark([(url, "h", rnd.random()) for url in batch], distance=rnd.randrange(5))
    frontier.close()


def _expected_marks(seeds: range, urls: list[str], rounds: int) -> dict[str, tuple[float, int]]:
    """What ``_mark_many`` with these seeds leaves, started from priority 0 and distance 9."""
    expected = dict.fromkeys(urls, (0.0, 9))
    for seed in seeds:
        rnd = random.Random(seed)
        for _ in range(rounds):
            batch = rnd.sample(urls, len(urls))
            priorities = [rnd.random() for _ in batch]
            distance = rnd.randrange(5)
            for url, priority in zip(batch, priorities):
                best, closest = expected[url]
                expected[url] = (max(best, priority), min(closest, distance))
    return expected


def test_concurrent_harvesters_keep_the_best_priority(backend, frontier):
    """Four processes mark the same URLs with different priorities at once: each URL ends with the highest
    priority and the lowest distance, no update lost; the one fetched before is never raised."""
    urls = [f"http://h/{i}" for i in range(40)]
    frontier.mark([(url, "h", 0.0) for url in urls], distance=9)
    fetched = frontier.ready(0)[0]
    assert frontier.claim(fetched, 0, 60)
    frontier.complete(fetched.url, "h", now=0, url_lock_until=1e9, host_lock_until=0, status=200)
    seeds, rounds = range(4), 30
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_mark_many, args=(*backend, seed, urls, rounds)) for seed in seeds]
    try:
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(60)
            assert worker.exitcode == 0
    finally:
        for worker in workers:
            if worker.is_alive():
                worker.kill()
    expected = _expected_marks(seeds, urls, rounds)
    expected[fetched.url] = (0.0, 9)
    assert stored(frontier, urls) == expected
    assert fetch_order(frontier, limit=None) == sorted(
        (url for url in urls if url != fetched.url), key=lambda url: (-expected[url][0], urls.index(url))
    )


def test_threads_raising_one_url_keep_the_max(backend, frontier):
    """Four threads, each on its own connection, raise one URL at the same moments: the highest stays."""
    frontier.mark([("http://h/1", "h", 0.0)])
    threads_count = 4
    barrier = threading.Barrier(threads_count)

    def raise_many(number: int) -> None:
        connection = connect(*backend)
        barrier.wait()
        for step in range(100):
            connection.mark([("http://h/1", "h", (step * threads_count + number) / 1000)])
        connection.close()

    threads = [threading.Thread(target=raise_many, args=(n,)) for n in range(threads_count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert frontier.ready(0)[0].priority == 399 / 1000


def test_harvest_marks_at_a_distance_and_counts_raises(tmp_path):
    from collections import Counter
    from types import SimpleNamespace

    from combine_scrapy.access.urls import UrlRules
    from combine_scrapy.policy import CrawlPolicy

    class Stats(Counter):
        def inc_value(self, key, count=1):
            self[key] += count

    frontier = SqliteFrontier(tmp_path / "frontier.sqlite")
    policy = CrawlPolicy(SimpleNamespace(crawling=Crawling(strategy="BestFirst"), url_rules=UrlRules()), frontier,
                         stats=Stats())
    assert policy.mark([("http://a.example/1", 0.2), ("http://a.example/1#part", 0.6)], distance=2)[0] == 1
    policy.mark([("http://a.example/1", 0.4)], distance=1)
    entry = frontier.ready(0)[0]
    assert (entry.priority, entry.distance, policy.stats["frontier/raised"]) == (0.6, 1, 1)
    frontier.close()


def test_the_distance_travels_from_the_frontier_to_the_fetch():
    from types import SimpleNamespace

    from scrapy.http import HtmlResponse

    from combine_scrapy.frontier import FrontierEntry
    from combine_scrapy.spiders.focused import FocusedSpider

    spider = FocusedSpider(job="t")
    spider.context = SimpleNamespace(job=SimpleNamespace(fetching=Fetching(get_if_modified_since=False, timeout=30)))
    spider.crawler = SimpleNamespace(stats=SimpleNamespace(inc_value=lambda *args, **kwargs: None,
                                                           get_value=lambda *args, **kwargs: 1))
    request = spider.request_for(FrontierEntry("http://a.example/", "a.example", 0.5, distance=3))
    [fetch] = spider.parse(HtmlResponse(request.url, body=b"<html></html>", request=request))
    assert fetch.distance == 3
