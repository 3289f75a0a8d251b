"""The connection every part of the Redis frontier shares: the client, outage retry, buckets and scripts.

Made from the Scrapy settings as scrapy-redis makes its client (REDIS_URL,
REDIS_PARAMS), with this project's retry under a single Redis (OutageRetry, over faults.OutageWait).
It routes a host to its bucket (a hash tag, so one slot of a Redis Cluster),
runs the Lua scripts of ``../lua`` in a bucket or over many buckets in one
pipeline, and holds the job marker by which a harvester finds the frontier
vanished under it. The key layout is described in the package's docstring.
"""

from __future__ import annotations

import importlib.resources
import logging
import os
import re
import socket
import time
import uuid
import zlib
from collections.abc import Callable, Iterable
from functools import cached_property
from typing import Any, TypeVar, cast

import redis
from redis.backoff import NoBackoff
from redis.cluster import RedisCluster
from redis.commands.core import Script
from redis.retry import Retry
from scrapy.settings import BaseSettings, Settings
from scrapy.utils.misc import load_object
from scrapy_redis.connection import get_redis_from_settings

from combine_scrapy.access.urls import host_of
from combine_scrapy.faults import (
    OUTAGE_PATIENCE,
    CrawlFault,
    FrontierVanished,
    Outage,
    OutageWait,
    StopSignals,
    StorageFault,
)
from combine_scrapy.frontier.redis.members import QueueSeqs
from combine_scrapy.frontier.strategy import STRIDE_POWER, YIELD_DECAY, YIELD_PRIOR_FETCHED, YIELD_PRIOR_RELEVANT
from combine_scrapy.frontier.tails import url_of

logger = logging.getLogger(__name__)

#: A client of one Redis or of a Redis Cluster.
RedisClient = redis.Redis | RedisCluster

#: Seconds between two looks at the job marker while the frontier has work (with none, every time).
MARKER_CHECK_INTERVAL = 1.0

#: The key layout this module reads and writes (``layout`` key). Layout 10 kept a queued URL's priority in its
#: record as well as in its queue's score, which layout 11 keeps in the score alone (the record's is as of when the URL
#: last left its queue), so a re-scoring writes no record: a frontier of layout 10 is read as it is. Layout 9 and before kept no copy of each host's
#: queue's best in its ``u:`` hash (QUEUE_TOP in ``lua/library.lua``), which layout 10 reads with the URLs' records
#: instead of the queue. Layout 8 and before counted the marked URLs in each
#: bucket's ``stats`` ('marked'), which layout 9 counts as 'urls' less 'done' and 'dropped' (a completion moves one
#: count, not two), and deleted a host's ``leased_until`` when its lease ended, which layout 9 writes as 0 (in the
#: HSET of its lock, not an HDEL). Layouts 6 and 7 counted a host's URLs ever marked
#: (what MaxUrlsPerHost bounds) by the length of its ``u:`` hash, an HLEN a host marked, which layout 8 keeps in that
#: hash (URL_COUNT in ``lua/library.lua``), read and written with the URLs' records. Layout 6 kept two queues a host, ``fifo:<host>``
#: (the URLs, by order of marking) and ``b:<host>`` (their orders of marking, by priority), which layout 7 keeps as
#: one, ``q:<host>``, and a count of each host's marked URLs (``busy``), which layout 7 counts when read. Layout 5
#: also kept each host's count of URLs ever marked (``urls`` in ``host:<host>``), which layout 6 reads as the
#: length of the host's ``u:`` hash. Layout 4 kept each host's 'best' queue in ``best:<host>`` scored by minus the
#: priority (text a small sorted set parses at every comparison), layout 5 in ``b:<host>`` scored by BEST_SCALE
#: times that; layout 3 also lacked the heads of each bucket (``heads``, ``leasedheads``, ``waiting``). A harvester
#: that opens a frontier of layout 3 to 9 upgrades it in place (``upgrade.lua``). Layout 2 kept a whole job under
#: one hash tag (one slot of a Redis Cluster); before it, a hash per URL.
LAYOUT = "11"

#: The layouts that opening upgrades to LAYOUT in place.
UPGRADED_LAYOUTS = ("3", "4", "5", "6", "7", "8", "9", "10")

#: Of those, the layouts whose keys LAYOUT reads as they are: opening only sets the layout.
READ_AS_IS = ("10",)

