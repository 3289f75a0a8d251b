"""The frontier's contract, run on every backend (SQLite, the real Redis): rounds, locks, leases, strategies,
robots, links, counts. Then the lock rules, and what only the SQLite file does (upgrades, rows deleted by hand).

tests/test_frontier_redis.py and tests/test_frontier_cluster.py hold what only Redis does; the cluster
runs this contract too, on its own ``connect`` fixture.
"""

from __future__ import annotations

import uuid
from types import SimpleNamespace

import pytest
from harvesters import delete_job_keys

from combine_scrapy.frontier import (
    FrontierCounts,
    FrontierEntry,
    HostCounts,
    Locks,
    Marking,
    Outcome,
    locks_for,
    outcome_for_status,
    seed_priority,
)
from combine_scrapy.frontier.redis import RedisFrontier
from combine_scrapy.frontier.sqlite import SqliteFrontier
from combine_scrapy.frontier.strategy import YIELD_DECAY
from combine_scrapy.job import Crawling, LockIntervals

REDIS_URL = "redis://127.0.0.1:6379/0"


@pytest.fixture(params=["sqlite", pytest.param("redis", marks=pytest.mark.services)])
def connect(request, tmp_path):
    """``connect(**options)``: one more connection to a fresh frontier of one backend (a SQLite file, a job on
    the real Redis); every connection is closed afterwards and the Redis job's keys deleted."""
    job = f"test-frontier-{uuid.uuid4().hex}"
    opened = []

    def connect_(**options):
        if request.param == "sqlite":
            opened.append(SqliteFrontier(tmp_path / "frontier.sqlite", **options))
        else:
            opened.append(RedisFrontier.from_settings({"REDIS_URL": REDIS_URL}, job, **options))
        return opened[-1]

    yield connect_
    for frontier in opened:
        frontier.close()
    if request.param == "redis":
        delete_job_keys(REDIS_URL, job)


@pytest.fixture
def frontier(connect):
    return connect(max_attempts=3)


@pytest.fixture
def embedded(tmp_path):
    """A SQLite frontier, for what only the file does."""
    f = SqliteFrontier(tmp_path / "frontier.sqlite", max_attempts=3)
    yield f
    f.close()


def mark(frontier, *urls, priority=0.0):
    return frontier.mark([(url, url.split("/")[2], priority) for url in urls])


def test_a_round_holds_one_url_per_unlocked_host(frontier):
    mark(frontier, "http://a/1", "http://a/2", "http://b/1")
    ready = frontier.ready(now=100)
    assert sorted(entry.url for entry in ready) == ["http://a/1", "http://b/1"]


def test_claim_locks_the_host_for_the_lease(frontier):
    mark(frontier, "http://a/1", "http://a/2")
    entry = frontier.ready(now=100)[0]
    assert frontier.claim(entry, now=100, lease=60)
    assert frontier.ready(now=130) == []          # host and URL leased
    assert not frontier.claim(entry, now=130, lease=60)
    assert [e.url for e in frontier.ready(now=161)] == ["http://a/1"]  # lease over: it comes back


def test_complete_clears_the_mark_and_sets_locks(frontier):
    mark(frontier, "http://a/1", "http://a/2")
    entry = frontier.ready(now=100)[0]
    frontier.claim(entry, now=100, lease=60)
    frontier.complete(entry.url, "a", now=101, url_lock_until=1000, host_lock_until=111, status=200)
    assert frontier.ready(now=105) == []                      # host interval
    assert [e.url for e in frontier.ready(now=111)] == ["http://a/2"]
    assert frontier.counts(now=111) == FrontierCounts(urls=2, marked_ready=1, marked_locked=0, done=1, hosts=1)


def test_complete_marks_the_pages_links_in_the_same_step(frontier):
    mark(frontier, "http://a/1", "http://a/2")
    entry = frontier.ready(now=100)[0]
    frontier.claim(entry, now=100, lease=60)
    links = Marking([("http://a/1", "a", 9.0), ("http://a/2", "a", 5.0), ("http://a/3", "a", 1.0),
                     ("http://a/4", "a", 1.0), ("http://b/1", "b", 2.0)], max_urls_per_host=3, distance=2)
    # marked before the page is done: a/1 (the page itself) and a/2 raised, a/3 new, a/4 over the bound, b/1 new
    assert frontier.complete(entry.url, "a", now=101, url_lock_until=1000, host_lock_until=111, status=200,
                             links=links) == (2, 1, 2)
    assert frontier.counts(now=111) == FrontierCounts(urls=4, marked_ready=3, marked_locked=0, done=1, hosts=2)
    assert [e.url for e in frontier.ready(now=105)] == ["http://b/1"]   # host a waits for its interval
    [head_of_a] = [e for e in frontier.ready(now=111, strategy="BestFirst") if e.host == "a"]
    assert head_of_a == FrontierEntry("http://a/2", "a", 5.0, distance=0)   # raised, and kept its lower distance
    assert frontier.complete("http://b/1", "b", now=112, url_lock_until=1000, host_lock_until=112, status=404,
                             links=Marking([])) == (0, 0, 0)


