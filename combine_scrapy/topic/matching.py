"""Combine's two built-in topic classifiers, exactly as Combine 4.005 computes them.

Formulas, constants and defaults come from Combine's own source and its
HTML documentation (DocMain, section 4.5 "Built-in topic filter",
Algorithm 1 and Algorithm 2); the docstrings below state them.
"""

from __future__ import annotations

import logging
import math
from collections import defaultdict
from dataclasses import dataclass, field

from combine_scrapy.topic.definition import REGEX_CHARACTERS, TopicDefinition, TopicTerm
from combine_scrapy.topic.text import Document, tokens, url_path_text

logger = logging.getLogger(__name__)

#: Algorithm 1's location weights (fixed in Combine/Check_record.pm).
LOCATION_WEIGHTS = {"title": 10, "meta": 4, "headings": 2, "text": 1}
#: Seconds one regular-expression term may spend on one location: a term that
#: backtracks catastrophically is abandoned (and logged), not left to hang the harvester.
REGEX_TIMEOUT = 0.5


@dataclass(frozen=True)
class ClassScore:
    name: str
    absolute: float   # Combine's absres: sum of hits x weight (x location weight)
    relative: float   # Combine's res: the same normalized by text size
    terms: tuple[str, ...] = ()


@dataclass(frozen=True)
class Classification:
    relevant: bool
    score: float                      # totScore
    normalized: float                 # sumscore
    classes: tuple[ClassScore, ...] = ()   # the kept (suggested) classes
    terms: tuple[str, ...] = ()       # every matched term
    algorithm: str = "Std"


@dataclass(frozen=True)
class Cutoffs:
    """Acceptance gates: totScore >= total, sumscore >= normalized, class share >= relative %."""

    total: float
    normalized: float
    relative: float


PLAIN_CUTOFFS = Cutoffs(total=90, normalized=0.2, relative=10)
POSITION_CUTOFFS = Cutoffs(total=1, normalized=0.002, relative=1)


@dataclass
class _Tally:
    absolute: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    relative: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    terms: dict[str, dict[str, None]] = field(default_factory=lambda: defaultdict(dict))

    def add(self, term: TopicTerm, absolute: float, relative: float) -> None:
        for name in term.classes:
            self.absolute[name] += absolute
            self.relative[name] += relative
            self.terms[name].setdefault(term.text)

    def decide(self, cutoffs: Cutoffs, algorithm: str) -> Classification:
        """Combine's acceptance rule: both gates pass and the kept classes' absres sum is > 1."""
        score = sum(self.absolute.values())
        normalized = sum(self.relative.values())
        kept = []
        if normalized > 0:
            kept = [
                ClassScore(name, self.absolute[name], self.relative[name], tuple(self.terms[name]))
                for name in self.absolute
                if 100 * self.relative[name] / normalized >= cutoffs.relative
            ]
        relevant = (
            score >= cutoffs.total
            and normalized >= cutoffs.normalized
            and sum(c.absolute for c in kept) > 1
        )
        matched = tuple(dict.fromkeys(t for names in self.terms.values() for t in names))
        kept.sort(key=lambda c: -c.absolute)
        return Classification(relevant, score, normalized, tuple(kept), matched, algorithm)


def term_hits(term: TopicTerm, text: str, timeout: float = REGEX_TIMEOUT, where: str = "a page") -> int:
    """Matches of a term in prepared text: an ``@and`` term counts its rarest part.

    A part that runs past ``timeout`` seconds is logged (``where`` names the
    page or link, so the operator can try the term on it) and counts 0.
    """
    try:
        return min(len(pattern.findall(text, timeout=timeout)) for pattern in term.patterns)
    except TimeoutError:
        logger.warning("topic term on line %d (%s) took too long on %s and was skipped", term.line, term.text, where)
        return 0


