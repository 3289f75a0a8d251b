"""The crawl policy as pure code: events in, frontier calls, marks, priorities, lessons and counts out.

No Scrapy and no server: a frontier that records what it is asked, a link method that chooses what it is told.
"""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace
from typing import Any

import pytest

from combine_scrapy.access.urls import UrlRules
from combine_scrapy.document.parse import Link, ParsedPage
from combine_scrapy.frontier import FrontierEntry, MarkResult, Outcome
from combine_scrapy.items import Fetch
from combine_scrapy.job import Crawling, Fetching, LockIntervals
from combine_scrapy.links.online import FileModelStore, OnlineLinkLearner
from combine_scrapy.policy import CrawlPolicy
from combine_scrapy.topic import Classification

LOCKS = LockIntervals(host=60, success=1_000_000, not_found=2_000_000, unavailable=86_400)


class Stats(Counter):
    """The counters a Scrapy stats collector keeps, as a Counter."""

    def inc_value(self, key: str, count: int = 1) -> None:
        self[key] += count

    def max_value(self, key: str, value: Any) -> None:
        self[key] = max(self.get(key, value), value)

    def set_value(self, key: str, value: Any) -> None:
        self[key] = value


class RecordingFrontier:
    """A frontier that answers as told and remembers every call."""

    def __init__(self, retries: int = 0, history: tuple[int, int, float | None, str | None] = (0, 0, None, None)):
        self.calls: list[tuple[str, Any]] = []
        self._retries = retries
        self._history = history

    def mark(self, entries, *, max_urls_per_host=None, distance=0):
        entries = list(entries)
        self.calls.append(("mark", (entries, distance)))
        return MarkResult(len(entries), 0, 0)

    def add_links(self, edges):
        self.calls.append(("add_links", list(edges)))

    def claim(self, entry, now, lease):
        self.calls.append(("claim", (entry.url, now, lease)))
        return True

    def complete(self, url, host, *, links=None, **outcome):
        marked = self.mark(links.entries, max_urls_per_host=links.max_urls_per_host, distance=links.distance) if links \
            else MarkResult(0, 0, 0)
        self.calls.append(("complete", (url, host, outcome)))
        return marked

    def release(self, url, host, host_lock_until, now=None):
        self.calls.append(("release", (url, host, host_lock_until, now)))

    def retries(self, url):
        return self._retries

    def change_history(self, url):
        return self._history

    def record_visit(self, url, now, digest, changed):
        self.calls.append(("record_visit", (url, now, digest, changed)))

    def statuses(self, urls):
        return {url: 200 for url in urls if "unknown" not in url}

    def remark(self, url):
        self.calls.append(("remark", url))
        return True

    def set_priorities(self, priorities):
        self.calls.append(("set_priorities", dict(priorities)))

    def called(self, name: str) -> list[Any]:
        return [arguments for call, arguments in self.calls if call == name]


class ChosenLinks:
    """A link method that marks every link with the priority given, and remembers its lessons."""

    def __init__(self, priority: float = 0.5, steps: int = 1, rescored: dict[str, float] | None = None,
                 learner: OnlineLinkLearner | None = None):
        self.priority = priority
        self.steps = steps
        self.rescored = rescored
        self.learner = learner
        self.selected: list[tuple[list[str], float, bool, int, str]] = []
        self.lessons: list[tuple[str, bool, float]] = []

    def select(self, links, page_score, page_relevant, *, distance=0, source_url=""):
        urls = [link.url for link in links]
        self.selected.append((urls, page_score, page_relevant, distance, source_url))
        return [(url, self.priority) for url in urls]

    def observe(self, url, relevant, score=0.0):
        self.lessons.append((url, relevant, score))
        return self.steps

    @property
    def rescore_due(self) -> bool:
        return self.rescored is not None

    def rescore(self) -> dict[str, float]:
        return self.rescored or {}


def job(**crawling: Any) -> SimpleNamespace:
    return SimpleNamespace(name="j", crawling=Crawling(**crawling), locks=LOCKS, fetching=Fetching(harvest_retries=3),
                           url_rules=UrlRules())


def policy(frontier: RecordingFrontier | None = None, scorer: ChosenLinks | None = None, **crawling: Any) -> CrawlPolicy:
    return CrawlPolicy(job(**crawling), frontier or RecordingFrontier(), link_scorer=scorer or ChosenLinks(),
                       stats=Stats())