@pytest.mark.parametrize("strategy", ["BreadthFirstTime", "BestFirst"])
def test_a_page_whose_host_had_nothing_else_queued_makes_it_due_again_with_its_links(frontier, strategy):
    """The links of the last page of a host, to the host (itself among them) and to a new one, queue the host
    again: it is due once its interval has passed."""
    mark(frontier, "http://a/1")
    [entry] = frontier.ready(now=100, strategy=strategy)
    frontier.claim(entry, now=100, lease=60)
    links = Marking([("http://a/1", "a", 3.0), ("http://a/2", "a", 1.0), ("http://b/1", "b", 0.5)])
    assert frontier.complete(entry.url, "a", now=101, url_lock_until=1000, host_lock_until=111, status=200,
                             links=links) == (2, 0, 1)   # a/1 raised before it is done
    assert frontier.next_due(now=102) == 102   # b
    assert [e.url for e in frontier.ready(now=105, strategy=strategy)] == ["http://b/1"]
    assert sorted(e.url for e in frontier.ready(now=111, strategy=strategy)) == ["http://a/2", "http://b/1"]
    assert frontier.counts(now=111) == FrontierCounts(urls=3, marked_ready=2, marked_locked=0, done=1, hosts=2)


def test_marking_is_idempotent_and_keeps_first_state(frontier):
    assert mark(frontier, "http://a/1") == (1, 0, 0)
    entry = frontier.ready(now=0)[0]
    frontier.claim(entry, now=0, lease=60)
    frontier.complete(entry.url, "a", now=1, url_lock_until=10**9, host_lock_until=2, status=200)
    assert mark(frontier, "http://a/1", priority=5) == (0, 0, 0)   # a done URL is neither marked again nor raised
    assert frontier.next_due(now=5) is None


def test_higher_priority_first_within_a_host(frontier):
    mark(frontier, "http://a/low", priority=1)
    mark(frontier, "http://a/high", priority=9)
    assert frontier.ready(now=0)[0].url == "http://a/high"


def test_per_host_bound_refuses_new_urls(frontier):
    assert frontier.mark([(f"http://a/{i}", "a", 0) for i in range(5)], max_urls_per_host=3) == (3, 2, 0)


def test_url_given_up_after_max_attempts_without_completion(frontier):
    mark(frontier, "http://a/1")
    for attempt in range(3):
        entry = frontier.ready(now=attempt * 100)[0]
        assert frontier.claim(entry, now=attempt * 100, lease=60)
    assert frontier.ready(now=1000) == []     # three leases ran out: a harvester keeps dying on it
    assert frontier.next_due(now=1000) is None


def test_release_gives_the_url_back_without_counting(frontier):
    mark(frontier, "http://a/1")
    entry = frontier.ready(now=0)[0]
    frontier.claim(entry, now=0, lease=60)
    frontier.release(entry.url, "a", host_lock_until=5)
    assert frontier.ready(now=4) == []
    assert frontier.ready(now=5)[0].url == "http://a/1"


def test_unavailable_keeps_the_url_marked_and_counts_retries(frontier):
    mark(frontier, "http://a/1")
    entry = frontier.ready(now=0)[0]
    frontier.claim(entry, now=0, lease=60)
    frontier.complete(entry.url, "a", now=1, url_lock_until=50, host_lock_until=2, status=503, keep_marked=True)
    assert frontier.retries(entry.url) == 1
    assert frontier.next_due(now=3) == 50


def test_crawl_delay_lengthens_the_host_lock(frontier):
    mark(frontier, "http://a/1", "http://a/2")
    frontier.set_host_delay("a", 30)
    entry = frontier.ready(now=0)[0]
    frontier.claim(entry, now=0, lease=60)
    frontier.complete(entry.url, "a", now=1, url_lock_until=10**9, host_lock_until=2, status=200)
    assert frontier.ready(now=30) == []
    assert frontier.ready(now=31)


