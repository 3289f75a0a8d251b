"""The crawl strategies as objects: queues, round order and round shape, without a frontier store."""

from __future__ import annotations

import math
import random
import sqlite3

import pytest

from combine_scrapy.frontier import STRATEGIES, FrontierEntry
from combine_scrapy.frontier.strategy import (
    CRAWL_STRATEGIES,
    STRIDE_POWER,
    YIELD_DECAY,
    BestFirst,
    Head,
    host_yield_weight,
    recent_fetches,
    strategy_named,
    weighted_priority,
)


def head(url: str, priority: float, seq: int, lock: float = 0.0, fetched: int = 0, relevant: float = 0) -> Head:
    return Head(FrontierEntry(url, url.split("/")[2], priority), seq, lock, fetched, relevant)


def no_deeper(hosts, depth):
    raise AssertionError("only BestFirst with a limit looks past the heads")


def test_every_combine_cfg_name_is_one_strategy_object():
    assert STRATEGIES == ("BreadthFirstTime", "BreadthFirst", "BestFirst", "PageRank", "iPageRank")
    assert all(strategy_named(name).name == name for name in STRATEGIES)
    assert [name for name in STRATEGIES if CRAWL_STRATEGIES[name].ranked] == ["PageRank", "iPageRank"]
    with pytest.raises(ValueError, match="unknown strategy 'Depthfirst'"):
        strategy_named("Depthfirst")


def test_a_new_host_counts_as_half_relevant_and_barren_hosts_sink():
    assert host_yield_weight(0, 0) == 0.5
    assert host_yield_weight(10, 10) > 10 * host_yield_weight(10, 0)
    assert host_yield_weight(2, 0) > host_yield_weight(20, 0) > host_yield_weight(161, 0)
    assert weighted_priority(0.8, 0.5) == 0.4
    assert weighted_priority(-1.0, 0.5) < weighted_priority(-1.0, 1.0)   # a bad host makes a bad URL worse


def test_hosts_share_the_fetches_in_proportion_to_what_they_promise():
    """Stride scheduling: always fetching the host of the best weighted priority, a host whose URLs and yield
    promise more gets more fetches (about as the square root of the promise: STRIDE_POWER = 2), and the
    weakest is not starved."""
    promise = {"strong": 0.8, "fair": 0.4, "weak": 0.1}
    fetched = dict.fromkeys(promise, 0)
    relevant = dict.fromkeys(promise, 0.0)
    for _ in range(2000):
        host = max(promise, key=lambda h: (weighted_priority(1.0, host_yield_weight(fetched[h], relevant[h])), h))
        fetched[host] += 1
        relevant[host] = relevant[host] * YIELD_DECAY + (fetched[host] % 10 < 10 * promise[host])
    assert fetched["strong"] > 1.3 * fetched["fair"] > 1.3 * 1.6 * fetched["weak"] > 500


def test_a_drained_host_sinks_as_its_recent_fetches_find_nothing_new():
    """``relevant`` is decayed a fetch (as the stores do): 60 new records in 100 fetches, then 200 barren fetches."""
    relevant = 0.0
    for number in range(300):
        relevant = relevant * YIELD_DECAY + (number < 100 and number % 5 < 3)
        if number == 99:
            productive = host_yield_weight(number + 1, relevant) * (number + 2) ** STRIDE_POWER  # the share alone
    drained = host_yield_weight(300, relevant) * 301 ** STRIDE_POWER
    assert recent_fetches(300) == pytest.approx(sum(YIELD_DECAY ** k for k in range(300)))
    assert productive > 0.5 > 0.2 > drained
    assert drained > host_yield_weight(300, 0) * 301 ** STRIDE_POWER  # what it found still counts a little


@pytest.mark.parametrize("name", STRATEGIES)
def test_a_round_does_not_depend_on_the_order_the_store_gives_the_heads(name):
    """Ties end in the order of marking (or the host name): same frontier, same round, whatever the store."""
    heads = [head(f"http://h{i}/p", priority=i % 3 / 2, seq=100 - i, fetched=i % 4, relevant=i % 2) for i in range(12)]
    strategy = strategy_named(name)

    def deeper(hosts, depth):
        return {h.entry.host: [(h.entry.priority, h.seq)] for h in heads if h.entry.host in hosts}

    rounds = set()
    for seed in range(5):
        shuffled = random.Random(seed).sample(heads, len(heads))
        rounds.add(tuple(entry.url for entry in strategy.round(shuffled, 0, None if strategy.full_round else 4, deeper)))
    assert len(rounds) == 1


def test_breadth_first_strategies_leave_locked_hosts_out():
    heads = [head("http://a/1", 0.9, 1, lock=50), head("http://b/1", 0.1, 2)]
    for name in ("BreadthFirstTime", "BreadthFirst", "PageRank"):
        assert [e.url for e in strategy_named(name).round(heads, 10, None, no_deeper)] == ["http://b/1"]
        assert not strategy_named(name).holds_places


def test_best_first_hands_out_only_the_globally_best_urls():
    """Host a holds the three best URLs: a round of three gives a's first and keeps its other two places,
    so b's and c's worse URLs wait."""
    heads = [head("http://a/1", 0.9, 1), head("http://b/1", 0.3, 2), head("http://c/1", 0.2, 3)]
    queues = {"a": [(0.9, 1), (0.9, 4), (0.8, 5)], "b": [(0.3, 2)], "c": [(0.2, 3)]}
    round_ = BestFirst().round(heads, 0, 3, lambda hosts, depth: {host: queues[host][:depth] for host in hosts})
    assert [entry.url for entry in round_] == ["http://a/1"]
    assert round_.held_until is None
    round_ = BestFirst().round(heads, 0, 4, lambda hosts, depth: {host: queues[host][:depth] for host in hosts})
    assert [entry.url for entry in round_] == ["http://a/1", "http://b/1"]


