"""Link relevance: which links of a fetched page to follow, and with what priority.

``propagate`` is Combine's way ("heuristics like score propagation"): every
link of a relevant page is marked and inherits the page's score as its
priority. ``RW`` and ``RWB`` are the relevance weighting of topic-focused
crawling: a link's priority mixes the relevance of its page with
the relevance of the link itself (its anchor text, title attribute and URL
matched against the topic terms); links of any page are followed when the
priority reaches a threshold, and RWB gives a link below it a random second
chance, so the crawl can tunnel through off-topic pages to the next topical
cluster. A dynamic threshold rises when the recent harvest rate falls and falls
when it rises. The priority is what BestFirst orders the frontier by.

``online`` (the default) ranks links with a classifier learned while crawling
(:mod:`combine_scrapy.links.online`) and tunnels: the links of irrelevant
pages are followed too, their priority decaying with their distance from the
last relevant page, up to ``max_tunnel_distance`` links. Until the model has
seen enough outcomes a link's priority is the topic terms in its anchor,
title, URL and surrounding words, mixed with its page's score (graded, so the
links of a strong page outrank those of a page that barely passed); the model
has those topic terms among its features. Within a host that has given a new
relevant page, links near where the crawl entered the host gain a bonus
(``HOST_DEPTH_BONUS`` in :mod:`combine_scrapy.links.online`), so its index
pages come before its deep pages; links to pages named as hubs (``index``,
``contents``, ``toc``, ``sitemap``) gain ``HUB_BONUS`` from the first fetch.
"""

from __future__ import annotations

import logging
import math
import random
import re
from collections.abc import Iterable
from dataclasses import dataclass

from combine_scrapy.access.urls import host_of
from combine_scrapy.links.online import LANGUAGE_COPY_SHARE, OnlineLinkLearner, hub_page, link_features
from combine_scrapy.topic.definition import REGEX_CHARACTERS, TopicDefinition
from combine_scrapy.topic.matching import term_hits
from combine_scrapy.topic.text import tokens, url_path_text

logger = logging.getLogger(__name__)

METHODS = ("propagate", "RW", "RWB", "online")
#: Seconds one term may spend on one part of a link (anchors are short: a longer wait means a runaway pattern).
LINK_REGEX_TIMEOUT = 0.1
#: How much each part of a link says about its target, relative to the anchor text.
PART_WEIGHTS = {"anchor": 1.0, "title": 0.5, "url": 0.5, "context": 0.25}
#: Links followed at most this many irrelevant pages past the last relevant one (MaxTunnelDistance).
MAX_TUNNEL_DISTANCE = 6
#: ``online`` before its model has learned: a tunnelled link (of an irrelevant page) keeps TUNNEL_SHARE of
#: its page's and its own topic evidence, 10% less for each further hop, over a floor that halves with
#: each hop. So links of a page that mentions the topic come before links of pages that do not, however
#: deep, and among the latter the nearest first.
TUNNEL_SHARE = 0.5
TUNNEL_EVIDENCE_DECAY = 0.9
TUNNEL_DECAY = 0.5
TUNNEL_FLOOR = 0.1
#: Link texts whose topic relevance is remembered (menus repeat on every page of a site).
RELEVANCE_CACHE = 50_000



#: A relevant page's lesson weighs 1 at the cut-off, one more each time its score doubles, at most this.
MAX_LESSON_WEIGHT = 3.0


def lesson_weight(score: float, cutoff: float) -> float:
    """How much a relevant page's lesson weighs: graded by how far its score is over the cut-off, so the links to
    the pages most about the topic are learned first (1 at or under the cut-off, 2 at twice it, 3 from 4x on)."""
    if cutoff <= 0 or score <= cutoff:
        return 1.0
    return min(MAX_LESSON_WEIGHT, 1.0 + math.log2(score / cutoff))


def squash(score: float, scale: float) -> float:
    """Map a score onto [0, 1]: 0 and below give 0, ``scale`` gives 0.63, large scores approach 1."""
    return 1.0 - math.exp(-max(score, 0.0) / scale) if scale > 0 else float(score > 0)


_ESCAPE_OR_CLASS = re.compile(r"\\.|\[(?:\\.|[^\]])*\]")
_GROUP = re.compile(r"\((?:\\.|[^()])*\)[?*+{]?")
_RUN = re.compile(r"[a-z0-9]+[?*{]?")


