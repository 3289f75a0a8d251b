"""Crawl strategies (CrawlStrategy in combine.cfg): one object each, read by every frontier store.

A strategy says three things: which of a host's marked URLs comes first (its
queue: ``fifo``, order of marking, or ``best``, highest priority then order of
marking), how the heads of the ready hosts are ordered into a round, and the
round's shape (the whole round before scheduling again, or only the best few).
The stores (SQLite, Redis) keep the two queues and hand each strategy the heads
of the hosts; everything else is here, so a new strategy is one class.

Every order ends in the order of marking (unique per URL), never in a hash or
a clock, so the same crawl of the same web ranks the same way every time.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from combine_scrapy.frontier import FrontierEntry

#: A host's yield is the share of its recent fetches that gave a new relevant record: each completed fetch
#: multiplies the host's ``relevant`` by YIELD_DECAY before adding itself (1 for a new relevant record), so it
#: sums over about the host's last 1 / (1 - YIELD_DECAY) fetches and a host drained of new records sinks. The
#: fetches it is a share of are ``recent_fetches(fetched)``, decayed alike, from the host's count of fetches.
YIELD_DECAY = 0.99
#: The recent share is (relevant + YIELD_PRIOR_RELEVANT) / (recent fetches + YIELD_PRIOR_FETCHED): a host never
#: fetched counts as half relevant.
YIELD_PRIOR_RELEVANT = 1.0
YIELD_PRIOR_FETCHED = 2.0
#: The weight is divided by (fetches + 1) ** STRIDE_POWER: 1 shares the fetches in proportion to what the hosts
#: promise, larger values flatten the shares towards one URL a host per round (measured: 2 keeps the generated
#: web's focus within 1.5x of pure best-first and is as good as BreadthFirstTime on real documentation sites).
STRIDE_POWER = 2.0


def recent_fetches(fetched: int) -> float:
    """The decayed count of a host's ``fetched`` fetches: the sum of YIELD_DECAY ** k over them."""
    return (1.0 - YIELD_DECAY ** fetched) / (1.0 - YIELD_DECAY)


def host_yield_weight(fetched: int, relevant: float) -> float:
    """A host's weight in BestFirst: its recent share of new relevant records over (its fetches + 1) ** STRIDE_POWER.

    Dividing by the fetches is stride scheduling over hosts: hosts share the fetches by what their best URL
    and recent yield promise, so a host no other outranks is fetched until its weight falls to the others',
    a host not fetched yet comes early, and no productive host starves the others. Only the host's
    own counts enter, so its weight changes only when it is fetched and a store keeps the heads in order.
    """
    share = (relevant + YIELD_PRIOR_RELEVANT) / (recent_fetches(fetched) + YIELD_PRIOR_FETCHED)
    return share / math.pow(fetched + 1.0, STRIDE_POWER)


#: ``host_yield_weight`` in SQL, for ``BestFirst.head_order``.
_SQL_WEIGHT = (f"((relevant + {YIELD_PRIOR_RELEVANT!r}) / ((1.0 - pow({YIELD_DECAY!r}, fetched)) / (1.0 - {YIELD_DECAY!r}) "
               f"+ {YIELD_PRIOR_FETCHED!r}) / pow(fetched + 1.0, {STRIDE_POWER!r}))")


def weighted_priority(priority: float, weight: float) -> float:
    """A URL's priority scaled by its host's yield; a negative priority is made worse, not better."""
    return priority * weight if priority >= 0 else priority / weight


def yield_weights(heads: Iterable[Head]) -> dict[tuple[int, float], float]:
    """``host_yield_weight`` of each ``(fetched, relevant)`` pair of ``heads``, computed once a pair."""
    return {pair: host_yield_weight(*pair) for pair in {(head.fetched, head.relevant) for head in heads}}


@dataclass(frozen=True)
class Head:
    """The first URL of a host's queue, with what a strategy ranks it by."""

    entry: FrontierEntry
    seq: int                   # order of marking, unique per URL
    host_lock_until: float     # the host may be fetched from then on
    fetched: int = 0           # the host's completed fetches
    relevant: float = 0.0      # of those, how many gave a new relevant record, decayed (YIELD_DECAY)


