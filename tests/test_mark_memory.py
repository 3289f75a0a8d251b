"""A harvester leaves out the marks that would change nothing, and the frontier ends the same.

MarkMemory remembers the best priority and least distance this harvester marked each URL with, the priorities
it re-scored URLs to and the URLs it completed; a link found again is sent only when its mark could raise the
URL or bring it closer.
"""

from __future__ import annotations

import random

from combine_scrapy.frontier import Marking
from combine_scrapy.frontier.marks import MarkMemory
from combine_scrapy.frontier.sqlite import SqliteFrontier


def test_a_known_url_is_sent_again_only_when_its_mark_raises_it_or_brings_it_closer():
    memory = MarkMemory()
    assert memory.news({"http://a/1": 0.5}, 2) == [("http://a/1", 0.5)]
    memory.marked([("http://a/1", "a", 0.5)], 2)
    assert memory.news({"http://a/1": 0.5, "http://a/2": 0.1}, 2) == [("http://a/2", 0.1)]
    assert memory.news({"http://a/1": 0.4}, 3) == []
    assert memory.news({"http://a/1": 0.6}, 3) == [("http://a/1", 0.6)]
    assert memory.news({"http://a/1": 0.2}, 1) == [("http://a/1", 0.2)]
    memory.marked([("http://a/1", "a", 0.2)], 1)  # the frontier keeps the better of each: 0.5 and 1
    assert memory.news({"http://a/1": 0.5}, 1) == []
    assert memory.news({"http://a/1": 0.5}, 0) == [("http://a/1", 0.5)]


def test_a_re_scoring_that_lowers_a_url_lets_a_mark_above_it_through():
    memory = MarkMemory()
    memory.marked([("http://a/1", "a", 0.8)], 0)
    memory.rescored({"http://a/1": 0.3, "http://a/unknown": 0.9})
    assert memory.news({"http://a/1": 0.5}, 0) == [("http://a/1", 0.5)]
    assert memory.news({"http://a/1": 0.3}, 0) == []
    assert memory.news({"http://a/unknown": 0.1}, 0) == [("http://a/unknown", 0.1)]  # re-scoring adds no URL


def test_a_completed_url_is_never_sent_again_and_re_scoring_does_not_revive_it():
    memory = MarkMemory()
    memory.marked([("http://a/1", "a", 0.2)], 3)
    memory.settled("http://a/1")
    memory.rescored({"http://a/1": 0.0})
    assert memory.news({"http://a/1": 1.0}, 0) == []


def test_past_its_capacity_the_memory_forgets_its_oldest_quarter():
    memory = MarkMemory(capacity=8)
    memory.marked([(f"http://a/{i}", "a", 0.5) for i in range(8)], 0)
    assert len(memory) == 8
    memory.marked([("http://a/0", "a", 0.1)], 0)  # marked again: now the newest
    memory.marked([("http://a/8", "a", 0.5)], 0)
    assert len(memory) == 6
    assert memory.news({f"http://a/{i}": 0.5 for i in range(9)}, 0) == [(f"http://a/{i}", 0.5) for i in (1, 2, 3)]


def _frontier_state(frontier: SqliteFrontier) -> list[tuple]:
    return sorted(frontier.connection.db.execute("SELECT url, seq, marked, priority, distance FROM url_states"))


def test_a_frontier_told_only_the_news_ends_as_one_told_everything(tmp_path):
    """Random marks, re-scorings and completions on two SQLite frontiers, one told every mark, one only those a
    MarkMemory lets through: after every step both keep the same URLs, orders of marking, states, priorities and
    distances, and hand out the same rounds."""
    rng = random.Random(7)
    everything, news = SqliteFrontier(tmp_path / "all.sqlite"), SqliteFrontier(tmp_path / "news.sqlite")
    memory = MarkMemory(capacity=40)
    urls = [f"http://h{i % 3}.example/{i}" for i in range(60)]
    now = 1000.0
    left_out = 0
    for _ in range(400):
        now += 1
        step = rng.random()
        if step < 0.6:
            distance = rng.randrange(4)
            batch = {url: rng.choice((0.0, 0.1, 0.25, 0.5, 0.75, 1.0)) for url in rng.sample(urls, 8)}
            entries = [(url, url.split("/")[2], priority) for url, priority in batch.items()]
            everything.mark(entries, distance=distance)
            sent = [(url, url.split("/")[2], priority) for url, priority in memory.news(batch, distance)]
            left_out += len(entries) - len(sent)
            if sent:
                news.mark(sent, distance=distance)
                memory.marked(sent, distance)
        elif step < 0.8:
            priorities = {url: rng.choice((0.05, 0.3, 0.6, 0.9)) for url in rng.sample(urls, 10)}
            everything.set_priorities(priorities)
            news.set_priorities(priorities)
            memory.rescored(priorities)
        else:  # a fetch ends: of a URL the frontier handed out, so one it knows
            waiting = [row[0] for row in _frontier_state(everything) if row[2] == 1]
            if not waiting:
                continue
            url = rng.choice(waiting)
            batch = {link: 0.4 for link in rng.sample(urls, 3)}
            outcome = dict(now=now, url_lock_until=now + 10**6, host_lock_until=now, status=200,
                           keep_marked=rng.random() < 0.2)
            everything.complete(url, url.split("/")[2], links=Marking([(u, u.split("/")[2], p) for u, p in batch.items()], None, 1),
                                **outcome)
            sent = [(u, u.split("/")[2], p) for u, p in memory.news(batch, 1)]
            news.complete(url, url.split("/")[2], links=Marking(sent, None, 1) if sent else None, **outcome)
            memory.settled(url)
            memory.marked(sent, 1)
        assert _frontier_state(news) == _frontier_state(everything)
        for strategy in ("BestFirst", "BreadthFirstTime"):
            assert [entry.url for entry in news.ready(now, strategy)] == [entry.url for entry in everything.ready(now, strategy)]
    assert left_out > 200  # the memory did leave marks out