def required_words(parts: tuple[str, ...]) -> tuple[str, ...]:
    """Letter runs every match of every part must contain: a cheap test that skips a term's regex.

    Escapes, character classes and groups are left out, a letter made optional by ``?``, ``*`` or
    ``{`` is cut off its run, and a part with an alternation outside groups requires nothing.
    """
    words: list[str] = []
    for part in parts:
        if REGEX_CHARACTERS.search(part) is None:
            words.append(part)
            continue
        plain = _GROUP.sub(" ", _ESCAPE_OR_CLASS.sub(" ", part))
        if "|" in plain or "(" in plain:
            continue
        for run in _RUN.findall(plain):
            word = run[:-2] if run[-1] in "?*{" else run
            if len(word) >= 3:
                words.append(word)
    return tuple(words)


class DynamicThreshold:
    """A threshold that follows precision: after each window of pages it rises when the share of
    relevant pages fell since the previous window, and falls when it rose."""

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
        before = self.value
        if self._previous is not None:
            if precision < self._previous:
                self.value = min(self.value + self.step, self.high)
            elif precision > self._previous:
                self.value = max(self.value - self.step, self.low)
            if self.value != before:
                logger.info("DynamicThreshold %s to %.2f: precision %.0f%% over the last %d pages (%.0f%% before)",
                            "raised" if self.value > before else "lowered", self.value, 100 * precision, self._seen,
                            100 * self._previous)
        self._previous, self._seen, self._relevant = precision, 0, 0


@dataclass(frozen=True)
class LinkCandidate:
    url: str
    anchor: str = ""
    title: str = ""
    context: str = ""  # words around the link on its page


