"""The online link classifier: it learns from the crawl's outcomes which links lead to relevant pages,
tunnels through irrelevant pages, is stored beside the frontier and makes the same choices for the same seed."""

from __future__ import annotations

import random
import uuid

import pytest
from harvesters import delete_job_keys

from combine_scrapy.context import link_model_store
from combine_scrapy.frontier.redis import RedisFrontier
from combine_scrapy.links.online import (
    HOST_DEPTH_BONUS,
    HOST_DEPTH_DECAY,
    HUB_BONUS,
    LANGUAGE_COPY_SHARE,
    MODEL_FILE,
    RESCORE_EVERY,
    RESCORE_HOSTS,
    RESCORE_TOLERANCE,
    RESCORE_WAITING,
    DamagedModel,
    FileModelStore,
    LinkFeatures,
    LinkModel,
    OnlineLinkLearner,
    RedisModelStore,
    hub_page,
    language_free,
    language_variant,
    link_features,
)
from combine_scrapy.links.scoring import MAX_LESSON_WEIGHT, MAX_TUNNEL_DISTANCE, LinkCandidate, LinkScorer, lesson_weight
from combine_scrapy.topic import parse_topic_definition

DEFINITION = parse_topic_definition("100: carnivorous plants?=CP\n50: sundews?=CP\n")
REDIS_URL = "redis://127.0.0.1:6379/0"


def online_scorer(**options) -> LinkScorer:
    return LinkScorer(DEFINITION, "online", page_scale=90, learner=OnlineLinkLearner(**options))


def crawl_outcomes(scorer: LinkScorer, pages: int = 40) -> None:
    """Synthetic outcomes: on each irrelevant page, links named by the topic's abbreviation (``CP 12``)
    lead to relevant pages, links to news and weather do not; none names the topic's terms."""
    for n in range(pages):
        source = f"http://site.example/list/{n}.html"
        links = [LinkCandidate(f"http://site.example/m/{n}-cp.html", f"CP {n}"),
                 LinkCandidate(f"http://site.example/news/{n}.html", f"News {n}"),
                 LinkCandidate(f"http://site.example/w/{n}.html", f"Weather {n}")]
        scorer.select(links, 0.0, False, distance=0, source_url=source)
        scorer.observe(f"http://site.example/m/{n}-cp.html", True)
        scorer.observe(f"http://site.example/news/{n}.html", False)
        scorer.observe(f"http://site.example/w/{n}.html", False)


FRESH = [LinkCandidate("http://site.example/news/999.html", "News 999"),
         LinkCandidate("http://site.example/w/999.html", "Weather 999"),
         LinkCandidate("http://site.example/m/999-cp.html", "CP 999")]


def fresh_predictions(scorer: LinkScorer) -> list[float]:
    """What the model says of FRESH's links: the part of their priorities that a stored model carries (the hosts
    that gave relevant pages, and the pages' depths in them, are the run's, as the links waiting for a label are)."""
    return scorer.learner.predict([
        link_features(anchor=link.anchor, context="", url=link.url, host="site.example", source_host="site.example",
                      page_relevant=False, page_evidence=0.0, distance=0) for link in FRESH]).tolist()


def test_links_named_by_an_abbreviation_the_crawl_found_relevant_then_outrank_the_others():
    scorer = online_scorer()
    before = dict(scorer.select(FRESH, 0.0, False, distance=0, source_url="http://site.example/"))
    assert len(set(before.values())) == 1          # no topic term in any anchor: a tie before learning
    crawl_outcomes(scorer)
    after = dict(scorer.select(FRESH, 0.0, False, distance=0, source_url="http://site.example/x.html"))
    ranked = sorted(after, key=after.get, reverse=True)
    assert ranked[0] == "http://site.example/m/999-cp.html"
    assert after[ranked[0]] > 2 * max(after[url] for url in ranked[1:])
    assert all(0 <= p <= 1 for p in after.values())


