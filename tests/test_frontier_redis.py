"""The Redis frontier against a real Redis: what only it does (sharing between harvesters, its keys, its client),
and the same answers as the embedded frontier. tests/test_frontier.py runs the frontier contract on it."""

from __future__ import annotations

import json
import random
import threading
import time
import uuid
from base64 import b64decode
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import pytest
from harvesters import delete_job_keys
from test_frontier import mark

from combine_scrapy.frontier import STRATEGIES, FrontierEntry, Marking
from combine_scrapy.frontier.redis import CLUSTER_BUCKETS, SINGLE_REDIS_BUCKETS, RedisFrontier, bucket_of
from combine_scrapy.frontier.redis.connection import BEST_SCALE, LAYOUT, number, queued_seq
from combine_scrapy.frontier.redis.sharing import HARVESTERS_RENEWAL
from combine_scrapy.frontier.sqlite import SqliteFrontier

pytestmark = pytest.mark.services

REDIS_URL = "redis://127.0.0.1:6379/0"

#: tests/data: a frontier written by an older layout.
DATA = Path(__file__).parent / "data"


@pytest.fixture
def redis_settings() -> dict:
    """The Scrapy settings that connect to the Redis under test (tests/test_frontier_cluster.py: a cluster)."""
    return {"REDIS_URL": REDIS_URL}


@pytest.fixture
def open_frontier(redis_settings):
    """``open_frontier(job, buckets=None, **options)``: a RedisFrontier on the Redis under test (``buckets``: its
    COMBINE_REDIS_BUCKETS)."""

    def open_(job: str, buckets: int | None = None, **options) -> RedisFrontier:
        settings = redis_settings if buckets is None else {**redis_settings, "COMBINE_REDIS_BUCKETS": buckets}
        return RedisFrontier.from_settings(settings, job, **options)

    return open_


@pytest.fixture
def job(redis_settings):
    """A job name of its own, and none of its keys left behind."""
    name = f"test-cluster-{uuid.uuid4().hex}"
    yield name
    settings = dict(redis_settings)
    delete_job_keys(settings.pop("REDIS_URL"), name, **settings)


@pytest.fixture
def connect(job, open_frontier):
    """``connect(**options)``: one more connection to this test's job, closed afterwards (the contract's fixture,
    for tests/test_frontier_cluster.py)."""
    opened = []

    def connect_(**options) -> RedisFrontier:
        opened.append(open_frontier(job, **options))
        return opened[-1]

    yield connect_
    for frontier in opened:
        frontier.close()


@pytest.fixture
def frontier(connect):
    return connect(max_attempts=3)


def test_keys_stay_under_the_job_prefix(frontier, job):
    mark(frontier, "http://a/1", "http://a/2")
    frontier.claim(frontier.ready(now=0)[0], now=0, lease=60)
    frontier.add_links([("http://a/1", "http://a/2")])
    frontier.store_robots("a", 200, b"", expires=10, host_delay=None)
    keys = {key.decode() for key in frontier.server.scan_iter(match="*" + job + "*")}
    bucket = f"combine:{{{job}:b{bucket_of('a', frontier.buckets)}}}:"
    assert keys and all(key.startswith((f"combine:{{{job}}}:", bucket)) for key in keys)
    assert {key for key in keys if key.startswith(bucket)} >= {bucket + name for name in ("u:a", "host:a", "locked")}


def test_a_new_frontier_on_a_single_redis_gets_few_buckets_unless_the_setting_says(job, open_frontier):
    """A frontier made on a single Redis keeps SINGLE_REDIS_BUCKETS (COMBINE_REDIS_BUCKETS unset) or the setting's
    count; a harvester opened later with another setting (or a seed list marked before any harvester) keeps it."""
    chosen_job = f"{job}-chosen"
    fitted, chosen = open_frontier(job), open_frontier(chosen_job, buckets=3)
    later = open_frontier(job, buckets=CLUSTER_BUCKETS, lease_ahead=True)
    try:
        mark(fitted, "http://a/1", "http://b/1")   # as scrapy seed does, before any harvester opened the frontier
        mark(chosen, "http://a/1")
        assert fitted.server.get(fitted.connection.key("buckets")) == str(SINGLE_REDIS_BUCKETS).encode()
        assert chosen.server.get(chosen.connection.key("buckets")) == b"3"
        assert SINGLE_REDIS_BUCKETS < CLUSTER_BUCKETS and (fitted.buckets, chosen.buckets) == (SINGLE_REDIS_BUCKETS, 3)
        assert later.buckets == SINGLE_REDIS_BUCKETS
        assert sorted(entry.url for entry in later.ready(0.0, "BestFirst", 4)) == ["http://a/1", "http://b/1"]
    finally:
        for frontier in (fitted, chosen, later):
            frontier.close()
        delete_job_keys(REDIS_URL, chosen_job)


def test_a_frontier_made_with_a_clusters_buckets_keeps_them_on_a_single_redis(job, open_frontier):
    """A job made with 32 buckets (every job before a single Redis got fewer) is opened by harvesters whose setting
    is unset: they read its count, find its hosts in their buckets, and mark new URLs there."""
    hosts = [f"h{n}.test" for n in range(40)]
    made = open_frontier(job, buckets=CLUSTER_BUCKETS)
    mark(made, *(f"http://{host}/1" for host in hosts))
    made.close()
    later = open_frontier(job, lease_ahead=True)
    try:
        assert later.buckets == CLUSTER_BUCKETS
        mark(later, *(f"http://{host}/2" for host in hosts))
        keys = {key.decode() for key in later.server.scan_iter(match=f"combine:{{{job}:b*}}:u:*")}
        assert keys == {f"combine:{{{job}:b{bucket_of(host, CLUSTER_BUCKETS)}}}:u:{host}" for host in hosts}
        assert len({bucket_of(host, CLUSTER_BUCKETS) for host in hosts}) > SINGLE_REDIS_BUCKETS
        assert {entry.url for entry in later.ready(0.0, "BestFirst", 40)} == {f"http://{host}/1" for host in hosts}
    finally:
        later.close()