class Round(list["FrontierEntry"]):  # FrontierEntry is imported only for type checking
    """The URLs a round hands out, in order.

    ``held_until`` is when the first host that holds a better URL than those
    handed out becomes free (None when nothing better waits): the scheduler
    looks again then instead of fetching worse URLs meanwhile.
    """

    def __init__(self, entries: Iterable[FrontierEntry] = (), held_until: float | None = None):
        super().__init__(entries)
        self.held_until = held_until


#: URLs of each host a round asks ``deeper`` for first (``CrawlStrategy.round``'s ``first_depth``), then for more
#: only where they could take places: most rounds find each host's fourth URL already out of the places, and a
#: store's cost is in the URLs it reads (a row, an element of a Redis answer).
FIRST_DEPTH = 4

#: ``deeper(hosts, depth)``: for each host, the ``(priority, order of marking)`` of its first
#: ``depth`` due URLs by priority, in that order (priority, then order of marking).
Deeper = Callable[[list[str], int], dict[str, list[tuple[float, int]]]]

#: What a strategy sorts a round's heads by (smallest first).
RoundKey = tuple[float | str, ...]


class CrawlStrategy:
    """Breadth-first over hosts by default: the whole round, heads by priority then host name."""

    name: ClassVar[str]
    #: Which of a host's URLs is its head: ``fifo`` (order of marking) or ``best`` (priority, then order).
    queue: ClassVar[str] = "best"
    #: Hand out the whole round before scheduling again (else only the best ``limit``).
    full_round: ClassVar[bool] = True
    #: Priorities are PageRank ranks in the crawled link graph, recomputed as it grows.
    ranked: ClassVar[bool] = False
    #: Hosts with a fetch in flight take part in the round and keep their places (their heads come locked).
    holds_places: ClassVar[bool] = False
    #: ``round_key`` as an SQL ORDER BY over a head's ``priority``, ``seq``, ``fetched`` and ``relevant``
    #: (the same doubles, so the same order), for a strategy whose round with a ``limit`` reads only the
    #: ``limit`` first heads: a store may hand it only those.
    head_order: ClassVar[str | None] = None

    def round_key(self, head: Head) -> RoundKey:
        return -head.entry.priority, head.entry.host

    def round(self, heads: list[Head], now: float, limit: int | None, deeper: Deeper, *,
              first_depth: int | None = None) -> Round:
        """The round: the heads of the free hosts in the strategy's order, at most ``limit``.

        A strategy that looks past the heads asks ``deeper`` for ``first_depth`` URLs a host first
        (None: ``limit``), and further only where the answer could change: for a store whose cost
        is in the URLs it reads, not in the calls.
        """
        free = [head for head in heads if head.host_lock_until <= now]
        if limit is None:
            return Round(head.entry for head in sorted(free, key=self.round_key))
        return Round(head.entry for head in heapq.nsmallest(limit, free, key=self.round_key))


class BreadthFirstTime(CrawlStrategy):
    """Combine's default: one URL of every free host per round, each host's best first."""

    name = "BreadthFirstTime"


class BreadthFirst(CrawlStrategy):
    """First marked, first fetched."""

    name = "BreadthFirst"
    queue = "fifo"

    def round_key(self, head: Head) -> RoundKey:
        return (head.seq,)


class PageRank(CrawlStrategy):
    """Highest rank in the crawled link graph first; only the best few of a round."""

    name = "PageRank"
    full_round = False
    ranked = True

    def round_key(self, head: Head) -> RoundKey:
        return -head.entry.priority, head.seq


class IPageRank(PageRank):
    """PageRank with rank passed on in proportion to the topic score (iPageRank)."""

    name = "iPageRank"