def test_a_directory_link_in_front_of_the_topic_learns_that_it_leads_there():
    """Relevant pages lie two links behind irrelevant index pages: the relevant page's credit flows back
    to the link into the index page, so index links outrank links into pages that lead nowhere."""
    scorer = online_scorer()
    for n in range(30):
        home = f"http://site.example/home{n}.html"
        index, dead_end = f"http://site.example/index/{n}.html", f"http://site.example/misc/{n}.html"
        scorer.select([LinkCandidate(index, "Index"), LinkCandidate(dead_end, "Misc")], 0.0, False,
                      distance=0, source_url=home)
        for url in (index, dead_end):
            scorer.observe(url, False)
        for url, anchor in ((index, "Item"), (dead_end, "Item")):
            target = url.replace(".html", "/item.html")
            scorer.select([LinkCandidate(target, anchor)], 0.0, False, distance=1, source_url=url)
            scorer.observe(target, url == index)
    chosen = dict(scorer.select([LinkCandidate("http://site.example/misc/99.html", "Misc"),
                                 LinkCandidate("http://site.example/index/99.html", "Index")],
                                0.0, False, distance=0, source_url="http://site.example/home99.html"))
    assert chosen["http://site.example/index/99.html"] > chosen["http://site.example/misc/99.html"]


def test_irrelevant_pages_are_tunnelled_through_with_a_priority_that_decays_up_to_the_bound():
    scorer = online_scorer()
    link = [LinkCandidate("http://a.example/x.html", "More")]
    priorities = [scorer.select(link, 0.0, False, distance=d)[0][1] for d in range(MAX_TUNNEL_DISTANCE)]
    assert priorities == sorted(priorities, reverse=True) and priorities[-1] > 0
    assert scorer.select(link, 0.0, False, distance=MAX_TUNNEL_DISTANCE) == []
    assert LinkScorer(DEFINITION, "propagate").select(link, 0.0, False) == []     # Combine: one setting away


def test_links_of_a_strong_page_outrank_those_of_a_page_that_barely_passed():
    scorer = online_scorer()
    link = [LinkCandidate("http://a.example/x.html", "More")]
    strong, barely = scorer.select(link, 900.0, True)[0][1], scorer.select(link, 90.0, True)[0][1]
    assert 1 >= strong > barely > scorer.select(link, 0.0, False)[0][1]
    topical = scorer.select([LinkCandidate("http://a.example/y.html", "Sundews of Europe")], 90.0, True)[0][1]
    assert topical > barely


def test_the_model_is_deterministic():
    first, second = online_scorer(), online_scorer()
    crawl_outcomes(first)
    crawl_outcomes(second)
    assert first.select(FRESH, 0.0, False) == second.select(FRESH, 0.0, False)


def test_the_same_random_seed_makes_the_same_choices():
    links = [LinkCandidate(f"http://x/news/{i}.html", "scores") for i in range(200)]

    def choices(seed: int) -> list[str]:
        scorer = LinkScorer(DEFINITION, "RWB", boost_chance=0.3, rng=random.Random(seed))
        return [url for url, _ in scorer.select(links, 0, False)]

    assert choices(7) == choices(7)
    assert choices(7) != choices(8)


def test_the_model_survives_a_round_trip_through_its_file(tmp_path):
    store = FileModelStore(tmp_path / "job" / MODEL_FILE)
    scorer = online_scorer(store=store)
    crawl_outcomes(scorer)
    scorer.learner.sync()
    assert (tmp_path / "job" / MODEL_FILE).exists()
    resumed = online_scorer(store=store)
    resumed.learner.sync()                                   # a resumed crawl loads what the first one learned
    assert fresh_predictions(resumed) == fresh_predictions(scorer)
    assert resumed.learner.model.positives == 40


def test_harvesters_sharing_a_store_add_up_what_each_learned(tmp_path):
    store = FileModelStore(tmp_path / MODEL_FILE)
    one, two = online_scorer(store=store), online_scorer(store=store)
    crawl_outcomes(one, 20)
    crawl_outcomes(two, 30)
    one.learner.sync()
    two.learner.sync()
    one.learner.sync()
    for scorer in (one, two):
        assert (scorer.learner.model.positives, scorer.learner.model.negatives) == (50, 100)
    assert one.select(FRESH, 0.0, False) == two.select(FRESH, 0.0, False)