def test_two_harvesters_never_hold_one_host_at_once(frontier, job, open_frontier):
    """Eight threads on two connections claim URLs of the same hosts at the same moments: one wins per host."""
    other = open_frontier(job)
    hosts = ["a", "b"]
    frontier.mark([(f"http://{host}/{i}", host, 0) for host in hosts for i in range(8)])
    threads, rounds, lease = 8, 200, 60
    barrier = threading.Barrier(threads)
    wins: list[tuple[int, str]] = []

    def harvester(number: int) -> None:
        mine = frontier if number % 2 else other
        entries = [FrontierEntry(f"http://{host}/{number}", host) for host in hosts]
        for round_ in range(rounds):
            barrier.wait()
            now = round_ * 100.0                       # each round starts after the last round's leases end
            for entry in entries:
                if mine.claim(entry, now, lease):
                    wins.append((round_, entry.host))

    workers = [threading.Thread(target=harvester, args=(n,)) for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    other.close()
    assert sorted(wins) == [(round_, host) for round_ in range(rounds) for host in hosts]


def _assert_queue_bests_kept(frontier: RedisFrontier) -> None:
    """Every host with URLs keeps a copy of its queue's best in its u: hash ('^': member, score; '' when none is
    queued), which marks and re-scorings read instead of the queue: it must be the queue's best exactly."""
    server = frontier.server
    for prefix in frontier.connection.bucket_prefixes:
        for host in server.smembers(prefix + "hosts"):
            host = host.decode()
            if not server.exists(prefix + "u:" + host):
                continue
            kept = server.hget(prefix + "u:" + host, "^")
            top = server.zrange(prefix + "q:" + host, 0, 0, withscores=True)
            assert kept is not None, host
            if not top:
                assert kept == b"", (host, kept)
            else:
                member, score = kept.split(b"\n")
                assert (member, float(score)) == top[0], (host, kept, top)


@pytest.mark.parametrize("seed", range(5))
def test_answers_like_the_embedded_frontier_under_random_operations(frontier, tmp_path, seed):
    """A drop-in: the same calls give the same answers as SqliteFrontier, whatever the sequence."""
    embedded = SqliteFrontier(tmp_path / "frontier.sqlite", max_attempts=3)
    rnd = random.Random(seed)
    urls = [f"http://{host}/{i}" for host in "abcd" for i in range(6)]
    now = 0.0

    def both(call):
        ours, theirs = call(frontier), call(embedded)
        assert ours == theirs, (seed, now)
        return ours

    for _ in range(200):
        now += rnd.choice([0, 1, 5, 30, 70])
        url = rnd.choice(urls)
        entry = FrontierEntry(url, url.split("/")[2])
        bound, strategy, limit = rnd.choice([None, 3]), rnd.choice(STRATEGIES), rnd.choice([None, 1, 3])
        hold, distance = rnd.choice([0, 70]), rnd.choice([0, 2])
        delay, lease = rnd.choice([None, 20]), rnd.choice([10, 60])
        batch = [(u, u.split("/")[2], rnd.choice([0, 2.5, 9])) for u in rnd.sample(urls, 3)]
        # a page's links: to its own host (itself among them, at times) and to others, or none
        own = [(u, entry.host, rnd.choice([0, 2.5, 9])) for u in rnd.sample(urls, 24) if u.split("/")[2] == entry.host]
        links = rnd.choice([None, Marking(own + batch[:1], bound, distance), Marking(own[:1] + [(url, entry.host, 9)])])
        fetch = dict(now=now, url_lock_until=now + rnd.choice([-1, 20, 1e6]),
                     host_lock_until=now + rnd.choice([0, 40]), status=rnd.choice([200, 304, 503, None]),
                     keep_marked=rnd.random() < 0.4, etag=rnd.choice([None, '"e"']),
                     last_modified=rnd.choice([None, "lm"]), score=rnd.choice([None, 1.5]),
                     relevant=rnd.choice([None, False, True]), links=links)
        ranks = {u: rnd.random() for u in rnd.sample(urls, 5)}
        rnd.choice([
            lambda: both(lambda f: f.mark(batch, max_urls_per_host=bound, distance=distance)),
            lambda: both(lambda f: f.ready(now, strategy, limit, hold=hold)),
            lambda: both(lambda f: f.claim(entry, now, lease)) and both(lambda f: f.complete(url, entry.host, **fetch)),
            lambda: both(lambda f: f.claim(entry, now, lease))
            and both(lambda f: f.release(url, entry.host, now + 5, now)),
            lambda: both(lambda f: f.claim(entry, now, lease)),
            lambda: both(lambda f: f.remark(url)),
            lambda: both(lambda f: f.set_host_delay(entry.host, delay)),
            lambda: both(lambda f: f.lock_host(entry.host, now + 15)),
            lambda: both(lambda f: f.set_priorities(ranks)),
        ])()
        both(lambda f: (f.next_due(now), f.counts(now), f.hosts(now, 3), f.retries(url), f.host_yield(entry.host)))
        _assert_queue_bests_kept(frontier)
    embedded.close()


def test_a_batch_of_thousands_of_urls_on_one_host_is_marked_and_ranked_as_the_embedded_frontier_does(frontier, tmp_path):
    """A host's URLs go to Redis in parts of a few thousand arguments (Lua's limit); a URL given twice in a batch
    counts once, raised to its better priority."""
    embedded = SqliteFrontier(tmp_path / "frontier.sqlite")
    batch = [(f"http://a.test/{i}", "a.test", float(i % 7)) for i in range(5000)]
    batch += [("http://a.test/3", "a.test", 9.0), ("http://b.test/", "b.test", 1.0), ("http://a.test/4", "a.test", 0.0)]
    assert frontier.mark(batch, max_urls_per_host=4500) == embedded.mark(batch, max_urls_per_host=4500)
    ranks = {f"http://a.test/{i}": i / 5000 for i in range(0, 5000, 2)}
    frontier.set_priorities(ranks)
    embedded.set_priorities(ranks)
    for strategy in ("BestFirst", "BreadthFirst"):
        assert frontier.ready(0.0, strategy, 5) == embedded.ready(0.0, strategy, 5)
    assert frontier.counts(0.0) == embedded.counts(0.0)
    embedded.close()


def test_looks_over_many_buckets_load_their_scripts_again_after_redis_forgot_them(frontier, tmp_path):
    """A restarted Redis has no scripts cached: a look's one call over several buckets (single Redis) loads its
    script and answers as before."""
    embedded = SqliteFrontier(tmp_path / "frontier.sqlite")
    batch = [(f"http://h{i}.test/", f"h{i}.test", float(i)) for i in range(40)]
    assert frontier.mark(batch) == embedded.mark(batch)
    frontier.connection.server.script_flush()
    for strategy in ("BestFirst", "BreadthFirstTime"):
        assert frontier.ready(0.0, strategy, 5) == embedded.ready(0.0, strategy, 5)
    assert frontier.counts(0.0) == embedded.counts(0.0)
    embedded.close()


def test_the_client_is_made_from_scrapy_redis_settings(job):
    """REDIS_URL and REDIS_PARAMS as scrapy-redis reads them; the outage retry and timeouts are defaults under them."""
    from scrapy.settings import Settings

    from combine_scrapy.frontier.redis import OutageRetry

    settings = Settings({"REDIS_URL": REDIS_URL, "REDIS_PARAMS": {"socket_timeout": 7, "client_name": "harvester-7"}})
    frontier = RedisFrontier.from_settings(settings, job, outage_patience=3)
    try:
        kwargs = frontier.server.get_connection_kwargs()
        assert kwargs["socket_timeout"] == 7
        assert kwargs["socket_connect_timeout"] == 5
        assert isinstance(kwargs["retry"], OutageRetry) and kwargs["retry"].patience == 3
        assert frontier.server.client_getname() in ("harvester-7", b"harvester-7")
        assert frontier.mark([("http://a.test/", "a.test", 1.0)]).marked == 1
    finally:
        frontier.close()
    assert settings.getdict("REDIS_PARAMS") == {"socket_timeout": 7, "client_name": "harvester-7"}


def test_a_client_that_decodes_is_refused(job):
    with pytest.raises(ValueError, match="returns bytes"):
        RedisFrontier.from_settings({"REDIS_URL": REDIS_URL, "REDIS_DECODE_RESPONSES": True}, job)


@pytest.fixture
def harvester_frontier(open_frontier):
    """``harvester_frontier(job, lease)``: a frontier as a harvester opens it: ``ready`` leases what it hands out."""

    def open_(job: str, lease: float = 60.0) -> RedisFrontier:
        return open_frontier(job, max_attempts=3, lease_seconds=lease, lease_ahead=True)

    return open_


def test_harvesters_leasing_their_rounds_never_hand_out_the_same_url(job, harvester_frontier):
    first, second = harvester_frontier(job), harvester_frontier(job)
    try:
        first.mark([(f"http://h{n}.test/", f"h{n}.test", 0.0) for n in range(40)])
        now = 1000.0
        one, two = first.ready(now), second.ready(now)  # the second sees the first at work: its share only
        assert len(one) == 16 and 0 < len(two) <= 16
        assert not {e.url for e in one} & {e.url for e in two}
        sent = []
        first.server.execute_command = lambda *args, **kw: sent.append(args)
        assert all(first.claim(entry, now + 1, 60.0) for entry in one)
        assert sent == []  # claims of what the round leased cost no round trip
    finally:
        del first.server.execute_command
        first.close()
        second.close()


def test_a_lone_harvester_keeps_the_strategys_order_across_leased_parts_of_a_round(job, harvester_frontier):
    frontier = harvester_frontier(job)
    try:
        frontier.mark([(f"http://h{n:02d}.test/", f"h{n:02d}.test", 0.0) for n in range(40)])
        order = []
        for _ in range(3):
            order += [entry.host for entry in frontier.ready(1000.0, "BreadthFirst")]
        assert order == [f"h{n:02d}.test" for n in range(40)]
        assert frontier.lost_races == 0
    finally:
        frontier.close()


def test_closing_gives_back_what_the_round_leased_and_nobody_claimed(job, harvester_frontier):
    first, second = harvester_frontier(job), harvester_frontier(job)
    try:
        first.mark([(f"http://h{n}.test/", f"h{n}.test", 0.0) for n in range(3)])
        now = time.time()
        assert len(first.ready(now)) == 3 and second.ready(now) == []
        first.close()
        # On a single Redis the next look sees that the first left; on a cluster whose job-wide keys are on
        # another node than the second's share, within HARVESTERS_RENEWAL seconds.
        hosts = {entry.host for entry in second.ready(time.time())}
        deadline = time.monotonic() + HARVESTERS_RENEWAL + 1
        while len(hosts) < 3 and time.monotonic() < deadline:
            time.sleep(0.2)
            hosts |= {entry.host for entry in second.ready(time.time())}
        assert hosts == {f"h{n}.test" for n in range(3)}
    finally:
        second.close()


def test_a_leased_url_whose_lease_ran_out_and_was_taken_is_not_claimed_twice(job, harvester_frontier):
    first, second = harvester_frontier(job, lease=10.0), harvester_frontier(job, lease=10.0)
    try:
        first.mark([("http://a.test/", "a.test", 0.0)])
        (entry,) = first.ready(1000.0)
        (again,) = second.ready(1011.0)  # the first harvester's lease ended
        assert again.url == entry.url
        assert second.claim(again, 1011.0, 10.0)
        assert not first.claim(entry, 1011.5, 10.0)
    finally:
        first.close()
        second.close()


def test_a_leased_url_claimed_late_renews_its_lease(job, harvester_frontier):
    frontier = harvester_frontier(job, lease=10.0)
    try:
        frontier.mark([("http://a.test/", "a.test", 0.0), ("http://a.test/2", "a.test", 0.0)])
        (entry,) = frontier.ready(1000.0)
        assert frontier.claim(entry, 1005.0, 10.0)
        assert float(frontier.server.hget(frontier.prefix_of("a.test") + "host:a.test", "lock_until")) == 1015.0
        assert frontier.ready(1012.0) == []  # the host stays leased
    finally:
        frontier.close()


@pytest.mark.crawl
@pytest.mark.parametrize("old_layout", [None, "2"])
def test_a_frontier_in_an_old_layout_is_refused_naming_the_way_back(job, open_frontier, old_layout):
    from combine_scrapy.faults import StorageFault

    frontier = open_frontier(job)
    try:
        frontier.server.set(f"combine:{{{job}}}:frontier", "an older harvester")
        if old_layout:  # the layout of a whole job under one hash tag
            frontier.server.set(f"combine:{{{job}}}:layout", old_layout)
            frontier.server.hset(f"combine:{{{job}}}:u:a.test", ":/", b"")
        with pytest.raises(StorageFault, match=rf"older combine-scrapy.*combine:\{{{job}:b\*\}}:\*.*scrapy sanity {job} --restore") as refused:
            frontier.check_marker()
        assert refused.value.reason == "frontier_layout"
    finally:
        frontier.close()


def test_harvesters_opening_a_new_frontier_at_once_all_take_its_marker(open_frontier, redis_settings):
    """The marker, layout and bucket count are set in one step: no harvester finds a marker without its layout."""
    connection = dict(redis_settings)
    url = connection.pop("REDIS_URL")
    for attempt in range(10):
        job = f"test-cluster-open-{uuid.uuid4().hex}"
        frontiers = [open_frontier(job) for _ in range(6)]
        barrier, failures = threading.Barrier(len(frontiers)), []

        def open_(frontier):
            barrier.wait()
            try:
                frontier.check_marker()
            except Exception as error:  # noqa: BLE001 - any error is the failure this test looks for
                failures.append(error)

        threads = [threading.Thread(target=open_, args=(frontier,)) for frontier in frontiers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        markers = {frontier.marker() for frontier in frontiers}
        for frontier in frontiers:
            frontier.close()
        delete_job_keys(url, job, **connection)
        assert failures == [] and len(markers) == 1, (attempt, failures)


def test_harvesters_at_work_rank_their_own_shares_and_one_alone_ranks_everything(job, harvester_frontier, monkeypatch):
    import combine_scrapy.frontier.redis.sharing as sharing

    monkeypatch.setattr(sharing, "HARVESTERS_RENEWAL", 0.0)  # every look renews and reads the harvesters (cluster)
    first, second = harvester_frontier(job), harvester_frontier(job)
    hosts = [f"h{n:03d}.test" for n in range(200)]
    try:
        first.mark([(f"http://{host}/{page}", host, 0.0) for host in hosts for page in range(3)])
        rounds = [first.ready(1000.0, "BestFirst", 8), second.ready(1000.0, "BestFirst", 8)]  # both registered
        ones, twos = first.ready(1001.0, "BestFirst", 8), second.ready(1001.0, "BestFirst", 8)
        assert first.share.buckets and second.share.buckets and not set(first.share.buckets) & set(second.share.buckets)
        assert ones and {bucket_of(e.host, first.buckets) for e in ones} <= set(first.share.buckets)
        assert twos and {bucket_of(e.host, second.buckets) for e in twos} <= set(second.share.buckets)
        assert first.lost_races == second.lost_races == 0
        second.close()
        alone = first.ready(1002.0, "BreadthFirst")  # the other left: the whole frontier, in its order
        assert first.share.buckets is None
        leased = {entry.host for round_ in (*rounds, ones, twos) for entry in round_}
        assert [entry.host for entry in alone] == [host for host in hosts if host not in leased][:16]
    finally:
        first.close()


#: How long a harvester's frontier leases what its BestFirst rounds hand out, in the comparisons with SqliteFrontier.
ROUND_LEASE_SECONDS = 25.0


@pytest.mark.parametrize("leasing", [None, False, True], ids=["looking", "leasing", "solo"])
@pytest.mark.parametrize("seed", range(4))
def test_best_first_rounds_are_the_embedded_frontiers_over_many_hosts_and_priorities(connect, tmp_path, seed, leasing,
                                                                                   monkeypatch):
    """BestFirst reads only the first heads of each bucket, yet ranks as SqliteFrontier does, whatever the
    priorities, raises, leases (held places), locks, yields and re-rankings that came before. With odd seeds
    each bucket is first asked for a single head, so buckets are often asked again for more; seeds 2 and 3 run on
    a frontier of a cluster's many buckets (one made for a cluster, or on a single Redis before it got fewer).

    ``leasing``: a harvester's frontier, whose look reads the heads' ranks alone and whose round leases what it
    hands out, reading each URL and its record as it leases it; the embedded frontier claims its round's URLs.
    "leasing" keeps the heads in Redis; "solo" (a single Redis) lets the lone harvester keep them in its memory from
    its second look on (``solo.py``), "leasing" on a cluster."""
    import combine_scrapy.frontier.redis.queue as redis_queue

    options = dict(lease_ahead=True, lease_seconds=ROUND_LEASE_SECONDS, solo=leasing) if leasing is not None else {}
    frontier = connect(max_attempts=3, buckets=CLUSTER_BUCKETS if seed >= 2 else None, **options)
    if seed % 2:
        monkeypatch.setattr(redis_queue, "FIRST_HEADS", 1)
    embedded = SqliteFrontier(tmp_path / "frontier.sqlite", max_attempts=3)
    rnd = random.Random(seed)
    hosts = [f"h{n}.test" for n in range(120)]
    now = 0.0

    def both(call):
        ours, theirs = call(frontier), call(embedded)
        assert ours == theirs, (seed, now)
        return ours

    def best_first(limit: int, hold: float):
        ours, theirs = frontier.ready(now, "BestFirst", limit, hold=hold), embedded.ready(now, "BestFirst", limit, hold=hold)
        assert (ours, ours.held_until) == (theirs, theirs.held_until), (seed, now)
        if leasing is not None:
            assert all(embedded.claim(entry, now, ROUND_LEASE_SECONDS) for entry in theirs)
        return ours

    for _ in range(120):
        now += rnd.choice([0, 1, 5, 20])
        batch = [(f"http://{host}/{rnd.randrange(12)}", host, rnd.choice([-3.0, -0.5, 0.0, 0.5, 2.5, 9.0, rnd.random()]))
                 for host in rnd.sample(hosts, 30)]
        distance = rnd.choice([0, 1])
        both(lambda f: f.mark(batch, distance=distance))
        round_ = best_first(rnd.choice([1, 4, 16]), rnd.choice([0.0, 30.0]))
        for entry in round_[:rnd.randrange(len(round_) + 1)]:
            lease = rnd.choice([10.0, 40.0])
            if leasing is None and not both(lambda f: f.claim(entry, now, lease)):
                continue
            outcome = rnd.random()
            if outcome < 0.5:
                # A fetch ends at the round's time, never after the next look: the clock does not run backwards
                # (a URL kept marked is due from its lock's end, which each store judges by the time it is told).
                # with the page's links, most to its own host (new, known, raised, itself) at times
                links = [(f"http://{host}/{rnd.randrange(12)}", host, rnd.choice([-0.5, 0.5, 9.0, rnd.random()]))
                         for host in [entry.host] * 3 + rnd.sample(hosts, 1)]
                fetch = dict(now=now, url_lock_until=now + 1, host_lock_until=now + rnd.choice([0, 1, 10]), status=200,
                             keep_marked=rnd.random() < 0.2, relevant=rnd.random() < 0.4,
                             links=rnd.choice([None, Marking(links, None, rnd.choice([0, 1]))]))
                both(lambda f: f.complete(entry.url, entry.host, **fetch))
            elif outcome < 0.6:
                host_lock_until = now + rnd.choice([0, 3])
                both(lambda f: f.release(entry.url, entry.host, host_lock_until, now))
            # else: the fetch is in flight (its host holds its place) or its harvester died (the lease runs out)
        if rnd.random() < 0.2:
            host, until = rnd.choice(hosts), now + rnd.choice([0, 15])
            both(lambda f: f.lock_host(host, until))
        if rnd.random() < 0.1:
            ranks = {f"http://{host}/{rnd.randrange(12)}": rnd.random() for host in rnd.sample(hosts, 20)}
            both(lambda f: f.set_priorities(ranks))
        if rnd.random() < 0.1:
            url = f"http://{rnd.choice(hosts)}/{rnd.randrange(12)}"
            both(lambda f: f.remark(url))
        best_first(rnd.choice([1, 4, 16]), rnd.choice([0.0, 30.0]))
        _assert_queue_bests_kept(frontier)
    assert frontier.lost_races == 0   # alone, a harvester leases every URL its look ranked
    if leasing and frontier.connection.single_node:
        assert frontier.solo is not None and frontier.solo.heads is not None   # it ranked from memory to the end
    embedded.close()


def _solo_steps(harvester, embedded, rnd: random.Random, hosts: list[str], now: float, steps: int) -> float:
    """``steps`` of a lone harvester's work mirrored on the embedded frontier, which claims what its rounds lease:
    marks, BestFirst rounds (equal), completions with links, releases, host locks, new priorities, marks again.
    Some URLs stay leased (in flight). Returns the clock."""

    def both(call):
        ours, theirs = call(harvester), call(embedded)
        assert ours == theirs, now
        return ours

    def best_first():
        limit, hold = rnd.choice([1, 4, 16]), rnd.choice([0.0, 30.0])
        ours, theirs = harvester.ready(now, "BestFirst", limit, hold=hold), embedded.ready(now, "BestFirst", limit, hold=hold)
        assert (ours, ours.held_until) == (theirs, theirs.held_until), now
        assert all(embedded.claim(entry, now, ROUND_LEASE_SECONDS) for entry in theirs)
        return ours

    for _ in range(steps):
        now += rnd.choice([0, 1, 5, 20])
        batch = [(f"http://{host}/{rnd.randrange(12)}", host, rnd.choice([-0.5, 0.0, 0.5, 2.5, 9.0, rnd.random()]))
                 for host in rnd.sample(hosts, 10)]
        both(lambda f: f.mark(batch))
        for entry in best_first():
            outcome = rnd.random()
            if outcome < 0.6:
                links = Marking([(f"http://{host}/{rnd.randrange(12)}", host, rnd.choice([0.5, 9.0, rnd.random()]))
                                 for host in [entry.host] * 2 + rnd.sample(hosts, 1)], None, 0)
                fetch = dict(now=now, url_lock_until=now + 1, host_lock_until=now + rnd.choice([0, 1, 10]), status=200,
                             relevant=rnd.random() < 0.4, links=links)
                both(lambda f: f.complete(entry.url, entry.host, **fetch))
            elif outcome < 0.7:
                both(lambda f: f.release(entry.url, entry.host, now, now))
        if rnd.random() < 0.2:
            host, until = rnd.choice(hosts), now + rnd.choice([0, 15])
            both(lambda f: f.lock_host(host, until))
        if rnd.random() < 0.2:
            ranks = {f"http://{host}/{rnd.randrange(12)}": rnd.random() for host in rnd.sample(hosts, 8)}
            both(lambda f: f.set_priorities(ranks))
        if rnd.random() < 0.2:
            url = f"http://{rnd.choice(hosts)}/{rnd.randrange(12)}"
            both(lambda f: f.remark(url))
    return now


def _looks_alike(plain, embedded, now: float) -> None:
    """A look at the heads in Redis (a frontier that leases nothing) ranks as the embedded frontier, at every size
    and hold."""
    for limit in (1, 4, 16):
        for hold in (0.0, 30.0):
            ours, theirs = plain.ready(now, "BestFirst", limit, hold=hold), embedded.ready(now, "BestFirst", limit, hold=hold)
            assert (ours, ours.held_until) == (theirs, theirs.held_until), (limit, hold)


@pytest.mark.parametrize("end", ["joined", "killed", "revoked"])
def test_when_a_solo_harvesters_mode_ends_the_heads_in_redis_are_made_anew(job, harvester_frontier, open_frontier,
                                                                            tmp_path, end):
    """A lone harvester ranks from its memory (solo mode), the heads in Redis left as they were; its mode ends when
    another harvester joins ("joined": its first look ends it), when it dies and another takes over ("killed"), or
    when its key is deleted while it works ("revoked"). Then the heads in Redis rank as the embedded frontier, no
    URL is handed out twice nor a host to two harvesters at once, what the old solo harvester writes afterwards
    keeps them right, and a harvester alone again becomes solo, its rounds still the embedded frontier's."""
    from combine_scrapy.frontier.redis.solo import end_solo

    solo = harvester_frontier(job, ROUND_LEASE_SECONDS)
    plain = open_frontier(job, max_attempts=3)
    embedded = SqliteFrontier(tmp_path / "frontier.sqlite", max_attempts=3)
    rnd = random.Random(end)
    hosts = [f"h{n}.test" for n in range(40)]
    server, key = solo.server, solo.connection.key("solo")
    others = []
    try:
        now = _solo_steps(solo, embedded, rnd, hosts, 0.0, 30)
        assert solo.solo is not None and solo.solo.heads is not None
        assert server.get(key) == solo.share.harvester_id.encode()
        if end == "revoked":
            assert end_solo(plain.connection, solo.share.harvester_id)
            assert server.get(key) is None
            _looks_alike(plain, embedded, now)
            now = _solo_steps(solo, embedded, rnd, hosts, now + 1, 30)   # its next look finds it out, the one after
            assert solo.solo.heads is not None                           # enters again
        else:
            other = harvester_frontier(job, ROUND_LEASE_SECONDS)
            others.append(other)
            now += 1
            taken = other.ready(now, "BestFirst", 16)   # the solo harvester is at work (its entry): a share
            assert server.get(key) is None
            assert all(embedded.claim(entry, now, ROUND_LEASE_SECONDS) for entry in taken)
            if end == "joined":
                mine = solo.ready(now, "BestFirst", 16)   # finds its mode ended: a share, none of the other's
                assert solo.solo.heads is None
                assert not {entry.host for entry in mine} & {entry.host for entry in taken}
                assert all(embedded.claim(entry, now, ROUND_LEASE_SECONDS) for entry in mine)
                for entry in mine:   # the old solo harvester's writes keep the heads in Redis right
                    for store in (solo, embedded):
                        store.complete(entry.url, entry.host, now=now, url_lock_until=now + 1, host_lock_until=now,
                                       status=200, links=Marking([(f"http://{entry.host}/x", entry.host, 5.0)], None, 0))
            _looks_alike(plain, embedded, now)
            if end == "killed":   # its entry among the harvesters ends: the other is alone, and becomes solo
                server.zrem(solo.connection.key("harvesters"), solo.share.harvester_id)
                solo.connection.close()
                solo = None
                now = _solo_steps(other, embedded, rnd, hosts, now + ROUND_LEASE_SECONDS, 30)
                assert other.solo.heads is not None
                assert server.get(key) == other.share.harvester_id.encode()
    finally:
        for frontier in [solo, *others]:
            if frontier is not None:
                frontier.close()
        plain.close()
        embedded.close()


def test_a_solo_harvester_sees_what_another_process_writes_and_one_among_others_never_looks_at_the_solo_key(
        job, harvester_frontier, open_frontier):
    """A console command's writes (marks, a host's lock) while a harvester is solo reach its memory by the notes:
    its next round is as if it read the heads. A harvester at work that is not solo sends its scripts no look at the
    solo key; one that is, and a console command, do."""
    solo, console = harvester_frontier(job), open_frontier(job)
    others = []
    try:
        solo.mark([(f"http://h{n}.test/", f"h{n}.test", 1.0) for n in range(4)])
        assert len(solo.ready(1000.0, "BestFirst", 2)) == 2   # the first look finds it alone
        assert len(solo.ready(1000.0, "BestFirst", 1)) == 1 and solo.solo.heads is not None   # solo from here
        assert solo.connection.solo_checked()   # its scripts note what they change
        console.mark([("http://new.test/best", "new.test", 9.0)])
        console.lock_host("h3.test", 2000.0)
        assert [entry.url for entry in solo.ready(1001.0, "BestFirst", 4)] == ["http://new.test/best"]  # h3 locked
        other = harvester_frontier(job)
        others.append(other)
        other.ready(1002.0, "BestFirst", 4)   # ends the solo mode; its renewal found the solo harvester at work
        assert not other.connection.solo_checked() and console.connection.solo_checked()
        assert solo.ready(1003.0, "BestFirst", 4) is not None and solo.solo.heads is None   # it found out
        assert not solo.connection.solo_checked()   # registered, and solo no more
        sent = []
        run = other.server.execute_command
        other.server.execute_command = lambda *args, **kw: sent.append(args) or run(*args, **kw)
        other.mark([("http://later.test/", "later.test", 1.0)])
        assert sent[0][0] == "EVALSHA" and sent[0][3 + int(sent[0][2])] == "0"   # its first argument: no look
    finally:
        for frontier in (solo, console, *others):
            frontier.close()


def _solo_and_embedded(redis_url: str, tmp_path) -> tuple[RedisFrontier, SqliteFrontier]:
    """A harvester's frontier on a Redis of the test's own (solo at its first look) and an embedded one to compare."""
    return (RedisFrontier.from_url(redis_url, "solo-notes", max_attempts=3, lease_seconds=60.0, lease_ahead=True),
            SqliteFrontier(tmp_path / "f.sqlite", max_attempts=3))


def _claimed_round(store, now: float, limit: int) -> list[FrontierEntry]:
    """A BestFirst round of ``store``, each URL claimed."""
    found = store.ready(now, "BestFirst", limit)
    for entry in found:
        assert store.claim(entry, now, 60.0)
    return list(found)


def test_a_solo_harvesters_scripts_note_a_host_whose_queue_they_left_alone_without_reading_it(private_redis_url,
                                                                                               tmp_path):
    """In solo mode a script that changes a host's lock, lease or yield but not its queue notes the host with its best
    URL as its last note gave it: the completion of a leased URL with no link to its host, and a host's lock, read no
    best URL (no ZRANGE); a completion whose links reach its host's queue has it from the mark (the best before, kept
    in the host's u: hash, and the new ones). Rounds as the embedded frontier's."""
    solo, embedded = _solo_and_embedded(private_redis_url, tmp_path)
    try:
        batch = [(f"http://h{n}.test/{page}", f"h{n}.test", 1.0 + n - page / 4) for n in range(3) for page in range(3)]
        for store in (solo, embedded):
            store.mark(batch)
        [first] = _claimed_round(solo, 1000.0, 1)
        assert [first] == _claimed_round(embedded, 1000.0, 1)
        [second] = _claimed_round(solo, 1000.0, 1)   # from its memory
        assert [second] == _claimed_round(embedded, 1000.0, 1) and solo.solo.heads is not None
        ran = _ran(solo, lambda: solo.complete(first.url, first.host, now=1001.0, url_lock_until=1001.0,
                                               host_lock_until=1001.0, status=200))
        assert "zrange" not in ran, ran
        ran = _ran(solo, lambda: solo.lock_host("h0.test", 1003.0))
        assert "zrange" not in ran, ran
        links = Marking([(f"{second.url}/next", second.host, 5.0)])
        ran = _ran(solo, lambda: solo.complete(second.url, second.host, now=1001.0, url_lock_until=1001.0,
                                               host_lock_until=1001.0, status=200, links=links))
        assert "zrange" not in ran and ran["hset"] == 2, ran   # the host's u: hash (records, best) and its host: hash
        embedded.complete(first.url, first.host, now=1001.0, url_lock_until=1001.0, host_lock_until=1001.0, status=200)
        embedded.lock_host("h0.test", 1003.0)
        embedded.complete(second.url, second.host, now=1001.0, url_lock_until=1001.0, host_lock_until=1001.0, status=200,
                          links=links)
        for now in (1002.0, 1004.0):
            assert _claimed_round(solo, now, 2) == _claimed_round(embedded, now, 2) and solo.solo.heads is not None
    finally:
        solo.close()
        embedded.close()


def test_a_solo_harvesters_rescoring_notes_each_hosts_new_best_without_reading_its_state(private_redis_url, tmp_path):
    """In solo mode a re-scoring notes a host whose best URL may have changed with that URL alone (its lock, lease and
    yield as its last note gave them: no HMGET of its state). The URLs go as their members of their queues (this
    harvester marked them): no record is read, each host's best is read from its queue before, and again after when
    a URL passed it or it fell, and ``locked`` is read once a bucket. A host locked and one leased keep their lock and
    lease in the memory. Rounds as the embedded frontier's."""
    solo, embedded = _solo_and_embedded(private_redis_url, tmp_path)
    try:
        batch = [(f"http://h{n}.test/{page}", f"h{n}.test", 1.0 + n - page / 4) for n in range(4) for page in range(3)]
        for store in (solo, embedded):
            store.mark(batch)
            store.lock_host("h1.test", 1010.0)
        assert _claimed_round(solo, 1000.0, 1) == _claimed_round(embedded, 1000.0, 1)   # h3's best leased
        assert _claimed_round(solo, 1000.0, 1) == _claimed_round(embedded, 1000.0, 1) and solo.solo.heads is not None   # h2's
        passing = {"http://h0.test/2": 9.0, "http://h1.test/1": 8.0, "http://h3.test/1": 7.0}
        ran = _ran(solo, lambda: solo.set_priorities(passing))
        embedded.set_priorities(passing)
        buckets = len(solo.connection.by_bucket(["h0.test", "h1.test", "h3.test"]))
        # each host's best before, h0's and h1's after (passed; h3's best is the URL raised), ``locked``; the copies
        assert "hmget" not in ran and ran["hset"] == 3 and ran["zrange"] == 3 + 2 + buckets, ran
        falling = {"http://h0.test/2": 0.0, "http://h1.test/1": 0.5}   # each its host's best: its next read
        ran = _ran(solo, lambda: solo.set_priorities(falling))
        embedded.set_priorities(falling)
        buckets = len(solo.connection.by_bucket(["h0.test", "h1.test"]))
        assert "hmget" not in ran and ran["zrange"] == 2 * 2 + buckets, ran
        for now in (1001.0, 1011.0, 1070.0):
            assert _claimed_round(solo, now, 3) == _claimed_round(embedded, now, 3) and solo.solo.heads is not None
    finally:
        solo.close()
        embedded.close()


def test_a_frontier_over_the_solo_bound_keeps_its_heads_in_redis(job, harvester_frontier):
    """Solo mode reads every queued host at once, so a frontier with more hosts than ``max_hosts`` is refused it (and
    not asked again at every look), and a solo harvester whose memory grows past the bound leaves it, the heads made
    anew in Redis; its rounds are the same either way."""
    harvester = harvester_frontier(job)
    entries = []
    run = harvester.connection.run_scripts
    harvester.connection.run_scripts = lambda calls, *rest, **options: entries.extend(
        call for call in calls if call[0] == "solo_enter") or run(calls, *rest, **options)
    try:
        harvester.solo.max_hosts = 2
        harvester.mark([(f"http://h{n}.test/", f"h{n}.test", 1.0 + n) for n in range(5)])
        harvester.ready(1000.0, "BestFirst", 1)   # the first look finds it alone
        assert [entry.url for entry in harvester.ready(1000.0, "BestFirst", 1)] == ["http://h3.test/"]
        assert harvester.solo.heads is None and harvester.server.get(harvester.connection.key("solo")) is None
        assert [entry.url for entry in harvester.ready(1000.0, "BestFirst", 1)] == ["http://h2.test/"]
        assert len(entries) == 1   # refused once (3 hosts queued), not asked again before SOLO_RETRY
        harvester.solo.max_hosts, harvester.solo._retry_at = 10, 0.0
        assert [entry.url for entry in harvester.ready(1000.0, "BestFirst", 1)] == ["http://h1.test/"]
        assert harvester.solo.heads is not None   # solo now
        harvester.solo.max_hosts = 4
        harvester.mark([(f"http://more{n}.test/", f"more{n}.test", 0.5) for n in range(4)])
        assert [entry.url for entry in harvester.ready(1000.0, "BestFirst", 1)] == ["http://h0.test/"]
        assert harvester.solo.heads is None   # grown past the bound: the heads are in Redis again
        assert sum(harvester.server.zcard(prefix + "heads") for prefix in harvester.connection.bucket_prefixes) == 4
    finally:
        harvester.close()


@pytest.fixture
def private_redis_url(tmp_path):
    """A Redis of this test's own, so its command counts are the test's alone."""
    import subprocess

    import redis
    from conftest import free_port

    port = free_port("127.0.0.1")
    server = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                               "--appendonly", "no", "--dir", str(tmp_path)], stdout=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        for _ in range(200):
            try:
                redis.Redis.from_url(url).ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_a_best_first_look_costs_as_many_redis_commands_however_many_hosts_are_due(private_redis_url):
    """BestFirst's ready reads the first heads of each bucket: the commands Redis runs for it (those of its
    scripts included) do not grow with the due hosts, while a full round's (BreadthFirstTime) do."""

    def commands(frontier: RedisFrontier, strategy: str, limit: int | None, now: float) -> int:
        def total() -> int:
            return sum(stats["calls"] for stats in frontier.server.info("commandstats").values())

        before = total()
        frontier.ready(now, strategy, limit, hold=60.0)
        return total() - before

    costs: dict[int, tuple[int, int]] = {}
    for hosts in (100, 3000):
        frontier = RedisFrontier.from_url(private_redis_url, f"cost-{hosts}")
        try:
            frontier.mark([(f"http://h{n}.test/{page}", f"h{n}.test", float((n * 7 + page) % 13))
                           for n in range(hosts) for page in range(3)])
            assert len(frontier.ready(1.0, "BestFirst", 16, hold=60.0)) == 16  # new hosts are due from now on
            costs[hosts] = commands(frontier, "BestFirst", 16, 2.0), commands(frontier, "BreadthFirstTime", None, 2.0)
        finally:
            frontier.close()
    (best_few, full_few), (best_many, full_many) = costs[100], costs[3000]
    assert best_many == best_few, costs
    assert full_many > 10 * full_few, costs  # the counts do see a look over every due host
    assert best_many * 20 < full_many, costs


def _commands(frontier: RedisFrontier) -> dict[str, int]:
    """The calls of each command Redis has run (a script's inner commands included), by name."""
    return {name.removeprefix("cmdstat_"): stats["calls"] for name, stats in frontier.server.info("commandstats").items()}


def _ran(frontier: RedisFrontier, call) -> dict[str, int]:
    """The commands Redis ran for ``call()`` on the frontier's keys, by name (not the scripts' calls and loads, nor
    the INFO that counts them)."""
    before = _commands(frontier)
    call()
    return {name: count - before.get(name, 0) for name, count in _commands(frontier).items()
            if count > before.get(name, 0) and name not in ("info", "evalsha", "eval") and not name.startswith("script")}


def test_a_mark_raises_queued_urls_in_their_queue_alone_and_counts_them(private_redis_url, tmp_path):
    """Known URLs still queued, given again, are raised in their host's queue by one ZADD XX LT CH a host, which
    counts those raised, and their records are not written (a queued URL's priority is its score); one also given a
    lower distance is counted whatever its priority and its record written, with a ZADD of its own. A raise behind the
    host's best leaves its head and the copy of its best alone (no ZRANGE, no HSET); one over it places the head
    again. Counts and rounds as the embedded frontier's."""
    frontier, embedded = RedisFrontier.from_url(private_redis_url, "raise-lt"), SqliteFrontier(tmp_path / "f.sqlite")
    try:
        for store in (frontier, embedded):
            store.mark([(f"http://a.test/{page}", "a.test", 4.0 - page) for page in range(3)], distance=1)
            store.mark([("http://a.test/3", "a.test", 1.0)], distance=2)
        found: list = []

        def marked_alike(batch: list, distance: int, result: tuple[int, int, int]) -> dict[str, int]:
            ran = _ran(frontier, lambda: found.append(frontier.mark(batch, distance=distance)))
            assert found[-1] == embedded.mark(batch, distance=distance) == result
            return ran

        behind = [("http://a.test/2", "a.test", 2.5), ("http://a.test/3", "a.test", 0.5)]   # /2 raised, /3 not
        assert marked_alike(behind, 2, (0, 0, 1)) == {"hmget": 1, "zadd": 1, "incrby": 1}
        closer = [("http://a.test/1", "a.test", 3.5), ("http://a.test/3", "a.test", 0.25)]   # /1 raised, /3 closer
        ran = marked_alike(closer, 1, (0, 0, 2))
        assert ran["zadd"] == 2 and ran["hset"] == 1 and "zrange" not in ran and "zmscore" not in ran, ran
        assert frontier.ready(0.0, "BestFirst", 4) == embedded.ready(0.0, "BestFirst", 4)
        assert marked_alike([("http://a.test/3", "a.test", 5.0), ("http://a.test/2", "a.test", 1.0)], 1, (0, 0, 1))["exists"] == 1
        for strategy in ("BestFirst", "BreadthFirst"):
            assert frontier.ready(0.0, strategy, 4) == embedded.ready(0.0, strategy, 4)
        _assert_queue_bests_kept(frontier)
    finally:
        frontier.close()
        embedded.close()


def test_a_mark_counts_its_urls_once_a_call_and_a_hosts_urls_in_its_hash(private_redis_url, tmp_path):
    """A mark over hosts in many buckets adds to the counters with two HINCRBY in all (not two a bucket, nor one a
    host) and reads and writes a host's count of URLs for the bound with its records (one HMGET, one HSET a host,
    no HLEN); a host new to the frontier costs no look at its best URL (none is queued). The counts and the bound
    answer as the embedded frontier's, with and without a bound."""
    frontier = RedisFrontier.from_settings({"REDIS_URL": private_redis_url, "COMBINE_REDIS_BUCKETS": CLUSTER_BUCKETS},
                                           "counters")
    embedded = SqliteFrontier(tmp_path / "f.sqlite")
    try:
        batch = [(f"http://h{n}.test/{page}", f"h{n}.test", 0.5) for n in range(20) for page in range(3)]
        assert len({bucket_of(f"h{n}.test", frontier.connection.buckets) for n in range(20)}) > 5
        ran = _ran(frontier, lambda: frontier.mark(batch, max_urls_per_host=4))
        assert ran["hincrby"] == 1 and ran["hset"] == 20 and "hlen" not in ran, ran   # each host's records and count
        # hosts none of whose URLs was marked before: no best URL read, the lock read with the host's state
        assert ran["hmget"] == 40 and "zrange" not in ran and "hget" not in ran, ran
        embedded.mark(batch, max_urls_per_host=4)
        more = [(f"http://h{n}.test/{page}", f"h{n}.test", 0.5) for n in range(0, 20, 2) for page in range(2, 6)]
        assert frontier.mark(more, max_urls_per_host=4) == embedded.mark(more, max_urls_per_host=4)
        unbounded = [(f"http://h{n}.test/{page}", f"h{n}.test", 0.5) for n in range(0, 20, 4) for page in range(6, 8)]
        assert frontier.mark(unbounded) == embedded.mark(unbounded)   # counted without a bound too
        assert frontier.mark(more + unbounded, max_urls_per_host=6) == embedded.mark(more + unbounded, max_urls_per_host=6)
        assert frontier.counts(0.0) == embedded.counts(0.0)
        assert frontier.hosts(0.0, 5) == embedded.hosts(0.0, 5)
    finally:
        frontier.close()
        embedded.close()


def test_a_completion_with_its_pages_links_is_one_script_that_places_the_pages_host_once(private_redis_url, tmp_path):
    """On a single Redis the links' mark and the completion are one script call; the page's host (most links go to
    it) is placed by the completion alone, and the URLs marked are counted with the completion's own change. No
    queue's best is read: each host's best before is a copy in its u: hash, read with its records. Rounds, counts and
    busiest hosts as the embedded frontier's."""
    frontier = RedisFrontier.from_settings({"REDIS_URL": private_redis_url}, "completion")
    embedded = SqliteFrontier(tmp_path / "f.sqlite")
    try:
        for store in (frontier, embedded):
            store.mark([("http://a.test/1", "a.test", 1.0), ("http://a.test/2", "a.test", 0.5),
                        ("http://b.test/1", "b.test", 0.5)])
            [entry] = [e for e in store.ready(10.0, "BestFirst", 4) if e.host == "a.test"]
            assert store.claim(entry, 10.0, 60.0)
        links = Marking([(f"http://a.test/{page}", "a.test", 2.0) for page in range(3, 8)] + [("http://b.test/2", "b.test", 3.0)])

        def complete(store):
            return store.complete("http://a.test/1", "a.test", now=11.0, url_lock_until=1e6, host_lock_until=11.0,
                                  status=200, links=links)

        frontier.server.script_load(frontier.connection.scripts["complete_links"].script)
        scripts = frontier.server.info("commandstats")["cmdstat_evalsha"]["calls"]
        ran = _ran(frontier, lambda: complete(frontier))
        assert frontier.server.info("commandstats")["cmdstat_evalsha"]["calls"] - scripts == 1
        # no look at a queue: each host's best before is read with its records (a copy in its u: hash), the best
        # after is the first of it and the new URLs
        assert "zrange" not in ran, ran
        # the URLs marked counted with the completion's change: stats' urls and done (no count a host, the marked
        # are the rest)
        assert ran["hincrby"] == 2 and "zincrby" not in ran, ran
        assert complete(embedded) == (6, 0, 0)
        assert frontier.ready(12.0, "BestFirst", 8) == embedded.ready(12.0, "BestFirst", 8)
        assert frontier.counts(12.0) == embedded.counts(12.0)
        assert frontier.hosts(12.0, 5) == embedded.hosts(12.0, 5)
    finally:
        frontier.close()
        embedded.close()


def test_a_mark_leaves_a_host_waiting_for_its_lock_where_it_is(private_redis_url, tmp_path):
    """A host with queued URLs and no head waits in 'waiting' by when it unlocks, which a new best URL does not
    change: the mark reads the host's state and writes neither 'waiting' nor a head; the host's round once it
    unlocks is the embedded frontier's."""
    frontier = RedisFrontier.from_settings({"REDIS_URL": private_redis_url}, "waiting")
    embedded = SqliteFrontier(tmp_path / "f.sqlite")
    try:
        for store in (frontier, embedded):
            store.mark([("http://a.test/1", "a.test", 1.0), ("http://a.test/2", "a.test", 0.5)])
            [entry] = store.ready(10.0, "BestFirst", 4)
            assert store.claim(entry, 10.0, 60.0)
            store.complete(entry.url, "a.test", now=11.0, url_lock_until=1e6, host_lock_until=50.0, status=200)
        better = [("http://a.test/3", "a.test", 2.0)]
        ran = _ran(frontier, lambda: frontier.mark(better))
        assert ran["hmget"] == 2 and ran["zadd"] == 1 and "zrem" not in ran, ran   # records, state; its queue
        assert embedded.mark(better) == (1, 0, 0)
        for now in (20.0, 50.0):
            assert frontier.ready(now, "BestFirst", 4) == embedded.ready(now, "BestFirst", 4)
    finally:
        frontier.close()
        embedded.close()


def test_a_best_first_look_reads_no_url_of_a_host_locked_at_its_clock(private_redis_url):
    """A host whose fetch is in flight holds places in a BestFirst round but is not handed out: its row costs an HMGET
    and a ZRANGE (not the URL's record, a command more) and ranks it as the free host's row does, with its URL (read
    from its queue). A look that leases what it hands out reads every row so ('ranks')."""
    frontier = RedisFrontier.from_url(private_redis_url, "held")
    try:
        frontier.mark([(f"http://a.test/{page}", "a.test", 2.0 - page) for page in range(3)])
        prefix = frontier.connection.bucket_prefixes[bucket_of("a.test", frontier.buckets)]
        frontier.lock_host("a.test", 10.0)

        def row(rows: str, now: float) -> tuple[list, dict[str, int]]:
            found: list = []
            ran = _ran(frontier, lambda: found.extend(frontier.connection.run_scripts(
                [("head_rows", [prefix], [rows, number(now), "a.test", 2])])[0]))
            return found[0], ran

        (held, held_ran), (free, free_ran), (ranks, ranks_ran) = row("urls", 5.0), row("urls", 10.0), row("ranks", 10.0)
        assert held_ran == ranks_ran == {"hmget": 1, "zrange": 1}, (held_ran, ranks_ran)
        assert free_ran == {"hmget": 1, "zrange": 1, "hget": 1}, free_ran
        assert free[0] == held[0] == ranks[0] == b"http://a.test/0"
        assert held[1:4] + held[7:] == ranks[1:4] + ranks[7:] == free[1:4] + free[7:]   # host, priority, order of
    finally:                                                                               # marking; lock, yield, queue
        frontier.close()


def test_take_heads_leases_the_url_a_look_ranked_and_answers_its_record(private_redis_url):
    """take_heads is given a host and the URL a look ranked: it leases that URL (not the host's best now), reads
    its record once, and answers the URL's priority, etag, Last-Modified and distance; a URL leased, of a host
    locked, or handed out max attempts times (its lease over, in no queue), is not leased (false)."""
    frontier = RedisFrontier.from_url(private_redis_url, "take-heads", max_attempts=3)
    try:
        frontier.mark([("http://a.test/0", "a.test", 2.0)])
        frontier.mark([("http://a.test/1", "a.test", 1.0)], distance=2)
        assert frontier.claim(FrontierEntry("http://a.test/1", "a.test"), 0.0, 10.0)
        frontier.complete("http://a.test/1", "a.test", now=1.0, url_lock_until=1.0, host_lock_until=1.0, status=200,
                          keep_marked=True, etag='"e"', last_modified="lm")
        assert [entry.url for entry in frontier.ready(2.0, "BestFirst", 2)] == ["http://a.test/0"]  # /1 queued again
        prefix = frontier.connection.bucket_prefixes[bucket_of("a.test", frontier.buckets)]

        def take(now: float, *pairs: object) -> tuple[list, dict[str, int]]:
            found: list = []
            ran = _ran(frontier, lambda: found.extend(frontier.connection.run_scripts(
                [("take_heads", [prefix], [number(now), number(now + 30.0), 3, *pairs])])[0]))
            return found, ran

        leased, ran = take(3.0, "a.test", "http://a.test/1")
        assert leased == [[b"1", b'"e"', b"lm", 2]]
        # the record read once, with its queue's best (its host's state the other HMGET); not that URL: its score read
        assert ran["hmget"] == 2 and ran["zscore"] == 1 and "hget" not in ran and "zrangebyscore" not in ran, ran
        assert float(frontier.server.hget(prefix + "host:a.test", "lock_until")) == 33.0
        assert take(3.0, "a.test", "http://a.test/1")[0] == [None]    # leased
        assert take(3.0, "a.test", "http://a.test/0")[0] == [None]    # queued, but its host is locked
        assert frontier.statuses(["http://a.test/0", "http://a.test/1"]) == {"http://a.test/0": None, "http://a.test/1": 200}
        for now in (34.0, 65.0, 96.0):   # /0 handed out three times, its leases left to end
            assert take(now, "a.test", "http://a.test/0")[0] == [[b"2", None, None, 0]]
        assert take(127.0, "a.test", "http://a.test/0")[0] == [None]   # three attempts: promote drops it
        assert [entry.url for entry in frontier.ready(127.0, "BestFirst", 2)] == ["http://a.test/1"]
    finally:
        frontier.close()


def test_a_lease_writes_its_hosts_lock_lease_and_head_in_one_hset(private_redis_url):
    """A lease (take_heads, take, claim) costs its host one HMGET of its state and one HSET of its lock, lease and
    new head; the URL's record one HMGET with its queue's best, whose copy gives the URL's priority (its queue's
    score), and one HSET: ten commands for a URL of a host with more queued, and one EXISTS a script call
    (library.lua's solo())."""
    frontier = RedisFrontier.from_url(private_redis_url, "lease-cost", max_attempts=3)
    try:
        frontier.mark([(f"http://a.test/{page}", "a.test", 2.0 - page) for page in range(3)])
        assert [entry.url for entry in frontier.ready(1.0, "BestFirst", 1)] == ["http://a.test/0"]  # a.test in heads
        prefix = frontier.connection.bucket_prefixes[bucket_of("a.test", frontier.buckets)]
        found: list = []
        ran = _ran(frontier, lambda: found.extend(frontier.connection.run_scripts(
            [("take_heads", [prefix], [number(2.0), number(32.0), 3, "a.test", "http://a.test/0"])])[0]))
        assert found[0][0] == b"2"
        # its queue's and its head's ZREM; and the script's one look at the solo key (no harvester is solo)
        assert ran == {"hmget": 2, "zrem": 2, "hset": 2, "zadd": 3, "zrange": 1, "exists": 1}, ran
        state = frontier.server.hgetall(prefix + "host:a.test")
        assert float(state[b"lock_until"]) == float(state[b"leased_until"]) == 32.0
        assert frontier.server.zscore(prefix + "leasedheads", state[b"head"]) is not None
    finally:
        frontier.close()


@pytest.mark.parametrize("wait", [0.0, 1.0])
def test_a_completion_places_a_host_whose_lock_is_over_in_heads_at_once(private_redis_url, tmp_path, wait):
    """A completion whose host lock is already over (WaitIntervalHost 0) places the host among the free heads: not
    in 'waiting', so the next look moves no host (no ZREMRANGEBYSCORE, no head written). A lock still running
    (WaitIntervalHost 1) puts the host in 'waiting' until a look at or after its end. The completion writes the
    host's lock, yield, the end of its lease and its head with one HSET, and deletes the head it loses (waiting) with
    one HDEL. Rounds as the embedded frontier's."""
    frontier = RedisFrontier.from_settings({"REDIS_URL": private_redis_url}, f"over-{wait:g}")
    embedded = SqliteFrontier(tmp_path / "f.sqlite")
    prefix = frontier.connection.bucket_prefixes[bucket_of("a.test", frontier.buckets)]
    try:
        for store in (frontier, embedded):
            store.mark([(f"http://a.test/{page}", "a.test", 2.0 - page) for page in range(3)]
                       + [("http://b.test/0", "b.test", 0.5)])
            [entry] = [e for e in store.ready(10.0, "BestFirst", 4) if e.host == "a.test"]
            assert store.claim(entry, 10.0, 60.0)
        ran = _ran(frontier, lambda: frontier.complete("http://a.test/0", "a.test", now=11.0, url_lock_until=1e6,
                                                      host_lock_until=11.0 + wait, status=200))
        embedded.complete("http://a.test/0", "a.test", now=11.0, url_lock_until=1e6, host_lock_until=11.0 + wait,
                          status=200)
        assert ran["hset"] == 2 and ran.get("hdel", 0) == (wait > 0), ran   # the record; the host's lock, yield...
        waiting = frontier.server.zscore(prefix + "waiting", "a.test")
        assert (waiting is None) == (wait == 0.0), waiting
        for now in (11.0, 12.0):
            looked = _ran(frontier, lambda: frontier.ready(now, "BestFirst", 4))
            moved = now >= 11.0 + wait and wait > 0.0 and now == 12.0
            assert ("zremrangebyscore" in looked) == moved, (now, looked)
            assert frontier.ready(now, "BestFirst", 4) == embedded.ready(now, "BestFirst", 4)
    finally:
        frontier.close()
        embedded.close()


@pytest.mark.parametrize("wait", [0.0, 3.0])
def test_a_release_places_a_host_whose_lock_is_over_in_heads_at_once(private_redis_url, tmp_path, wait):
    """A URL given back (a fetch put off) with its host's lock already over places the host among the free heads,
    with a lock still running in 'waiting'; the host's lock, lease and head cost one HSET (and one HDEL of the head
    it loses, waiting). Rounds as the embedded frontier's."""
    frontier = RedisFrontier.from_settings({"REDIS_URL": private_redis_url}, f"release-{wait:g}")
    embedded = SqliteFrontier(tmp_path / "f.sqlite")
    prefix = frontier.connection.bucket_prefixes[bucket_of("a.test", frontier.buckets)]
    try:
        for store in (frontier, embedded):
            store.mark([(f"http://a.test/{page}", "a.test", 2.0 - page) for page in range(3)])
            [entry] = store.ready(10.0, "BestFirst", 1)
            assert store.claim(entry, 10.0, 60.0)
        ran = _ran(frontier, lambda: (frontier.release("http://a.test/0", "a.test", 11.0 + wait, 11.0),
                                      frontier.connection.run_scripts([])))   # sent with the next round trip
        embedded.release("http://a.test/0", "a.test", 11.0 + wait, 11.0)
        assert ran["hset"] == 2 and ran.get("hdel", 0) == (wait > 0), ran   # the record; the host's lock, lease...
        assert (frontier.server.zscore(prefix + "waiting", "a.test") is None) == (wait == 0.0)
        for now in (11.0, 14.0):
            assert frontier.ready(now, "BestFirst", 4) == embedded.ready(now, "BestFirst", 4)
    finally:
        frontier.close()
        embedded.close()


def test_a_best_first_look_reads_no_leased_head_after_the_limit_th_free_head(private_redis_url, tmp_path):
    """top_heads reads a leased head's host (its lock and lease, one HMGET) only while the head may be among the
    bucket's first ``limit``: the leased heads past the limit-th free head by weighted priority are not read, nor
    those past the first ``limit`` leased ones held; the round is the embedded frontier's."""
    frontier = RedisFrontier.from_settings({"REDIS_URL": private_redis_url, "COMBINE_REDIS_BUCKETS": 1}, "leased-heads",
                                           max_attempts=3)
    embedded = SqliteFrontier(tmp_path / "f.sqlite", max_attempts=3)
    prefix = frontier.connection.bucket_prefixes[0]

    def top_heads(limit: int) -> dict[str, int]:
        return _ran(frontier, lambda: frontier.connection.run_scripts(
            [("top_heads", [prefix], [number(5.0), 3, number(65.0), limit])]))

    try:
        for store in (frontier, embedded):
            # ten hosts leased with their best (their heads next), then three better free hosts
            store.mark([(f"http://low{n}.test/{page}", f"low{n}.test", 1.0 - page) for n in range(10) for page in range(2)])
            for entry in store.ready(1.0, "BestFirst", 10):
                assert store.claim(entry, 1.0, 60.0)
            store.mark([(f"http://high{n}.test/0", f"high{n}.test", 5.0) for n in range(3)])
        assert frontier.server.zcard(prefix + "leasedheads") == 10
        top_heads(2)                                       # the new hosts leave 'waiting' for heads
        assert "hmget" not in top_heads(2)               # two free heads better than every leased one
        assert top_heads(5).get("hmget") == 5             # three free heads, then the first five leased ones held
        assert top_heads(30).get("hmget") == 10
        for limit in (2, 5, 30):
            assert frontier.ready(5.0, "BestFirst", limit, hold=60.0) == embedded.ready(5.0, "BestFirst", limit, hold=60.0)
    finally:
        frontier.close()
        embedded.close()


@pytest.mark.parametrize("rival", ["leased", "fetched"])
def test_a_url_another_harvester_took_between_a_look_and_its_leases_is_skipped(job, harvester_frontier, open_frontier,
                                                                                 monkeypatch, rival):
    """A leasing BestFirst look ranks a host by its best URL; when another harvester leases that URL (or leases
    and fetches it) before the look's leases, the look hands out the rest of its round without it and leases no
    other URL of the host in its place; the next look ranks the host again. Each URL is handed out once."""
    first, other = harvester_frontier(job), open_frontier(job)
    try:
        first.mark([("http://a.test/0", "a.test", 9.0), ("http://a.test/1", "a.test", 1.0), ("http://b.test/0", "b.test", 0.5)])
        taken = first._take_heads

        def racing(heads: list, now: float) -> list[FrontierEntry]:
            assert ("a.test", "http://a.test/0") in heads   # its best URL
            assert other.claim(FrontierEntry("http://a.test/0", "a.test"), now, 60.0)
            if rival == "fetched":
                other.complete("http://a.test/0", "a.test", now=now, url_lock_until=now, host_lock_until=now, status=200)
            return taken(heads, now)

        monkeypatch.setattr(first, "_take_heads", racing)
        assert [entry.url for entry in first.ready(1000.0, "BestFirst", 4)] == ["http://b.test/0"]
        assert first.lost_races == 1
        monkeypatch.undo()
        after = [entry.url for entry in first.ready(1001.0, "BestFirst", 4)]
        assert after == ([] if rival == "leased" else ["http://a.test/1"])   # a leased host is held; a fetched one free
        assert other.statuses(["http://a.test/0"]) == {"http://a.test/0": 200 if rival == "fetched" else None}
    finally:
        first.close()
        other.close()


def test_a_new_priority_behind_a_hosts_best_url_leaves_its_head_in_place(private_redis_url, tmp_path):
    """set_priorities places a host's head again only when its best URL may have changed: lowering a URL behind it
    costs two commands a host (read the host's best from its queue, score the queue: a queued URL's priority is its
    score alone, no record is read or written, nor the copy of the host's best) and one a bucket (read ``locked``),
    raising one over it places the head again; BestFirst answers as the embedded frontier's after each."""
    frontier, embedded = RedisFrontier.from_url(private_redis_url, "rescore"), SqliteFrontier(tmp_path / "f.sqlite")
    try:
        batch = [(f"http://h{n}.test/{page}", f"h{n}.test", 3.0 - page) for n in range(4) for page in range(3)]
        frontier.mark(batch)
        embedded.mark(batch)
        for new in (0.5, 5.0):   # page 2 (priority 1) falls further behind page 0, then passes it
            ranks = {f"http://h{n}.test/2": new for n in range(4)}
            ran = _ran(frontier, lambda: frontier.set_priorities(ranks))
            embedded.set_priorities(ranks)
            if new < 1:
                assert ran == {"zrange": 4 + len(frontier.connection.by_bucket([f"h{n}.test" for n in range(4)])),
                               "zadd": 4}, ran
            else:
                assert sum(ran.values()) > 4 * 4 and ran["zrem"] >= 4, ran
            assert frontier.ready(0.0, "BestFirst", 4) == embedded.ready(0.0, "BestFirst", 4)
    finally:
        frontier.close()
        embedded.close()


def test_a_new_best_url_of_a_host_waiting_for_its_lock_leaves_it_waiting(private_redis_url, tmp_path):
    """A host waiting for its lock has no head to place again: raising a URL over its best costs the HMGET of the
    host's state, the read of its new best (a URL given as its member may be no longer marked) and the HSET of the
    copy of that best more than a lowering behind it, and BestFirst answers as the embedded frontier's once the lock
    ends."""
    frontier, embedded = RedisFrontier.from_url(private_redis_url, "rescore-waiting"), SqliteFrontier(tmp_path / "f.sqlite")
    try:
        batch = [(f"http://h{n}.test/{page}", f"h{n}.test", 3.0 - page) for n in range(4) for page in range(3)]
        for store in (frontier, embedded):
            store.mark(batch)
            for n in range(4):
                store.lock_host(f"h{n}.test", 10.0)
        assert frontier.ready(5.0, "BestFirst", 4) == embedded.ready(5.0, "BestFirst", 4) == []
        ranks = {f"http://h{n}.test/2": 5.0 for n in range(4)}
        ran = _ran(frontier, lambda: frontier.set_priorities(ranks))
        embedded.set_priorities(ranks)
        buckets = len(frontier.connection.by_bucket([f"h{n}.test" for n in range(4)]))
        assert ran == {"hmget": 4, "zrange": 4 * 2 + buckets, "hset": 4, "zadd": 4, "exists": 1}, ran  # one look at
        # the solo key a call
        for now in (10.0, 11.0):
            assert frontier.ready(now, "BestFirst", 4) == embedded.ready(now, "BestFirst", 4)
    finally:
        frontier.close()
        embedded.close()


def test_a_rescored_urls_priority_is_its_queue_score_for_every_later_call(private_redis_url, tmp_path):
    """A re-scoring writes a queued URL's new priority to its queue's score alone (its record keeps the older): a
    later mark raises the URL from the new priority, a lease hands it out with it and keeps it in the record, so a
    retry queues it again with it; a leased URL re-scored comes back with its new priority when its lease ends, and
    one remarked keeps it. Every answer as the embedded frontier's."""
    frontier, embedded = RedisFrontier.from_url(private_redis_url, "rescored"), SqliteFrontier(tmp_path / "f.sqlite")

    def both(call):
        ours, theirs = call(frontier), call(embedded)
        assert ours == theirs
        return ours

    def rounds(now: float) -> None:
        for strategy in ("BestFirst", "BreadthFirst", "BreadthFirstTime"):
            both(lambda f: f.ready(now, strategy, 4))

    try:
        both(lambda f: f.mark([(f"http://a.test/{page}", "a.test", 3.0 - page) for page in range(4)]
                              + [("http://b.test/0", "b.test", 0.125)]))
        both(lambda f: f.set_priorities({"http://a.test/0": 0.25, "http://a.test/1": 0.75}))
        rounds(0.0)
        # /0's record still says 3: the mark compares with its score; /2 (1.0) is not raised by a lower priority
        assert both(lambda f: f.mark([("http://a.test/0", "a.test", 1.25), ("http://a.test/2", "a.test", 0.5)])) == (0, 0, 1)
        rounds(0.0)
        [entry] = both(lambda f: f.ready(1.0, "BestFirst", 1))
        assert (entry.url, entry.priority) == ("http://a.test/0", 1.25)
        both(lambda f: f.set_priorities({"http://a.test/1": 4.0}))
        [entry] = both(lambda f: f.ready(1.0, "BreadthFirst", 1))   # its host's first marked, not its best
        assert (entry.url, entry.priority) == ("http://a.test/0", 1.25)
        [entry] = both(lambda f: f.ready(1.0, "BestFirst", 1))
        assert both(lambda f: f.claim(entry, 1.0, 10.0)) and entry.url == "http://a.test/1"
        both(lambda f: f.complete(entry.url, entry.host, now=2.0, url_lock_until=2.0, host_lock_until=2.0, status=503,
                                  keep_marked=True))   # a retry: queued again with the priority it was leased with
        rounds(3.0)
        [entry] = both(lambda f: f.ready(3.0, "BestFirst", 1))
        assert (entry.url, entry.priority) == ("http://a.test/1", 4.0)
        assert both(lambda f: f.claim(entry, 3.0, 10.0))
        both(lambda f: f.set_priorities({"http://a.test/1": 0.5, "http://a.test/3": 2.5}))   # /1 leased, /3 queued
        rounds(14.0)   # /1's lease over: back in its queue at 0.5
        both(lambda f: f.mark([("http://a.test/1", "a.test", 0.625)]))
        assert both(lambda f: f.remark("http://a.test/3"))
        rounds(14.0)
        _assert_queue_bests_kept(frontier)
    finally:
        frontier.close()
        embedded.close()


def _marked_and_half_fetched(frontier) -> list[FrontierEntry]:
    """60 hosts of 4 URLs at random priorities, a BestFirst round of 16 claimed, every second URL of it completed:
    what tests/data/redis_layout4.json holds, written by a harvester of layout 4. The round."""
    rnd = random.Random(7)
    frontier.mark([(f"http://h{n}.test/{page}", f"h{n}.test", rnd.choice([-1.0, 0.0, 1.5, 4.0, rnd.random()]))
                   for n in range(60) for page in range(4)])
    round_ = frontier.ready(10.0, "BestFirst", 16, hold=60.0)
    for position, entry in enumerate(round_):
        assert frontier.claim(entry, 10.0, 30.0)
        if position % 2:  # the others stay leased: their hosts hold places
            frontier.complete(entry.url, entry.host, now=11.0, url_lock_until=11.0, host_lock_until=11.0 + position % 3,
                              status=200, relevant=position % 3 == 0)
    return list(round_)


def _answers_alike_after_opening(reopened, embedded) -> None:
    """Rounds, holds and counts as the embedded frontier's, then after more URLs are marked (some raised)."""
    for now in (12.0, 20.0, 45.0):
        ours, theirs = reopened.ready(now, "BestFirst", 16, hold=60.0), embedded.ready(now, "BestFirst", 16, hold=60.0)
        assert (ours, ours.held_until) == (theirs, theirs.held_until)
    assert reopened.counts(45.0) == embedded.counts(45.0)
    rnd = random.Random(8)
    more = [(f"http://h{n}.test/{page}", f"h{n}.test", rnd.choice([0.0, 2.0, rnd.random()]))
            for n in range(0, 60, 3) for page in range(2, 6)]
    assert reopened.mark(more) == embedded.mark(more)
    ours, theirs = reopened.ready(50.0, "BestFirst", 40, hold=60.0), embedded.ready(50.0, "BestFirst", 40, hold=60.0)
    assert (ours, ours.held_until) == (theirs, theirs.held_until)
    _assert_queue_bests_kept(reopened)


@pytest.mark.parametrize("old_layout", ["3", None], ids=["layout 3", "seeded by an older version, never opened"])
def test_a_frontier_of_layout_3_gets_its_heads_when_opened(job, open_frontier, tmp_path, old_layout):
    """Layout 3 had no heads and kept each host's URLs in two queues, fifo:<host> by order of marking and
    best:<host> scored by minus the priority: opening gives the heads, from the hosts' queues, locks, leases and
    yields, and makes the queues one, and BestFirst ranks as before; nothing else changes. So does opening a
    frontier an older version marked without opening."""
    embedded = SqliteFrontier(tmp_path / "frontier.sqlite", max_attempts=3)
    old = open_frontier(job, max_attempts=3)
    assert _marked_and_half_fetched(old) == _marked_and_half_fetched(embedded)
    server = old.server
    for prefix in old.connection.bucket_prefixes:  # back to layout 3
        for host in server.smembers(prefix + "hosts"):
            host = host.decode()
            server.hdel(prefix + "host:" + host, "head")
            queue = server.zrange(prefix + "q:" + host, 0, -1, withscores=True)
            if queue:
                seqs = {member: member[:member[0] - 95] for member, _ in queue}
                server.zadd(prefix + "fifo:" + host, {member[len(seqs[member]):]: queued_seq(member) for member, _ in queue})
                server.zadd(prefix + "best:" + host, {seqs[member]: score / BEST_SCALE for member, score in queue})
                server.delete(prefix + "q:" + host)
        server.delete(prefix + "heads", prefix + "leasedheads", prefix + "waiting")
    if old_layout:
        server.set(f"combine:{{{job}}}:layout", old_layout)
    else:
        server.delete(f"combine:{{{job}}}:layout", f"combine:{{{job}}}:frontier")
    old.close()
    reopened = open_frontier(job, max_attempts=3)
    try:
        _answers_alike_after_opening(reopened, embedded)
        assert reopened.server.get(f"combine:{{{job}}}:layout") == LAYOUT.encode()
        keys = list(reopened.server.scan_iter(f"combine:{{{job}:b*}}:*"))
        assert any(key.endswith(b":heads") for key in keys) and any(b"}:q:" in key for key in keys)
        assert not any(b"}:best:" in key or b"}:fifo:" in key for key in keys)
    finally:
        reopened.close()
        embedded.close()


def _restore(server, job: str, fixture: dict) -> None:
    """Write a frontier's keys as a tests/data/redis_layout*.json file holds them, under ``job``."""
    for name, (kind, value) in fixture["keys"].items():
        key = name.replace("{JOB", "{" + job).encode()
        if kind == "string":
            server.set(key, b64decode(value))
        elif kind == "hash":
            server.hset(key, mapping={b64decode(field): b64decode(found) for field, found in value.items()})
        elif kind == "set":
            server.sadd(key, *(b64decode(member) for member in value))
        else:
            server.zadd(key, {b64decode(member): float(score) for member, score in value})


def _restored(job: str, open_frontier, tmp_path: Path, layout: str) -> tuple[Any, SqliteFrontier]:
    """The frontier tests/data/redis_layout<layout>.json holds, as a harvester of that layout left it, in Redis, and the
    embedded frontier given the calls that made it: ``(the Redis client, the embedded frontier)``."""
    fixture = json.loads((DATA / f"redis_layout{layout}.json").read_text())
    embedded = SqliteFrontier(tmp_path / "frontier.sqlite", max_attempts=3)
    assert [entry.url for entry in _marked_and_half_fetched(embedded)] == fixture["round"]
    server = open_frontier(job).server
    _restore(server, job, fixture)
    assert server.get(f"combine:{{{job}}}:layout") == layout.encode()
    return server, embedded


@contextmanager
def _opened_by_two(job: str, open_frontier) -> Iterator[RedisFrontier]:
    """Two harvesters open a frontier of an older layout: the first brings it to LAYOUT, the second finds nothing left
    to move. Yields the first; both closed at the end."""
    reopened, other = open_frontier(job, max_attempts=3), open_frontier(job, max_attempts=3)
    try:
        reopened.check_marker()
        other.check_marker()
        assert reopened.server.get(f"combine:{{{job}}}:layout") == LAYOUT.encode()
        yield reopened
    finally:
        reopened.close()
        other.close()


def test_a_frontier_a_harvester_of_layout_4_wrote_is_upgraded_when_opened(job, open_frontier, tmp_path):
    """A frontier as a harvester of layout 4 left it (tests/data/redis_layout4.json: each host's 'best' queue under
    best:<host> scored by minus the priority) is upgraded when a harvester opens it: its queues become one, q:<host>
    scored by BEST_SCALE times that, and BestFirst ranks, marks and counts as the embedded frontier given the same
    calls. A second harvester opening it finds nothing left to move."""
    server, embedded = _restored(job, open_frontier, tmp_path, "4")
    with closing(embedded), _opened_by_two(job, open_frontier) as reopened:
        keys = list(server.scan_iter(f"combine:{{{job}:b*}}:*"))
        assert any(b"}:q:h" in key for key in keys)
        assert not any(b"}:best:" in key or b"}:fifo:" in key for key in keys)
        _answers_alike_after_opening(reopened, embedded)


def test_a_frontier_a_harvester_of_layout_5_wrote_drops_its_host_counts_and_bounds_hosts_by_their_urls(job, open_frontier,
                                                                                                       tmp_path):
    """A frontier as a harvester of layout 5 left it (tests/data/redis_layout5.json: each host's count of URLs ever
    marked in its host: hash) is upgraded when opened: the counts are dropped, and MaxUrlsPerHost counts a host's
    URLs in its u: hash, so a mark over the bound refuses and counts as the embedded frontier's."""
    server, embedded = _restored(job, open_frontier, tmp_path, "5")
    host_keys = [key for key in server.scan_iter(f"combine:{{{job}:b*}}:host:*")]
    assert all(server.hexists(key, "urls") for key in host_keys)
    with closing(embedded), _opened_by_two(job, open_frontier) as reopened:
        assert not any(server.hexists(key, "urls") for key in host_keys)
        more = [(f"http://h{n}.test/{page}", f"h{n}.test", 0.5) for n in range(0, 60, 2) for page in range(3, 8)]
        assert reopened.mark(more, max_urls_per_host=6) == embedded.mark(more, max_urls_per_host=6)   # 2 more a host
        _answers_alike_after_opening(reopened, embedded)


def test_a_frontier_a_harvester_of_layout_6_wrote_gets_one_queue_a_host_when_opened(job, open_frontier, tmp_path):
    """A frontier as a harvester of layout 6 left it (tests/data/redis_layout6.json: each host's URLs in fifo:<host>
    by order of marking and b:<host> by priority) is upgraded when opened: each host's queue is q:<host>, its members
    the orders of marking then the URLs, scored as in b:, the heads kept, and BestFirst ranks, marks and counts as
    the embedded frontier given the same calls; BreadthFirst hands out each host's first marked; MaxUrlsPerHost
    counts each host's URLs as its u: hash held them. A second harvester opening it finds nothing left to move."""
    server, embedded = _restored(job, open_frontier, tmp_path, "6")
    queued = sum(server.zcard(key) for key in server.scan_iter(f"combine:{{{job}:b*}}:fifo:*"))
    with closing(embedded), _opened_by_two(job, open_frontier) as reopened:
        keys = list(server.scan_iter(f"combine:{{{job}:b*}}:*"))
        assert not any(b"}:b:" in key or b"}:fifo:" in key for key in keys)
        assert sum(server.zcard(key) for key in keys if b"}:q:" in key) == queued
        assert reopened.ready(12.0, "BreadthFirst") == embedded.ready(12.0, "BreadthFirst")
        bounded = [(f"http://h{n}.test/{page}", f"h{n}.test", 0.5) for n in range(1, 60, 3) for page in range(3, 8)]
        assert reopened.mark(bounded, max_urls_per_host=6) == embedded.mark(bounded, max_urls_per_host=6)  # 2 more a host
        _answers_alike_after_opening(reopened, embedded)


def test_a_frontier_a_harvester_of_layout_10_wrote_is_read_as_it_is_when_opened(job, open_frontier, tmp_path):
    """A frontier as a harvester of layout 10 left it (tests/data/redis_layout10.json: each queued URL's priority in its
    record as well as in its queue's score) is opened without a key changed but the layout: its records' priorities
    are those its queues' scores say, which layout 11 reads alone. BestFirst ranks, marks and counts as the embedded
    frontier given the same calls, and so after a re-scoring that lowers and raises queued URLs and a mark that
    raises one of them again."""
    server, embedded = _restored(job, open_frontier, tmp_path, "10")

    def snapshot() -> dict[bytes, Any]:
        return {key: server.dump(key) for key in server.scan_iter(f"combine:{{{job}*") if not key.endswith(b":layout")}

    before = snapshot()
    with closing(embedded), _opened_by_two(job, open_frontier) as reopened:
        assert snapshot() == before
        rnd = random.Random(9)
        ranks = {f"http://h{n}.test/{page}": rnd.choice([0.0, 0.25, 3.0, rnd.random()]) for n in range(0, 60, 2)
                 for page in range(4)}
        reopened.set_priorities(ranks)
        embedded.set_priorities(ranks)
        raise_again = [(f"http://h{n}.test/{page}", f"h{n}.test", 1.0) for n in range(0, 60, 4) for page in range(4)]
        assert reopened.mark(raise_again) == embedded.mark(raise_again)
        _answers_alike_after_opening(reopened, embedded)


def test_a_robots_answer_and_the_release_of_its_page_go_to_redis_with_the_harvesters_next_call(connect):
    first, second = connect(), connect()
    mark(first, "http://a/1", "http://a/2")
    entry = first.ready(now=0)[0]
    first.claim(entry, now=0, lease=60)
    first.store_robots("a", 200, b"Crawl-delay: 30", expires=1000, host_delay=30)
    assert first.robots("a", now=2) == (200, b"Crawl-delay: 30")   # the harvester reads its own answer at once
    first.release(entry.url, "a", host_lock_until=1, now=1)   # the page put off for the robots.txt read
    assert second.robots("a", now=2) == (200, b"Crawl-delay: 30")   # sent with that read
    assert second.ready(now=50) == []   # the release is not sent yet: a is leased until 60
    first.next_due(now=2)   # the next call sends it first, in its round trip
    assert second.ready(now=30) == [] and second.ready(now=31)   # released; the delay counts from the release
    first.store_robots("b", 404, None, expires=1000, host_delay=None)
    first.close()   # nothing follows: closing sends it
    assert second.robots("b", now=2) == (404, None)


def test_a_harvester_reads_its_own_robots_answer_after_redis_forgot_the_scripts(frontier):
    frontier.store_robots("a", 200, b"User-agent: *", expires=1000, host_delay=5)
    frontier.connection.server.script_flush()
    assert frontier.robots("a", now=1) == (200, b"User-agent: *")   # the read is sent again after the script ran


def test_a_rescoring_names_the_queue_members_its_harvester_knows_and_learns_the_others(private_redis_url, tmp_path):
    """A harvester keeps the orders of marking its marks answered, so its re-scoring names each URL's member of its
    queue and Redis reads no record; URLs another harvester marked go as kept, whose records are read, and their
    orders of marking come back: the next re-scoring names them too. A leased URL given as its member is out of its
    queue: its record takes the new priority it comes back with; a URL fetched is forgotten. Rounds as the embedded
    frontier's throughout, with each host's copy of its best kept."""
    marker, embedded = RedisFrontier.from_url(private_redis_url, "members"), SqliteFrontier(tmp_path / "f.sqlite")
    rescorer = RedisFrontier.from_url(private_redis_url, "members")
    try:
        batch = [(f"http://h{n}.test/{page}", f"h{n}.test", 1.0 + page / 4) for n in range(6) for page in range(4)]
        for store in (marker, embedded):
            store.mark(batch)
        seqs = marker.connection.queue_seqs
        assert len({seqs.get(url) for url, _, _ in batch} - {None}) == len(batch)
        assert len(rescorer.connection.queue_seqs) == 0
        [leased] = marker.ready(0.0, "BestFirst", 1)
        assert marker.claim(leased, 0.0, 10.0)
        assert embedded.claim(leased, 0.0, 10.0)
        [done] = [entry for entry in marker.ready(0.0, "BestFirst", 6) if entry.host != leased.host][:1]
        for store in (marker, embedded):
            assert store.claim(done, 0.0, 10.0)
            store.complete(done.url, done.host, now=1.0, url_lock_until=1.0, host_lock_until=1.0, status=200)

        def rescore(frontier: RedisFrontier, priorities: dict[str, float]) -> dict[str, int]:
            ran = _ran(frontier, lambda: frontier.set_priorities(priorities))
            embedded.set_priorities(priorities)
            for now in (2.0, 11.0):   # at 11 the leased URL is back in its queue
                assert frontier.ready(now, "BestFirst", 24) == embedded.ready(now, "BestFirst", 24)
            _assert_queue_bests_kept(frontier)
            return ran

        rnd = random.Random(3)
        everything = {url: rnd.choice([0.5, 1.5, 3.0]) for url, _, _ in batch}
        rescore(marker, everything | {leased.url: 5.0})   # the leased URL, given as its member, back as its host's best
        everything = {url: rnd.choice([0.5, 1.5, 3.0]) for url, _, _ in batch}
        first = rescore(rescorer, everything)   # every URL as kept: its records read, a host at a time
        assert rescorer.connection.queue_seqs.get(batch[0][0]) == seqs.get(batch[0][0])
        assert rescorer.connection.queue_seqs.get(done.url) is None   # no longer marked
        everything = {url: rnd.choice([0.25, 2.0, 4.0]) for url in everything}
        again = rescore(rescorer, everything)   # records read only for the leased URL and the fetched one
        assert again["hmget"] <= first["hmget"] - 4, (first, again)
    finally:
        marker.close()
        rescorer.close()
        embedded.close()