def test_storing_robots_sets_the_hosts_delay_with_it(frontier):
    mark(frontier, "http://a/1", "http://a/2", "http://a/3")
    frontier.store_robots("a", 200, b"User-agent: *\nCrawl-delay: 30\n", expires=1000, host_delay=30)
    entry = frontier.ready(now=0)[0]
    frontier.claim(entry, now=0, lease=60)
    frontier.complete(entry.url, "a", now=1, url_lock_until=10**9, host_lock_until=2, status=200)
    assert frontier.ready(now=30) == [] and frontier.ready(now=31)
    frontier.store_robots("a", 200, b"", expires=1000, host_delay=None)   # the Crawl-delay is gone: so is the delay
    entry = frontier.ready(now=31)[0]
    frontier.claim(entry, now=31, lease=60)
    frontier.complete(entry.url, "a", now=32, url_lock_until=10**9, host_lock_until=33, status=200)
    assert frontier.ready(now=33)
    assert frontier.robots("a", now=999) == (200, b"")


def test_robots_answers_are_cached_until_they_expire(frontier):
    frontier.store_robots("a", 200, b"User-agent: *\nDisallow: /x\n", expires=100, host_delay=None)
    assert frontier.robots("a", now=99) == (200, b"User-agent: *\nDisallow: /x\n")
    assert frontier.robots("a", now=100) is None


def test_state_is_shared_and_survives_reopening(connect):
    first = connect()
    mark(first, "http://a/1", "http://b/1")
    first.close()
    again = connect()
    assert len(again.ready(now=0)) == 2
    again.close()


def test_abandoned_lease_comes_back_to_another_harvester(frontier, connect):
    mark(frontier, "http://a/1")
    entry = frontier.ready(now=0)[0]
    assert frontier.claim(entry, now=0, lease=60)
    frontier.close()                                   # the harvester dies holding the lease
    other = connect(max_attempts=3)
    assert other.ready(now=59) == []
    assert other.next_due(now=59) == 60
    assert other.counts(now=59).marked_locked == 1
    assert other.ready(now=60) == [entry]
    assert other.claim(entry, now=60, lease=60)
    other.close()


def test_counts_and_hosts_follow_marks_and_locks(frontier):
    mark(frontier, "http://a/1", "http://a/2", "http://b/1")
    frontier.lock_host("b", until=30)
    assert frontier.hosts(now=10) == [("a", 2, 0), ("b", 1, 20)]
    entry = frontier.ready(now=10)[0]
    frontier.claim(entry, now=10, lease=60)
    assert frontier.counts(now=10) == FrontierCounts(urls=3, marked_ready=2, marked_locked=1, done=0, hosts=2)
    frontier.complete(entry.url, "a", now=11, url_lock_until=1e9, host_lock_until=20, status=200)
    assert frontier.hosts(now=11) == [("a", 1, 9), ("b", 1, 19)]
    assert frontier.counts(now=11) == FrontierCounts(urls=3, marked_ready=2, marked_locked=0, done=1, hosts=2)
    assert frontier.remark(entry.url) and not frontier.remark("http://unknown/")
    assert frontier.counts(now=11).done == 0
    assert frontier.next_due(now=11) == 20


def test_hosts_count_each_hosts_leased_and_retried_urls_and_keep_the_limit(frontier):
    """A host's marked URLs are its queued, leased and retry-waiting ones; the busiest first, then by name, at most
    ``limit``, ties at the limit cut by name."""
    mark(frontier, "http://a/1", "http://a/2", "http://b/1", "http://b/2", "http://c/1", "http://d/1")
    leased = {entry.host: entry for entry in frontier.ready(now=10)}
    for host in ("a", "c"):
        assert frontier.claim(leased[host], now=10, lease=60)
    frontier.complete(leased["a"].url, "a", now=11, url_lock_until=100, host_lock_until=11, status=503, keep_marked=True)
    assert frontier.hosts(now=11) == [("a", 2, 0), ("b", 2, 0), ("c", 1, 59), ("d", 1, 0)]
    assert frontier.hosts(now=11, limit=3) == [("a", 2, 0), ("b", 2, 0), ("c", 1, 59)]
    frontier.complete(leased["c"].url, "c", now=12, url_lock_until=12, host_lock_until=12, status=200)
    assert frontier.hosts(now=12, limit=1) == [("a", 2, 0)]
    assert frontier.hosts(now=12) == [("a", 2, 0), ("b", 2, 0), ("d", 1, 0)]