#: Buckets a new job's hosts are spread over on a Redis Cluster, unless COMBINE_REDIS_BUCKETS says: a bucket is
#: one hash tag, so one slot of the cluster. 32 spreads a crawl evenly over a cluster of up to about ten masters
#: and gives eight harvesters four buckets each to look at first; a look over the whole frontier costs a script
#: per bucket.
CLUSTER_BUCKETS = 32

#: Buckets a new job's hosts are spread over on a single Redis, unless COMBINE_REDIS_BUCKETS says. There one
#: script reaches every bucket, so buckets spread nothing, and each look at the heads pays for each bucket (its
#: locked URLs, locked, leased and free hosts: four commands a bucket at least); 8 still give eight harvesters a
#: bucket each to look at first. A job keeps the count it was made with, so one moved to a cluster later spreads
#: over at most 8 of its masters.
SINGLE_REDIS_BUCKETS = 8

# The Lua scripts live in frontier/lua/<name>.lua, each file opening with a comment on what its KEYS and ARGV
# are. library.lua holds the helpers every bucket script shares and is prepended to each; open.lua runs alone.
_LUA = importlib.resources.files("combine_scrapy.frontier") / "lua"


def _lua(name: str) -> str:
    """The script in lua/<name>.lua without its opening comment, so Redis caches only the code."""
    return re.sub(r"\A(?:--.*\n)*", "", (_LUA / f"{name}.lua").read_text(encoding="utf-8"))


#: A URL's score in its host's queue is minus its priority times BEST_SCALE: a power of two, so the same
#: order and ties, exactly. A small sorted set (a listpack) keeps a score that prints as an integer below 1e17
#: as an integer, which it compares at no cost, and any other as text, parsed again at every comparison (most
#: of Redis's CPU in a mark went to that): scaled, the priorities a crawl gives (1/16 to 1.38) are integers.
BEST_SCALE = 2.0 ** 56


def queue_member(seq: int, tail: str) -> str:
    """A URL's member of its host's queue: its order of marking (a letter for the number of its hexadecimal digits,
    then the digits: ``hexseq`` in lua/library.lua) then the URL as kept (``tails.tail_of``)."""
    digits = f"{seq:x}"
    return chr(96 + len(digits)) + digits + tail


def queued_seq(member: bytes) -> int:
    """The order of marking at the start of a member of a host's queue (or of ``heads``): a letter for the number
    of its hexadecimal digits, then the digits."""
    return int(member[1:member[0] - 95], 16)


def queue_score(priority: float) -> str:
    """A URL's score in its host's queue (``best_score`` in ``lua/library.lua``, the same double) as Redis reads it."""
    score = 0.0 - priority * BEST_SCALE
    return str(int(score)) if score.is_integer() and abs(score) < 1e17 else repr(score)


def queued_url(host: str, member: bytes) -> str:
    """The URL of a member of ``host``'s queue: after its order of marking, the URL as kept (``tails.tail_of``)."""
    return url_of(host, member[member[0] - 95:].decode())

# A head's weighted priority in Lua is strategy.weighted_priority with the same constants, so the same doubles.
_CONSTANTS = (f"local YIELD_PRIOR_RELEVANT, YIELD_PRIOR_FETCHED = {YIELD_PRIOR_RELEVANT!r}, {YIELD_PRIOR_FETCHED!r}\n"
              f"local YIELD_DECAY, STRIDE_POWER, BEST_SCALE = {YIELD_DECAY!r}, {STRIDE_POWER!r}, {BEST_SCALE!r}\n")
#: What a script file reads without defining it: nil where the script runs alone, given where complete_links.lua
#: runs it as a function.
_GIVEN = {"mark": "completing", "complete": "queued"}

_BUCKET_SCRIPT_NAMES = (
    "mark", "remark", "ready", "top_heads", "head_rows", "deeper", "claim", "take", "take_heads", "complete", "release",
    "lock_host", "host_delay", "store_robots", "set_priorities", "next_due", "records", "record_visit", "upgrade",
    "busiest", "host_counts",
)
#: Scripts over every bucket of a single Redis at once, for solo mode (``solo.py``).
_SOLO_SCRIPT_NAMES = ("solo_enter", "solo_look", "solo_leave")


#: The library alone, as a script that is given no solo keys (a cluster's) reads it.
LIBRARY = "local SOLO_KEYED = false\n" + _CONSTANTS + _lua("library")


