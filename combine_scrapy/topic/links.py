"""Link relevance: which links of a fetched page to follow, and with what priority.

``propagate`` is Combine's way ("heuristics like score propagation"): every
link of a relevant page is marked and inherits the page's score as its
priority. ``RW`` and ``RWB`` are the relevance weighting of the topic-crawling
thesis (4.4.4, 4.5.2): a link's priority mixes the relevance of its page with
the relevance of the link itself (its anchor text, title attribute and URL
matched against the topic terms); links of any page are followed when the
priority reaches a threshold, and RWB gives a link below it a random second
chance, so the crawl can tunnel through off-topic pages to the next topical
cluster. A dynamic threshold rises when the recent harvest rate falls and falls
when it rises. The priority is what BestFirst orders the frontier by.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable
from dataclasses import dataclass

from combine_scrapy.topic.definition import TopicDefinition
from combine_scrapy.topic.matching import term_hits
from combine_scrapy.topic.text import tokens, url_path_text

METHODS = ("propagate", "RW", "RWB")
#: Seconds one term may spend on one part of a link (anchors are short: a longer wait means a runaway pattern).
LINK_REGEX_TIMEOUT = 0.1
#: How much each part of a link says about its target, relative to the anchor text.
PART_WEIGHTS = {"anchor": 1.0, "title": 0.5, "url": 0.5}


def squash(score: float, scale: float) -> float:
    """Map a score onto [0, 1]: 0 and below give 0, ``scale`` gives 0.63, large scores approach 1."""
    return 1.0 - math.exp(-max(score, 0.0) / scale) if scale > 0 else float(score > 0)


class DynamicThreshold:
    """A threshold that follows precision: after each window of pages it rises when the share of
    relevant pages fell since the previous window, and falls when it rose (thesis 4.5.2)."""

    def __init__(self, start: float, step: float = 0.05, window: int = 20, low: float = 0.05, high: float = 0.95):
        self.value = start
        self.step, self.window, self.low, self.high = step, window, low, high
        self._seen = self._relevant = 0
        self._previous: float | None = None

    def observe(self, relevant: bool) -> None:
        self._seen += 1
        self._relevant += relevant
        if self._seen < self.window:
            return
        precision = self._relevant / self._seen
        if self._previous is not None:
            if precision < self._previous:
                self.value = min(self.value + self.step, self.high)
            elif precision > self._previous:
                self.value = max(self.value - self.step, self.low)
        self._previous, self._seen, self._relevant = precision, 0, 0


@dataclass(frozen=True)
class LinkCandidate:
    url: str
    anchor: str = ""
    title: str = ""


class LinkScorer:
    """Choose the links of a page to mark, with their priorities."""

    def __init__(
        self,
        definition: TopicDefinition | None,
        method: str = "propagate",
        *,
        threshold: float = 0.3,
        page_weight: float = 0.5,
        boost_chance: float = 0.1,
        dynamic: bool = False,
        page_scale: float = 90.0,
        rng: random.Random | None = None,
    ):
        if method not in METHODS:
            raise ValueError(f"unknown link method {method!r}; known: {', '.join(METHODS)}")
        self.definition = definition
        self.method = method
        self.page_weight = page_weight
        self.boost_chance = boost_chance
        self.page_scale = page_scale
        self.threshold = DynamicThreshold(threshold) if dynamic else None
        self._fixed_threshold = threshold
        self.rng = rng or random.Random()
        positive = [term.weight for term in definition.terms if term.weight > 0] if definition else []
        self._link_scale = max(positive, default=1)

    @property
    def current_threshold(self) -> float:
        return self.threshold.value if self.threshold else self._fixed_threshold

    def link_relevance(self, link: LinkCandidate) -> float:
        """How much the link's anchor, title and URL say it leads to the topic, in [0, 1)."""
        if self.definition is None:
            return 0.0
        stopwords = self.definition.stopwords
        parts = {"anchor": link.anchor, "title": link.title, "url": url_path_text(link.url)}
        score = 0.0
        for part, text in parts.items():
            prepared = " ".join(tokens(text, stopwords))
            if not prepared:
                continue
            for term in self.definition.terms:
                score += term_hits(term, prepared, LINK_REGEX_TIMEOUT) * term.weight * PART_WEIGHTS[part]
        return squash(score, self._link_scale)

    def select(
        self, links: Iterable[LinkCandidate], page_score: float, page_relevant: bool
    ) -> list[tuple[str, float]]:
        """``(url, priority)`` of the links to mark from a page with this score and verdict."""
        if self.threshold:
            self.threshold.observe(page_relevant)
        links = list(links)
        if self.method == "propagate":
            return [(link.url, page_score) for link in links] if page_relevant else []
        page = 1.0 if page_relevant else squash(page_score, self.page_scale)
        threshold = self.current_threshold
        chosen = []
        for link in links:
            priority = self.page_weight * page + (1 - self.page_weight) * self.link_relevance(link)
            if priority >= threshold or (self.method == "RWB" and self.rng.random() < self.boost_chance):
                chosen.append((link.url, priority))
        return chosen