def test_host_counts_count_the_hosts_hosts_lists_and_their_locks(frontier):
    """What the progress line reads without counting URLs: the hosts with queued, leased or retry-waiting URLs, those
    locked now and when the first of them unlocks, as ``hosts()`` lists them."""
    def listed(now: float) -> HostCounts:
        hosts = frontier.hosts(now, limit=100)
        waits = [wait for _, _, wait in hosts if wait > 0]
        return HostCounts(marked=len(hosts), waiting=len(waits), next_free=min(waits) if waits else None)

    assert frontier.host_counts(now=0) == HostCounts(marked=0, waiting=0, next_free=None)
    mark(frontier, "http://a/1", "http://a/2", "http://b/1", "http://c/1", "http://d/1", "http://e/1")
    frontier.lock_host("e", until=40)
    leased = {entry.host: entry for entry in frontier.ready(now=10)}
    for host in ("a", "c", "d"):
        assert frontier.claim(leased[host], now=10, lease=60)
    frontier.complete(leased["a"].url, "a", now=11, url_lock_until=100, host_lock_until=15, status=503, keep_marked=True)
    frontier.complete(leased["d"].url, "d", now=11, url_lock_until=11, host_lock_until=11, status=200)
    # a: one queued, one waiting for its retry, locked until 15; b: free; c: leased alone until 70; d: done;
    # e: locked until 40
    assert frontier.host_counts(now=12) == HostCounts(marked=4, waiting=3, next_free=3) == listed(12)
    assert frontier.host_counts(now=20) == HostCounts(marked=4, waiting=2, next_free=20) == listed(20)
    frontier.complete(leased["c"].url, "c", now=21, url_lock_until=21, host_lock_until=21, status=200)
    assert frontier.host_counts(now=50) == HostCounts(marked=3, waiting=0, next_free=None) == listed(50)


def test_conditional_get_headers_are_kept_when_none_is_given(frontier):
    mark(frontier, "http://a/1")
    frontier.complete("http://a/1", "a", now=1, url_lock_until=2, host_lock_until=1, status=200,
                      etag='"v1"', last_modified="Mon, 01 Jan 2024 00:00:00 GMT")
    frontier.remark("http://a/1")
    frontier.complete("http://a/1", "a", now=3, url_lock_until=2, host_lock_until=1, status=503, keep_marked=True)
    assert frontier.ready(now=5) == [
        FrontierEntry("http://a/1", "a", 0.0, '"v1"', "Mon, 01 Jan 2024 00:00:00 GMT")
    ]


def test_release_with_now_waits_for_the_crawl_delay(frontier):
    mark(frontier, "http://a/1")
    frontier.set_host_delay("a", 30)
    entry = frontier.ready(now=0)[0]
    frontier.claim(entry, now=0, lease=60)
    frontier.release(entry.url, "a", host_lock_until=5, now=10)
    assert frontier.ready(now=39) == []
    assert frontier.ready(now=40) == [entry]
    assert frontier.retries(entry.url) == 0


def test_robots_keeps_binary_bodies_and_missing_answers(frontier):
    frontier.store_robots("a", None, None, expires=100, host_delay=None)
    frontier.store_robots("b", 200, b"\xff\x00Disallow: /", expires=100, host_delay=None)
    assert frontier.robots("a", now=0) == (None, None)
    assert frontier.robots("b", now=0) == (200, b"\xff\x00Disallow: /")
    assert frontier.robots("c", now=0) is None



def test_statuses_tell_known_urls_and_their_last_status(frontier):
    frontier.mark([("http://h/gone", "h", 0.0), ("http://h/new", "h", 0.0)])
    frontier.complete("http://h/gone", "h", now=1.0, url_lock_until=2.0, host_lock_until=2.0, status=404)
    assert frontier.statuses(["http://h/gone", "http://h/new", "http://h/unknown"]) == {
        "http://h/gone": 404, "http://h/new": None,
    }

@pytest.mark.parametrize(
    ("status", "outcome"),
    [(200, Outcome.SUCCESS), (206, Outcome.SUCCESS), (301, Outcome.REDIRECT), (302, Outcome.REDIRECT),
     (304, Outcome.NOT_MODIFIED), (404, Outcome.NOT_FOUND), (410, Outcome.NOT_FOUND), (403, Outcome.NOT_FOUND),
     (408, Outcome.UNAVAILABLE), (500, Outcome.UNAVAILABLE), (503, Outcome.UNAVAILABLE), (None, Outcome.UNAVAILABLE)],
)
def test_outcome_for_status(status, outcome):
    assert outcome_for_status(status) is outcome


