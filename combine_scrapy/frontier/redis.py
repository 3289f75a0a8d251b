"""The shared frontier: one Redis, any number of harvester processes on any number of machines.

Every change is one Lua script or one MULTI/EXEC, so a harvester killed at
any moment leaves the frontier consistent, and two harvesters can never lease
the same host at once. A leased URL waits in a sorted set by lease expiry and
comes back when the lease ends, whoever held it.

All keys share the prefix ``combine:{job}:`` (the job is a hash tag, so a Redis
Cluster keeps one job in one slot):

``u:<host>``         hash: the host's URLs (as kept, below) -> the URL's record, one MessagePack array of
                     harvest (marked), lock_until, priority, seq (order of marking), attempts, retries,
                     status, last_checked, etag, last_modified, distance, visits, changes,
                     first_visit, digest (trailing empty fields left out; absent numbers: 0)
``host:<host>``      hash: lock_until, delay (robots.txt Crawl-delay), urls (ever marked),
                     fetched and relevant (completed fetches, relevant pages: the host's yield),
                     leased_until (end of the lease of the URL being fetched; absent: none)
``hosts``            set of every known host
``fifo:<host>``      marked, unlocked URLs of a host (as kept) scored by order of marking (BreadthFirst); it
                     also finds a URL by its order of marking
``best:<host>``      the same URLs' orders of marking (a letter for the number of hexadecimal digits, then
                     the digits, so they sort as numbers) by priority, highest first, then order of marking
``hostq``            hosts with marked, unlocked URLs, scored by when the host unlocks
``locked``           ``host\nURL`` (as kept) of marked URLs whose own lock (a lease, a retry wait) has not
                     ended, by when it ends
``busy``             hosts with marked URLs, scored by minus their count (``hosts()``)
``stats``            hash of counters: urls, marked, done
``seq``              the last order of marking handed out
``scores``           hash url -> topic score of its last fetch (PageRank strategies)
``links``            set of ``source\\ntarget`` edges of the crawled graph
``robots:<host>``    hash: status, body, expires
``frontier``         the job marker: a token set by the first harvester that works on the frontier. A
                     harvester that finds it gone or changed knows the frontier vanished under it
                     (Redis restarted without persistence, the keys deleted) and stops instead of
                     reporting an empty frontier as a finished crawl.
``layout``           the key layout (LAYOUT), set with the job marker
``paused``           present while the job's harvesters are paused

A host's structures keep its URLs short: ``http://<host>`` is written ``:`` and
``https://<host>`` ``;``. Nothing is stored per URL but its entries in its
host's hash and queues, so a queued URL costs under 200 bytes
(``bench.frontier_size``). Methods given only a URL find its host with
``host_of``: a URL is marked under ``host_of(url)``.
"""

from __future__ import annotations

import json
import logging
import os
import random
import socket
import time
import uuid
from collections.abc import Iterable

import redis
from redis.backoff import ExponentialBackoff
from redis.retry import Retry
from scrapy.settings import BaseSettings, Settings
from scrapy_redis.connection import get_redis_from_settings

from combine_scrapy.faults import CrawlFault, FrontierVanished, StorageFault
from combine_scrapy.frontier import LEASE_SECONDS, FrontierEntry, MarkResult
from combine_scrapy.frontier.strategy import Head, Round, strategy_named
from combine_scrapy.urls import host_of

logger = logging.getLogger(__name__)

#: Seconds a harvester keeps retrying while Redis is restarted or unreachable, before it gives up.
OUTAGE_PATIENCE = 600.0

#: Seconds between two looks at the job marker while the frontier has work (with none, every time).
MARKER_CHECK_INTERVAL = 1.0

#: How many leased URLs ``next_due`` looks at beyond the first; past that it
#: answers a lower bound, which only costs the scheduler an early wake-up.
NEXT_DUE_SCAN = 64

#: The key layout this module reads and writes (``layout`` key); frontiers without it kept a hash per URL.
LAYOUT = "2"

#: URLs of a full round (BreadthFirstTime, BreadthFirst) one ``ready`` leases to its harvester at once.
ROUND_LEASE = 16

#: A URL leased by ``ready`` is claimed without asking Redis while this share of its lease is left; later
#: the claim renews the lease (or finds it lost, when it ran out and another harvester took the URL).
UNRENEWED_SHARE = 0.9