class LinkScorer:
    """Choose the links of a page to mark, with their priorities; with ``online``, learn from what they led to."""

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
        max_tunnel_distance: int = MAX_TUNNEL_DISTANCE,
        learner: OnlineLinkLearner | None = None,
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
        self.max_tunnel_distance = max_tunnel_distance
        if method == "online" and learner is None:
            learner = OnlineLinkLearner(credit_hops=max_tunnel_distance)
        self.learner = learner if method == "online" else None
        positive = [term.weight for term in definition.terms if term.weight > 0] if definition else []
        self._link_scale = max(positive, default=1)
        # Each term with the words any match of it contains, and all those words: a link text is tested
        # once for each distinct word, then a term is tried only when all its words are in the text.
        self._required = tuple(
            (term, frozenset(required_words(term.parts))) for term in (definition.terms if definition else ())
        )
        self._required_words = frozenset().union(*(words for _, words in self._required))
        self._relevance: dict[tuple[str, str, str, str], float] = {}

    @property
    def current_threshold(self) -> float:
        return self.threshold.value if self.threshold else self._fixed_threshold

    def link_relevance(self, link: LinkCandidate) -> float:
        """How much the link's anchor, title, URL and surrounding words say it leads to the topic, in [0, 1)."""
        if self.definition is None:
            return 0.0
        key = (link.anchor, link.title, link.context, url_path_text(link.url))
        cached = self._relevance.get(key)
        if cached is not None:
            return cached
        stopwords = self.definition.stopwords
        score = 0.0
        where = f"a link to {link.url}"
        for part, text in zip(("anchor", "title", "context", "url"), key):
            prepared = " ".join(tokens(text, stopwords))
            if not prepared:
                continue
            present = {word for word in self._required_words if word in prepared}
            for term, required in self._required:
                if not required <= present:
                    continue  # a word every match contains is not even a substring: no match
                score += term_hits(term, prepared, LINK_REGEX_TIMEOUT, where) * term.weight * PART_WEIGHTS[part]
        if len(self._relevance) >= RELEVANCE_CACHE:
            self._relevance.clear()
        relevance = self._relevance[key] = squash(score, self._link_scale)
        return relevance

    def select(
        self,
        links: Iterable[LinkCandidate],
        page_score: float,
        page_relevant: bool,
        *,
        distance: int = 0,
        source_url: str = "",
    ) -> list[tuple[str, float]]:
        """``(url, priority)`` of the links to mark from a page with this score and verdict, priorities in [0, 1].

        ``distance`` is the page's distance from the last relevant page (links of an irrelevant page are one
        further; none is followed past ``max_tunnel_distance``), ``source_url`` the page's frontier URL.
        """
        if self.threshold:
            self.threshold.observe(page_relevant)
        links = list(links)
        if self.method == "propagate":
            return [(link.url, page_score) for link in links] if page_relevant else []
        link_distance = 0 if page_relevant else distance + 1
        if link_distance > self.max_tunnel_distance:
            return []
        if self.learner is not None:  # the online method, and only it, has a model
            return self._online(self.learner, links, page_score, page_relevant, link_distance, source_url)
        page = 1.0 if page_relevant else squash(page_score, self.page_scale)
        threshold = self.current_threshold
        chosen = []
        for link in links:
            priority = self.page_weight * page + (1 - self.page_weight) * self.link_relevance(link)
            if priority >= threshold or (self.method == "RWB" and self.rng.random() < self.boost_chance):
                chosen.append((link.url, priority))
        return chosen

    def prior(self, link: LinkCandidate, page_evidence: float, link_distance: int) -> float:
        """``online``'s priority before its model has learned: the page's graded score and the link's topic
        terms; for a tunnelled link less of them, decaying with each hop, over a floor that halves with each
        hop, so tunnels are explored where the topic was mentioned first, then nearest first."""
        priority = self.page_weight * page_evidence + (1 - self.page_weight) * self.link_relevance(link)
        if link_distance:
            priority = (TUNNEL_SHARE * priority * TUNNEL_EVIDENCE_DECAY ** (link_distance - 1)
                        + TUNNEL_FLOOR * TUNNEL_DECAY ** link_distance)
        return min(priority, 1.0)

    def _online(self, learner: OnlineLinkLearner, links: list[LinkCandidate], page_score: float, page_relevant: bool,
                link_distance: int, source_url: str) -> list[tuple[str, float]]:
        page_evidence = squash(page_score, self.page_scale)
        source_host = host_of(source_url) if source_url else ""
        chosen: list[tuple[str, float]] = []
        learned: list[int] = []
        batch = []
        canonicals: list[str] = []
        # each learned link's host, depth in it, whether it is a hub and whether a page seen in another language
        places: list[tuple[str, int, bool, bool]] = []
        if source_url:
            learner.language_copy(source_url)  # a page (a seed too) comes before its translations
        for link in links:
            chosen.append((link.url, self.prior(link, page_evidence, link_distance)))
            canonical = learner.canonical(link.url)
            if canonical is None:
                continue  # the frontier refuses it, and counts why
            host = host_of(canonical)
            features = link_features(
                anchor=f"{link.anchor} {link.title}", context=link.context, url=canonical, host=host,
                source_host=source_host, page_relevant=page_relevant, page_evidence=page_evidence,
                distance=link_distance, topic_terms=self.link_relevance(link),
            )
            learned.append(len(chosen) - 1)
            batch.append(features)
            canonicals.append(canonical)
            places.append((host, learner.host_depth(canonical, host, source_url, source_host), hub_page(canonical),
                           learner.language_copy(canonical)))
        weight = learner.weight
        probabilities = learner.predict(batch) if weight and batch else [0.0] * len(batch)
        for position, canonical, features, probability, (host, depth, hub, copy) in zip(learned, canonicals, batch,
                                                                                        probabilities, places):
            url, prior = chosen[position]
            priority = min((1 - weight) * prior + weight * float(probability) + learner.bonus(host, depth, hub), 1.0)
            if copy:
                priority *= LANGUAGE_COPY_SHARE
            chosen[position] = (url, priority)
            learner.remember(canonical, features, source_url, prior, priority, host, depth, hub, copy)
        return chosen

    def observe(self, url: str, relevant: bool, score: float = 0.0) -> int:
        """The fetch of ``url`` was classified: the online model learns from the link that led there, a relevant
        page the more the further its ``score`` is over the cut-off (``lesson_weight``).
        Returns the model's training steps (0 for the other methods)."""
        if self.learner is None:
            return 0
        return self.learner.observe(url, relevant, lesson_weight(score, self.page_scale) if relevant else 1.0)

    @property
    def rescore_due(self) -> bool:
        """``online``: the model has learned enough since the links in the frontier were last scored."""
        return self.learner is not None and self.learner.rescore_due

    def rescore(self) -> dict[str, float]:
        """``online``: new priorities of the links not fetched yet (frontier URL -> priority), from the model now."""
        return self.learner.rescore() if self.learner is not None else {}