class BestFirst(CrawlStrategy):
    """The best URLs of the whole frontier first, by priority weighted by their host's recent yield and novelty.

    A round is the ``limit`` best due URLs over the hosts that are free or
    fetching a page right now: of those the first URL of each free host is
    handed out, and the places of the busy hosts stay empty until their fetch
    is done, instead of going to worse URLs elsewhere. A host waiting its
    WaitIntervalHost keeps no places, so a long interval does not idle the
    crawl. A host's weight (``host_yield_weight``) is its recent share of
    fetches that gave a new relevant record divided by its fetches so far:
    hosts share the fetches in proportion to what they promise, new hosts are
    tried early, barren and drained hosts sink. Between equal weighted
    priorities the first marked goes first.
    """

    name = "BestFirst"
    full_round = False
    holds_places = True
    head_order = f"CASE WHEN priority >= 0 THEN -(priority * {_SQL_WEIGHT}) ELSE -(priority / {_SQL_WEIGHT}) END, seq"

    def round_key(self, head: Head) -> RoundKey:
        return -weighted_priority(head.entry.priority, host_yield_weight(head.fetched, head.relevant)), head.seq

    def round(self, heads: list[Head], now: float, limit: int | None, deeper: Deeper, *,
              first_depth: int | None = None) -> Round:
        if limit is None:
            return super().round(heads, now, limit, deeper)
        weights = yield_weights(heads)
        ranked = [head for *_, head in heapq.nsmallest(limit, [
            (-weighted_priority(head.entry.priority, weights[head.fetched, head.relevant]), head.seq, head)
            for head in heads
        ])]  # the order of round_key; seq is unique, so heads are never compared
        host_weights = {head.entry.host: weights[head.fetched, head.relevant] for head in ranked}
        depth = limit if first_depth is None else min(first_depth, limit)
        queues = deeper(list(host_weights), depth)
        places = self._places(queues, host_weights, limit)
        if depth < limit:
            cut = [host for host, urls in queues.items()
                   if len(urls) == depth and not self._read_enough(urls[-1], host_weights[host], places, limit)]
            if cut:
                queues.update(deeper(cut, limit))
                places = self._places(queues, host_weights, limit)
        chosen = {host for _, _, host in places}
        handed_out = [head.entry for head in ranked if head.entry.host in chosen and head.host_lock_until <= now]
        held = [head.host_lock_until for head in ranked if head.entry.host in chosen and head.host_lock_until > now]
        return Round(handed_out, held_until=min(held, default=None))

    @staticmethod
    def _read_enough(last: tuple[float, int], weight: float, places: list[tuple[float, int, str]], limit: int) -> bool:
        """Whether no URL of a host after ``last``, the last of it read, can take one of the ``limit`` places.

        A URL after it has its priority and is marked later, so it comes after it, or has a lower
        priority, so it weighs no better than the next lower priority would: both must miss the places.
        """
        if len(places) < limit:
            return False
        priority, seq = last
        worst = places[-1]
        lower = -weighted_priority(math.nextafter(priority, -math.inf), weight)
        return (-weighted_priority(priority, weight), seq) >= worst[:2] and lower > worst[0]

    @staticmethod
    def _places(queues: dict[str, list[tuple[float, int]]], host_weights: dict[str, float],
                limit: int) -> list[tuple[float, int, str]]:
        """The ``limit`` best of the hosts' URLs read: ``(-weighted priority, order of marking, host)``, best first."""
        return heapq.nsmallest(limit, [
            (-weighted_priority(priority, weight), seq, host)
            for host, urls in queues.items()
            for weight in (host_weights[host],)
            for priority, seq in urls
        ])


#: Every strategy by its combine.cfg name.
CRAWL_STRATEGIES: dict[str, CrawlStrategy] = {
    strategy.name: strategy for strategy in (BreadthFirstTime(), BreadthFirst(), BestFirst(), PageRank(), IPageRank())
}


def strategy_named(name: str) -> CrawlStrategy:
    """The strategy called ``name`` in combine.cfg."""
    try:
        return CRAWL_STRATEGIES[name]
    except KeyError:
        raise ValueError(f"unknown strategy {name!r}; known: {', '.join(CRAWL_STRATEGIES)}") from None