# Shared by every script: KEYS[1] is the job's key prefix (it routes the
# script to the job's slot in a cluster); numbers go to Redis as %.17g so
# timestamps and priorities round-trip exactly. A URL's record is one
# MessagePack value in its host's ``u:`` hash, its fields in the order of F.
_LIBRARY = r"""
local P = KEYS[1]

local function num(x) return string.format('%.17g', x) end

-- The order of marking as a short string that sorts as the number does: its hexadecimal digits after a
-- letter that says how many there are.
local function hexseq(seq)
  local digits = string.format('%x', seq)
  return string.char(96 + #digits) .. digits
end

local function unhex(member) return tonumber(string.sub(member, 2), 16) end

local F = {'harvest', 'lock_until', 'priority', 'seq', 'attempts', 'retries', 'status', 'last_checked', 'etag',
           'last_modified', 'distance', 'visits', 'changes', 'first_visit', 'digest'}

-- A URL as its host's structures keep it: 'http://<host>' written ':', 'https://<host>' written ';'.
local function short(host, url)
  local http, https = 'http://' .. host, 'https://' .. host
  if string.sub(url, 1, #http) == http then return ':' .. string.sub(url, #http + 1) end
  if string.sub(url, 1, #https) == https then return ';' .. string.sub(url, #https + 1) end
  return url
end

local function long(host, kept)
  local mark = string.sub(kept, 1, 1)
  if mark == ':' then return 'http://' .. host .. string.sub(kept, 2) end
  if mark == ';' then return 'https://' .. host .. string.sub(kept, 2) end
  return kept
end

local function load(host, url)
  local packed = redis.call('HGET', P .. 'u:' .. host, short(host, url))
  if not packed then return nil end
  local values, r = {cmsgpack.unpack(packed)}, {}
  for i, name in ipairs(F) do r[name] = values[i] end
  r.lock_until, r.attempts, r.retries = r.lock_until or 0, r.attempts or 0, r.retries or 0
  return r
end

local function save(host, url, r)
  local values = {}
  local last = 0
  for i, name in ipairs(F) do
    local value = r[name]
    if value == 0 and (name == 'lock_until' or name == 'attempts' or name == 'retries') then value = nil end
    values[i] = value
    if value ~= nil then last = i end
  end
  redis.call('HSET', P .. 'u:' .. host, short(host, url), cmsgpack.pack(unpack(values, 1, last)))
end

local function held(host, url) return host .. '\n' .. short(host, url) end

local function split(member)
  local at = string.find(member, '\n', 1, true)
  local host = string.sub(member, 1, at - 1)
  return host, long(host, string.sub(member, at + 1))
end

local function host_lock(host)
  return tonumber(redis.call('HGET', P .. 'host:' .. host, 'lock_until') or 0)
end

local function set_host_lock(host, lock_until)
  redis.call('SADD', P .. 'hosts', host)
  redis.call('HSET', P .. 'host:' .. host, 'lock_until', num(lock_until))
  redis.call('ZADD', P .. 'hostq', 'XX', num(lock_until), host)
end

local function with_delay(host, now, lock_until)
  local delay = tonumber(redis.call('HGET', P .. 'host:' .. host, 'delay') or 0)
  if delay ~= 0 then return math.max(lock_until, now + delay) end
  return lock_until
end

local function enqueue(url, host, seq, priority)
  redis.call('ZADD', P .. 'fifo:' .. host, seq, short(host, url))
  redis.call('ZADD', P .. 'best:' .. host, num(-priority), hexseq(seq))
  redis.call('ZADD', P .. 'hostq', 'NX', num(host_lock(host)), host)
end

-- A marked URL waits in the locked set until its lock ends, then in its host's queues.
local function place(url, host, seq, priority, lock_until, now)
  if lock_until > now then
    redis.call('ZADD', P .. 'locked', num(lock_until), held(host, url))
  else
    enqueue(url, host, seq, priority)
  end
end

local function unplace(url, host, seq)
  redis.call('ZREM', P .. 'locked', held(host, url))
  if redis.call('ZREM', P .. 'fifo:' .. host, short(host, url)) == 1 then
    redis.call('ZREM', P .. 'best:' .. host, hexseq(seq))
    if redis.call('ZCARD', P .. 'fifo:' .. host) == 0 then redis.call('ZREM', P .. 'hostq', host) end
  end
end

-- Keep the counters right when a URL's mark or fetched state changes.
local function recount(host, marked_before, done_before, marked_after, done_after)
  local marked = (marked_after and 1 or 0) - (marked_before and 1 or 0)
  if marked ~= 0 then
    redis.call('HINCRBY', P .. 'stats', 'marked', marked)
    if tonumber(redis.call('ZINCRBY', P .. 'busy', -marked, host)) >= 0 then
      redis.call('ZREM', P .. 'busy', host)
    end
  end
  local done = (done_after and 1 or 0) - (done_before and 1 or 0)
  if done ~= 0 then redis.call('HINCRBY', P .. 'stats', 'done', done) end
end

-- Move URLs whose lock has ended back to their hosts' queues; drop those handed out too often.
local function promote(now, max_attempts)
  for _, member in ipairs(redis.call('ZRANGEBYSCORE', P .. 'locked', '-inf', num(now))) do
    local host, url = split(member)
    local r = load(host, url)
    redis.call('ZREM', P .. 'locked', member)
    if r.attempts >= max_attempts then
      r.harvest = 0
      save(host, url, r)
      recount(host, true, false, false, r.status)
    else
      enqueue(url, host, r.seq, r.priority)
    end
  end
end

-- Lease a URL and lock its host unless either is taken; a lease ending exactly at ``mine`` is the
-- caller's own and is renewed. Returns 1 when leased.
local function lease(url, host, now, lease_end, mine)
  local r = load(host, url)
  if not r or r.harvest ~= 1 then return 0 end
  local own, hl = mine ~= '' and r.lock_until == tonumber(mine), host_lock(host)
  if own then
    if hl > now and hl ~= tonumber(mine) then return 0 end
  else
    if r.lock_until > now or hl > now then return 0 end
    r.attempts = r.attempts + 1
  end
  unplace(url, host, r.seq)
  r.lock_until = tonumber(lease_end)
  save(host, url, r)
  redis.call('ZADD', P .. 'locked', lease_end, held(host, url))
  set_host_lock(host, tonumber(lease_end))
  redis.call('HSET', P .. 'host:' .. host, 'leased_until', lease_end)
  return 1
end
"""