def page_fetch(relevant: bool = True, *, novel: bool | None = None, distance: int = 0, url: str = "http://a.example/",
               **fields: Any) -> Fetch:
    page = ParsedPage(url, "text/html", links=[Link("http://b.example/x", "x"), Link("/y", "y")])
    return Fetch(url=url, host=url.split("/")[2], fetched_at=1000.0, status=200, outcome=Outcome.SUCCESS,
                 headers={"etag": '"e"', "last-modified": "Mon, 01 Jan 2024 00:00:00 GMT"}, page=page,
                 classification=Classification(relevant, 7.0 if relevant else -1.0, 0.5), record_key="k1",
                 novel=novel, distance=distance, **fields)


def test_a_relevant_page_marks_its_links_at_distance_0_and_completes_its_url():
    frontier, scorer = RecordingFrontier(), ChosenLinks(priority=0.7)
    crawl = policy(frontier, scorer)
    assert crawl.fetch_done(page_fetch(novel=True)) is None
    assert scorer.selected == [(["http://b.example/x", "/y"], 7.0, True, 0, "http://a.example/")]
    [(entries, distance)] = frontier.called("mark")
    assert (entries, distance) == ([("http://b.example/x", "b.example", 0.7)], 0)  # "/y" is not a URL: refused
    assert scorer.lessons == [("http://a.example/", True, 7.0)]
    [(url, host, outcome)] = frontier.called("complete")
    assert (url, host) == ("http://a.example/", "a.example")
    assert outcome == dict(now=1000.0, url_lock_until=1000.0 + LOCKS.success, host_lock_until=1000.0 + LOCKS.host,
                           status=200, keep_marked=False, etag='"e"', last_modified="Mon, 01 Jan 2024 00:00:00 GMT",
                           score=7.0, relevant=True)
    assert crawl.stats["frontier/marked"] == 1 and crawl.stats["urls/rejected/malformed"] == 1
    assert crawl.stats["links/model/lessons"] == 1 and crawl.stats["topic/best_score"] == 7.0
    assert [call for call, _ in frontier.calls] == ["mark", "complete"]  # the links go with the completion, first


def test_an_irrelevant_page_marks_its_links_one_hop_further():
    frontier = RecordingFrontier()
    policy(frontier).fetch_done(page_fetch(False, distance=2))
    assert frontier.called("mark")[0][1] == 3
    assert frontier.called("complete")[0][2]["relevant"] is False


def test_a_duplicate_teaches_a_negative_lesson_and_adds_no_yield():
    frontier, scorer = RecordingFrontier(), ChosenLinks()
    crawl = policy(frontier, scorer)
    crawl.fetch_done(page_fetch(novel=False))
    assert scorer.lessons == [("http://a.example/", False, 7.0)]
    assert crawl.stats["links/model/duplicates"] == 1
    assert frontier.called("complete")[0][2]["relevant"] is False


def test_a_redirect_marks_its_target_against_the_final_url():
    frontier, scorer = RecordingFrontier(), ChosenLinks()
    fetch = Fetch(url="http://a.example/old", host="a.example", fetched_at=5.0, status=301, outcome=Outcome.REDIRECT,
                  headers={"location": "new"}, response_url="http://a.example/dir/")
    policy(frontier, scorer).fetch_done(fetch)
    assert frontier.called("mark") == [([("http://a.example/dir/new", "a.example", 0.0)], 1)]
    assert scorer.selected == [] and scorer.lessons == []
    outcome = frontier.called("complete")[0][2]
    assert (outcome["etag"], outcome["score"], outcome["relevant"]) == (None, None, None)


def test_no_links_are_marked_without_auto_recycle_links_or_with_nofollow():
    frontier = RecordingFrontier()
    policy(frontier, auto_recycle_links=False).fetch_done(page_fetch())
    fetch = page_fetch()
    fetch.page.robots_nofollow = True
    policy(frontier).fetch_done(fetch)
    assert frontier.called("mark") == []


def test_a_ranked_strategy_keeps_the_link_graph():
    frontier = RecordingFrontier()
    policy(frontier, strategy="PageRank").fetch_done(page_fetch())
    assert frontier.called("add_links") == [[("http://a.example/", "http://b.example/x")]]
    policy(frontier, strategy="BestFirst").fetch_done(page_fetch())
    assert len(frontier.called("add_links")) == 1


def test_an_unavailable_url_stays_marked_and_its_host_waits_ten_intervals():
    frontier = RecordingFrontier()
    crawl = policy(frontier)
    fetch = Fetch(url="http://a.example/", host="a.example", fetched_at=0.0, status=500)
    crawl.settle_outcome(fetch)
    assert fetch.outcome is Outcome.UNAVAILABLE and crawl.stats["fetch/outcome/unavailable"] == 1
    crawl.fetch_done(fetch)
    outcome = frontier.called("complete")[0][2]
    assert (outcome["keep_marked"], outcome["url_lock_until"], outcome["host_lock_until"]) == (True, 86_400, 600)