def test_best_first_holds_places_for_busy_hosts_and_says_until_when():
    heads = [head("http://a/1", 0.9, 1, lock=30), head("http://b/1", 0.8, 2, lock=20), head("http://c/1", 0.1, 3)]
    queues = {"a": [(0.9, 1)], "b": [(0.8, 2)], "c": [(0.1, 3)]}
    round_ = BestFirst().round(heads, 10, 2, lambda hosts, depth: {host: queues[host] for host in hosts})
    assert (list(round_), round_.held_until) == ([], 20)
    round_ = BestFirst().round(heads, 10, 3, lambda hosts, depth: {host: queues[host] for host in hosts})
    assert ([entry.url for entry in round_], round_.held_until) == (["http://c/1"], 20)
    assert BestFirst.holds_places


def test_best_first_weighs_priority_by_the_hosts_yield():
    """161 fetches and no relevant page: that host's 0.9 goes after a topical host's 0.5, and both after a host
    not fetched yet (its 0.4 at its first fetch weighs more than a URL of a host fetched 20 times)."""
    heads = [head("http://barren/1", 0.9, 1, fetched=161), head("http://topic/1", 0.5, 2, fetched=20, relevant=15),
             head("http://new/1", 0.4, 3)]
    queues = {h.entry.host: [(h.entry.priority, h.seq)] for h in heads}
    round_ = BestFirst().round(heads, 0, 3, lambda hosts, depth: {host: queues[host] for host in hosts})
    assert [entry.host for entry in round_] == ["new", "topic", "barren"]


def test_best_first_head_order_in_sql_is_its_round_key():
    """A store that cuts the heads to the round's limit in SQL keeps the ones round_key puts first, in its order."""
    rng = random.Random(7)
    priorities = [0.0, -0.0, 0.5, -0.5, 1.0, 0.1 + 0.2, 0.3, 1 / 3, 0.3000000000000001, -1e-300, 5e-324, 1e300]
    heads = [
        head(f"http://h{seq}/p", rng.choice(priorities) if seq % 2 else rng.uniform(-2, 2), seq,
             fetched=rng.randrange(200), relevant=rng.choice([rng.randrange(3) * rng.randrange(2), rng.uniform(0, 3)]))
        for seq in rng.sample(range(10_000), 400)
    ]
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE heads (priority REAL, seq INTEGER, fetched INTEGER, relevant REAL)")
    db.executemany("INSERT INTO heads VALUES (?, ?, ?, ?)",
                   [(h.entry.priority, h.seq, h.fetched, h.relevant) for h in heads])
    in_sql = [seq for (seq,) in db.execute(f"SELECT seq FROM heads ORDER BY {BestFirst.head_order}")]
    assert in_sql == [h.seq for h in sorted(heads, key=BestFirst().round_key)]
    assert [name for name in STRATEGIES if CRAWL_STRATEGIES[name].head_order] == ["BestFirst"]


def test_best_first_reading_few_urls_a_host_first_gives_the_same_round():
    """A store may read a few URLs a host and more only where they could take places: the same round."""
    rng = random.Random(3)
    priorities = [0.0, 0.5, -0.5, 0.1 + 0.2, 0.3, 0.3000000000000001, 1 / 3, 0.9, 0.7, math.nextafter(0.7, 0)]
    further_reads = 0
    for _ in range(300):
        queues, heads = {}, []
        for number in range(rng.randrange(1, 12)):
            host = f"h{number}"
            urls = sorted(((rng.choice(priorities), rng.randrange(10**6)) for _ in range(rng.randrange(1, 12))),
                          key=lambda url: (-url[0], url[1]))
            queues[host] = urls
            heads.append(head(f"http://{host}/", urls[0][0], urls[0][1], lock=rng.choice([0, 0, 5]),
                              fetched=rng.randrange(6), relevant=rng.randrange(2)))
        reads = []

        def deeper(hosts, depth):
            reads.append(depth)
            return {host: queues[host][:depth] for host in hosts}

        limit = rng.choice([2, 4, 8])
        whole = BestFirst().round(heads, 1, limit, deeper)
        for first_depth in (1, 2):
            reads.clear()
            round_ = BestFirst().round(heads, 1, limit, deeper, first_depth=first_depth)
            assert (list(round_), round_.held_until) == (list(whole), whole.held_until)
            further_reads += len(reads) - 1
    assert 0 < further_reads < 600   # some rounds read further, not all


def test_best_first_reads_further_where_a_lower_priority_weighs_the_same():
    """0.7 and the next lower double weigh the same at the weight of 10 barren fetches: the lower one, marked
    first, goes first."""
    lower = math.nextafter(0.7, 0)
    assert weighted_priority(lower, host_yield_weight(10, 0)) == weighted_priority(0.7, host_yield_weight(10, 0))
    queues = {"a": [(0.7, 50), (lower, 10)], "b": [(0.7, 30), (0.7, 35)], "c": [(0.7, 40)]}
    heads = [head(f"http://{host}/", *urls[0], fetched=10) for host, urls in queues.items()]

    def deeper(hosts, depth):
        return {host: queues[host][:depth] for host in hosts}

    for first_depth in (None, 1):
        round_ = BestFirst().round(heads, 0, 3, deeper, first_depth=first_depth)
        assert [entry.host for entry in round_] == ["b", "a"]