# ARGV: per-host bound (-1: none), distance, then url, host, priority for each entry. A known URL
# still marked and never fetched keeps the higher priority (re-queued in place) and the lower distance.
_MARK = r"""
local bound, distance = tonumber(ARGV[1]), tonumber(ARGV[2])
local marked, refused, raised = 0, 0, 0
for i = 3, #ARGV, 3 do
  local url, host, priority = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  local r = load(host, url)
  if r then
    if r.harvest == 1 and not r.last_checked then
      local higher, closer = priority > r.priority, distance < (r.distance or 0)
      if higher then
        r.priority = priority
        redis.call('ZADD', P .. 'best:' .. host, 'XX', num(-priority), hexseq(r.seq))
      end
      if closer then r.distance = distance ~= 0 and distance or nil end
      if higher or closer then
        save(host, url, r)
        raised = raised + 1
      end
    end
  else
    redis.call('SADD', P .. 'hosts', host)
    if bound >= 0 and tonumber(redis.call('HGET', P .. 'host:' .. host, 'urls') or 0) >= bound then
      refused = refused + 1
    else
      local seq = redis.call('INCR', P .. 'seq')
      save(host, url, {harvest = 1, priority = priority, seq = seq, distance = distance ~= 0 and distance or nil})
      redis.call('HINCRBY', P .. 'host:' .. host, 'urls', 1)
      redis.call('HINCRBY', P .. 'stats', 'urls', 1)
      recount(host, false, false, true, false)
      enqueue(url, host, seq, priority)
      marked = marked + 1
    end
  end
end
return {marked, refused, raised}
"""

# ARGV: url, host.
_REMARK = r"""
local url, host = ARGV[1], ARGV[2]
local r = load(host, url)
if not r then return 0 end
unplace(url, host, r.seq)
local was = r.harvest
r.harvest, r.lock_until, r.attempts = 1, 0, 0
save(host, url, r)
recount(host, was == 1, was == 0 and r.status, true, false)
enqueue(url, host, r.seq, r.priority)
return 1
"""

# ARGV: now, max attempts, 'fifo' or 'best', end of the hold. Returns the head of the queue of every
# free host, and of every host leased until at most the end of the hold, with the host's lock and yield.
_READY = r"""
local now = tonumber(ARGV[1])
promote(now, tonumber(ARGV[2]))
local heads = {}
local hosts = redis.call('ZRANGEBYSCORE', P .. 'hostq', '-inf', ARGV[4], 'WITHSCORES')
for i = 1, #hosts, 2 do
  local host = hosts[i]
  local h = redis.call('HMGET', P .. 'host:' .. host, 'fetched', 'relevant', 'leased_until')
  if tonumber(hosts[i + 1]) <= now or tonumber(h[3] or 0) > now then
    local url = redis.call('ZRANGE', P .. ARGV[3] .. ':' .. host, 0, 0)[1]
    if ARGV[3] == 'best' then
      local seq = unhex(url)
      url = redis.call('ZRANGEBYSCORE', P .. 'fifo:' .. host, seq, seq, 'LIMIT', 0, 1)[1]
    end
    url = long(host, url)
    local r = load(host, url)
    table.insert(heads, {url, host, num(r.priority), r.seq, r.etag or false, r.last_modified or false,
                         r.distance or 0, hosts[i + 1], h[1] or '0', h[2] or '0'})
  end
end
return heads
"""

