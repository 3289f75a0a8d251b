"""Link relevance: score propagation, RW, RWB and the dynamic threshold."""

from __future__ import annotations

import random

import pytest

from combine_scrapy.links.scoring import DynamicThreshold, LinkCandidate, LinkScorer, squash
from combine_scrapy.topic import parse_topic_definition

DEFINITION = parse_topic_definition("100: carnivorous plants?=CP\n50: sundews?=CP\n-50: baseball=X\n")
TOPICAL = LinkCandidate("http://x/p/1.html", "Carnivorous plants of Europe")
BY_URL = LinkCandidate("http://x/sundews/2.html", "next page")
BY_TITLE = LinkCandidate("http://x/3.html", "more", title="Sundew care")
OFF_TOPIC = LinkCandidate("http://x/news/4.html", "Baseball scores")


def test_squash():
    assert squash(0, 90) == 0 and squash(-5, 90) == 0
    assert squash(90, 90) == pytest.approx(0.632, abs=1e-3)
    assert squash(180, 90) < squash(900, 90) <= 1


def test_anchor_says_more_than_title_or_url():
    scorer = LinkScorer(DEFINITION, "RW")
    anchor, url, title, off = (scorer.link_relevance(link) for link in (TOPICAL, BY_URL, BY_TITLE, OFF_TOPIC))
    assert anchor > url > 0 and url == title
    assert off == 0


def test_propagate_is_combine_all_links_of_relevant_pages_with_the_page_score():
    scorer = LinkScorer(DEFINITION, "propagate")
    assert scorer.select([TOPICAL, OFF_TOPIC], 250, True) == [(TOPICAL.url, 250), (OFF_TOPIC.url, 250)]
    assert scorer.select([TOPICAL, OFF_TOPIC], 10, False) == []


def test_relevance_weighting_follows_topical_links_of_any_page_and_ranks_them():
    scorer = LinkScorer(DEFINITION, "RW", threshold=0.3, page_weight=0.5)
    from_irrelevant = dict(scorer.select([TOPICAL, BY_URL, OFF_TOPIC], 0, False))
    assert list(from_irrelevant) == [TOPICAL.url]
    from_relevant = dict(scorer.select([TOPICAL, BY_URL, OFF_TOPIC], 500, True))
    assert set(from_relevant) == {TOPICAL.url, BY_URL.url, OFF_TOPIC.url}
    assert from_relevant[TOPICAL.url] > from_relevant[BY_URL.url] > from_relevant[OFF_TOPIC.url] == 0.5


def test_boosted_relevance_weighting_gives_links_below_the_threshold_a_chance():
    links = [LinkCandidate(f"http://x/news/{i}.html", "scores") for i in range(1000)]
    never = LinkScorer(DEFINITION, "RWB", boost_chance=0.0, rng=random.Random(1))
    always = LinkScorer(DEFINITION, "RWB", boost_chance=1.0, rng=random.Random(1))
    sometimes = LinkScorer(DEFINITION, "RWB", boost_chance=0.2, rng=random.Random(1))
    assert never.select(links, 0, False) == []
    assert len(always.select(links, 0, False)) == 1000
    assert 150 < len(sometimes.select(links, 0, False)) < 250


def test_dynamic_threshold_rises_when_precision_falls_and_falls_when_it_rises():
    threshold = DynamicThreshold(0.3, step=0.1, window=4)
    for relevant in [True, True, True, False]:       # first window: precision 0.75
        threshold.observe(relevant)
    assert threshold.value == 0.3
    for relevant in [True, False, False, False]:     # 0.25: fell
        threshold.observe(relevant)
    assert threshold.value == pytest.approx(0.4)
    for relevant in [True, True, True, True]:        # 1.0: rose
        threshold.observe(relevant)
    assert threshold.value == pytest.approx(0.3)


def test_dynamic_threshold_is_bounded():
    threshold = DynamicThreshold(0.9, step=0.5, window=1, high=0.95)
    threshold.observe(True)
    threshold.observe(False)
    assert threshold.value == 0.95


def test_unknown_method_is_refused():
    with pytest.raises(ValueError, match="unknown link method"):
        LinkScorer(DEFINITION, "Shark")