def _body(name: str) -> str:
    """The code of lua/<name>.lua as a script (or an "each:" script's function) runs it alone."""
    given = _GIVEN.get(name)
    return (f"local {given}\n" if given else "") + _lua(name)


def _ending(code: str) -> str:
    """``code`` as the body of a function whose answer the script returns after sending its writes to the hosts'
    ``u:`` hashes and its solo notes."""
    return f"local function script()\n{code}\nend\nlocal answer = script()\nflush_records()\nsolo_flush()\nreturn answer\n"


# On a single Redis a pipeline of calls of one script over several buckets is one call of the script's
# "each:" form: KEYS the buckets' prefixes, ARGV each bucket's argument count then its arguments; it runs the
# script once a bucket (its ARGV that bucket's) and answers a list of their answers (false for none). A cluster
# reaches one slot a script, so there it stays a pipeline. mark and set_priorities take several buckets
# themselves; upgrade rewrites whole buckets, which stay one a call; store_robots is called alone.
_EACH_BUCKET = """
local answers, at = {}, 1
for k = 1, #KEYS do
  P = KEYS[k]
  local count, args = tonumber(ARGV[at]), {}
  for j = 1, count do args[j] = ARGV[at + j] end
  at = at + count + 1
  local answer = in_bucket(args)
  if answer == nil then answer = false end
  answers[k] = answer
end
return answers
"""


def _scripts(single_node: bool) -> dict[str, str]:
    """Every script's code by name: on a single Redis each call's KEYS begin with the ``solo`` key and its log
    (SOLO_KEYED, ``RedisConnection.run_scripts``), on a cluster they do not (nor are there solo scripts)."""
    library = "local SOLO_KEYED = true\n" + _CONSTANTS + _lua("library") if single_node else LIBRARY
    scripts = {name: library + _ending(_body(name)) for name in _BUCKET_SCRIPT_NAMES}
    scripts |= {
        f"each:{name}": library + "local function in_bucket(ARGV)\n" + _body(name) + "\nend\n" + _ending(_EACH_BUCKET)
        for name in _BUCKET_SCRIPT_NAMES if name not in ("mark", "set_priorities", "upgrade", "store_robots")
    }
    # The completion of a page with the mark of its links, on a single Redis (a cluster's mark reaches one slot a call).
    scripts["complete_links"] = (library + "local function mark_links(KEYS, ARGV, completing)\n" + _lua("mark")
                                 + "\nend\n" + "local function complete_page(ARGV, queued)\n" + _lua("complete")
                                 + "\nend\n" + _ending(_lua("complete_links")))
    if single_node:
        scripts |= {name: library + _ending(_lua(name)) for name in _SOLO_SCRIPT_NAMES}
    return scripts


_OPEN = _lua("open")

#: Arguments a combined call ("each:" scripts) carries at most: a larger batch (``scrapy sanity`` over a
#: whole crawl) stays a pipeline of calls, so no one script holds Redis for long.
EACH_BUCKET_ARGS = 20_000

_T = TypeVar("_T")


def number(value: float) -> str:
    """A number as Redis and Lua read it back exactly."""
    return repr(float(value))


def text(value: bytes | None) -> str | None:
    """A stored string (bytes) as text; None stays None."""
    return None if value is None else value.decode()


class RedisUnavailable(redis.ConnectionError, CrawlFault):
    """Redis unreachable for longer than the outage patience, or refusing REDIS_URL's credentials: the crawl
    stops (a CrawlFault); a job command reports it as the connection error it also is."""

    reason = "frontier_unreachable"


class OutageRetry(Retry):
    """Ride out a Redis restart or outage: retry every command for as long as ``faults.OutageWait`` waits.

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

    def __init__(self, patience: float = OUTAGE_PATIENCE) -> None:
        # A count this high lets redis-py drop the broken connection after each failure; time bounds the retries,
        # and the pauses between them are the outage wait's.
        super().__init__(NoBackoff(), retries=1_000_000)
        self.patience = patience
        self.outages = OutageWait("Redis", "REDIS_URL", RedisUnavailable, logger)

    def call_with_retry(self, do: Callable[[], _T], fail: Callable[..., Any],
                        is_retryable: Callable[[Exception], bool] | None = None, with_failure_count: bool = False) -> _T:
        outage: Outage | None = None
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
                    outage = outage or self.outages.begin(self.patience)
                    fail(error, outage.failures + 1) if with_failure_count else fail(error)
                    outage.failed(error, stop)
                else:
                    if outage is not None:
                        outage.ended()
                    return result


def bucket_of(host: str, buckets: int) -> int:
    """The bucket a host's keys are in: a hash stable across processes and machines."""
    return zlib.crc32(host.encode()) % buckets