# ARGV: depth, then hosts. For each host, the members (order of marking, hexadecimal) and scores of the
# first URLs of its 'best' queue.
_DEEPER = r"""
local found = {}
for i = 2, #ARGV do
  table.insert(found, redis.call('ZRANGE', P .. 'best:' .. ARGV[i], 0, tonumber(ARGV[1]) - 1, 'WITHSCORES'))
end
return found
"""

# ARGV: url, host, now, lease end, held lease end ('' for none).
_CLAIM = r"""
return lease(ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4], ARGV[5])
"""

# ARGV: now, lease end, how many to lease, then url, host pairs in the round's order. Leases the first URLs
# that are still free, up to the number asked; returns how many URLs it looked at and the positions of those leased.
_TAKE = r"""
local now, lease_end, want = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local taken, looked = {}, 0
for i = 4, #ARGV, 2 do
  if #taken >= want then break end
  looked = looked + 1
  if lease(ARGV[i], ARGV[i + 1], now, lease_end, '') == 1 then table.insert(taken, (i - 2) / 2) end
end
return {looked, taken}
"""

# ARGV: url, host, now, URL lock end, host lock end, keep marked (0/1), JSON of the given
# status, etag, last_modified and score (absent: None), relevant (0/1).
_COMPLETE = r"""
local url, host, now = ARGV[1], ARGV[2], tonumber(ARGV[3])
local keep = ARGV[6] == '1'
local given = cjson.decode(ARGV[7])
local r = load(host, url)
if r then
  unplace(url, host, r.seq)
  local was, status = r.harvest, r.status
  r.harvest, r.lock_until, r.attempts, r.last_checked = keep and 1 or 0, tonumber(ARGV[4]), 0, now
  r.retries = keep and r.retries + 1 or 0
  r.status = given.status and tonumber(given.status) or nil
  if given.etag then r.etag = given.etag end
  if given.last_modified then r.last_modified = given.last_modified end
  save(host, url, r)
  if given.score then redis.call('HSET', P .. 'scores', url, given.score) end
  recount(host, was == 1, was == 0 and status, keep, not keep and given.status)
  if keep then place(url, host, r.seq, r.priority, r.lock_until, now) end
end
if redis.call('SISMEMBER', P .. 'hosts', host) == 1 then
  set_host_lock(host, with_delay(host, now, tonumber(ARGV[5])))
  redis.call('HDEL', P .. 'host:' .. host, 'leased_until')
  redis.call('HINCRBY', P .. 'host:' .. host, 'fetched', 1)
  if ARGV[8] == '1' then redis.call('HINCRBY', P .. 'host:' .. host, 'relevant', 1) end
end
"""

# ARGV: url, host, host lock end, now ('' for none: no Crawl-delay stretch).
_RELEASE = r"""
local url, host = ARGV[1], ARGV[2]
local r = load(host, url)
if r then
  r.lock_until, r.attempts = 0, math.max(r.attempts - 1, 0)
  if r.harvest == 1 then
    unplace(url, host, r.seq)
    enqueue(url, host, r.seq, r.priority)
  end
  save(host, url, r)
end
local lock_until = tonumber(ARGV[3])
if ARGV[4] ~= '' then lock_until = with_delay(host, tonumber(ARGV[4]), lock_until) end
set_host_lock(host, lock_until)
redis.call('HDEL', P .. 'host:' .. host, 'leased_until')
"""

# ARGV: host, lock end.
_LOCK_HOST = r"""
set_host_lock(ARGV[1], tonumber(ARGV[2]))
"""

# ARGV: url, host, priority triples. Only marked URLs change.
_SET_PRIORITIES = r"""
for i = 1, #ARGV, 3 do
  local url, host, priority = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  local r = load(host, url)
  if r and r.harvest == 1 then
    r.priority = priority
    save(host, url, r)
    redis.call('ZADD', P .. 'best:' .. host, 'XX', num(-priority), hexseq(r.seq))
  end
end
"""

