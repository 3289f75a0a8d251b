"""The orders of marking of the URLs this harvester marked, so that a re-scoring names each URL's member of its
host's queue and Redis reads no record to find it (``lua/set_priorities.lua``).

A member of a host's queue is the URL's order of marking then the URL as kept; the order is given when a URL is
first marked and never changes (a recycle, a retry, an upgrade keep it). A mark answers the first order it
reserved and which of its entries it did not number (known or refused), so the others' orders are known exactly;
a re-scoring answers the orders of the URLs whose records it read. Nothing else is remembered, so a member given
is the URL's own; the URL may have left its queue since (leased: Redis finds it in ``locked``; fetched or dropped:
the ZADD XX leaves it out, and the host's best is read again when it would pass it). The memory is bounded, the
oldest forgotten first; a URL forgotten goes to Redis as kept, which reads its record, as before.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import islice

#: URLs remembered, about 100 bytes each; past it the oldest quarter is forgotten at once.
QUEUE_SEQS_URLS = 200_000


class QueueSeqs:
    """Each remembered URL's order of marking."""

    def __init__(self, capacity: int = QUEUE_SEQS_URLS) -> None:
        self.capacity = capacity
        self._seqs: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._seqs)

    def get(self, url: str) -> int | None:
        """The URL's order of marking, None when unknown."""
        return self._seqs.get(url)

    def marked(self, urls: Iterable[tuple[str, int]], first: int, unnumbered: Iterable[int]) -> None:
        """A mark numbered each ``(url, number)`` entry ``first`` plus its number but those ``unnumbered``."""
        skipped = set(unnumbered)
        seqs = self._seqs
        for url, number_given in urls:
            if number_given not in skipped:
                seqs[url] = first + number_given
        self._bound()

    def learned(self, urls: Iterable[tuple[str, int]]) -> None:
        """Orders of marking read from the URLs' records (-1: the URL is not marked, forgotten)."""
        seqs = self._seqs
        for url, seq in urls:
            if seq >= 0:
                seqs[url] = seq
            else:
                seqs.pop(url, None)
        self._bound()

    def forget(self, url: str) -> None:
        """The URL left the frontier's queues for good (fetched): no re-scoring names it any more."""
        self._seqs.pop(url, None)

    def _bound(self) -> None:
        """Forget the oldest quarter at once: a dict drops its first entries cheaply only by copying the rest."""
        seqs = self._seqs
        if len(seqs) > self.capacity:
            self._seqs = dict(islice(seqs.items(), len(seqs) - self.capacity * 3 // 4, None))