def test_a_damaged_stored_model_is_named_and_replaced(tmp_path):
    path = tmp_path / MODEL_FILE
    path.write_bytes(b"not a model")
    scorer = online_scorer(store=FileModelStore(path))
    crawl_outcomes(scorer, 10)
    with pytest.raises(DamagedModel, match=str(path)):
        scorer.learner.sync()
    assert LinkModel.from_bytes(path.read_bytes()).positives == 10


@pytest.fixture
def redis_job():
    name = f"test-{uuid.uuid4().hex}"
    yield name
    delete_job_keys(REDIS_URL, name)


@pytest.mark.services
def test_the_model_survives_a_round_trip_through_redis_beside_the_frontier(redis_job, tmp_path):
    frontier = RedisFrontier.from_url(REDIS_URL, redis_job)
    store = link_model_store(frontier, tmp_path, redis_job)
    assert isinstance(store, RedisModelStore) and store.key == f"combine:{{{redis_job}}}:link_model"
    scorer, other = online_scorer(store=store), online_scorer(store=link_model_store(frontier, tmp_path, redis_job))
    crawl_outcomes(scorer, 20)
    crawl_outcomes(other, 20)
    scorer.learner.sync()
    other.learner.sync()
    resumed = online_scorer(store=store)
    resumed.learner.sync()
    assert resumed.learner.model.positives == 40
    assert fresh_predictions(resumed) == fresh_predictions(other)
    assert not (tmp_path / redis_job).exists()                # nothing written beside it on disk
    frontier.close()


def test_the_sqlite_frontier_keeps_the_model_in_the_jobs_data_directory(tmp_path):
    from combine_scrapy.frontier.sqlite import SqliteFrontier

    frontier = SqliteFrontier(tmp_path / "j" / "frontier.sqlite")
    store = link_model_store(frontier, tmp_path, "j")
    assert isinstance(store, FileModelStore) and store.path == tmp_path / "j" / MODEL_FILE
    frontier.close()


def test_links_the_frontier_refuses_are_returned_for_it_to_count_but_not_learned():
    scorer = online_scorer()
    chosen = scorer.select([LinkCandidate("mailto:someone@example.org", "Write"),
                            LinkCandidate("http://a.example/p.html", "Page")], 0.0, False)
    assert [url for url, _ in chosen] == ["mailto:someone@example.org", "http://a.example/p.html"]
    assert scorer.learner.pending == 1


def test_links_marked_before_the_model_learned_are_rescored_once_it_has():
    """A directory's entries found before any relevant page keep their prior; once the crawl has learned that
    ``CP`` anchors lead to the topic, a re-scoring raises them over the news links found with them."""
    scorer = online_scorer()
    early = dict(scorer.select(FRESH, 0.0, False, distance=0, source_url="http://site.example/dir/"))
    assert len(set(early.values())) == 1 and not scorer.rescore_due
    crawl_outcomes(scorer, pages=60)   # 180 lessons: a re-scoring is due
    assert scorer.rescore_due
    rescored = scorer.rescore()
    assert not scorer.rescore_due      # due again only after the next lessons
    assert rescored["http://site.example/m/999-cp.html"] > 2 * early["http://site.example/m/999-cp.html"]
    # site.example gave relevant pages, so the seed's links also gain its depth bonus; the model's part fell
    bonus = HOST_DEPTH_BONUS * HOST_DEPTH_DECAY
    assert rescored["http://site.example/news/999.html"] - bonus < early["http://site.example/news/999.html"]
    assert "http://site.example/m/5-cp.html" not in rescored    # fetched links are not in the frontier any more