def test_lock_table_follows_combine():
    intervals = LockIntervals(
        host=60, success=1_000_000, not_modified=2_592_000, unavailable=86_400, not_found=2_592_000, robot_rules=2_592_000,
    )
    assert locks_for(Outcome.SUCCESS, intervals) == Locks(1_000_000, 60)
    assert locks_for(Outcome.REDIRECT, intervals) == Locks(1_000_000, 60)
    assert locks_for(Outcome.NOT_MODIFIED, intervals) == Locks(2_592_000, 60)
    assert locks_for(Outcome.UNAVAILABLE, intervals) == Locks(86_400, 600)
    assert locks_for(Outcome.ROBOTS, intervals) == Locks(2_592_000, 60)


def crawl_order(frontier, strategy, policy=None, limit=None):
    """Fetch everything marked, one round after another, completing each URL at once; the order of fetches."""
    order, now = [], 100.0
    while True:
        if policy is not None:
            policy.rerank()
        ready = frontier.ready(now, strategy, limit)
        if not ready:
            return order
        for entry in ready:
            assert frontier.claim(entry, now, 60)
            frontier.complete(entry.url, entry.host, now=now, url_lock_until=now + 1e6, host_lock_until=now, status=200)
            order.append(entry.url)
        now += 1


def test_breadth_first_is_first_marked_first_fetched(frontier):
    frontier.mark([("http://b/1", "b", 9), ("http://a/1", "a", 1), ("http://a/2", "a", 5), ("http://c/1", "c", 0)])
    assert crawl_order(frontier, "BreadthFirst") == ["http://b/1", "http://a/1", "http://c/1", "http://a/2"]


def test_breadth_first_time_takes_one_url_per_host_each_round(frontier):
    frontier.mark([("http://b/1", "b", 9), ("http://a/1", "a", 1), ("http://a/2", "a", 5), ("http://c/1", "c", 0)])
    assert crawl_order(frontier, "BreadthFirstTime") == ["http://b/1", "http://a/2", "http://c/1", "http://a/1"]


def test_best_first_takes_the_highest_priorities_first(frontier):
    frontier.mark([("http://b/1", "b", 2), ("http://a/1", "a", 1), ("http://a/2", "a", 5), ("http://c/1", "c", 3)])
    assert crawl_order(frontier, "BestFirst", limit=1) == ["http://a/2", "http://c/1", "http://b/1", "http://a/1"]


def _policy(frontier, strategy):
    from combine_scrapy.policy import CrawlPolicy

    return CrawlPolicy(SimpleNamespace(crawling=Crawling(strategy=strategy)), frontier)


def test_pagerank_fetches_the_most_linked_page_first(frontier):
    # Three pages link to http://x/hub, one to http://y/leaf: the hub ranks first.
    frontier.mark([(f"http://s{i}/", f"s{i}", 0) for i in range(3)])
    for i in range(3):
        frontier.complete(f"http://s{i}/", f"s{i}", now=1, url_lock_until=1e9, host_lock_until=1, status=200, score=1)
    frontier.mark([("http://y/leaf", "y", 0), ("http://x/hub", "x", 0)])
    frontier.add_links([("http://s0/", "http://x/hub"), ("http://s1/", "http://x/hub"), ("http://s2/", "http://x/hub"),
                        ("http://s2/", "http://y/leaf")])
    policy = _policy(frontier, "PageRank")
    assert crawl_order(frontier, "PageRank", policy, limit=1) == ["http://x/hub", "http://y/leaf"]


def test_ipagerank_prefers_links_from_relevant_pages(frontier):
    # Two irrelevant pages link to x, one relevant page links to y: PageRank picks x, iPageRank picks y.
    frontier.mark([("http://r/", "r", 0), ("http://n1/", "n1", 0), ("http://n2/", "n2", 0)])
    for url, host, score in (("http://r/", "r", 500), ("http://n1/", "n1", 0), ("http://n2/", "n2", -20)):
        frontier.complete(url, host, now=1, url_lock_until=1e9, host_lock_until=1, status=200, score=score)
    frontier.mark([("http://x/p", "x", 0), ("http://y/p", "y", 0)])
    frontier.add_links([("http://n1/", "http://x/p"), ("http://n2/", "http://x/p"), ("http://r/", "http://y/p")])
    assert _policy(frontier, "PageRank").rerank() == 5
    assert frontier.ready(100, "PageRank", 1)[0].url == "http://x/p"
    _policy(frontier, "iPageRank").rerank()
    assert frontier.ready(100, "iPageRank", 1)[0].url == "http://y/p"


