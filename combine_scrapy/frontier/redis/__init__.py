"""The shared frontier: one Redis (or Redis Cluster), any number of harvester processes on any number of machines.

Every change is one Lua script (in ``frontier/lua/``), so a harvester killed at any moment leaves
the frontier consistent, and two harvesters can never lease the same host at
once. The end of a fetch and the mark of its page's links are one script on a single Redis (so a kill
cannot split them; the page's host is placed once, by the completion), one pipeline on a cluster; what needs no answer
and may be lost (a robots.txt answer with the host's delay, the release of a URL put off) goes with the
harvester's next call (``RedisConnection.defer``). A leased URL waits in a sorted set by lease expiry and comes back when
the lease ends, whoever held it.

A job's hosts are spread over ``buckets`` (the COMBINE_REDIS_BUCKETS setting;
unset, SINGLE_REDIS_BUCKETS on a single Redis, CLUSTER_BUCKETS on a cluster;
kept in the frontier when it is first marked, so every harvester uses
the frontier's own): a host is in bucket ``crc32(host) % buckets``, and each
bucket's keys share one hash tag, ``combine:{<job>:b<k>}:``, so a Redis
Cluster puts each bucket in one slot and spreads the buckets over its nodes,
while on a cluster every script touches one bucket only. What belongs to the
whole job is under ``combine:{<job>}:``. Looks over the whole frontier
(``ready``, ``next_due``, ``counts``, ``hosts``, ``host_counts``) send one script or command per
bucket in one pipeline: one round trip per node. On a single Redis, where one
script may reach every key, the calls of one script over several buckets are
one call (``connection._EACH_BUCKET``), and a batch of marks or of new
priorities is one script call whatever buckets its hosts are in; a mark reads
each host's known URLs, its count and its queue's best with one HMGET and
writes its new ones with one command a structure, and places the host's head
again only when the host had no queued URL or its best URL changed. A script's
writes to a host's ``u:`` hash go in one HSET at its end (a completion's and
its links' mark's to the page's host are one). BestFirst's ``ready`` reads only each
bucket's first heads (``heads`` below), then the rows of the best of them in a
second pipeline (a host locked at the look, its fetch in flight, without its URL's record,
which the round does not hand out): its cost is in the round's size, not in the due hosts.

In each bucket, ``combine:{<job>:b<k>}:``

``u:<host>``         hash: the host's URLs ever marked (as kept, below) -> the URL's record, one MessagePack
                     array of marked, lock_until, priority, seq (order of marking), attempts, retries, status,
                     last_checked, etag, last_modified, distance, visits, changes, first_visit, digest
                     (trailing empty fields left out; absent numbers: 0); a queued URL's priority is its score
                     in ``q:`` alone, its record's as of when it last left the queue (a re-scoring writes no
                     record; layout 10 kept both); the field '' -> how many URLs
                     there are, what the bound MaxUrlsPerHost counts (layouts 6 and 7: the hash's length);
                     and the field '^' -> a copy of the best of the host's queue (``q:``), its member and score
                     ('': none queued), which a mark or a re-scoring reads with the records, not the queue
                     (every script that changes the queue writes it with its other writes to this hash)
``host:<host>``      hash: lock_until, delay (robots.txt Crawl-delay),
                     fetched and relevant (completed fetches; new relevant records, decayed: the host's yield),
                     leased_until (end of the lease of the URL being fetched; absent or 0: none),
                     head (its member of ``heads`` or ``leasedheads``; absent: in neither)
``hosts``            set of the bucket's known hosts
``q:<host>``         the host's queue: its marked, unlocked URLs, each its order of marking (a letter for the
                     number of hexadecimal digits, then the digits, so they sort as numbers) then the URL as
                     kept, by priority, highest first, then order of marking: scored by minus the priority
                     times ``BEST_SCALE`` (2**56, exact), so priorities from 1/16 to 1.38 (the link model's) are
                     integer scores, which a small sorted set (a listpack) compares without parsing text.
                     BreadthFirst's head, the first marked, is its first member when its first and last have
                     the same priority, else found by reading all of it (layout 6: ``fifo:<host>`` by order of
                     marking and ``b:<host>`` by priority; layout 4: ``best:<host>``, scored by minus the priority)
``hostq``            hosts with marked, unlocked URLs, scored by when the host unlocks
``heads``            of those, the free hosts (unlocked when last placed, and not leased since): the order of
                     marking of the host's best URL (as in ``q:``) then the host, scored by minus that URL's
                     priority weighted by the host's yield, so the first are BestFirst's (``strategy.py``)
``leasedheads``      the same of the hosts with a lease (``leased_until``), which may hold places in a round
``waiting``          the other hosts of ``hostq`` (locked), by when they unlock: a look at the heads moves those
                     unlocked to ``heads`` (a completion or release whose host lock is already over places the
                     host in ``heads`` at once). Every script that changes a host's best URL, lock, lease or yield
                     places it again (``rehead`` in lua/library.lua), so ``ready`` reads only the first heads
``locked``           ``host\nURL`` (as kept) of marked URLs whose own lock (a lease, a retry wait) has not
                     ended, by when it ends. A host's marked URLs are those in its queue and here: no count a
                     host is kept, ``hosts()`` (the busiest hosts) counts them when read (``busiest.lua``;
                     layout 6: ``busy``)
``stats``            hash of counters, urls, done (unmarked, with a status) and dropped (unmarked without one),
                     whose sums over the buckets are the job's (the marked URLs are the rest): a mark over
                     several buckets adds its URLs in the first bucket it names
``scores``           hash url -> topic score of its last fetch (PageRank strategies)

For the whole job, ``combine:{<job>}:``

``seq``              the last order of marking handed out: a mark reserves a range with one INCRBY and
                     numbers its URLs in order, so the order of marking is one order over all buckets
``buckets``          how many buckets the job's hosts are spread over
``links``            set of ``source\ntarget`` edges of the crawled graph
``robots:<host>``    hash: status, body, expires
``harvesters``       harvesters at work (their ids, scored by when their entry expires): each looks first
                     at its own share of the buckets, so harvesters do not race for the same hosts
``frontier``         the job marker: a token set by the first harvester that works on the frontier. A
                     harvester that finds it gone or changed knows the frontier vanished under it
                     (Redis restarted without persistence, the keys deleted) and stops instead of
                     reporting an empty frontier as a finished crawl.
``layout``           the key layout (LAYOUT, 10), set with the job marker; a harvester that opens a frontier
                     of layout 3 to 9 upgrades it in place (``connection.JobMarker``, ``lua/upgrade.lua``)
``paused``           present while the job's harvesters are paused
``seeds``            the fingerprint of the seed list last marked in full (a crawl start marks it once)
``solo``             the id of the harvester in solo mode (single Redis only, ``solo.py``): while it exists no
                     script keeps ``heads``, ``leasedheads``, ``waiting`` or a host's ``head``; the harvester
                     keeps BestFirst's heads in its memory
``solo_log``         while ``solo`` exists, the notes of the hosts the scripts would have placed (their best
                     URL, lock, lease and yield), read and emptied by the solo harvester at each look

A host's structures keep its URLs short: ``http://<host>`` is written ``:`` and
``https://<host>`` ``;``. Nothing is stored per URL but its entries in its
host's hash and queue, so a queued URL costs under 200 bytes
(``bench.frontier_size``). Methods given only a URL find its host with
``host_of``: a URL is marked under ``host_of(url)``.

The package's parts: ``connection`` (the client, outage retry, buckets, scripts
and the job marker) shared by one class per concern, each satisfying its
protocol of :mod:`combine_scrapy.frontier`: ``queue`` (UrlQueue, with ``sharing``: the
buckets each harvester looks at first, and ``solo``: the heads in a lone harvester's memory), ``robots``
(RobotsCache), ``links`` (LinkGraph), ``revisit`` (RevisitHistory) and
``operations`` (FrontierOperations). RedisFrontier is all of them over one
connection (``Frontier``).
"""