def test_a_rescoring_returns_only_the_links_whose_priority_moved():
    scorer = online_scorer()
    scorer.select(FRESH, 0.0, False, distance=0, source_url="http://site.example/dir/")
    crawl_outcomes(scorer, pages=60)
    assert scorer.rescore()
    scorer.learner._since_rescore = RESCORE_EVERY
    assert scorer.rescore() == {}      # nothing learned since: every priority stands


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("redis", marks=pytest.mark.services)])
def test_a_rescoring_writes_to_the_frontier_only_the_priorities_that_moved(backend, tmp_path):
    """The frontier's priorities stay within RESCORE_TOLERANCE of the model's: a link whose priority moved less
    keeps the frontier's (not sent), one that moved more reaches the frontier, on either backend."""
    from dataclasses import replace

    from combine_scrapy.frontier.sqlite import SqliteFrontier

    job = f"test-rescore-{uuid.uuid4().hex}"
    frontier = SqliteFrontier(tmp_path / "frontier.sqlite") if backend == "sqlite" else RedisFrontier.from_url(REDIS_URL, job)
    try:
        learner = OnlineLinkLearner()
        learner.model.counts[1:] = 25      # as if the model had learned: its share is full
        urls = [f"http://h{n}.example/page.html" for n in range(3)]
        for number, url in enumerate(urls):
            features = link_features(anchor=f"anchor {number}", context="", url=url, host=f"h{number}.example",
                                     source_host="", page_relevant=False, page_evidence=0.0, distance=1)
            learner.remember(url, features, "http://seed.example/", prior=0.2 + 0.2 * number, host=f"h{number}.example")
        model = learner.rescore()          # every link marked at 0: all move
        assert set(model) == set(urls)
        near, far = model[urls[0]] + RESCORE_TOLERANCE / 2, model[urls[1]] + 2 * RESCORE_TOLERANCE
        held = {urls[0]: near, urls[1]: far, urls[2]: model[urls[2]]}   # what the frontier holds
        frontier.mark([(url, url.split("/")[2], priority) for url, priority in held.items()])
        for url, priority in held.items():
            learner._pending[url] = replace(learner._pending[url], priority=priority)
        rescored = learner.rescore()       # nothing learned since: the model gives the same priorities
        assert rescored == {urls[1]: model[urls[1]]}
        frontier.set_priorities(rescored)
        in_frontier = {entry.url: entry.priority for entry in frontier.ready(0.0, "BestFirst", 3)}
        assert in_frontier == {urls[0]: near, urls[1]: model[urls[1]], urls[2]: model[urls[2]]}
    finally:
        frontier.close()
        if backend == "redis":
            delete_job_keys(REDIS_URL, job)


def test_a_large_frontier_is_rescored_less_often():
    learner = OnlineLinkLearner()
    learner.model.counts[1:] = 25      # as if the model had learned: its share is full
    features = link_features(anchor="a", context="", url="http://a.example/", host="a.example", source_host="",
                             page_relevant=False, page_evidence=0.0, distance=1)
    for number in range(200 * RESCORE_WAITING):
        learner.remember(f"http://a.example/{number}", features, "http://a.example/")
    learner._since_rescore = RESCORE_EVERY
    assert not learner.rescore_due
    learner._since_rescore = 200
    assert learner.rescore_due


def test_a_rescoring_that_wrote_many_hosts_makes_the_next_wait_longer():
    """The frontier's work for a re-scoring goes by the hosts it writes: after one that wrote 300 hosts' links the
    next waits for 300 / RESCORE_HOSTS lessons, not RESCORE_EVERY."""
    learner = OnlineLinkLearner()
    learner.model.counts[1:] = 25      # as if the model had learned: its share is full
    for host in range(300):
        url = f"http://h{host}.example/"
        features = link_features(anchor="a", context="", url=url, host=f"h{host}.example", source_host="",
                                 page_relevant=False, page_evidence=0.0, distance=1)
        learner.remember(url, features, "http://seed.example/", prior=0.5, host=f"h{host}.example")
    assert len(learner.rescore()) == 300           # marked at 0, every link moved
    assert 300 // RESCORE_HOSTS > RESCORE_EVERY
    learner._since_rescore = RESCORE_EVERY
    assert not learner.rescore_due
    learner._since_rescore = 300 // RESCORE_HOSTS
    assert learner.rescore_due
    assert learner.rescore() == {}                 # nothing moved: the next is due after RESCORE_EVERY again
    learner._since_rescore = RESCORE_EVERY
    assert learner.rescore_due