# ARGV: url, host pairs. For each URL: false when unknown, else its retries, status (false: none),
# visits, changes, first visit (false: none) and last content digest (false: none).
_RECORDS = r"""
local found = {}
for i = 1, #ARGV, 2 do
  local r = load(ARGV[i + 1], ARGV[i])
  if r then
    table.insert(found, {r.retries, r.status or false, r.visits or 0, r.changes or 0,
                         r.first_visit and num(r.first_visit) or false, r.digest or false})
  else
    table.insert(found, false)
  end
end
return found
"""

# ARGV: url, host, now, changed (0/1), digest ('' for none: a 304). Counts a fetch that gave the page.
_RECORD_VISIT = r"""
local url, host = ARGV[1], ARGV[2]
local r = load(host, url)
if not r then return 0 end
r.visits = (r.visits or 0) + 1
r.changes = (r.changes or 0) + tonumber(ARGV[4])
r.first_visit = r.first_visit or tonumber(ARGV[3])
if ARGV[5] ~= '' then r.digest = ARGV[5] end
save(host, url, r)
return 1
"""

# ARGV: how many leased URLs to look at. The earliest of: an unlocked host's
# lock, and each leased URL's max(own lock, host lock), in order of own lock
# until that order passes the best found.
_NEXT_DUE = r"""
local best = redis.call('ZRANGE', P .. 'hostq', 0, 0, 'WITHSCORES')[2]
best = best and tonumber(best)
local scan = tonumber(ARGV[1])
local locked = redis.call('ZRANGE', P .. 'locked', 0, scan - 1, 'WITHSCORES')
for i = 1, #locked, 2 do
  local lock_until = tonumber(locked[i + 1])
  if best and lock_until >= best then return num(best) end
  local host = split(locked[i])
  local due = math.max(lock_until, host_lock(host))
  if not best or due < best then best = due end
end
if #locked == 2 * scan then best = math.min(best, tonumber(locked[#locked])) end
return best and num(best)
"""


def _float(value: float) -> str:
    """A number as Redis and Lua read it back exactly."""
    return repr(float(value))


def _text(value: bytes | None) -> str | None:
    return None if value is None else value.decode()


class RedisUnavailable(redis.ConnectionError, CrawlFault):
    """Redis unreachable for longer than the outage patience, or refusing REDIS_URL's credentials: the crawl
    stops (a CrawlFault); a job command reports it as the connection error it also is."""

    reason = "frontier_unreachable"


class OutageRetry(Retry):
    """Ride out a Redis restart or outage: retry every command with capped back-off, and say so.

    redis-py reconnects between attempts; every frontier change is one Lua
    script or MULTI/EXEC, so a retried command either ran whole or not at all.
    Only after ``patience`` seconds of failure does the error reach the crawl.
    """

    def __init__(self, patience: float = OUTAGE_PATIENCE, cap: float = 8.0, base: float = 0.25):
        # A count this high lets redis-py drop the broken connection after each failure; time bounds the retries.
        super().__init__(ExponentialBackoff(cap=cap, base=base), retries=1_000_000)
        self.patience = patience

    def call_with_retry(self, do, fail, is_retryable=None, with_failure_count=False):
        failures, started = 0, None
        while True:
            try:
                result = do()
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
                if now - started >= self.patience:
                    raise RedisUnavailable(
                        f"Redis unreachable for {now - started:.0f} s ({error}): start it (or correct REDIS_URL) "
                        "and run again; nothing stored is lost"
                    ) from error
                backoff = self._backoff.compute(failures)
                logger.warning("Redis unreachable (%s): retry %d in %.2f s", error, failures, backoff)
                time.sleep(backoff)
            else:
                if failures:
                    logger.warning("Redis reachable again after %.1f s and %d retries", time.monotonic() - started, failures)
                return result