def test_links_are_kept_only_for_the_pagerank_strategies(frontier):
    from combine_scrapy.access.urls import UrlRules

    for strategy, expected in (("BestFirst", 0), ("PageRank", 1)):
        policy = _policy(frontier, strategy)
        policy.job = SimpleNamespace(crawling=Crawling(strategy=strategy), url_rules=UrlRules())
        policy.mark([(f"http://{strategy.lower()}.example/a.html", 0.0)], source="http://s/")
        assert len(frontier.link_graph()[0]) == expected


def fetch(frontier, entry, now, relevant):
    assert frontier.claim(entry, now, 60)
    frontier.complete(entry.url, entry.host, now=now, url_lock_until=now + 1e6, host_lock_until=now, status=200,
                      relevant=relevant)


def test_complete_counts_each_hosts_fetches_and_relevant_pages_decayed(frontier):
    """Each fetch decays the host's new relevant records by YIELD_DECAY before adding itself: the same doubles in
    every store."""
    mark(frontier, "http://a/1", "http://a/2", "http://a/3", "http://b/1")
    for now, relevant in ((0, True), (1, False), (2, None)):
        fetch(frontier, frontier.ready(now, "BestFirst", 1)[0], now, relevant)
    assert frontier.host_yield("a") == (3, 1 * YIELD_DECAY * YIELD_DECAY)
    assert frontier.host_yield("b") == (0, 0)
    assert frontier.host_yield("unknown") == (0, 0)


def test_best_first_gives_barren_hosts_fewer_turns(frontier):
    """Equal priorities everywhere: a host whose pages were all irrelevant falls behind one whose were
    relevant, and both behind a host not fetched yet (hosts share the fetches: a new host is tried early)."""
    frontier.mark([(f"http://barren/{i}", "barren", 0.5) for i in range(3)]
                  + [(f"http://good/{i}", "good", 0.5) for i in range(2)])
    for now, host in enumerate(("barren", "barren", "good")):
        entry = next(e for e in frontier.ready(now) if e.host == host)
        fetch(frontier, entry, now, relevant=host == "good")
    frontier.mark([("http://new/1", "new", 0.5)])
    assert [entry.host for entry in frontier.ready(10, "BestFirst", 3)] == ["new", "good", "barren"]
    assert [entry.host for entry in frontier.ready(10, "BestFirst", 2)] == ["new", "good"]


def test_best_first_waits_for_a_busy_host_with_better_urls(frontier):
    """The globally best URLs sit on a host fetching now: the round hands out nothing worse meanwhile.
    Once the fetch is done and the host only waits its WaitIntervalHost, it keeps no places."""
    frontier.mark([(f"http://topic/{i}", "topic", 0.9) for i in range(3)] + [("http://other/1", "other", 0.1)])
    leased = frontier.ready(0, "BestFirst", 2, hold=70)
    assert [entry.url for entry in leased] == ["http://topic/0"]
    assert frontier.claim(leased[0], 0, 60)
    held = frontier.ready(1, "BestFirst", 2, hold=70)
    assert (held, held.held_until) == ([], 60)
    assert [entry.url for entry in frontier.ready(1, "BestFirst", 2, hold=0)] == ["http://other/1"]
    frontier.complete("http://topic/0", "topic", now=2, url_lock_until=1e9, host_lock_until=7, status=200)
    assert [entry.url for entry in frontier.ready(3, "BestFirst", 2, hold=70)] == ["http://other/1"]
    assert [entry.url for entry in frontier.ready(7, "BestFirst", 2, hold=70)] == ["http://topic/1"]