def test_of_several_links_to_one_url_the_best_marked_is_remembered():
    """The frontier keeps the highest priority a URL was marked with; a re-scoring starts from that link."""
    learner = OnlineLinkLearner()
    scorer = LinkScorer(DEFINITION, "online", page_scale=90, learner=learner)
    target = "http://site.example/m/1.html"
    scorer.select([LinkCandidate(target, "next")], 0.0, False, distance=3, source_url="http://site.example/a")
    scorer.select([LinkCandidate(target, "carnivorous plants")], 400.0, True, source_url="http://site.example/b")
    scorer.select([LinkCandidate(target, "more")], 0.0, False, distance=4, source_url="http://site.example/c")
    learner.model.counts[1:] = 25            # as if the model had learned: its share is full
    learner._since_rescore = 50
    priority = scorer.rescore()[target]
    best = dict(scorer.select([LinkCandidate(target, "carnivorous plants")], 400.0, True,
                              source_url="http://site.example/d"))[target]
    assert priority == pytest.approx(best)


def test_a_lesson_weighs_more_the_further_the_page_is_over_the_cutoff():
    assert lesson_weight(90, 90) == lesson_weight(50, 90) == 1.0
    assert lesson_weight(180, 90) == 2.0
    assert lesson_weight(360, 90) == lesson_weight(9000, 90) == MAX_LESSON_WEIGHT
    scorer = online_scorer()
    for n in range(6):  # each anchor led as often to a relevant page as to an irrelevant one
        for anchor, score in (("Strong", 900.0), ("Barely", 90.0)):
            hit, miss = f"http://site.example/{anchor}/{n}.html", f"http://site.example/{anchor}/x{n}.html"
            scorer.select([LinkCandidate(hit, anchor), LinkCandidate(miss, anchor)], 0.0, False, distance=0,
                          source_url="http://site.example/")
            scorer.observe(hit, True, score)
            scorer.observe(miss, False)
    fresh = [link_features(anchor=anchor, context="", url="http://site.example/new.html", host="site.example",
                           source_host="site.example", page_relevant=False, page_evidence=0.0, distance=0)
             for anchor in ("Strong", "Barely")]
    strong_p, barely_p = scorer.learner.predict(fresh)
    assert strong_p > barely_p


@pytest.mark.parametrize(("path", "variant"), [
    ("fr/mod/core.html", True), ("docs/pt-br/index.html", True), ("zh_CN/a", True), ("mod/core.html.de", True),
    ("page.ja.html", True), ("da-DK/sect.backup.html", True), ("ca_ES/", True), ("mod/core.html", False),
    ("french/cooking.html", False), ("", False), ("release.2.4.html", False), ("xx-yy/a.html", False),
    ("de-123/a.html", False),
])
def test_language_variants_are_told_by_a_path_segment_or_a_file_suffix(path, variant):
    assert language_variant(path) is variant


@pytest.mark.parametrize(("path", "free"), [
    ("fr/mod/core.html", "mod/core.html"), ("en-US/sect.backup.html", "sect.backup.html"),
    ("docs/zh_CN/a", "docs/a"), ("mod/core.html.de", "mod/core.html"), ("page.ja.html", "page.html"),
    ("fr/", ""), ("mod/core.html", None), ("release.2.4.html", None),
])
def test_a_path_without_its_language_is_the_page_in_every_language(path, free):
    assert language_free(path) == free