def test_a_url_out_of_retries_counts_as_gone():
    crawl = policy(RecordingFrontier(retries=2))  # the third try of harvest_retries = 3
    fetch = Fetch(url="http://a.example/", host="a.example", fetched_at=0.0, error="timeout", outcome=Outcome.UNAVAILABLE)
    crawl.settle_outcome(fetch)
    assert fetch.outcome is Outcome.NOT_FOUND


def test_a_retry_after_holds_the_url_and_its_host_as_long_as_it_asks():
    frontier = RecordingFrontier()
    crawl = policy(frontier)
    fetch = Fetch(url="http://a.example/", host="a.example", fetched_at=0.0, status=503, headers={"retry-after": "120"})
    crawl.settle_outcome(fetch)
    assert fetch.retry_after == 120
    crawl.fetch_done(fetch)
    outcome = frontier.called("complete")[0][2]
    assert (outcome["url_lock_until"], outcome["host_lock_until"]) == (120, 120)


def test_an_invalid_status_is_unavailable_and_counted():
    crawl = policy()
    fetch = Fetch(url="http://a.example/", host="a.example", fetched_at=0.0, status=999)
    crawl.settle_outcome(fetch)
    assert fetch.outcome is Outcome.UNAVAILABLE and crawl.stats["fetch/invalid_status"] == 1


def test_a_revisited_page_is_due_again_after_the_allowed_age_first_then_as_often_as_it_changes():
    frontier = RecordingFrontier()
    crawl = policy(frontier, revisit=True, revisit_max_age=3600)
    crawl.fetch_done(page_fetch())
    assert frontier.called("record_visit") == [("http://a.example/", 1000.0, "k1", False)]
    outcome = frontier.called("complete")[0][2]
    assert (outcome["keep_marked"], outcome["url_lock_until"]) == (True, 1000.0 + 3600)
    assert crawl.stats["revisit/first"] == 1
    changed = RecordingFrontier(history=(4, 0, 0.0, "k0"))
    crawl = policy(changed, revisit=True, revisit_max_age=3600)
    crawl.fetch_done(page_fetch())
    assert crawl.stats["revisit/changed"] == 1
    assert changed.called("record_visit") == [("http://a.example/", 1000.0, "k1", True)]


def test_a_postponed_fetch_gives_its_url_back_for_the_hosts_next_turn():
    frontier = RecordingFrontier()
    crawl = CrawlPolicy(job(), frontier)
    crawl.pace.reserve("a.example", 4940.0)  # its next turn: 4940 + WaitIntervalHost
    entry = FrontierEntry("http://a.example/", "a.example")
    assert crawl.claim(entry, 900.0) and crawl.leased == {entry.url: entry}
    crawl.fetch_postponed(Fetch(url=entry.url, host=entry.host, fetched_at=1000.0, postponed=True))
    assert frontier.called("release") == [("http://a.example/", "a.example", 5000.0, 1000.0)]
    assert crawl.leased == {}


def test_the_leases_left_are_given_back_when_the_crawl_closes():
    frontier = RecordingFrontier()
    crawl = CrawlPolicy(job(), frontier, lease_seconds=30)
    crawl.claim(FrontierEntry("http://a.example/", "a.example"), 10.0)
    crawl.claim(FrontierEntry("http://b.example/", "b.example"), 10.0)
    crawl.fetch_done(Fetch(url="http://a.example/", host="a.example", fetched_at=11.0, status=404, outcome=Outcome.NOT_FOUND))
    assert frontier.called("claim") == [("http://a.example/", 10.0, 30), ("http://b.example/", 10.0, 30)]
    crawl.release_leases(100.0)
    assert frontier.called("release") == [("http://b.example/", "b.example", 100.0 + LOCKS.host, None)]


def test_seeds_from_a_person_must_name_a_full_host_and_raised_urls_are_counted():
    class Raising(RecordingFrontier):
        def mark(self, entries, *, max_urls_per_host=None, distance=0):
            super().mark(entries, distance=distance)
            return MarkResult(1, 0, 1)

    frontier = Raising()
    crawl = policy(frontier)
    marked, rejected = crawl.mark([("http://x/", 1.0), ("http://a.example/#top", 0.2), ("http://a.example/", 0.4)],
                                  seeds=True)
    assert (marked, rejected) == (1, Counter({"one_word_host": 1}))
    assert frontier.called("mark") == [([("http://a.example/", "a.example", 0.4)], 0)]
    assert crawl.stats["frontier/raised"] == 1