def job_key_patterns(job: str) -> tuple[str, str]:
    """SCAN patterns matching every key of the job: the job-wide ones and its buckets' (job names hold no ':')."""
    return f"combine:{{{job}}}:*", f"combine:{{{job}:b*}}:*"


def client_from_settings(settings: BaseSettings | dict[str, Any], outage_patience: float = OUTAGE_PATIENCE) -> RedisClient:
    """A client made as scrapy-redis makes it (REDIS_URL, REDIS_PARAMS, ``get_redis_from_settings``).

    Under the user's REDIS_PARAMS lie this project's defaults: commands wait out
    an outage of up to ``outage_patience`` seconds (OutageRetry), a connection
    attempt gives up after 5 s and a stopped (not dead) server cannot hang a
    harvester for ever (60 s socket timeout). ``"redis_cls":
    "redis.cluster.RedisCluster"`` in REDIS_PARAMS connects to a Redis
    Cluster, REDIS_URL naming any of its nodes; it keeps redis-py's own
    retries.
    """
    settings = settings if isinstance(settings, BaseSettings) else Settings(settings)
    params: dict[str, Any] = {"socket_connect_timeout": 5, "socket_timeout": 60}
    params.update(settings.getdict("REDIS_PARAMS"))
    client = params.get("redis_cls")
    client = load_object(client) if isinstance(client, str) else client
    if not (isinstance(client, type) and issubclass(client, RedisCluster)):
        params = {"retry": OutageRetry(outage_patience), "retry_on_error": [redis.ConnectionError, redis.TimeoutError],
                  **params}
    connection = settings.copy()
    connection.set("REDIS_PARAMS", params, priority=max(settings.getpriority("REDIS_PARAMS") or 0, 0) + 1)
    server: RedisClient = get_redis_from_settings(connection)
    return server