def test_a_page_seen_before_in_another_language_keeps_a_share_of_its_priority():
    """The first language of a page seen (a seed's, or the first link's) keeps its priority; the same page in
    another language, linked from the same page with the same anchor, gets LANGUAGE_COPY_SHARE of it, when it is
    marked and when it is re-scored. Pages whose path names no language, and other pages, are not copies."""
    scorer = online_scorer()
    source = "http://docs.example/en/ssl/howto.html"
    english, french, other = ("http://docs.example/en/ssl/faq.html", "http://docs.example/fr/ssl/faq.html",
                              "http://docs.example/fr/ssl/intro.html")
    chosen = dict(scorer.select([LinkCandidate(english, "FAQ"), LinkCandidate(french, "FAQ"),
                                 LinkCandidate(other, "FAQ"), LinkCandidate("http://docs.example/fr/ssl/howto.html",
                                                                            "FAQ")], 0.0, False, source_url=source))
    assert chosen[english] == chosen[other] > 0
    assert chosen[french] == pytest.approx(LANGUAGE_COPY_SHARE * chosen[english])
    assert chosen["http://docs.example/fr/ssl/howto.html"] == chosen[french]  # the page itself came first: a copy
    learner = scorer.learner
    assert learner.language_copy(french) and not learner.language_copy(english)  # the first seen stays the first
    assert not learner.language_copy("http://docs.example/faq.html")  # no language in its path: never a copy
    assert not learner.language_copy("http://mirror.example/fr/ssl/faq.html")  # another host: another page
    crawl_outcomes(scorer)  # the model has a share: a re-scoring keeps a copy at its share
    rescored = scorer.rescore()
    assert rescored[french] == pytest.approx(LANGUAGE_COPY_SHARE * rescored[english])


def test_duplicates_teach_that_other_languages_copies_lead_nowhere_new():
    """A site serves each page in several languages: the English pages are new records, the translations join
    them (duplicates, a negative lesson). Afterwards a link into a language not seen yet ranks below a link to
    a new English page: what the crawl learned of /fr/ and /de/ carries over to /it/."""
    scorer = online_scorer()
    for n in range(30):
        source = f"http://docs.example/en/index{n}.html"
        links = [LinkCandidate(f"http://docs.example/{lang}/page{n}.html", f"Page {n}") for lang in ("en", "fr", "de")]
        scorer.select(links, 200.0, True, distance=0, source_url=source)
        scorer.observe(f"http://docs.example/en/page{n}.html", True, 200.0)
        for lang in ("fr", "de"):
            scorer.observe(f"http://docs.example/{lang}/page{n}.html", False)
    fresh = dict(scorer.select([LinkCandidate("http://docs.example/en/page99.html", "Page"),
                                LinkCandidate("http://docs.example/it/page98.html", "Page")], 200.0, True,
                               distance=0, source_url="http://docs.example/en/index99.html"))
    assert not scorer.learner.language_copy("http://docs.example/it/page98.html")  # learned, not a copy's share
    assert fresh["http://docs.example/en/page99.html"] > fresh["http://docs.example/it/page98.html"]


def test_the_model_carries_the_topic_terms_to_words_it_has_not_seen():
    """Links whose anchors name the topic's terms led to relevant pages: a fresh link naming other terms of the
    topic, in words the model never saw, is then more likely to lead to one than a fresh link naming none."""
    scorer = online_scorer()
    for n in range(40):
        topical, other = f"http://site.example/s/{n}.html", f"http://site.example/o/{n}.html"
        scorer.select([LinkCandidate(topical, f"Sundews {n}"), LinkCandidate(other, f"Weather {n}")], 0.0, False,
                      distance=0, source_url=f"http://site.example/list/{n}.html")
        scorer.observe(topical, True)
        scorer.observe(other, False)

    def features(anchor: str, url: str) -> LinkFeatures:
        return link_features(anchor=anchor, context="", url=url, host="site.example", source_host="site.example",
                             page_relevant=False, page_evidence=0.0, distance=1,
                             topic_terms=scorer.link_relevance(LinkCandidate(url, anchor)))

    topical, plain = scorer.learner.predict([features("Carnivorous plants", "http://site.example/a.html"),
                                             features("Opening hours", "http://site.example/b.html")])
    assert topical > 2 * plain