# The layout before hosts were numbered: every row holds its URL whole, and so does its key.
OLD_LAYOUT = """
CREATE TABLE urls (
    url TEXT PRIMARY KEY, host TEXT NOT NULL, harvest INTEGER NOT NULL DEFAULT 1, lock_until REAL NOT NULL DEFAULT 0,
    priority REAL NOT NULL DEFAULT 0, distance INTEGER NOT NULL DEFAULT 0, seq INTEGER NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0, retries INTEGER NOT NULL DEFAULT 0, status INTEGER, last_checked REAL,
    etag TEXT, last_modified TEXT, score REAL, visits INTEGER NOT NULL DEFAULT 0, changes INTEGER NOT NULL DEFAULT 0,
    first_visit REAL, digest TEXT
);
CREATE INDEX urls_best ON urls (harvest, host, priority DESC, seq);
CREATE TABLE hosts (
    host TEXT PRIMARY KEY, lock_until REAL NOT NULL DEFAULT 0, delay REAL, urls INTEGER NOT NULL DEFAULT 0,
    fetched INTEGER NOT NULL DEFAULT 0, relevant INTEGER NOT NULL DEFAULT 0, leased_until REAL NOT NULL DEFAULT 0
);
CREATE TABLE links (source TEXT NOT NULL, target TEXT NOT NULL, PRIMARY KEY (source, target)) WITHOUT ROWID;
CREATE TABLE robots (host TEXT PRIMARY KEY, status INTEGER, body BLOB, expires REAL NOT NULL);
CREATE TABLE control (name TEXT PRIMARY KEY, value TEXT NOT NULL);
"""

# Columns files of yet earlier versions lack (they had an index urls_ready instead of urls_best).
LATER_COLUMNS = {"urls": ("distance", "score", "visits", "changes", "first_visit", "digest"),
                 "hosts": ("fetched", "relevant", "leased_until")}

OLD_ROWS = [  # url, host, harvest, lock_until, priority, distance, seq, attempts, retries, status, last_checked,
              # etag, last_modified, score, visits, changes, first_visit, digest
    ("http://b.example:8080/x", "b.example:8080", 0, 5000, 0, 0, 1, 0, 0, 200, 100, '"v1"', "Mon, 23 Nov 2026", 3.5,
     2, 1, 50, "k1"),
    ("http://b.example:8080/retry", "b.example:8080", 1, 900, 0, 0, 2, 0, 2, 503, 120, '"v0"', None, None, 0, 0, None,
     None),
    ("http://a.example/1", "a.example", 1, 0, 0.5, 0, 3, 0, 0, None, None, None, None, None, 0, 0, None, None),
    ("https://a.example/2?q=1", "a.example", 1, 0, 0.9, 2, 4, 0, 0, None, None, None, None, None, 0, 0, None, None),
    ("http://user@c.example/odd", "c.example", 1, 0, 0, 0, 5, 1, 0, None, None, None, None, None, 0, 0, None, None),
]


def old_frontier_file(path, *, earlier: bool) -> None:
    """A frontier file in the layout before hosts were numbered (``earlier``: without the columns added since)."""
    import sqlite3

    with sqlite3.connect(path) as db:
        db.executescript(OLD_LAYOUT)
        db.executemany(f"INSERT INTO urls VALUES ({', '.join('?' * 18)})", OLD_ROWS)
        db.executemany("INSERT INTO hosts (host, lock_until, delay, urls, fetched, relevant) VALUES (?, ?, ?, ?, ?, ?)",
                       [("b.example:8080", 200, 30, 2, 3, 1), ("a.example", 0, None, 2, 0, 0)])  # c.example: no row
        db.execute("INSERT INTO links VALUES ('http://b.example:8080/x', 'http://a.example/1')")
        if earlier:
            db.execute("DROP INDEX urls_best")
            db.execute("CREATE INDEX urls_ready ON urls (harvest, lock_until)")
            for table, columns in LATER_COLUMNS.items():
                for column in columns:
                    db.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    db.close()