class RedisFrontier:
    """The frontier in Redis, shared by every harvester of a job."""

    def __init__(self, server: redis.Redis, job: str, *, max_attempts: int = 5, lease_seconds: float = LEASE_SECONDS,
                 lease_ahead: bool = False):
        if server.get_connection_kwargs().get("decode_responses"):
            raise ValueError("RedisFrontier needs a client that returns bytes (robots.txt bodies are binary)")
        self.server = server
        self.job = job
        self.max_attempts = max_attempts
        self.prefix = f"combine:{{{job}}}:"
        self._marker: bytes | None = None   # the job marker this harvester works under, once it has looked
        self._marker_checked = 0.0
        self.lease_ahead = lease_ahead   # ``ready`` leases the URLs it hands out (a harvester's frontier)
        self.lease_seconds = lease_seconds   # how long a URL handed out in a round stays leased to this harvester
        self._round: list[FrontierEntry] = []   # the rest of the last full round, not yet leased
        self._round_key: tuple[str, float] | None = None   # its strategy and when it was ranked
        self._leased_ahead: dict[str, tuple[str, FrontierEntry]] = {}   # URL -> (lease end, entry), not yet claimed
        self._random = random.Random()
        self._rivals = False   # another harvester took URLs of this one's rounds
        self.lost_races = 0   # URLs of a round another harvester leased first (skipped inside the take script)
        self._scripts = {
            name: server.register_script(_LIBRARY + body)
            for name, body in (
                ("mark", _MARK), ("remark", _REMARK), ("ready", _READY), ("deeper", _DEEPER), ("claim", _CLAIM),
                ("take", _TAKE), ("complete", _COMPLETE), ("release", _RELEASE), ("lock_host", _LOCK_HOST),
                ("set_priorities", _SET_PRIORITIES), ("next_due", _NEXT_DUE), ("records", _RECORDS),
                ("record_visit", _RECORD_VISIT),
            )
        }

    @classmethod
    def from_settings(
        cls, settings: BaseSettings | dict, job: str, max_attempts: int = 5, outage_patience: float = OUTAGE_PATIENCE,
        lease_seconds: float = LEASE_SECONDS, lease_ahead: bool = False,
    ) -> RedisFrontier:
        """Connect as scrapy-redis does (REDIS_URL, REDIS_PARAMS, ``get_redis_from_settings``).

        Under the user's REDIS_PARAMS lie this project's defaults: commands wait out
        an outage of up to ``outage_patience`` seconds (OutageRetry), a connection
        attempt gives up after 5 s and a stopped (not dead) server cannot hang a
        harvester for ever (60 s socket timeout).
        """
        settings = settings if isinstance(settings, BaseSettings) else Settings(settings)
        params = {
            "retry": OutageRetry(outage_patience),
            "retry_on_error": [redis.ConnectionError, redis.TimeoutError],
            "socket_connect_timeout": 5,
            "socket_timeout": 60,
        }
        params.update(settings.getdict("REDIS_PARAMS"))
        connection = settings.copy()
        connection.set("REDIS_PARAMS", params, priority=max(settings.getpriority("REDIS_PARAMS") or 0, 0) + 1)
        return cls(get_redis_from_settings(connection), job, max_attempts=max_attempts, lease_seconds=lease_seconds,
                   lease_ahead=lease_ahead)

    @classmethod
    def from_url(cls, url: str, job: str, max_attempts: int = 5, outage_patience: float = OUTAGE_PATIENCE,
                 **options) -> RedisFrontier:
        """Connect to the Redis at ``url`` (``from_settings`` with only REDIS_URL set)."""
        return cls.from_settings({"REDIS_URL": url}, job, max_attempts=max_attempts, outage_patience=outage_patience,
                                 **options)

    def _run(self, script: str, *args):
        return self._scripts[script](keys=[self.prefix], args=args)

    def _key(self, *parts: str) -> str:
        return self.prefix + ":".join(parts)

    def close(self) -> None:
        """Give back the URLs ``ready`` leased that were never claimed, so no one waits for their leases."""
        now = time.time()
        try:
            for url, (_, entry) in list(self._leased_ahead.items()):
                self.release(url, entry.host, now)
                del self._leased_ahead[url]
        except (CrawlFault, redis.RedisError) as fault:  # Redis gone: the leases end by themselves
            logger.warning("%d URLs leased ahead not given back (%s); they come back when their lease ends",
                           len(self._leased_ahead), fault)
        self._leased_ahead.clear()
        self.server.close()

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
        if self._marker is None:
            token = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {socket.gethostname()}:{os.getpid()} {uuid.uuid4().hex}"
            if self.server.set(key, token, nx=True):
                self.server.set(self._key("layout"), LAYOUT)
            elif _text(self.server.get(self._key("layout"))) != LAYOUT:
                raise StorageFault(
                    f"the Redis frontier of job {self.job} was written by an older combine-scrapy (a key per URL), "
                    f"which this one cannot read. Nothing stored is lost: delete the job's keys (combine:{{{self.job}}}:*), "
                    f"then 'scrapy sanity {self.job} --restore' and 'scrapy recycle {self.job}' mark the URLs again",
                    reason="frontier_layout",
                )
            self._marker = self.server.get(key)
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

    def mark(
        self, entries: Iterable[tuple[str, str, float]], *, max_urls_per_host: int | None = None, distance: int = 0
    ) -> MarkResult:
        """Mark new URLs ``(url, host, priority)`` at ``distance`` for crawling.

        A known URL that is still marked and was never fetched is raised: it
        keeps the higher priority (moved in its host's queue) and the lower
        distance, in the same script, so concurrent marks keep the best.
        Fetched URLs stay as they are. Refused URLs are new ones over the
        per-host bound.
        """
        args = [-1 if max_urls_per_host is None else max_urls_per_host, int(distance)]
        for url, host, priority in entries:
            args += [url, host, _float(priority)]
        return MarkResult(*self._run("mark", *args))

    def remark(self, url: str) -> bool:
        """Mark a known URL for crawling again, unlocked (recycle / re-harvest)."""
        return bool(self._run("remark", url, host_of(url)))

    def ready(self, now: float, strategy: str = "BreadthFirstTime", limit: int | None = None, *,
              hold: float = 0.0) -> Round:
        """One round of the strategy (:mod:`combine_scrapy.frontier.strategy`) over the heads of the hosts,
        with ``lease_ahead`` leased to this harvester as it is handed out, so harvesters never race for the same URLs.

        A host takes part when it has a due marked URL and is free, or leased
        (a fetch in flight) for at most ``hold`` seconds more. URLs whose lease or lock has ended
        go back to their hosts' queues first, and those handed out
        ``max_attempts`` times without completion are dropped.

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
        rows = self._run("ready", _float(now), self.max_attempts, crawl.queue, _float(now + hold))
        heads = [
            Head(
                FrontierEntry(url.decode(), host.decode(), float(priority), _text(etag), _text(last_modified),
                              int(distance)),
                int(seq), float(host_lock), int(fetched), int(relevant),
            )
            for url, host, priority, seq, etag, last_modified, distance, host_lock, fetched, relevant in rows
        ]
        self.check_marker(idle=not heads)
        round_ = crawl.round(heads, now, limit, self._deeper)
        if not self.lease_ahead:
            return round_
        if crawl.full_round:
            self._round, self._round_key = list(round_), (strategy, now)
            if self._rivals:
                self._turn_round()
            return Round(self._take_from_round(now))
        return Round(self._take(list(round_), now, len(round_))[0], held_until=round_.held_until)

    def _take_from_round(self, now: float) -> list[FrontierEntry]:
        """Lease the next ROUND_LEASE URLs of the full round that are still free."""
        taken, looked = self._take(self._round[: 4 * ROUND_LEASE], now, ROUND_LEASE)
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

    def _take(self, entries: list[FrontierEntry], now: float, want: int) -> tuple[list[FrontierEntry], int]:
        """Lease the first ``want`` of ``entries`` that are still free, in one script: those leased, and how
        many entries were looked at."""
        if not entries or want <= 0:
            return [], 0
        lease_end = _float(now + self.lease_seconds)
        looked, positions = self._run(
            "take", _float(now), lease_end, want, *(part for entry in entries for part in (entry.url, entry.host))
        )
        taken = [entries[position - 1] for position in positions]
        for entry in taken:
            self._leased_ahead[entry.url] = (lease_end, entry)
        self.lost_races += looked - len(taken)
        return taken, looked

    def _deeper(self, hosts: list[str], depth: int) -> dict[str, list[tuple[float, int]]]:
        """``(priority, order of marking)`` of the first ``depth`` due URLs of each host, by priority."""
        queues = self._run("deeper", depth, *hosts) if hosts else []
        return {
            host: [(-float(score), int(member[1:], 16)) for member, score in zip(queue[::2], queue[1::2])]
            for host, queue in zip(hosts, queues)
        }

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
        return bool(self._run("claim", entry.url, entry.host, _float(now), _float(now + lease), held or ""))

    def lock_host(self, host: str, until: float) -> None:
        self._run("lock_host", host, _float(until))

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
        fetch counts for its host's yield, as relevant when ``relevant``.
        """
        given = {
            "status": None if status is None else str(status),
            "etag": etag,
            "last_modified": last_modified,
            "score": None if score is None else _float(score),
        }
        self._run(
            "complete", url, host, _float(now), _float(url_lock_until), _float(host_lock_until),
            int(keep_marked), json.dumps({field: value for field, value in given.items() if value is not None}),
            int(bool(relevant)),
        )

    def release(self, url: str, host: str, host_lock_until: float, now: float | None = None) -> None:
        """Give a leased URL back without counting the attempt (its fetch was put off).

        With ``now``, the host's robots.txt Crawl-delay counts from then, as after a fetch.
        """
        self._run("release", url, host, _float(host_lock_until), "" if now is None else _float(now))

    def host_yield(self, host: str) -> tuple[int, int]:
        """``(fetched, relevant)``: the host's completed fetches and how many gave a relevant page."""
        fetched, relevant = self.server.hmget(self._key("host", host), "fetched", "relevant")
        return int(fetched or 0), int(relevant or 0)

    def _records(self, urls: list[str]) -> list:
        """Each URL's (retries, status, visits, changes, first visit, digest), or None when unknown."""
        return self._run("records", *(part for url in urls for part in (url, host_of(url)))) if urls else []

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
        self._run("record_visit", url, host_of(url), _float(now), int(changed), digest or "")

    def set_host_delay(self, host: str, delay: float | None) -> None:
        with self.server.pipeline() as pipe:
            pipe.sadd(self._key("hosts"), host)
            if delay is None:
                pipe.hdel(self._key("host", host), "delay")
            else:
                pipe.hset(self._key("host", host), "delay", _float(delay))
            pipe.execute()

    def next_due(self, now: float) -> float | None:
        """When the next marked URL (and its host) becomes free, or None when nothing is marked."""
        due = self._run("next_due", NEXT_DUE_SCAN)
        self.check_marker(idle=due is None)
        return None if due is None else max(float(due), now)

    def robots(self, host: str, now: float) -> tuple[int | None, bytes | None] | None:
        """The cached robots.txt answer ``(status, body)`` for a host, or None when absent or expired."""
        expires, status, body = self.server.hmget(self._key("robots", host), "expires", "status", "body")
        if expires is None or float(expires) <= now:
            return None
        return (None if status is None else int(status)), body

    def store_robots(self, host: str, status: int | None, body: bytes | None, expires: float) -> None:
        fields = {"expires": _float(expires), "status": status, "body": body}
        with self.server.pipeline() as pipe:
            pipe.delete(self._key("robots", host))
            pipe.hset(self._key("robots", host), mapping={k: v for k, v in fields.items() if v is not None})
            pipe.execute()

    def hosts(self, now: float, limit: int = 20) -> list[tuple[str, int, float]]:
        """Hosts with marked URLs, most first: ``(host, marked URLs, seconds until unlocked)``."""
        busiest = self.server.zrange(self._key("busy"), 0, limit - 1, withscores=True)
        with self.server.pipeline(transaction=False) as pipe:
            for host, _ in busiest:
                pipe.hget(self._key("host", host.decode()), "lock_until")
            locks = pipe.execute()
        return [
            (host.decode(), int(-count), max(float(lock or 0) - now, 0))
            for (host, count), lock in zip(busiest, locks)
        ]

    def counts(self, now: float) -> dict[str, int]:
        """URLs by state, for the crawl summary and status commands."""
        with self.server.pipeline() as pipe:
            pipe.hmget(self._key("stats"), "urls", "marked", "done")
            pipe.zcount(self._key("locked"), f"({_float(now)}", "+inf")
            pipe.scard(self._key("hosts"))
            (urls, marked, done), marked_locked, hosts = pipe.execute()
        return {
            "urls": int(urls or 0),
            "marked_ready": int(marked or 0) - marked_locked,
            "marked_locked": marked_locked,
            "done": int(done or 0),
            "hosts": hosts,
        }

    def add_links(self, edges: Iterable[tuple[str, str]]) -> None:
        """Remember ``(source, target)`` edges of the crawled graph."""
        members = [f"{source}\n{target}" for source, target in edges]
        if members:
            self.server.sadd(self._key("links"), *members)

    def link_graph(self) -> tuple[list[tuple[str, str]], dict[str, float]]:
        """The crawled graph's edges (sorted, so PageRank runs the same on every harvester) and topic scores."""
        links, scored = self._key("links"), self._key("scores")
        edges = sorted(tuple(edge.decode().split("\n", 1)) for edge in self.server.sscan_iter(links, count=1000))
        scores = {url.decode(): float(score) for url, score in self.server.hscan_iter(scored, count=1000)}
        return edges, scores

    def set_paused(self, paused: bool) -> None:
        """Pause or resume every harvester of the job, on every machine."""
        if paused:
            self.server.set(self._key("paused"), b"1")
        else:
            self.server.delete(self._key("paused"))

    def paused(self) -> bool:
        return bool(self.server.exists(self._key("paused")))

    def set_priorities(self, priorities: dict[str, float]) -> None:
        """Overwrite the priority of marked URLs (a PageRank recomputation)."""
        args = []
        for url, rank in priorities.items():
            args += [url, host_of(url), _float(rank)]
        if args:
            self._run("set_priorities", *args)