def test_within_a_host_that_gave_a_relevant_page_links_near_its_entry_come_first():
    """A link's depth is counted from where the crawl entered its host; the bonus for a shallow link comes only
    once the host gave a relevant page, and a re-scoring gives it to the links marked before."""
    scorer = online_scorer()
    crawl_outcomes(scorer)  # the model has a share; site.example is productive, docs.example not yet

    def mark(url: str, source: str) -> float:
        return dict(scorer.select([LinkCandidate(url, "More")], 0.0, False, distance=1, source_url=source))[url]

    shallow = mark("http://docs.example/guide.html", "http://docs.example/")          # depth 1: a seed's link
    mark("http://docs.example/part.html", "http://docs.example/guide.html")            # 2
    deep = mark("http://docs.example/chapter.html", "http://docs.example/part.html")  # 3
    assert shallow == deep                                   # docs.example gave nothing: no bonus
    scorer.observe("http://docs.example/", True)             # its home page was relevant
    rescored = scorer.rescore()
    assert rescored["http://docs.example/guide.html"] == pytest.approx(shallow + HOST_DEPTH_BONUS * HOST_DEPTH_DECAY)
    assert rescored["http://docs.example/chapter.html"] == pytest.approx(
        deep + HOST_DEPTH_BONUS * HOST_DEPTH_DECAY ** 3)
    near = mark("http://docs.example/intro.html", "http://docs.example/")
    far = mark("http://docs.example/section.html", "http://docs.example/part.html")
    assert near - far == pytest.approx(HOST_DEPTH_BONUS * (HOST_DEPTH_DECAY - HOST_DEPTH_DECAY ** 3))
    assert scorer.learner.bonus("other.example", 0, False) == 0  # another host starts at 0, and gave nothing


@pytest.mark.parametrize(("url", "hub"), [
    ("http://docs.example/contents.html", True), ("http://docs.example/mod/index.html", True),
    ("http://docs.example/en/mod/index.html", False), ("http://docs.example/index.html.fr", False),
    ("http://docs.example/toc.html?lang=de", True), ("http://docs.example/Sitemap.xml", True),
    ("http://docs.example/library/re.html", False), ("http://docs.example/", False),
    ("http://docs.example/index-of-terms.html", False), ("http://docs.example/indexes.html", False),
])
def test_hub_pages_are_told_by_their_name(url, hub):
    assert hub_page(url) is hub


def test_links_to_pages_named_as_hubs_come_first_from_the_first_fetch():
    """Before the model knows anything, of two links alike the one to a contents page comes first: its page's
    anchors will name the pages under it."""
    scorer = online_scorer()
    page, hub = "http://docs.example/library/re.html", "http://docs.example/library/index.html"
    chosen = dict(scorer.select([LinkCandidate(page, "Library"), LinkCandidate(hub, "Library")], 0.0, False,
                                source_url="http://docs.example/"))
    assert chosen[hub] == pytest.approx(chosen[page] + HUB_BONUS)


def test_a_link_to_a_page_already_observed_waits_for_nothing():
    """A page fetched (relevant or not) is not fetched again: links found to it later are not kept for a lesson,
    re-scored or counted among the waiting links the model expects pages from."""
    learner = OnlineLinkLearner()
    scorer = LinkScorer(DEFINITION, "online", page_scale=90, learner=learner)
    relevant, irrelevant = "http://site.example/m/1.html", "http://site.example/m/2.html"
    scorer.select([LinkCandidate(relevant, "one"), LinkCandidate(irrelevant, "two")], 0.0, False,
                  source_url="http://site.example/")
    assert learner.pending == 2
    assert learner.observe(relevant, True) == 1 and learner.observe(irrelevant, False) == 1
    scorer.select([LinkCandidate(relevant, "one"), LinkCandidate(irrelevant, "two")], 400.0, True,
                  source_url="http://site.example/b")
    assert learner.pending == 0
    assert learner.observe(relevant, True) == 0