class RedisConnection:
    """One job's frontier in one Redis (or Redis Cluster): its keys, its buckets, its scripts and its marker."""

    def __init__(self, server: RedisClient, job: str, buckets: int | None = None) -> None:
        """``buckets``: of a new frontier (None: SINGLE_REDIS_BUCKETS on a single Redis, CLUSTER_BUCKETS on a
        cluster); a frontier that has a bucket count keeps its own."""
        if server.get_connection_kwargs().get("decode_responses"):
            raise ValueError("RedisFrontier needs a client that returns bytes (robots.txt bodies are binary)")
        if buckets is not None and buckets < 1:
            raise ValueError(f"COMBINE_REDIS_BUCKETS must be at least 1, not {buckets}")
        self.server = server
        self.job = job
        self.single_node = not isinstance(server, RedisCluster)   # one script may reach several buckets
        if buckets is None:
            buckets = SINGLE_REDIS_BUCKETS if self.single_node else CLUSTER_BUCKETS
        self.prefix = f"combine:{{{job}}}:"   # the job-wide keys
        self._configured_buckets = buckets
        self._buckets_stored = False
        self.scripts: dict[str, Script] = {name: server.register_script(code)
                                           for name, code in _scripts(self.single_node).items()}
        #: Before every call's own KEYS on a single Redis (``library.lua`` takes them out): the job's ``solo`` key
        #: and its log.
        self.solo_keys = [self.key("solo"), self.key("solo_log")] if self.single_node else []
        #: Whether this process's scripts look at the ``solo`` key (their first ARGV on a single Redis): all but
        #: those of a harvester at work that is not solo itself (``queue.RedisQueue``), which no solo harvester
        #: needs to hear from: one that is alive finds it at its next renewal and leaves solo mode (``solo.py``).
        self.solo_checked: Callable[[], bool] = lambda: True
        self._deferred: list[tuple[str, list[str], list[Any]]] = []   # script calls sent with the next one
        self.marker = JobMarker(self)
        self.queue_seqs = QueueSeqs()   # the orders of marking of the URLs this harvester marked (a re-scoring's)

    @cached_property
    def buckets(self) -> int:
        """How many buckets the job's hosts are spread over: the frontier's own once it has one (read when first
        needed, so opening a frontier does not reach Redis)."""
        stored = self.server.get(self.key("buckets"))
        self._buckets_stored = stored is not None
        return int(stored) if stored else self._configured_buckets

    @cached_property
    def bucket_prefixes(self) -> list[str]:
        """The key prefix of each bucket."""
        return [f"combine:{{{self.job}:b{bucket}}}:" for bucket in range(self.buckets)]

    @cached_property
    def _bucket_nodes(self) -> list[str]:
        return [self._node_of(prefix) for prefix in self.bucket_prefixes]

    @cached_property
    def bucket_order(self) -> list[int]:
        """The buckets by the node that holds them, so that a share of consecutive ones is on as few nodes as can be."""
        return sorted(range(self.buckets), key=lambda bucket: (self._bucket_nodes[bucket], bucket))

    def _node_of(self, prefix: str) -> str:
        """The name of the cluster node holding the keys under ``prefix`` ('' for a single Redis)."""
        if isinstance(self.server, RedisCluster):
            return str(self.server.get_node_from_key(prefix).name)  # type: ignore[no-untyped-call]
        return ""

    def reaches_job_keys(self, buckets: Iterable[int]) -> bool:
        """Whether a pipeline over ``buckets`` reaches the node of the job-wide keys anyway (always, on a single Redis)."""
        job_node = self._node_of(self.prefix)
        return any(self._bucket_nodes[bucket] == job_node for bucket in buckets)

    def key(self, *parts: str) -> str:
        """A job-wide key."""
        return self.prefix + ":".join(parts)

    def prefix_of(self, host: str) -> str:
        """The key prefix of the bucket that holds ``host``."""
        return self.bucket_prefixes[bucket_of(host, self.buckets)]

    def run(self, host: str, script: str, *args: str | int | float) -> Any:
        """Run a script in the bucket of ``host``."""
        return self.run_scripts([(script, [self.prefix_of(host)], list(args))])[0]

    def run_buckets(self, calls: list[tuple[int, str, list[Any]]], also: Callable[[Any], None] | None = None) -> list[Any]:
        """Run ``(bucket, script, args)`` calls in one pipeline (a round trip per node); their answers in order,
        then those of what ``also`` queued in the same pipeline.

        On a single Redis several calls of one script are one call (``_EACH_BUCKET``).
        """
        if self._combines(calls):
            answers = self.run_scripts([self._combined(calls)], also)
            return list(answers[0]) + answers[1:]
        return self.run_scripts([(script, [self.bucket_prefixes[bucket]], args) for bucket, script, args in calls], also)

    def run_scripts(self, calls: list[tuple[str, list[str], list[Any]]], also: Callable[[Any], None] | None = None) -> list[Any]:
        """Run ``(script, keys, args)`` calls in one pipeline (a round trip per node), after any deferred ones;
        their answers in order, then those of what ``also`` queued in the same pipeline.

        A call of a script not yet in a node's cache (Redis restarted, or its scripts flushed) is run again
        alone, which loads it, after the calls behind it ran: calls of one pipeline must not depend on one
        another's order. What ``also`` queued (reads, renewals: safe to repeat) is then sent again, so that it
        sees every call's effect. Any other error is raised.
        """
        deferred, self._deferred = self._deferred, []
        calls = deferred + calls
        if self.single_node:
            checked = "1" if self.solo_checked() else "0"
            calls = [(script, [*self.solo_keys, *keys], [checked, *args]) for script, keys, args in calls]
        if len(calls) == 1 and also is None:
            script, keys, args = calls[0]
            return [self.scripts[script](keys=keys, args=args)]
        answers = self._pipelined(calls, also)
        missing = False
        for position, (answer, (script, keys, args)) in enumerate(zip(answers, calls)):
            if isinstance(answer, redis.exceptions.NoScriptError):
                answers[position] = self.scripts[script](keys=keys, args=args)
                missing = True
            elif isinstance(answer, Exception):
                raise answer
        if missing and also is not None:
            answers[len(calls):] = self._pipelined([], also)
        return answers[len(deferred):]

    def _pipelined(self, calls: list[tuple[str, list[str], list[Any]]], also: Callable[[Any], None] | None) -> list[Any]:
        """The answers (errors as values) of ``calls`` by their scripts' SHA1, then of ``also``, in one pipeline."""
        with self.server.pipeline(transaction=False) as pipe:
            for script, keys, args in calls:
                pipe.execute_command("EVALSHA", self.scripts[script].sha, len(keys), *keys, *args)
            if also is not None:
                also(pipe)
            answers: list[Any] = pipe.execute(raise_on_error=False)
        return answers

    def defer(self, script: str, keys: list[str], args: list[Any]) -> None:
        """Send a script call that answers nothing with the next call (``run_scripts``; ``run_scripts([])`` sends
        it at once), a round trip less; a killed harvester loses it, so only for what may be lost."""
        self._deferred.append((script, keys, args))

    def _combines(self, calls: list[tuple[int, str, list[Any]]]) -> bool:
        """Whether ``calls`` go to Redis as one call of an "each:" script (``_EACH_BUCKET``): on a single Redis,
        several calls of one script that has that form, not too many arguments in all."""
        return (self.single_node and len(calls) > 1 and f"each:{calls[0][1]}" in self.scripts
                and all(script == calls[0][1] for _, script, _ in calls)
                and sum(len(args) + 1 for _, _, args in calls) <= EACH_BUCKET_ARGS)

    def _combined(self, calls: list[tuple[int, str, list[Any]]]) -> tuple[str, list[str], list[Any]]:
        """The call of the "each:" script (script, KEYS, ARGV) that makes ``calls`` one call."""
        args: list[Any] = []
        for _, _, found in calls:
            args += [len(found), *found]
        return f"each:{calls[0][1]}", [self.bucket_prefixes[bucket] for bucket, _, _ in calls], args

    def by_bucket(self, hosts: Iterable[str]) -> dict[int, list[int]]:
        """Positions of ``hosts`` grouped by bucket, in order."""
        groups: dict[int, list[int]] = {}
        for position, host in enumerate(hosts):
            groups.setdefault(bucket_of(host, self.buckets), []).append(position)
        return groups

    def delete_all(self) -> None:
        """Delete every key of the job, on every node."""
        for pattern in job_key_patterns(self.job):
            keys = list(self.server.scan_iter(match=pattern, count=1000))
            if keys:
                self.server.delete(*keys)

    def store_buckets(self) -> None:
        """Keep the bucket count in the frontier, once; a frontier that has one already keeps its own."""
        if not self._buckets_stored:
            # The client returns bytes (RedisConnection refuses decode_responses); redis's types cannot tell.
            self.check_buckets(cast("bytes | None", self.server.set(self.key("buckets"), self.buckets, nx=True, get=True)))

    def check_buckets(self, stored: bytes | None) -> None:
        """Refuse to go on when the frontier was given another bucket count since this harvester opened it."""
        if stored and int(stored) != self.buckets:
            raise StorageFault(
                f"the Redis frontier of job {self.job} was made with {int(stored)} buckets while this harvester "
                f"opened it with {self.buckets}: open it again (harvesters read the frontier's own)",
                reason="frontier_layout",
            )
        self._buckets_stored = True

    def close(self) -> None:
        """Close the client's connections (deferred calls unsent: ``run_scripts([])`` first)."""
        self.server.close()


