"""The heads of the hosts (each host's first due URL in a strategy's order), cached between rounds.

A round of the SQLite frontier reads each host's head with one query
(``HEADS``); ``HeadCache`` keeps them, so a round reads again only the hosts
written since (by this connection: every part that writes a host's URLs or
locks names it) or whose locked URL came free.
"""

from __future__ import annotations

import bisect
import heapq
import math
from dataclasses import dataclass
from typing import Any

from combine_scrapy.frontier import FrontierEntry
from combine_scrapy.frontier.strategy import CrawlStrategy, Head, Round, RoundKey
from combine_scrapy.frontier.tails import url_of

# Each host's head in a queue's order (``{order}``) and when a locked URL of it comes free, for ``{hosts}``.
HEADS = """
    SELECT h.host, h.lock_until, h.leased_until, h.fetched, h.relevant,
           u.tail, u.priority, f.etag, f.last_modified, u.distance, u.seq,
           (SELECT MIN(lock_until) FROM urls
            WHERE marked = 1 AND lock_until > 0 AND host_id = h.id AND lock_until > :now)
    FROM hosts h LEFT JOIN urls u ON u.seq = (
        SELECT seq FROM urls WHERE marked = 1 AND host_id = h.id AND lock_until <= :now
        ORDER BY {order} LIMIT 1
    )
    LEFT JOIN fetches f ON f.seq = u.seq
    WHERE {hosts}
"""


@dataclass
class CachedHost:
    """A host as the last read of it found it: its head (None: no due URL), its locks, its first due URLs."""

    head: Head | None
    leased_until: float
    unlocks: float | None                 # when its first locked marked URL comes free (its head may change)
    key: tuple[RoundKey, str] | None = None   # the head's place in ``HeadCache.order``
    queue: list[tuple[float, int]] | None = None  # ``_deeper``'s answer for it, read ``depth`` deep
    depth: int = 0


class HeadCache:
    """The heads of the hosts as last read, so a round reads again only the hosts written since.

    Another connection's commit changes ``PRAGMA data_version`` and empties
    the cache; this connection's own writes name the hosts they touch
    (``changed``); a host whose locked URL comes free is read again then.
    """

    def __init__(self) -> None:
        self.strategy: CrawlStrategy | None = None  # whose queue and order the heads follow
        self.version: int | None = None
        self.read_at = -math.inf                    # the latest time it was read for
        self.hosts: dict[str, CachedHost] = {}
        self.order: list[tuple[RoundKey, str]] = []  # (round_key, host) of the heads, for a strategy with head_order
        self.unlocks: list[tuple[float, str]] = []  # heap of (unlocks, host)
        self.first_unlock: dict[str, float] = {}    # each host's earliest time in the heap
        self.changed: set[str] = set()
        self.everything = True                      # every host to be read again
        # The last round: (strategy, limit, hold), its time, when its heads may change with time, the round.
        self.last_round: tuple[tuple[CrawlStrategy, int | None, float], float, float, Round] | None = None

    def drop(self, host: str) -> None:
        cached = self.hosts.pop(host, None)
        if cached is not None and cached.key is not None:
            del self.order[bisect.bisect_left(self.order, cached.key)]

    def put(self, row: tuple[Any, ...]) -> None:
        """Keep a host as read by ``HEADS``."""
        host, lock_until, leased_until, fetched, relevant, tail, priority, etag, last_modified, distance, seq, \
            unlocks = row
        self.drop(host)
        head = None if seq is None else Head(
            FrontierEntry(url_of(host, tail), host, priority, etag, last_modified, distance), seq, lock_until,
            fetched, relevant,
        )
        if head is None and unlocks is None:
            return
        cached = self.hosts[host] = CachedHost(head, leased_until, unlocks)
        if head is not None and self.strategy is not None and self.strategy.head_order is not None:
            cached.key = (self.strategy.round_key(head), host)
            bisect.insort(self.order, cached.key)
        if unlocks is not None and unlocks < self.first_unlock.get(host, math.inf):
            self.first_unlock[host] = unlocks
            heapq.heappush(self.unlocks, (unlocks, host))

    def due_again(self, now: float) -> set[str]:
        """The hosts whose locked URL came free since they were read."""
        hosts = set()
        while self.unlocks and self.unlocks[0][0] <= now:
            unlocks, host = heapq.heappop(self.unlocks)
            if self.first_unlock.get(host) == unlocks:
                del self.first_unlock[host]
            hosts.add(host)
        return hosts

    def heads(self, now: float, limit: int | None, hold: float) -> tuple[list[Head], float]:
        """The heads of the hosts free at ``now`` or leased for at most ``hold`` more seconds; with a
        strategy's head_order, only its ``limit`` first. And the first time after ``now`` when a host
        looked at comes free, or its lease or place ends: until then the same heads take part."""
        until = now + hold
        changes = math.inf
        if limit is not None and self.strategy is not None and self.strategy.head_order is not None:
            hosts = (self.hosts[host] for _, host in self.order)
        else:
            limit, hosts = None, (cached for cached in self.hosts.values() if cached.head is not None)
        heads: list[Head] = []
        for cached in hosts:
            head = cached.head
            if head is None:
                continue
            lock_until, leased_until = head.host_lock_until, cached.leased_until
            for moment in (lock_until, leased_until, lock_until - hold):
                if now < moment < changes:
                    changes = moment
            if lock_until <= now or leased_until > now and lock_until <= until:
                heads.append(head)
                if len(heads) == limit:
                    break
        return heads, changes
