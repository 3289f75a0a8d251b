"""What this harvester last told the frontier of a URL, so that a link found again costs the frontier nothing.

Most links a page gives were marked before (a site's menu, its neighbours). Marking such a URL again changes
the frontier only when the new mark's priority is higher, or its distance lower, than the frontier's while the
URL waits, never fetched (``mark``'s keep-the-better rule); a URL fetched (or tried) is never raised. A
harvester that remembers the best priority and least distance it marked a URL with, the priority it last
re-scored it to and the URLs it completed can leave out the marks that would change nothing, and the frontier
(a Redis script's per-URL work, SQLite's lookups) never sees them.

Only this harvester's own acts are known: with several harvesters, another's re-scoring may lower a URL below
what this one remembers, and a mark it leaves out would have raised it back; a URL marked again by ``scrapy
reharvest`` while the crawl runs is the same. Both change an order, never which URLs are fetched. The memory
is bounded (the oldest forgotten first); a URL forgotten is marked as if new, which is always right.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import islice

#: URLs remembered, about 200 bytes each; past it the oldest quarter is forgotten at once.
MARK_MEMORY_URLS = 100_000

#: The priority remembered for a URL that no mark can raise (completed by this harvester).
_SETTLED = float("inf")


class MarkMemory:
    """The best ``(priority, distance)`` this harvester marked each URL with, as the frontier keeps it."""

    def __init__(self, capacity: int = MARK_MEMORY_URLS) -> None:
        self.capacity = capacity
        self._marks: dict[str, tuple[float, int]] = {}

    def __len__(self) -> int:
        return len(self._marks)

    def news(self, priorities: dict[str, float], distance: int) -> list[tuple[str, float]]:
        """The ``(url, priority)`` marks that could change the frontier: unknown URLs, and known ones now
        better placed."""
        marks = self._marks
        news = []
        for url, priority in priorities.items():
            known = marks.get(url)
            if known is None or priority > known[0] or distance < known[1]:
                news.append((url, priority))
        return news

    def marked(self, entries: Iterable[tuple[str, str, float]], distance: int) -> None:
        """The frontier was told of ``entries``: each URL keeps the better of its priority and distance."""
        marks = self._marks
        for url, _, priority in entries:
            known = marks.pop(url, None)
            if known is not None:
                priority, distance_ = max(priority, known[0]), min(distance, known[1])
            else:
                distance_ = distance
            marks[url] = (priority, distance_)
        self._bound()

    def rescored(self, priorities: dict[str, float]) -> None:
        """The frontier set these priorities (re-scoring, a PageRank), lower or higher: a remembered URL takes
        the new one, so that a later mark above it is sent."""
        marks = self._marks
        for url, priority in priorities.items():
            known = marks.get(url)
            if known is not None and known[0] != _SETTLED:
                marks[url] = (priority, known[1])

    def settled(self, url: str) -> None:
        """The URL was fetched: no mark changes it any more."""
        self._marks.pop(url, None)
        self._marks[url] = (_SETTLED, 0)
        self._bound()

    def _bound(self) -> None:
        """Forget the oldest quarter at once: a dict drops its first entries cheaply only by copying the rest."""
        marks = self._marks
        if len(marks) > self.capacity:
            self._marks = dict(islice(marks.items(), len(marks) - self.capacity * 3 // 4, None))