def read_records(connection: RedisConnection, urls: list[str]) -> list[Any]:
    """Each URL's (retries, status, visits, changes, first visit, digest), or None when unknown."""
    if not urls:
        return []
    hosts = [host_of(url) for url in urls]
    groups = list(connection.by_bucket(hosts).items())
    answers = connection.run_buckets([
        (bucket, "records", [part for position in positions for part in (urls[position], hosts[position])])
        for bucket, positions in groups
    ])
    records: list[Any] = [None] * len(urls)
    for (_, positions), found in zip(groups, answers):
        for position, record in zip(positions, found):
            records[position] = record
    return records


class JobMarker:
    """The job marker: how a harvester finds the frontier vanished under it (see the ``frontier`` key), and
    where opening a frontier upgrades an older layout."""

    def __init__(self, connection: RedisConnection) -> None:
        self.connection = connection
        self._marker: bytes | None = None   # the job marker this harvester works under, once it has looked
        self._checked = 0.0
        self._open_script = connection.server.register_script(_OPEN)

    def token(self) -> str | None:
        """The job marker's token: None when no harvester has worked on this frontier since it was (re)created."""
        return text(cast("bytes | None", self.connection.server.get(self.connection.key("frontier"))))

    @property
    def opened(self) -> bool:
        """Whether this harvester has looked at the job marker (and so upgraded an older layout)."""
        return self._marker is not None

    def check(self, idle: bool = False) -> None:
        """Raise FrontierVanished when the job marker this harvester first saw is gone or replaced.

        The first look sets the marker if there is none (a new job, or one
        seeded by ``scrapy seed``). Later looks cost one GET, at most every
        MARKER_CHECK_INTERVAL seconds, but always when the frontier seems to
        have nothing left (``idle``): that is how a vanished frontier looks.
        """
        now = time.monotonic()
        if self._marker is not None and not idle and now - self._checked < MARKER_CHECK_INTERVAL:
            return
        self._checked = now
        connection = self.connection
        key = connection.key("frontier")
        patterns = " and ".join(job_key_patterns(connection.job))
        if self._marker is None:
            token = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {socket.gethostname()}:{os.getpid()} {uuid.uuid4().hex}"
            marker, layout, buckets = self._open_script(
                keys=[key, connection.key("layout"), connection.key("buckets")], args=[token, LAYOUT, connection.buckets]
            )
            if text(layout) in UPGRADED_LAYOUTS or text(marker) == token:  # an older layout, or URLs marked
                connection.check_buckets(buckets)                             # before any harvester opened it
                self._upgrade(text(layout))
                layout = LAYOUT.encode()
            if text(layout) != LAYOUT:
                raise StorageFault(
                    f"the Redis frontier of job {connection.job} was written by an older combine-scrapy (all of a "
                    "job's keys under one hash tag, or a key per URL), which this one cannot read. Nothing stored is "
                    f"lost: delete the job's keys ({patterns}), then 'scrapy sanity {connection.job} --restore' and "
                    f"'scrapy recycle {connection.job}' mark the URLs again",
                    reason="frontier_layout",
                )
            connection.check_buckets(buckets)
            self._marker = marker
            return
        found = connection.server.get(key)
        if found != self._marker:
            where = connection.server.get_connection_kwargs()
            raise FrontierVanished(
                f"the frontier of job {connection.job} vanished from Redis at {where.get('host')}:{where.get('port')}"
                f"/{where.get('db', 0)} (its marker key {key} is {'gone' if found is None else 'replaced'}: was Redis "
                "restarted without persistence, or the job's keys deleted?). Nothing stored is lost. To recover: "
                f"'scrapy sanity {connection.job}' shows what the records hold that the frontier lacks, "
                f"'scrapy sanity {connection.job} --restore' marks those URLs again and 'scrapy recycle "
                f"{connection.job}' marks their links; then start the harvesters again. Run Redis with --appendonly yes "
                "so a restart keeps the frontier"
            )

    def _upgrade(self, layout: str | None) -> None:
        """Bring every bucket to today's layout (``upgrade.lua``, a script per bucket), then set it: a frontier of
        layout 10 is read as it is (each queued URL's record holds the priority its queue's score holds), one of
        layout 9 or before has no copy of each host's queue's best in its ``u:`` hash (written), one of layout 8 or
        before counts its marked URLs in ``stats`` (made its dropped ones), one of layout 7 or before
        has no count of each host's URLs in its ``u:`` hash (written), one of layout 6 or before keeps two queues a
        host (made one), one of layout 5 or before also a count of each host's URLs in its ``host:`` hash
        (dropped), one of layout 4 also has its 'best' queues scored by minus the priority under ``best:<host>``,
        one of layout 3 also lacks the heads, and one seeded
        (``scrapy seed``) by an older combine-scrapy before any harvester opened it has neither heads nor layout.
        Every URL, host and lease stays as it was; a harvester that opens it meanwhile runs the same scripts, which
        find nothing left to move. Harvesters of an older layout still at work would write the old queues and
        counts: stop them first.
        """
        connection = self.connection
        if layout not in READ_AS_IS:
            connection.run_buckets([(bucket, "upgrade", [layout or ""]) for bucket in range(connection.buckets)])
        if layout != LAYOUT:
            connection.server.set(connection.key("layout"), LAYOUT)
            logger.info("Redis frontier of job %s upgraded from layout %s to %s", connection.job, layout, LAYOUT)


class RedisPart:
    """One concern of the Redis frontier (the queue, the robots.txt cache, ...) over the connection they share."""

    def __init__(self, connection: RedisConnection) -> None:
        self.connection = connection
