"""Search results and their snippets, the same for every store.

The stores rank (SQLite FTS5's bm25, MySQL FULLTEXT relevance); the snippet is
cut here, so both backends show the same kind of excerpt.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

_WORD = re.compile(r"\w+", re.UNICODE)
SNIPPET_CHARS = 200


@dataclass(frozen=True)
class SearchHit:
    record_id: int
    key: str
    title: str
    url: str
    score: float
    snippet: str


def share_of_best(score: float, best: float | None) -> str:
    """A hit's relevance as a share of the best hit's score (``100%`` for the best); ``-`` when no hit scored above zero.

    SQLite's bm25 gives a word found in most records a weight near zero (its
    idf is clamped to 1e-6), so on a small job raw scores all print as 0.00
    though their order still holds; shares of the best keep the difference.
    """
    if best is None or best <= 0:
        return "-"
    return f"{max(score, 0.0) / best:.0%}"


def query_words(query: str) -> list[str]:
    """The distinct lower-cased words of a query, in order; ValueError when it has none."""
    found = list(dict.fromkeys(word.lower() for word in _WORD.findall(query)))
    if not found:
        raise ValueError(f"no word to search for in {query!r}")
    return found


def index_words(text: str) -> str:
    """The distinct lower-cased words of ``text``, in order, space-separated: what a full-text index needs of a
    text when it ranks by which words a record has (as SQLite's column-detail FTS5 does), a fraction of its size."""
    return " ".join(dict.fromkeys(word.lower() for word in _WORD.findall(text)))


def snippet(text: str, words: list[str], width: int = SNIPPET_CHARS) -> str:
    """The ``width`` characters of ``text`` with the most distinct query words, those words in [brackets].

    Words are matched whole and case-insensitively; without a match the
    snippet is the text's beginning.
    """
    if not words:
        return _clip(text, 0, width)
    pattern = re.compile(r"\b(" + "|".join(re.escape(word) for word in words) + r")\b", re.IGNORECASE)
    hits = [(match.start(), match.group(1).lower()) for match in pattern.finditer(text)]
    if not hits:
        return _clip(text, 0, width)
    best_start, best_count = hits[0][0], 0
    in_window: Counter[str] = Counter()
    end = 0
    for start, word in hits:  # a window opening at each hit, slid over the hits once
        while end < len(hits) and hits[end][0] < start + width:
            in_window[hits[end][1]] += 1
            end += 1
        if len(in_window) > best_count:
            best_start, best_count = start, len(in_window)
        in_window[word] -= 1
        if not in_window[word]:
            del in_window[word]
    start = max(0, best_start - width // 4)
    return pattern.sub(r"[\1]", _clip(text, start, width))


def _clip(text: str, start: int, width: int) -> str:
    """``text[start:start + width]`` on word boundaries, whitespace flattened, with ... where cut."""
    if start > 0:
        space = text.find(" ", start)
        start = space + 1 if 0 <= space < start + width // 4 else start
    end = start + width
    if end < len(text) and not text[end].isspace():  # mid-word: end at the last space before
        space = text.rfind(" ", start, end)
        end = space if space > start else end
    piece = " ".join(text[start:end].split())
    return ("..." if start > 0 else "") + piece + ("..." if end < len(text) else "")
