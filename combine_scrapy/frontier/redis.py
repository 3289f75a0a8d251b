"""The shared frontier: one Redis (or Redis Cluster), any number of harvester processes on any number of machines.

Every change is one Lua script (in ``lua/``), so a harvester killed at any moment leaves
the frontier consistent, and two harvesters can never lease the same host at
once. A leased URL waits in a sorted set by lease expiry and comes back when
the lease ends, whoever held it.

A job's hosts are spread over ``buckets`` (BUCKETS, the COMBINE_REDIS_BUCKETS
setting; kept in the frontier when it is first marked, so every harvester uses
the frontier's own): a host is in bucket ``crc32(host) % buckets``, and each
bucket's keys share one hash tag, ``combine:{<job>:b<k>}:``, so a Redis
Cluster puts each bucket in one slot and spreads the buckets over its nodes,
while every script touches one bucket only. What belongs to the whole job is
under ``combine:{<job>}:``. Looks over the whole frontier (``ready``,
``next_due``, ``counts``, ``hosts``) send one script or command per bucket in
one pipeline: one round trip per node. BestFirst's ``ready`` reads only each
bucket's first heads (``heads`` below), then the rows of the best of them in a
second pipeline: its cost is in the round's size, not in the due hosts.

In each bucket, ``combine:{<job>:b<k>}:``

``u:<host>``         hash: the host's URLs (as kept, below) -> the URL's record, one MessagePack array of
                     marked, lock_until, priority, seq (order of marking), attempts, retries,
                     status, last_checked, etag, last_modified, distance, visits, changes,
                     first_visit, digest (trailing empty fields left out; absent numbers: 0)
``host:<host>``      hash: lock_until, delay (robots.txt Crawl-delay), urls (ever marked),
                     fetched and relevant (completed fetches; new relevant records, decayed: the host's yield),
                     leased_until (end of the lease of the URL being fetched; absent: none),
                     head (its member of ``heads`` or ``leasedheads``; absent: in neither)
``hosts``            set of the bucket's known hosts
``fifo:<host>``      marked, unlocked URLs of a host (as kept) scored by order of marking (BreadthFirst); it
                     also finds a URL by its order of marking
``best:<host>``      the same URLs' orders of marking (a letter for the number of hexadecimal digits, then
                     the digits, so they sort as numbers) by priority, highest first, then order of marking
``hostq``            hosts with marked, unlocked URLs, scored by when the host unlocks
``heads``            of those, the free hosts (unlocked when last placed, and not leased since): the order of
                     marking of the host's best URL (as in ``best:``) then the host, scored by minus that URL's
                     priority weighted by the host's yield, so the first are BestFirst's (``strategy.py``)
``leasedheads``      the same of the hosts with a lease (``leased_until``), which may hold places in a round
``waiting``          the other hosts of ``hostq`` (locked), by when they unlock: a look at the heads moves those
                     unlocked to ``heads``. Every script that changes a host's queues, lock, lease or yield
                     places it again (``rehead`` in lua/library.lua), so ``ready`` reads only the first heads
``locked``           ``host\nURL`` (as kept) of marked URLs whose own lock (a lease, a retry wait) has not
                     ended, by when it ends
``busy``             hosts with marked URLs, scored by minus their count (``hosts()``)
``stats``            hash of the bucket's counters: urls, marked, done
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
``layout``           the key layout (LAYOUT), set with the job marker
``paused``           present while the job's harvesters are paused
``seeds``            the fingerprint of the seed list last marked in full (a crawl start marks it once)

A host's structures keep its URLs short: ``http://<host>`` is written ``:`` and
``https://<host>`` ``;``. Nothing is stored per URL but its entries in its
host's hash and queues, so a queued URL costs under 200 bytes
(``bench.frontier_size``). Methods given only a URL find its host with
``host_of``: a URL is marked under ``host_of(url)``.
"""

from __future__ import annotations

import heapq
import importlib.resources
import json
import logging
import math
import os
import random
import re
import socket
import time
import uuid
import zlib
from collections.abc import Iterable
from functools import cached_property

import redis
from redis.backoff import ExponentialBackoff
from redis.cluster import RedisCluster
from redis.retry import Retry
from scrapy.settings import BaseSettings, Settings
from scrapy.utils.misc import load_object
from scrapy_redis.connection import get_redis_from_settings

from combine_scrapy.access.urls import host_of
from combine_scrapy.faults import OUTAGE_PATIENCE, CrawlFault, FrontierVanished, StopSignals, StorageFault
from combine_scrapy.frontier import LEASE_SECONDS, FrontierCounts, FrontierEntry, MarkResult
from combine_scrapy.frontier.strategy import (
    STRIDE_POWER,
    YIELD_DECAY,
    YIELD_PRIOR_FETCHED,
    YIELD_PRIOR_RELEVANT,
    Head,
    Round,
    strategy_named,
)

logger = logging.getLogger(__name__)

#: Seconds between two looks at the job marker while the frontier has work (with none, every time).
MARKER_CHECK_INTERVAL = 1.0

#: How many leased URLs ``next_due`` looks at beyond the first; past that it
#: answers a lower bound, which only costs the scheduler an early wake-up.
NEXT_DUE_SCAN = 64

#: The key layout this module reads and writes (``layout`` key). Layout 3 lacked the heads of each bucket
#: (``heads``, ``leasedheads``, ``waiting``): a frontier of it is given them when a harvester opens it. Layout 2
#: kept a whole job under one hash tag (one slot of a Redis Cluster); before it, a hash per URL.
LAYOUT = "4"

#: The layout that opening upgrades to LAYOUT in place.
UPGRADED_LAYOUT = "3"

#: Buckets a new job's hosts are spread over (COMBINE_REDIS_BUCKETS): a bucket is one hash tag, so one slot of
#: a Redis Cluster. 32 spreads a crawl evenly over a cluster of up to about ten masters and gives eight
#: harvesters four buckets each to look at first; a look over the whole frontier costs a script per bucket.
BUCKETS = 32