def test_a_sitemap_marks_again_the_stored_pages_that_changed_since_their_check():
    class Records:
        def key_for_url(self, url):
            return {"http://a.example/old": "k1", "http://a.example/new": "k2"}.get(url)

        def get(self, key):
            return SimpleNamespace(checked=100.0)

    frontier = RecordingFrontier()
    dated = [("http://a.example/old", 50.0), ("HTTP://a.example/new#x", 150.0), ("http://a.example/unknown", 900.0),
             ("http://a.example/never-stored", 900.0)]
    assert policy(frontier).mark_changed(dated, Records()) == ["http://a.example/new"]
    assert frontier.called("remark") == ["http://a.example/new"]


def test_reharvest_marks_again_the_urls_the_frontier_knows_and_counts_the_others():
    class Frontier(RecordingFrontier):
        def remark(self, url):
            super().remark(url)
            return "gone" not in url

    frontier = Frontier()
    urls = ["http://a.example/1", "http://a.example/gone", "http://b.example/2"]
    assert policy(frontier).mark_again(urls) == (2, 1)
    assert frontier.called("remark") == urls


def test_the_model_re_scores_the_waiting_links_when_it_is_due():
    frontier = RecordingFrontier()
    crawl = policy(frontier, ChosenLinks(rescored={"http://c.example/": 0.9}))
    crawl.fetch_done(page_fetch())
    assert frontier.called("set_priorities") == [{"http://c.example/": 0.9}]
    assert crawl.stats["links/model/rescored"] == 1


def test_links_found_again_are_left_out_until_a_re_scoring_lowers_them():
    frontier, scorer = RecordingFrontier(), ChosenLinks(priority=0.7)
    crawl = policy(frontier, scorer)
    crawl.fetch_done(page_fetch())
    crawl.fetch_done(page_fetch(url="http://a.example/2"))
    assert [links for links, _ in frontier.called("mark")] == [[("http://b.example/x", "b.example", 0.7)]]
    assert crawl.stats["frontier/marks_left_out"] == 1
    crawl.fetch_done(page_fetch(False, url="http://a.example/3"))  # one hop further: not closer, left out too
    assert len(frontier.called("mark")) == 1
    scorer.rescored = {"http://b.example/x": 0.2}
    crawl.fetch_done(page_fetch(url="http://a.example/4"))  # re-scored down after this fetch's marks
    crawl.fetch_done(page_fetch(url="http://a.example/5"))
    assert [links for links, _ in frontier.called("mark")][1:] == [[("http://b.example/x", "b.example", 0.7)]]


def test_a_fetched_url_is_not_marked_again():
    frontier, scorer = RecordingFrontier(), ChosenLinks(priority=0.5)
    crawl = policy(frontier, scorer)
    crawl.fetch_done(page_fetch(url="http://b.example/x"))  # it links to itself: marked with its completion
    scorer.priority = 0.9  # a mark no fetched URL takes
    crawl.fetch_done(page_fetch(url="http://a.example/2"))
    assert len(frontier.called("mark")) == 1
    assert crawl.stats["frontier/marks_left_out"] == 1


def test_a_dry_crawl_is_saturated_once():
    crawl = policy(stop_when_saturated=2)
    reasons = [crawl.fetch_done(page_fetch(False)) for _ in range(4)]
    assert reasons[:1] == [None] and reasons[1] is not None and reasons[2:] == [None, None]
    assert crawl.stats["saturation/reason"] == reasons[1]
    assert reasons[1].startswith("2 fetches in a row gave no new relevant record")


def test_the_link_model_is_merged_with_its_store_and_a_damaged_one_is_replaced(tmp_path):
    learner = OnlineLinkLearner(store=FileModelStore(tmp_path / "link_model.npz"))
    crawl = policy(scorer=ChosenLinks(learner=learner))
    crawl.sync_link_model()
    assert (tmp_path / "link_model.npz").exists() and crawl.stats["links/model/synced"] == 1
    (tmp_path / "link_model.npz").write_bytes(b"not a model")
    crawl.sync_link_model(closing=True)
    assert crawl.stats["links/model/damaged"] == 1 and crawl.stats["links/model/synced"] == 2
    assert crawl.stats["links/model/relevant_seen"] == 0


def test_a_model_that_cannot_be_saved_leaves_the_crawl_going(tmp_path):
    (tmp_path / "file").write_text("")
    learner = OnlineLinkLearner(store=FileModelStore(tmp_path / "file" / "link_model.npz"))
    crawl = policy(scorer=ChosenLinks(learner=learner))
    crawl.sync_link_model()
    assert crawl.stats["links/model/sync_failed"] == 1 and "links/model/synced" not in crawl.stats


def test_a_fetch_without_an_outcome_is_refused():
    with pytest.raises(ValueError, match="no outcome"):
        policy().fetch_done(Fetch(url="http://a.example/", host="a.example", fetched_at=0.0))