@pytest.mark.parametrize("earlier", [False, True], ids=["previous layout", "earlier layout"])
def test_a_file_of_an_older_layout_is_upgraded_in_place_with_every_url_and_its_state(tmp_path, earlier):
    path = tmp_path / "frontier.sqlite"
    old_frontier_file(path, earlier=earlier)
    frontier = SqliteFrontier(path)
    done, retry, a1, a2, odd = (row[0] for row in OLD_ROWS)
    assert frontier.counts(now=500) == FrontierCounts(urls=5, marked_ready=3, marked_locked=1, done=1, hosts=3)
    assert frontier.statuses([done, retry, a1, a2, odd, "http://a.example/unknown"]) == {
        done: 200, retry: 503, a1: None, a2: None, odd: None}
    assert (frontier.retries(retry), frontier.retries(a1)) == (2, 0)
    assert frontier.change_history(done) == ((0, 0, None, None) if earlier else (2, 1, 50.0, "k1"))
    assert frontier.host_yield("b.example:8080") == ((0, 0) if earlier else (3, 1))
    assert frontier.link_graph() == ([(done, a1)], {} if earlier else {done: 3.5})
    assert frontier.ready(now=500) == [FrontierEntry(a2, "a.example", 0.9, None, None, 0 if earlier else 2),
                                       FrontierEntry(odd, "c.example", 0.0)]
    assert [entry.url for entry in frontier.ready(now=1000, strategy="BreadthFirst")] == [retry, a1, odd]
    assert frontier.ready(now=1000)[1] == FrontierEntry(retry, "b.example:8080", 0.0, '"v0"')  # its validator kept
    assert frontier.hosts(now=500) == [("a.example", 2, 0), ("b.example:8080", 1, 0), ("c.example", 1, 0)]
    assert frontier.mark([(done, "b.example:8080", 9.0), (a1, "a.example", 5.0)]) == (0, 0, 1)  # the fetched one stays
    assert frontier.mark([("http://c.example/new", "c.example", 0)], max_urls_per_host=2) == (1, 0, 0)
    assert frontier.mark([("http://c.example/more", "c.example", 0)], max_urls_per_host=2) == (0, 1, 0)
    frontier.set_host_delay("b.example:8080", 30)
    frontier.complete(retry, "b.example:8080", now=1000, url_lock_until=2000, host_lock_until=1001, status=200)
    assert frontier.next_due(now=1000) == 1000 and frontier.retries(retry) == 0
    assert [entry.host for entry in frontier.ready(now=1029)] == ["a.example", "c.example"]  # Crawl-delay kept
    frontier.close()
    reopened = SqliteFrontier(path)
    assert {url for (url,) in reopened.connection.db.execute("SELECT url FROM url_states")} == {
        *(row[0] for row in OLD_ROWS), "http://c.example/new"}
    tables = {name for (name,) in reopened.connection.db.execute("SELECT name FROM sqlite_master")}
    assert {"old_urls", "old_hosts", "urls_ready"}.isdisjoint(tables)
    reopened.close()


def test_a_url_deleted_by_hand_leaves_nothing_to_the_url_marked_after_it(embedded):
    mark(embedded, "http://a/1", "http://a/2")
    embedded.complete("http://a/2", "a", now=1, url_lock_until=10, host_lock_until=1, status=200, etag='"x"')
    embedded.connection.db.execute("DELETE FROM urls WHERE seq = (SELECT seq FROM url_states WHERE url = 'http://a/2')")
    mark(embedded, "http://a/3")                   # numbered as the deleted URL was
    assert embedded.statuses(["http://a/3"]) == {"http://a/3": None}
    assert embedded.ready(now=1) == [FrontierEntry("http://a/1", "a")]


def test_a_file_that_calls_the_mark_harvest_is_renamed_in_place(tmp_path):
    """Files written before the column was named ``marked`` keep every URL, its state and the partial indexes."""
    import sqlite3

    from combine_scrapy.frontier.sqlite.connection import SCHEMA

    path = tmp_path / "frontier.sqlite"
    with sqlite3.connect(path) as db:
        for statement in SCHEMA:
            db.execute(statement.replace("marked", "harvest"))
        db.execute("INSERT INTO hosts (host) VALUES ('a.example'), ('b.example')")
        db.executemany("INSERT INTO urls (host_id, tail, harvest, priority) VALUES (?, ?, ?, ?)",
                       [(1, ":/done", 0, 0.0), (1, ":/next", 1, 0.5), (2, ":/other", 1, 0.9)])
    db.close()
    frontier = SqliteFrontier(path)
    assert frontier.counts(now=0) == FrontierCounts(urls=3, marked_ready=2, marked_locked=0, done=0, hosts=2)
    assert [entry.url for entry in frontier.ready(now=0)] == ["http://b.example/other", "http://a.example/next"]
    indexes = {name for (name,) in frontier.connection.db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert {"urls_best", "urls_attempted", "urls_locked"} <= indexes
    assert frontier.connection.db.execute("SELECT url FROM url_states WHERE marked = 0").fetchall() == [("http://a.example/done",)]
    frontier.close()


@pytest.mark.parametrize("given, problem", [
    ("nan", "is not a finite number"), (float("nan"), "is not a finite number"), ("-inf", "is not a finite number"),
    ("1e308", "is out of range"), (-2e9, "is out of range"), ("high", "is not a number"), (None, "is not a number"),
    (True, "is not a number"), ([1], "is not a number"),
])
def test_seed_priorities_are_finite_numbers_in_range(given, problem):
    with pytest.raises(ValueError, match=problem):
        seed_priority(given)


def test_seed_priorities_as_numbers_or_text():
    assert seed_priority("0.5") == 0.5 and seed_priority(3) == 3.0 and seed_priority(-1e9) == -1e9