#: Seconds between two renewals of a harvester's entry among the job's harvesters, at most: its share of the
#: buckets follows harvesters that come or go within this (one that dies leaves it when its entry ends, after a
#: lease). A look that reaches the node of the job-wide keys anyway (always, on a single Redis) renews it too.
HARVESTERS_RENEWAL = 5.0

#: Heads a BestFirst ``ready`` asks each bucket for first, at least (three times its share of the round if more):
#: a bucket whose first ones all make the round is asked again for more, which the spread of the hosts over the
#: buckets makes rare.
FIRST_HEADS = 6

#: URLs of a full round (BreadthFirstTime, BreadthFirst) one ``ready`` leases to its harvester at once.
ROUND_LEASE = 16

#: A URL leased by ``ready`` is claimed without asking Redis while this share of its lease is left; later
#: the claim renews the lease (or finds it lost, when it ran out and another harvester took the URL).
UNRENEWED_SHARE = 0.9

# The Lua scripts live in lua/<name>.lua, each file opening with a comment on what its KEYS and ARGV are.
# library.lua holds the helpers every bucket script shares and is prepended to each; open.lua runs alone.
_LUA = importlib.resources.files(__package__) / "lua"


def _lua(name: str) -> str:
    """The script in lua/<name>.lua without its opening comment, so Redis caches only the code."""
    return re.sub(r"\A(?:--.*\n)*", "", (_LUA / f"{name}.lua").read_text(encoding="utf-8"))


# A head's weighted priority in Lua is strategy.weighted_priority with the same constants, so the same doubles.
_LIBRARY = (f"local YIELD_PRIOR_RELEVANT, YIELD_PRIOR_FETCHED = {YIELD_PRIOR_RELEVANT!r}, {YIELD_PRIOR_FETCHED!r}\n"
            f"local YIELD_DECAY, STRIDE_POWER = {YIELD_DECAY!r}, {STRIDE_POWER!r}\n"
            + _lua("library"))
_BUCKET_SCRIPTS = {
    name: _LIBRARY + _lua(name)
    for name in (
        "mark", "remark", "ready", "top_heads", "head_rows", "deeper", "claim", "take", "complete", "release",
        "lock_host", "host_delay", "set_priorities", "next_due", "records", "record_visit", "rebuild_heads",
    )
}
_OPEN = _lua("open")


def _float(value: float) -> str:
    """A number as Redis and Lua read it back exactly."""
    return repr(float(value))


def _queue(members_and_scores: list) -> list[tuple[float, int]]:
    """A 'best' queue's members and scores (ZRANGE WITHSCORES) as ``(priority, order of marking)``."""
    return [(-float(score), int(member[1:], 16))
            for member, score in zip(members_and_scores[::2], members_and_scores[1::2])]


def _text(value: bytes | None) -> str | None:
    return None if value is None else value.decode()


class RedisUnavailable(redis.ConnectionError, CrawlFault):
    """Redis unreachable for longer than the outage patience, or refusing REDIS_URL's credentials: the crawl
    stops (a CrawlFault); a job command reports it as the connection error it also is."""

    reason = "frontier_unreachable"


class OutageRetry(Retry):
    """Ride out a Redis restart or outage: retry every command with capped back-off, and say so.

    redis-py reconnects between attempts; every frontier change is one Lua
    script, so a retried script either ran whole or not at all. A pipeline of
    scripts (a look over every bucket) cut by the outage may be sent again
    with its first scripts done: a take then misses the URLs it leased the
    first time (they come back when the lease ends), a mark counts its URLs
    as known. Only after ``patience`` seconds of failure does the error reach
    the crawl, and once it has, later commands (the crawl's closing: the
    beacon, the link model, the leases) are tried once, not waited for again.
    SIGINT or SIGTERM during the wait ends it at once (the reactor, blocked in
    the wait, could not act on them). A Redis Cluster client keeps redis-py's
    own retries (a cluster rides out the loss of a master by failing over to
    its replica).
    """

    def __init__(self, patience: float = OUTAGE_PATIENCE, cap: float = 8.0, base: float = 0.25):
        # A count this high lets redis-py drop the broken connection after each failure; time bounds the retries.
        super().__init__(ExponentialBackoff(cap=cap, base=base), retries=1_000_000)
        self.patience = patience
        self.gave_up = False   # an outage outlasted the patience (or a signal cut it): no more waiting

    def call_with_retry(self, do, fail, is_retryable=None, with_failure_count=False):
        failures, started = 0, None
        with StopSignals() as stop:
            while True:
                try:
                    result = do()
                except RedisUnavailable:  # a connect inside this command already waited (redis-py nests retries)
                    raise
                except redis.AuthenticationError as error:
                    raise RedisUnavailable(
                        f"Redis refused the user name or password in REDIS_URL ({error}): correct them and run again"
                    ) from error
                except self._supported_errors as error:
                    if is_retryable and not is_retryable(error):
                        raise
                    failures += 1
                    fail(error, failures) if with_failure_count else fail(error)
                    now = time.monotonic()
                    started = started if started is not None else now
                    if self.gave_up or stop.received or now - started >= self.patience:
                        why = (f"unreachable, and {stop.received.name} came while waiting for it" if stop.received else
                               "still unreachable" if self.gave_up else f"unreachable for {now - started:.0f} s")
                        self.gave_up = True
                        raise RedisUnavailable(
                            f"Redis {why} ({error}): start it (or correct REDIS_URL) and run again; nothing stored is lost"
                        ) from error
                    backoff = min(self._backoff.compute(failures), max(self.patience - (now - started), 0.05))
                    logger.warning("Redis unreachable (%s): waited %.0f s of %g, retry %d in %.2f s (Ctrl-C stops)",
                                   error, now - started, self.patience, failures, backoff)
                    stop.sleep(backoff)
                else:
                    if failures:
                        logger.warning("Redis reachable again after %.1f s and %d retries", time.monotonic() - started,
                                       failures)
                    return result


