"""The SQLite frontier's cached heads: a round after any write equals one read from the file afresh."""

from __future__ import annotations

import random
import sqlite3

import pytest

from combine_scrapy.frontier.sqlite import SqliteFrontier


@pytest.fixture
def path(tmp_path):
    return tmp_path / "frontier.sqlite"


@pytest.fixture
def frontier(path):
    f = SqliteFrontier(path, max_attempts=2)
    yield f
    f.close()


def mark(frontier, *urls, priority=0.0):
    return frontier.mark([(url, url.split("/")[2], priority) for url in urls])


def urls(round_):
    return [entry.url for entry in round_]


def test_a_url_marked_by_another_connection_is_in_the_next_round(frontier, path):
    mark(frontier, "http://a/1")
    assert urls(frontier.ready(now=1, strategy="BestFirst", limit=4)) == ["http://a/1"]
    other = SqliteFrontier(path)
    mark(other, "http://b/1", priority=5.0)
    other.close()
    assert urls(frontier.ready(now=1, strategy="BestFirst", limit=4)) == ["http://b/1", "http://a/1"]


def test_a_host_locked_by_hand_from_another_process_leaves_the_round(frontier, path):
    mark(frontier, "http://a/1", "http://b/1")
    assert urls(frontier.ready(now=1)) == ["http://a/1", "http://b/1"]
    with sqlite3.connect(path) as other:
        other.execute("UPDATE hosts SET lock_until = 100 WHERE host = 'a'")
    assert urls(frontier.ready(now=1)) == ["http://b/1"]


def test_own_writes_change_the_next_round(frontier):
    mark(frontier, "http://a/1", "http://a/2", "http://b/1")
    assert urls(frontier.ready(now=1, strategy="BestFirst", limit=4)) == ["http://a/1", "http://b/1"]
    mark(frontier, "http://a/2", priority=3.0)                        # raised: a's head changes
    assert urls(frontier.ready(now=1, strategy="BestFirst", limit=4)) == ["http://a/2", "http://b/1"]
    frontier.lock_host("b", 50)
    assert urls(frontier.ready(now=1, strategy="BestFirst", limit=4)) == ["http://a/2"]
    frontier.complete("http://a/2", "a", now=1, url_lock_until=0, host_lock_until=1, status=200)
    assert urls(frontier.ready(now=1, strategy="BestFirst", limit=4)) == ["http://a/1"]
    assert frontier.remark("http://a/2")
    assert urls(frontier.ready(now=1, strategy="BestFirst", limit=4)) == ["http://a/2"]


def test_new_priorities_of_a_few_hosts_change_their_heads(frontier):
    mark(frontier, "http://a/1", "http://a/2", "http://b/1", "http://c/1", "http://d/1", "http://e/1")
    assert urls(frontier.ready(now=1, strategy="BestFirst", limit=10)) == [f"http://{h}/1" for h in "abcde"]
    frontier.set_priorities({"http://a/2": 3.0, "http://e/1": 1.0})   # two hosts of five: only theirs read again
    assert urls(frontier.ready(now=1, strategy="BestFirst", limit=10)) == [f"http://{h}" for h in
                                                                          ("a/2", "e/1", "b/1", "c/1", "d/1")]


def test_a_url_whose_lock_ends_becomes_its_hosts_head_again_without_a_write(frontier):
    mark(frontier, "http://a/1", priority=2.0)
    mark(frontier, "http://a/2")
    frontier.complete("http://a/1", "a", now=1, url_lock_until=10, host_lock_until=1, status=503, keep_marked=True)
    assert urls(frontier.ready(now=5)) == ["http://a/2"]
    assert urls(frontier.ready(now=10)) == ["http://a/1"]


def test_a_url_leased_too_often_is_dropped_when_its_lease_ends_even_read_late(frontier):
    mark(frontier, "http://a/1", "http://a/2")
    for now in (1, 20):
        entry = frontier.ready(now=now)[0]
        assert entry.url == "http://a/1" and frontier.claim(entry, now=now, lease=10)
    assert urls(frontier.ready(now=100)) == ["http://a/2"]              # two attempts: dropped


@pytest.mark.parametrize("strategy, limit, hold", [
    ("BestFirst", 3, 10.0), ("BreadthFirstTime", None, 0.0), ("BreadthFirst", None, 0.0), ("PageRank", 3, 0.0),
])
def test_rounds_equal_rounds_read_afresh_through_random_writes(path, strategy, limit, hold):
    rng = random.Random(7)
    cached, other = SqliteFrontier(path, max_attempts=2), SqliteFrontier(path, max_attempts=2)
    hosts = ["a", "b", "c", "d", "e"]
    now = 0.0
    for _ in range(400):
        now += rng.choice([0.0, 0.5, 3.0])
        writer = cached if rng.random() < 0.8 else other
        action = rng.randrange(8)
        host = rng.choice(hosts)
        if action <= 1:
            mark(writer, *(f"http://{host}/{rng.randrange(8)}" for _ in range(3)), priority=rng.choice([0.0, 1.0, 2.5]))
        elif action == 2:
            for entry in writer.ready(now, strategy, limit, hold=hold)[:2]:
                writer.claim(entry, now, lease=rng.choice([2.0, 6.0]))
        elif action == 3:
            page = f"http://{host}/{rng.randrange(8)}"
            writer.complete(page, host, now=now, url_lock_until=now + rng.choice([0.0, 4.0]),
                            host_lock_until=now + rng.choice([0.0, 1.0]), status=200,
                            keep_marked=rng.random() < 0.5, relevant=rng.random() < 0.5)
        elif action == 4:
            writer.release(f"http://{host}/{rng.randrange(8)}", host, now + rng.choice([0.0, 2.0]))
        elif action == 5:
            writer.lock_host(host, now + rng.choice([0.0, 2.0]))
        elif action == 6:
            writer.set_priorities({f"http://{rng.choice(hosts)}/{rng.randrange(8)}": rng.choice([0.0, 1.0, 2.5])
                                   for _ in range(rng.choice([1, 2, 8]))})  # else only time passes
        afresh = SqliteFrontier(path, max_attempts=2)
        expected = afresh.ready(now, strategy, limit, hold=hold)
        afresh.close()
        got = cached.ready(now, strategy, limit, hold=hold)
        assert (list(got), got.held_until) == (list(expected), expected.held_until)
    cached.close()
    other.close()