class PlainMatcher:
    """Algorithm 1: score = sum over locations and terms of hits x term weight x location weight.

    An ``@and`` term counts the smallest number of hits of its parts. Per
    class, res is the score of each location divided by its token count
    (Combine took the title's count from the meta text: a bug, not copied).
    """

    algorithm = "Std"

    def __init__(self, definition: TopicDefinition, cutoffs: Cutoffs = PLAIN_CUTOFFS):
        self.definition = definition
        self.cutoffs = cutoffs
        # Each term with its parts that are plain words or phrases (not regular expressions).
        self._literals = tuple(
            (term, tuple(part for part in term.parts if not REGEX_CHARACTERS.search(part))) for term in definition.terms
        )

    def locations(self, document: Document) -> dict[str, list[str]]:
        stopwords = self.definition.stopwords
        return {
            "title": tokens(document.title, stopwords),
            "meta": tokens(document.meta, stopwords),
            "headings": tokens(document.headings, stopwords),
            "text": tokens(document.text, stopwords),
        }

    def classify(self, document: Document) -> Classification:
        tally = _Tally()
        page = f"page {document.url}"
        for location, words in self.locations(document).items():
            if not words:
                continue
            text = " ".join(words)
            weight = LOCATION_WEIGHTS[location]
            for term, literals in self._literals:
                if any(literal not in text for literal in literals):
                    continue  # a plain word or phrase that is not even a substring cannot match
                hits = term_hits(term, text, where=page)
                if hits:
                    points = hits * term.weight * weight
                    tally.add(term, points, points / len(words))
        return tally.decide(self.cutoffs, self.algorithm)


def _phrase_positions(words: list[str], index: dict[str, list[int]], phrase: tuple[str, ...]) -> list[int]:
    """1-based positions where ``phrase`` starts in ``words``; ``index`` maps a word to its positions."""
    n = len(phrase)
    return [p for p in index.get(phrase[0], ()) if n == 1 or tuple(words[p - 1 : p - 1 + n]) == phrase]


class PositionMatcher:
    """Algorithm 2: each hit adds w / ln(k·p + 1), k = 0.5, p its 1-based position.

    Text is title, URL path, meta, headings and text in that order. The i-th
    occurrences of the parts of an ``@and`` term add
    w / (ln(k·min(b) + 1) · ln(proxim + 1)), proxim the mean gap between them.
    Terms are whole tokens: regular expressions are not supported here.
    Normalized scores divide by the number of body-text tokens.
    """

    algorithm = "Pos"
    K = 0.5

    def __init__(self, definition: TopicDefinition, cutoffs: Cutoffs = POSITION_CUTOFFS):
        self.definition = definition
        self.cutoffs = cutoffs
        self._phrases = {
            term: tuple(tuple(tokens(part, definition.stopwords)) for part in term.parts)
            for term in definition.terms
        }

    def _position_weight(self, position: int) -> float:
        return math.log(self.K * position + 1)

    def classify(self, document: Document) -> Classification:
        stopwords = self.definition.stopwords
        body = tokens(document.text, stopwords)
        words = [
            *tokens(document.title, stopwords),
            *tokens(url_path_text(document.url), stopwords),
            *tokens(document.meta, stopwords),
            *tokens(document.headings, stopwords),
            *body,
        ]
        size = max(len(body), 1)
        index: dict[str, list[int]] = defaultdict(list)
        for position, word in enumerate(words, start=1):
            index[word].append(position)
        tally = _Tally()
        for term, phrases in self._phrases.items():
            if any(not phrase for phrase in phrases):
                continue
            occurrences = [_phrase_positions(words, index, phrase) for phrase in phrases]
            points = 0.0
            if len(phrases) == 1:
                points = sum(term.weight / self._position_weight(p) for p in occurrences[0])
            else:
                for i in range(min(len(positions) for positions in occurrences)):
                    b = [positions[i] for positions in occurrences]
                    proxim = sum(abs(b[m] - b[m - 1]) for m in range(1, len(b))) / (len(b) - 1)
                    # Combine divided by ln(1) = 0 when the parts share a position; count such a hit as adjacent.
                    proxim = max(proxim, 1)
                    points += term.weight / (self._position_weight(min(b)) * math.log(proxim + 1))
            if points:
                tally.add(term, points, points / size)
        return tally.decide(self.cutoffs, self.algorithm)