from __future__ import annotations

from typing import Any

from scrapy.settings import BaseSettings, Settings

from combine_scrapy.faults import OUTAGE_PATIENCE
from combine_scrapy.frontier import LEASE_SECONDS
from combine_scrapy.frontier.redis.connection import (
    CLUSTER_BUCKETS,
    SINGLE_REDIS_BUCKETS,
    OutageRetry,
    RedisClient,
    RedisConnection,
    RedisUnavailable,
    bucket_of,
    client_from_settings,
    job_key_patterns,
)
from combine_scrapy.frontier.redis.links import RedisLinkGraph
from combine_scrapy.frontier.redis.operations import RedisOperations
from combine_scrapy.frontier.redis.queue import RedisQueue
from combine_scrapy.frontier.redis.revisit import RedisRevisitHistory
from combine_scrapy.frontier.redis.robots import RedisRobotsCache

__all__ = ["CLUSTER_BUCKETS", "SINGLE_REDIS_BUCKETS", "OutageRetry", "RedisFrontier", "RedisUnavailable", "bucket_of",
           "job_key_patterns"]


class RedisFrontier(RedisQueue, RedisRobotsCache, RedisLinkGraph, RedisRevisitHistory, RedisOperations):
    """The frontier in Redis, shared by every harvester of a job: each part over one connection.

    The parts keep their state apart (only the queue has any) and meet only
    in ``connection``; ``close`` is the queue's, which gives back its leases
    before it closes the connection.
    """

    def __init__(self, server: RedisClient, job: str, *, max_attempts: int = 5,
                 lease_seconds: float = LEASE_SECONDS, lease_ahead: bool = False, buckets: int | None = None,
                 solo: bool = True) -> None:
        super().__init__(RedisConnection(server, job, buckets), max_attempts=max_attempts,
                         lease_seconds=lease_seconds, lease_ahead=lease_ahead, solo=solo)
        self.server = server   # the client, for what sits beside the frontier (the beacon, the link model)
        self.job = job
        self.prefix = self.connection.prefix   # the job-wide keys

    close = RedisQueue.close

    @classmethod
    def from_settings(
        cls, settings: BaseSettings | dict[str, Any], job: str, max_attempts: int = 5,
        outage_patience: float = OUTAGE_PATIENCE, lease_seconds: float = LEASE_SECONDS, lease_ahead: bool = False,
        solo: bool = True,
    ) -> RedisFrontier:
        """Connect as scrapy-redis does (``connection.client_from_settings``, whose defaults wait out an outage of
        up to ``outage_patience`` seconds); COMBINE_REDIS_BUCKETS is the number of buckets of a new frontier
        (unset: the Redis's own, ``connection.SINGLE_REDIS_BUCKETS`` or ``connection.CLUSTER_BUCKETS``)."""
        settings = settings if isinstance(settings, BaseSettings) else Settings(settings)
        buckets = settings.get("COMBINE_REDIS_BUCKETS")
        return cls(client_from_settings(settings, outage_patience), job, max_attempts=max_attempts,
                   lease_seconds=lease_seconds, lease_ahead=lease_ahead, solo=solo,
                   buckets=None if buckets in (None, "") else settings.getint("COMBINE_REDIS_BUCKETS"))

    @classmethod
    def from_url(cls, url: str, job: str, max_attempts: int = 5, outage_patience: float = OUTAGE_PATIENCE,
                 **options: Any) -> RedisFrontier:
        """Connect to the Redis at ``url`` (``from_settings`` with only REDIS_URL set)."""
        return cls.from_settings({"REDIS_URL": url}, job, max_attempts=max_attempts, outage_patience=outage_patience,
                                 **options)

    @property
    def buckets(self) -> int:
        """How many buckets the job's hosts are spread over (the frontier's own once it has one)."""
        return self.connection.buckets

    def prefix_of(self, host: str) -> str:
        """The key prefix of the bucket that holds ``host``."""
        return self.connection.prefix_of(host)

    def marker(self) -> str | None:
        """The job marker's token: None when no harvester has worked on this frontier since it was (re)created."""
        return self.connection.marker.token()

    def check_marker(self, idle: bool = False) -> None:
        """Raise FrontierVanished when the frontier vanished under this harvester (``connection.JobMarker``)."""
        self.connection.marker.check(idle)

    def delete_all(self) -> None:
        """Delete every key of the job, on every node."""
        self.connection.delete_all()