def bucket_of(host: str, buckets: int) -> int:
    """The bucket a host's keys are in: a hash stable across processes and machines."""
    return zlib.crc32(host.encode()) % buckets


def job_key_patterns(job: str) -> tuple[str, str]:
    """SCAN patterns matching every key of the job: the job-wide ones and its buckets' (job names hold no ':')."""
    return f"combine:{{{job}}}:*", f"combine:{{{job}:b*}}:*"


class RedisFrontier:
    """The frontier in Redis, shared by every harvester of a job."""

    def __init__(self, server: redis.Redis | RedisCluster, job: str, *, max_attempts: int = 5,
                 lease_seconds: float = LEASE_SECONDS, lease_ahead: bool = False, buckets: int = BUCKETS):
        if server.get_connection_kwargs().get("decode_responses"):
            raise ValueError("RedisFrontier needs a client that returns bytes (robots.txt bodies are binary)")
        if buckets < 1:
            raise ValueError(f"COMBINE_REDIS_BUCKETS must be at least 1, not {buckets}")
        self.server = server
        self.job = job
        self.max_attempts = max_attempts
        self.prefix = f"combine:{{{job}}}:"   # the job-wide keys
        self._configured_buckets = buckets
        self._buckets_stored = False
        self._marker: bytes | None = None   # the job marker this harvester works under, once it has looked
        self._marker_checked = 0.0
        self.lease_ahead = lease_ahead   # ``ready`` leases the URLs it hands out (a harvester's frontier)
        self.lease_seconds = lease_seconds   # how long a URL handed out in a round stays leased to this harvester
        self.harvester_id = uuid.uuid4().hex   # this harvester's entry among the job's harvesters
        self._share: list[int] | None = None   # the buckets this harvester looks at first (None: all)
        self._deeper_found: dict[str, list[tuple[float, int]]] = {}   # the 'best' queues the last look fetched
        self._renewed = -HARVESTERS_RENEWAL   # when this harvester last renewed its entry (time.monotonic)
        self._registered = False   # it has an entry among the job's harvesters (so closing removes it)
        self._round: list[FrontierEntry] = []   # the rest of the last full round, not yet leased
        self._round_key: tuple[str, float] | None = None   # its strategy and when it was ranked
        self._leased_ahead: dict[str, tuple[str, FrontierEntry]] = {}   # URL -> (lease end, entry), not yet claimed
        self._random = random.Random()
        self._rivals = False   # another harvester took URLs of this one's rounds
        self.lost_races = 0   # URLs of a round another harvester leased first (skipped inside the take script)
        self._scripts = {name: server.register_script(text) for name, text in _BUCKET_SCRIPTS.items()}
        self._open_script = server.register_script(_OPEN)

    @classmethod
    def from_settings(
        cls, settings: BaseSettings | dict, job: str, max_attempts: int = 5, outage_patience: float = OUTAGE_PATIENCE,
        lease_seconds: float = LEASE_SECONDS, lease_ahead: bool = False,
    ) -> RedisFrontier:
        """Connect as scrapy-redis does (REDIS_URL, REDIS_PARAMS, ``get_redis_from_settings``).

        Under the user's REDIS_PARAMS lie this project's defaults: commands wait out
        an outage of up to ``outage_patience`` seconds (OutageRetry), a connection
        attempt gives up after 5 s and a stopped (not dead) server cannot hang a
        harvester for ever (60 s socket timeout). ``"redis_cls":
        "redis.cluster.RedisCluster"`` in REDIS_PARAMS connects to a Redis
        Cluster, REDIS_URL naming any of its nodes; it keeps redis-py's own
        retries. COMBINE_REDIS_BUCKETS is the number of buckets of a new frontier.
        """
        settings = settings if isinstance(settings, BaseSettings) else Settings(settings)
        params = {"socket_connect_timeout": 5, "socket_timeout": 60}
        params.update(settings.getdict("REDIS_PARAMS"))
        client = params.get("redis_cls")
        client = load_object(client) if isinstance(client, str) else client
        if not (isinstance(client, type) and issubclass(client, RedisCluster)):
            params = {"retry": OutageRetry(outage_patience), "retry_on_error": [redis.ConnectionError, redis.TimeoutError],
                      **params}
        connection = settings.copy()
        connection.set("REDIS_PARAMS", params, priority=max(settings.getpriority("REDIS_PARAMS") or 0, 0) + 1)
        return cls(get_redis_from_settings(connection), job, max_attempts=max_attempts, lease_seconds=lease_seconds,
                   lease_ahead=lease_ahead, buckets=settings.getint("COMBINE_REDIS_BUCKETS", BUCKETS))

    @classmethod
    def from_url(cls, url: str, job: str, max_attempts: int = 5, outage_patience: float = OUTAGE_PATIENCE,
                 **options) -> RedisFrontier:
        """Connect to the Redis at ``url`` (``from_settings`` with only REDIS_URL set)."""
        return cls.from_settings({"REDIS_URL": url}, job, max_attempts=max_attempts, outage_patience=outage_patience,
                                 **options)

    @cached_property
    def buckets(self) -> int:
        """How many buckets the job's hosts are spread over: the frontier's own once it has one (read when first
        needed, so opening a frontier does not reach Redis)."""
        stored = self.server.get(self._key("buckets"))
        self._buckets_stored = stored is not None
        return int(stored) if stored else self._configured_buckets

    @cached_property
    def _bucket_prefixes(self) -> list[str]:
        return [f"combine:{{{self.job}:b{bucket}}}:" for bucket in range(self.buckets)]

    @cached_property
    def _bucket_nodes(self) -> list[str]:
        return [self._node_of(prefix) for prefix in self._bucket_prefixes]

    @cached_property
    def _bucket_order(self) -> list[int]:
        """The buckets by the node that holds them, so that a share of consecutive ones is on as few nodes as can be."""
        return sorted(range(self.buckets), key=lambda bucket: (self._bucket_nodes[bucket], bucket))

    def _node_of(self, prefix: str) -> str:
        """The name of the cluster node holding the keys under ``prefix`` ('' for a single Redis)."""
        if isinstance(self.server, RedisCluster):
            return self.server.get_node_from_key(prefix).name
        return ""

    def _key(self, *parts: str) -> str:
        """A job-wide key."""
        return self.prefix + ":".join(parts)

    def _bucket(self, host: str) -> int:
        return bucket_of(host, self.buckets)

    def prefix_of(self, host: str) -> str:
        """The key prefix of the bucket that holds ``host``."""
        return self._bucket_prefixes[self._bucket(host)]

    def _run(self, host: str, script: str, *args):
        """Run a script in the bucket of ``host``."""
        return self._scripts[script](keys=[self.prefix_of(host)], args=args)

    def _run_buckets(self, calls: list[tuple[int, str, list]]) -> list:
        """Run ``(bucket, script, args)`` calls in one pipeline (a round trip per node); their answers in order.

        A script not yet in a node's cache is loaded (on every node) and its calls sent again.
        """
        if len(calls) == 1:
            bucket, script, args = calls[0]
            return [self._scripts[script](keys=[self._bucket_prefixes[bucket]], args=args)]
        with self.server.pipeline(transaction=False) as pipe:
            for bucket, script, args in calls:
                pipe.execute_command("EVALSHA", self._scripts[script].sha, 1, self._bucket_prefixes[bucket], *args)
            answers = pipe.execute(raise_on_error=False)
        for position, answer in enumerate(answers):
            if isinstance(answer, redis.exceptions.NoScriptError):
                bucket, script, args = calls[position]
                answers[position] = self._scripts[script](keys=[self._bucket_prefixes[bucket]], args=args)
            elif isinstance(answer, Exception):
                raise answer
        return answers

    def _by_bucket(self, hosts: Iterable[str]) -> dict[int, list[int]]:
        """Positions of ``hosts`` grouped by bucket, in order."""
        groups: dict[int, list[int]] = {}
        for position, host in enumerate(hosts):
            groups.setdefault(self._bucket(host), []).append(position)
        return groups

    def close(self) -> None:
        """Give back the URLs ``ready`` leased that were never claimed, so no one waits for their leases; leave
        the job's harvesters."""
        now = time.time()
        try:
            for url, (_, entry) in list(self._leased_ahead.items()):
                self.release(url, entry.host, now)
                del self._leased_ahead[url]
            if self._registered:
                self.server.zrem(self._key("harvesters"), self.harvester_id)
        except (CrawlFault, redis.RedisError) as fault:  # Redis gone: the leases end by themselves
            logger.warning("%d URLs leased ahead not given back (%s); they come back when their lease ends",
                           len(self._leased_ahead), fault)
        self._leased_ahead.clear()
        self.server.close()

    def delete_all(self) -> None:
        """Delete every key of the job, on every node."""
        for pattern in job_key_patterns(self.job):
            keys = list(self.server.scan_iter(match=pattern, count=1000))
            if keys:
                self.server.delete(*keys)

    def marker(self) -> str | None:
        """The job marker's token: None when no harvester has worked on this frontier since it was (re)created."""
        return _text(self.server.get(self._key("frontier")))

    def check_marker(self, idle: bool = False) -> None:
        """Raise FrontierVanished when the job marker this harvester first saw is gone or replaced.

        The first look sets the marker if there is none (a new job, or one
        seeded by ``scrapy seed``). Later looks cost one GET, at most every
        MARKER_CHECK_INTERVAL seconds, but always when the frontier seems to
        have nothing left (``idle``): that is how a vanished frontier looks.
        """
        now = time.monotonic()
        if self._marker is not None and not idle and now - self._marker_checked < MARKER_CHECK_INTERVAL:
            return
        self._marker_checked = now
        key = self._key("frontier")
        patterns = " and ".join(job_key_patterns(self.job))
        if self._marker is None:
            token = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {socket.gethostname()}:{os.getpid()} {uuid.uuid4().hex}"
            marker, layout, buckets = self._open_script(
                keys=[key, self._key("layout"), self._key("buckets")], args=[token, LAYOUT, self.buckets]
            )
            if _text(layout) == UPGRADED_LAYOUT or _text(marker) == token:  # an older layout, or URLs marked
                self._check_buckets(buckets)                              # before any harvester opened it
                self._place_heads(_text(layout))
                layout = LAYOUT.encode()
            if _text(layout) != LAYOUT:
                raise StorageFault(
                    f"the Redis frontier of job {self.job} was written by an older combine-scrapy (all of a job's "
                    "keys under one hash tag, or a key per URL), which this one cannot read. Nothing stored is "
                    f"lost: delete the job's keys ({patterns}), then 'scrapy sanity {self.job} --restore' and "
                    f"'scrapy recycle {self.job}' mark the URLs again",
                    reason="frontier_layout",
                )
            self._check_buckets(buckets)
            self._marker = marker
            return
        found = self.server.get(key)
        if found != self._marker:
            where = self.server.get_connection_kwargs()
            raise FrontierVanished(
                f"the frontier of job {self.job} vanished from Redis at {where.get('host')}:{where.get('port')}"
                f"/{where.get('db', 0)} (its marker key {key} is {'gone' if found is None else 'replaced'}: was Redis "
                "restarted without persistence, or the job's keys deleted?). Nothing stored is lost. To recover: "
                f"'scrapy sanity {self.job}' shows what the records hold that the frontier lacks, "
                f"'scrapy sanity {self.job} --restore' marks those URLs again and 'scrapy recycle {self.job}' "
                "marks their links; then start the harvesters again. Run Redis with --appendonly yes so a "
                "restart keeps the frontier"
            )

    def _place_heads(self, layout: str | None) -> None:
        """Place every host among its bucket's heads anew (``rebuild_heads.lua``, a script per bucket), then set
        today's layout: a frontier of layout 3 had no heads, and one seeded (``scrapy seed``) by an older
        combine-scrapy before any harvester opened it has neither heads nor layout. Every URL, host and lease
        stays as it was; a harvester that opens it meanwhile places the same heads again. Harvesters of layout 3
        still at work would leave the heads behind: stop them first.
        """
        self._run_buckets([(bucket, "rebuild_heads", []) for bucket in range(self.buckets)])
        if layout != LAYOUT:
            self.server.set(self._key("layout"), LAYOUT)
            logger.info("Redis frontier of job %s upgraded from layout %s to %s", self.job, layout, LAYOUT)

    def _store_buckets(self) -> None:
        """Keep the bucket count in the frontier, once; a frontier that has one already keeps its own."""
        if not self._buckets_stored:
            self._check_buckets(self.server.set(self._key("buckets"), self.buckets, nx=True, get=True))

    def _check_buckets(self, stored: bytes | None) -> None:
        """Refuse to go on when the frontier was given another bucket count since this harvester opened it."""
        if stored and int(stored) != self.buckets:
            raise StorageFault(
                f"the Redis frontier of job {self.job} was made with {int(stored)} buckets while this harvester "
                f"opened it with {self.buckets}: open it again (harvesters read the frontier's own)",
                reason="frontier_layout",
            )
        self._buckets_stored = True

    def mark(
        self, entries: Iterable[tuple[str, str, float]], *, max_urls_per_host: int | None = None, distance: int = 0
    ) -> MarkResult:
        """Mark new URLs ``(url, host, priority)`` at ``distance`` for crawling.

        A known URL that is still marked and was never fetched is raised: it
        keeps the higher priority (moved in its host's queue) and the lower
        distance, in the same script, so concurrent marks keep the best.
        Fetched URLs stay as they are. Refused URLs are new ones over the
        per-host bound. The batch reserves its orders of marking with one
        INCRBY and numbers its URLs in the order given.
        """
        entries = list(entries)
        if not entries:
            return MarkResult(0, 0, 0)
        self._store_buckets()
        first = self.server.incrby(self._key("seq"), len(entries)) - len(entries) + 1
        calls = []
        for bucket, positions in self._by_bucket(host for _, host, _ in entries).items():
            args = [-1 if max_urls_per_host is None else max_urls_per_host, int(distance)]
            for position in positions:
                url, host, priority = entries[position]
                args += [url, host, _float(priority), first + position]
            calls.append((bucket, "mark", args))
        totals = [sum(column) for column in zip(*self._run_buckets(calls))]
        return MarkResult(*totals)

    def remark(self, url: str) -> bool:
        """Mark a known URL for crawling again, unlocked (recycle / re-harvest)."""
        host = host_of(url)
        return bool(self._run(host, "remark", url, host))

    def ready(self, now: float, strategy: str = "BreadthFirstTime", limit: int | None = None, *,
              hold: float = 0.0) -> Round:
        """One round of the strategy (:mod:`combine_scrapy.frontier.strategy`) over the heads of the hosts,
        with ``lease_ahead`` leased to this harvester as it is handed out, so harvesters never race for the same URLs.

        A host takes part when it has a due marked URL and is free, or leased
        (a fetch in flight) for at most ``hold`` seconds more. URLs whose lease or lock has ended
        go back to their hosts' queues first, and those handed out
        ``max_attempts`` times without completion are dropped.

        A harvester alone ranks the whole frontier. With others at work, it
        ranks its own share of the buckets (``_share``), so harvesters do not
        race for the same few best hosts, and the whole frontier only when its
        share has nothing to hand out and nothing better held.

        A full round is ranked once and leased ROUND_LEASE URLs at a time, in
        its order, by later calls (until it is used up or older than a lease);
        a URL another harvester leased meanwhile is skipped in the same script.
        A round of the best few is leased whole. ``claim`` then costs nothing.
        """
        crawl = strategy_named(strategy)
        if self.lease_ahead and crawl.full_round and self._round and self._round_key is not None:
            ranked_for, ranked_at = self._round_key
            if ranked_for == strategy and now - ranked_at < self.lease_seconds:
                taken = self._take_from_round(now)
                if taken:
                    self.check_marker()
                    return Round(taken)
        if self._marker is None:  # opening the frontier upgrades an older layout before it is read
            self.check_marker()
        share = self._share if self.lease_ahead else None
        depth = limit if crawl.holds_places and limit else 0
        best = limit if limit is not None and crawl.head_order is not None else None  # only the heads the round reads
        heads = self._heads(now, crawl.queue, hold, share, depth, best)
        if self.lease_ahead and self._share != share:  # harvesters came or went: look at the new share
            share = self._share
            heads = self._heads(now, crawl.queue, hold, share, depth, best)
        round_ = crawl.round(heads, now, limit, self._deeper)
        if share is not None and not round_ and round_.held_until is None:
            heads = self._heads(now, crawl.queue, hold, None, depth, best)
            round_ = crawl.round(heads, now, limit, self._deeper)
        self.check_marker(idle=not heads)
        if not self.lease_ahead:
            return round_
        if crawl.full_round:
            self._round, self._round_key = list(round_), (strategy, now)
            if self._rivals:
                self._turn_round()
            return Round(self._take_from_round(now))
        return Round(self._take(list(round_), now), held_until=round_.held_until)

    def _heads(self, now: float, queue: str, hold: float, share: list[int] | None, depth: int = 0,
               best: int | None = None) -> list[Head]:
        """The head of every free (or held) host of the buckets ``share`` (None: every bucket), in one pipeline;
        with a ``depth``, what ``_deeper`` answers for their hosts is fetched with them and kept for it.

        With ``best``, only the ``best`` first heads by weighted priority (BestFirst's ``head_order``), in two
        pipelines: each bucket's first ones from its ``heads`` and ``leasedheads``, then the rows of the
        ``best`` first of them all, so the cost is in ``best`` and the buckets, not in the due hosts.

        A harvester's frontier also renews its entry among the job's harvesters in the same pipeline (see
        HARVESTERS_RENEWAL) and takes its share of the buckets for the next look from the answer.
        """
        buckets = range(self.buckets) if share is None else share
        if best is None:
            script, args = "ready", [_float(now), self.max_attempts, queue, _float(now + hold), depth]
        else:
            first = min(best, max(FIRST_HEADS, math.ceil(3 * best / len(buckets))))
            script, args = "top_heads", [_float(now), self.max_attempts, _float(now + hold), first]
        renew = self.lease_ahead and (time.monotonic() - self._renewed >= HARVESTERS_RENEWAL
                                      or any(self._bucket_nodes[bucket] == self._node_of(self.prefix) for bucket in buckets))
        with self.server.pipeline(transaction=False) as pipe:
            for bucket in buckets:
                pipe.execute_command("EVALSHA", self._scripts[script].sha, 1, self._bucket_prefixes[bucket], *args)
            if renew:
                harvesters, clock = self._key("harvesters"), time.time()
                pipe.zadd(harvesters, {self.harvester_id: clock + self.lease_seconds})
                pipe.zremrangebyscore(harvesters, "-inf", clock)
                pipe.zrange(harvesters, 0, -1)
            answers = pipe.execute(raise_on_error=False)
        if renew:
            self._renewed, self._registered = time.monotonic(), True
            self._share = self._share_of(sorted(member.decode() for member in answers[-1]))
            answers = answers[:-3]
        for position, (bucket, answer) in enumerate(zip(buckets, answers)):
            if isinstance(answer, redis.exceptions.NoScriptError):
                answers[position] = self._scripts[script](keys=[self._bucket_prefixes[bucket]], args=args)
            elif isinstance(answer, Exception):
                raise answer
        if best is None:
            rows = [row for answer in answers[:len(buckets)] for row in answer]
        else:
            rows = self._best_rows(dict(zip(buckets, answers)), args, queue, depth, best)
        self._deeper_found = {row[1].decode(): _queue(row[10]) for row in rows if len(row) > 10}
        return [
            Head(
                FrontierEntry(url.decode(), host.decode(), float(priority), _text(etag), _text(last_modified),
                              int(distance)),
                int(seq), float(host_lock), int(fetched), float(relevant),
            )
            for url, host, priority, seq, etag, last_modified, distance, host_lock, fetched, relevant, *_ in rows
        ]

    def _best_rows(self, answers: dict[int, list], args: list, queue: str, depth: int, best: int) -> list:
        """The rows (as ``ready.lua`` gives them) of the ``best`` first heads of the buckets, by weighted priority
        then order of marking, as the round ranks them.

        A host's rows read only as much of its 'best' queue (``depth``) as can take places in the round (the
        ``best`` first URLs of the heads' hosts, as BestFirst places them): a host whose head is the n-th (from 0)
        has n better URLs elsewhere, so no more than its ``best - n`` first.

        ``answers`` are each bucket's first few heads (``top_heads.lua`` run with ``args``, its last the few):
        a bucket whose few are all among the ``best`` first so far may hold more of them, and is asked for its
        ``best`` first (another round trip, seldom: the best heads spread over the buckets).
        """
        def firsts(bucket: int, answer: list) -> list[list[tuple[float, int, str, int]]]:
            return [[(float(score), int(member[1:1 + member[0] - 96], 16), member[1 + member[0] - 96:].decode(), bucket)
                     for member, score in zip(found[::2], found[1::2])]   # member: the order of marking as in 'best',
                    for found in answer]                                   # then the host

        few = args[-1]
        heads = {bucket: firsts(bucket, answer) for bucket, answer in answers.items()}
        ranked = heapq.nsmallest(best, (head for lists in heads.values() for found in lists for head in found))
        if few < best:
            cut = ranked[-1] if len(ranked) == best else None
            more = [bucket for bucket, lists in heads.items()
                    if any(len(found) == few and (cut is None or found[-1] < cut) for found in lists)]
            if more:
                for bucket, answer in zip(more, self._run_buckets([(bucket, "top_heads", [*args[:-1], best])
                                                                   for bucket in more])):
                    heads[bucket] = firsts(bucket, answer)
                ranked = heapq.nsmallest(best, (head for lists in heads.values() for found in lists for head in found))
        chosen: dict[int, list] = {}
        for place, (_, _, host, bucket) in enumerate(ranked):
            # the heads before this one are better than every URL of its host: only its first best - place count
            chosen.setdefault(bucket, []).extend((host, min(depth, best - place)))
        calls = [(bucket, "head_rows", [queue, *hosts_and_depths]) for bucket, hosts_and_depths in chosen.items()]
        return [row for found in (self._run_buckets(calls) if calls else []) for row in found if row]

    def _share_of(self, harvesters: list[str]) -> list[int] | None:
        """This harvester's buckets among ``harvesters`` (the ids at work, sorted): the part of the buckets (in
        the order of their nodes) at its place; None (every bucket) when it works alone."""
        if len(harvesters) < 2 or self.harvester_id not in harvesters:
            return None
        place, count = harvesters.index(self.harvester_id), len(harvesters)
        if count > self.buckets:
            return [self._bucket_order[place % self.buckets]]
        return sorted(self._bucket_order[place * self.buckets // count:(place + 1) * self.buckets // count])

    def _take_from_round(self, now: float) -> list[FrontierEntry]:
        """Lease the next ROUND_LEASE URLs of the full round that are still free."""
        taken = self._take(self._round[:ROUND_LEASE], now)
        looked = min(len(self._round), ROUND_LEASE)
        del self._round[:looked]
        if looked > len(taken):  # other harvesters work this round too: rank a new one next time
            self._rivals = True
            self._round = []
        return taken

    def _turn_round(self) -> None:
        """Start a new round at a random place: other harvesters take URLs of the same round in the same order,
        and following them would mean losing every race (alone, a harvester keeps the order exactly)."""
        if self._round:
            turn = self._random.randrange(len(self._round))
            self._round = self._round[turn:] + self._round[:turn]

    def _take(self, entries: list[FrontierEntry], now: float) -> list[FrontierEntry]:
        """Lease those of ``entries`` that are still free, a script per bucket in one pipeline; those leased,
        in order."""
        if not entries:
            return []
        lease_end = _float(now + self.lease_seconds)
        groups = list(self._by_bucket(entry.host for entry in entries).items())
        calls = [
            (bucket, "take", [_float(now), lease_end,
                              *(part for position in positions for part in (entries[position].url, entries[position].host))])
            for bucket, positions in groups
        ]
        leased = sorted(
            positions[taken - 1] for (_, positions), answer in zip(groups, self._run_buckets(calls)) for taken in answer
        )
        taken = [entries[position] for position in leased]
        for entry in taken:
            self._leased_ahead[entry.url] = (lease_end, entry)
        self.lost_races += len(entries) - len(taken)
        return taken

    def _deeper(self, hosts: list[str], depth: int) -> dict[str, list[tuple[float, int]]]:
        """``(priority, order of marking)`` of the first ``depth`` due URLs of each host, by priority: as the
        last look at the heads fetched them, else from Redis."""
        found = {host: self._deeper_found[host][:depth] for host in hosts if host in self._deeper_found}
        missing = [host for host in hosts if host not in found]
        if missing:
            groups = list(self._by_bucket(missing).items())
            answers = self._run_buckets([(bucket, "deeper", [depth, *(missing[p] for p in positions)])
                                         for bucket, positions in groups])
            for (_, positions), queues in zip(groups, answers):
                for position, queue in zip(positions, queues):
                    found[missing[position]] = _queue(queue)
        return found

    def claim(self, entry: FrontierEntry, now: float, lease: float) -> bool:
        """Lease the URL and lock its host, unless another hand-out got there first.

        A URL this harvester's ``ready`` leased is its own: claimed without a
        round trip while most of its lease is left, else renewed. The host
        locked is the one the URL was marked with, so its queues stay consistent.
        """
        self.lease_seconds = lease
        held, _ = self._leased_ahead.pop(entry.url, (None, None))
        if held is not None and float(held) - now >= UNRENEWED_SHARE * lease:
            return True
        return bool(self._run(entry.host, "claim", entry.url, entry.host, _float(now), _float(now + lease), held or ""))

    def lock_host(self, host: str, until: float) -> None:
        self._run(host, "lock_host", host, _float(until))

    def complete(
        self,
        url: str,
        host: str,
        *,
        now: float,
        url_lock_until: float,
        host_lock_until: float,
        status: int | None,
        keep_marked: bool = False,
        etag: str | None = None,
        last_modified: str | None = None,
        score: float | None = None,
        relevant: bool | None = None,
    ) -> None:
        """Record the end of a fetch: locks set, mark cleared unless ``keep_marked``.

        An etag, Last-Modified or score of None keeps the one stored. The
        fetch counts for its host's yield, as a new relevant record when ``relevant``.
        """
        given = {
            "status": None if status is None else str(status),
            "etag": etag,
            "last_modified": last_modified,
            "score": None if score is None else _float(score),
        }
        self._run(
            host, "complete", url, host, _float(now), _float(url_lock_until), _float(host_lock_until),
            int(keep_marked), json.dumps({field: value for field, value in given.items() if value is not None}),
            int(bool(relevant)),
        )

    def release(self, url: str, host: str, host_lock_until: float, now: float | None = None) -> None:
        """Give a leased URL back without counting the attempt (its fetch was put off).

        With ``now``, the host's robots.txt Crawl-delay counts from then, as after a fetch.
        """
        self._run(host, "release", url, host, _float(host_lock_until), "" if now is None else _float(now))

    def host_yield(self, host: str) -> tuple[int, float]:
        """``(fetched, relevant)``: the host's completed fetches and its new relevant records, decayed."""
        fetched, relevant = self.server.hmget(self.prefix_of(host) + "host:" + host, "fetched", "relevant")
        return int(fetched or 0), float(relevant or 0)

    def _records(self, urls: list[str]) -> list:
        """Each URL's (retries, status, visits, changes, first visit, digest), or None when unknown."""
        if not urls:
            return []
        hosts = [host_of(url) for url in urls]
        groups = list(self._by_bucket(hosts).items())
        answers = self._run_buckets([
            (bucket, "records", [part for position in positions for part in (urls[position], hosts[position])])
            for bucket, positions in groups
        ])
        records: list = [None] * len(urls)
        for (_, positions), found in zip(groups, answers):
            for position, record in zip(positions, found):
                records[position] = record
        return records

    def retries(self, url: str) -> int:
        (record,) = self._records([url])
        return int(record[0]) if record else 0

    def statuses(self, urls: Iterable[str]) -> dict[str, int | None]:
        """The last HTTP status of each known URL (None: not fetched yet); unknown URLs left out."""
        urls = list(urls)
        return {
            url: None if record[1] is None else int(record[1])
            for url, record in zip(urls, self._records(urls))
            if record
        }

    def change_history(self, url: str) -> tuple[int, int, float | None, str | None]:
        """``(visits, changes, first visit, last content digest)`` of a page, for its revisit interval."""
        (record,) = self._records([url])
        if not record:
            return 0, 0, None, None
        _, _, visits, changes, first_visit, digest = record
        return int(visits), int(changes), None if first_visit is None else float(first_visit), _text(digest)

    def record_visit(self, url: str, now: float, digest: str | None, changed: bool) -> None:
        """Count a fetch that gave the page (``digest`` None for a 304: unchanged)."""
        host = host_of(url)
        self._run(host, "record_visit", url, host, _float(now), int(changed), digest or "")

    def set_host_delay(self, host: str, delay: float | None) -> None:
        self._run(host, "host_delay", host, "" if delay is None else _float(delay))

    def next_due(self, now: float) -> float | None:
        """When the next marked URL (and its host) becomes free, or None when nothing is marked.

        With other harvesters at work, the next in this harvester's share of the buckets, as long as it has one.
        """
        due = None
        for buckets in ([self._share] if self.lease_ahead and self._share else []) + [range(self.buckets)]:
            answers = self._run_buckets([(bucket, "next_due", [NEXT_DUE_SCAN]) for bucket in buckets])
            due = min((float(answer) for answer in answers if answer is not None), default=None)
            if due is not None:
                break
        self.check_marker(idle=due is None)
        return None if due is None else max(due, now)

    def robots(self, host: str, now: float) -> tuple[int | None, bytes | None] | None:
        """The cached robots.txt answer ``(status, body)`` for a host, or None when absent or expired."""
        expires, status, body = self.server.hmget(self._key("robots", host), "expires", "status", "body")
        if expires is None or float(expires) <= now:
            return None
        return (None if status is None else int(status)), body

    def store_robots(self, host: str, status: int | None, body: bytes | None, expires: float) -> None:
        fields = {"expires": _float(expires), "status": status, "body": body}
        with self.server.pipeline(transaction=True) as pipe:
            pipe.delete(self._key("robots", host))
            pipe.hset(self._key("robots", host), mapping={k: v for k, v in fields.items() if v is not None})
            pipe.execute()

    def hosts(self, now: float, limit: int = 20) -> list[tuple[str, int, float]]:
        """Hosts with marked URLs, most first: ``(host, marked URLs, seconds until unlocked)``."""
        with self.server.pipeline(transaction=False) as pipe:
            for prefix in self._bucket_prefixes:
                pipe.zrange(prefix + "busy", 0, limit - 1, withscores=True)
            busiest = sorted((score, host) for found in pipe.execute() for host, score in found)[:limit]
        with self.server.pipeline(transaction=False) as pipe:
            for _, host in busiest:
                pipe.hget(self.prefix_of(host.decode()) + "host:" + host.decode(), "lock_until")
            locks = pipe.execute()
        return [
            (host.decode(), int(-count), max(float(lock or 0) - now, 0))
            for (count, host), lock in zip(busiest, locks)
        ]

    def counts(self, now: float) -> FrontierCounts:
        """URLs by state, for the crawl summary and status commands."""
        with self.server.pipeline(transaction=False) as pipe:
            for prefix in self._bucket_prefixes:
                pipe.hmget(prefix + "stats", "urls", "marked", "done")
                pipe.zcount(prefix + "locked", f"({_float(now)}", "+inf")
                pipe.scard(prefix + "hosts")
            answers = pipe.execute()
        urls = marked = done = marked_locked = hosts = 0
        for (bucket_urls, bucket_marked, bucket_done), bucket_locked, bucket_hosts in zip(
            answers[::3], answers[1::3], answers[2::3]
        ):
            urls += int(bucket_urls or 0)
            marked += int(bucket_marked or 0)
            done += int(bucket_done or 0)
            marked_locked += bucket_locked
            hosts += bucket_hosts
        return FrontierCounts(
            urls=urls, marked_ready=marked - marked_locked, marked_locked=marked_locked, done=done, hosts=hosts,
        )

    def add_links(self, edges: Iterable[tuple[str, str]]) -> None:
        """Remember ``(source, target)`` edges of the crawled graph."""
        members = [f"{source}\n{target}" for source, target in edges]
        if members:
            self.server.sadd(self._key("links"), *members)

    def link_graph(self) -> tuple[list[tuple[str, str]], dict[str, float]]:
        """The crawled graph's edges (sorted, so PageRank runs the same on every harvester) and topic scores."""
        links = self._key("links")
        edges = sorted(tuple(edge.decode().split("\n", 1)) for edge in self.server.sscan_iter(links, count=1000))
        scores = {
            url.decode(): float(score)
            for prefix in self._bucket_prefixes
            for url, score in self.server.hscan_iter(prefix + "scores", count=1000)
        }
        return edges, scores

    def set_paused(self, paused: bool) -> None:
        """Pause or resume every harvester of the job, on every machine."""
        if paused:
            self.server.set(self._key("paused"), b"1")
        else:
            self.server.delete(self._key("paused"))

    def paused(self) -> bool:
        return bool(self.server.exists(self._key("paused")))

    def seeds_marked(self) -> str | None:
        value = self.server.get(self._key("seeds"))
        return value.decode() if value is not None else None

    def set_seeds_marked(self, fingerprint: str) -> None:
        self.server.set(self._key("seeds"), fingerprint.encode())

    def set_priorities(self, priorities: dict[str, float]) -> None:
        """Overwrite the priority of marked URLs (a PageRank recomputation)."""
        urls = list(priorities)
        if not urls:
            return
        hosts = [host_of(url) for url in urls]
        self._run_buckets([
            (bucket, "set_priorities",
             [part for position in positions for part in (urls[position], hosts[position], _float(priorities[urls[position]]))])
            for bucket, positions in self._by_bucket(hosts).items()
        ])
