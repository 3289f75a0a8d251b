"""The Redis frontier's URL queue: marking, handing out rounds, leases and locks.

A harvester's queue (``lease_ahead``) leases the URLs of a round as it hands
them out, so its claims cost no round trip, and looks first at its share of
the buckets (``sharing.py``), so harvesters do not race for the same hosts.
"""

from __future__ import annotations

import heapq
import json
import logging
import math
import random
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import redis

from combine_scrapy.access.urls import host_of
from combine_scrapy.faults import CrawlFault
from combine_scrapy.frontier import LEASE_SECONDS, FrontierEntry, Marking, MarkResult
from combine_scrapy.frontier.redis.connection import (
    BEST_SCALE,
    RedisConnection,
    RedisPart,
    number,
    queued_seq,
    read_records,
    text,
)
from combine_scrapy.frontier.redis.sharing import HarvesterShare
from combine_scrapy.frontier.redis.solo import SoloMode, end_solo
from combine_scrapy.frontier.strategy import FIRST_DEPTH, CrawlStrategy, Head, Round, strategy_named
from combine_scrapy.frontier.tails import tail_of

logger = logging.getLogger(__name__)

#: How many leased URLs ``next_due`` looks at beyond the first; past that it
#: answers a lower bound, which only costs the scheduler an early wake-up.
NEXT_DUE_SCAN = 64

#: Heads a BestFirst ``ready`` asks each bucket for first, at least (three times its share of the round if more):
#: a bucket whose first ones all make the round is asked again for more, which the spread of the hosts over the
#: buckets makes rare.
FIRST_HEADS = 6

#: URLs of a full round (BreadthFirstTime, BreadthFirst) one ``ready`` leases to its harvester at once.
ROUND_LEASE = 16

#: A URL leased by ``ready`` is claimed without asking Redis while this share of its lease is left; later
#: the claim renews the lease (or finds it lost, when it ran out and another harvester took the URL).
UNRENEWED_SHARE = 0.9


def _queue(members_and_scores: list[Any]) -> list[tuple[float, int]]:
    """A host's queue's members and scores (ZRANGE WITHSCORES) as ``(priority, order of marking)``."""
    return [(0.0 - float(score) / BEST_SCALE, queued_seq(member))
            for member, score in zip(members_and_scores[::2], members_and_scores[1::2])]


def _summed(answers: list[Any]) -> MarkResult:
    """The answers of a mark's scripts (one a bucket on a cluster) as one MarkResult."""
    return MarkResult(*(sum(int(answer[column]) for answer in answers) for column in range(3)))


class RedisQueue(RedisPart):
    """Which URLs are marked and when each URL and host may be fetched (``UrlQueue``), shared by the job's harvesters."""

    def __init__(self, connection: RedisConnection, *, max_attempts: int = 5, lease_seconds: float = LEASE_SECONDS,
                 lease_ahead: bool = False, solo: bool = True) -> None:
        super().__init__(connection)
        self.max_attempts = max_attempts
        self.lease_ahead = lease_ahead   # ``ready`` leases the URLs it hands out (a harvester's frontier)
        self.lease_seconds = lease_seconds   # how long a URL handed out in a round stays leased to this harvester
        self.share = HarvesterShare(connection)   # its entry among the job's harvesters, the buckets it looks at first
        # alone on a single Redis, a harvester's frontier keeps BestFirst's heads in memory (``solo.py``)
        self.solo = SoloMode(connection, self.share) if solo and lease_ahead and connection.single_node else None
        if lease_ahead:
            connection.solo_checked = self._solo_checked
        self._deeper_found: dict[str, list[tuple[float, int]]] = {}   # the 'best' queues the last look fetched
        self._round: list[FrontierEntry] = []   # the rest of the last full round, not yet leased
        self._round_key: tuple[str, float] | None = None   # its strategy and when it was ranked
        self._leased_ahead: dict[str, tuple[str, FrontierEntry]] = {}   # URL -> (lease end, entry), not yet claimed
        self._random = random.Random()
        self._rivals = False   # another harvester took URLs of this one's rounds
        self.lost_races = 0   # URLs of a round another harvester leased first (skipped inside the take script)

    def _solo_checked(self) -> bool:
        """Whether this harvester's scripts look at the ``solo`` key: until it is among the job's harvesters, and
        while it is solo itself (its scripts note what they change for its memory)."""
        return not self.share.registered or self.solo is not None and self.solo.heads is not None

    def close(self) -> None:
        """Give back the URLs ``ready`` leased that were never claimed, so no one waits for their leases; leave
        the job's harvesters; send the deferred calls; close the connection."""
        now = time.time()
        try:
            for url, (_, entry) in list(self._leased_ahead.items()):
                self.release(url, entry.host, now)
                del self._leased_ahead[url]
            if self.solo is not None:
                self.solo.leave()
            self.share.leave()
            self.connection.run_scripts([])   # the deferred calls
        except (CrawlFault, redis.RedisError) as fault:  # Redis gone: the leases end by themselves
            logger.warning("%d URLs leased ahead not given back (%s); they come back when their lease ends",
                           len(self._leased_ahead), fault)
        self._leased_ahead.clear()
        self.connection.close()

    def mark(
        self, entries: Iterable[tuple[str, str, float]], *, max_urls_per_host: int | None = None, distance: int = 0
    ) -> MarkResult:
        """Mark new URLs ``(url, host, priority)`` at ``distance`` for crawling.

        A known URL that is still marked and was never fetched is raised: it
        keeps the higher priority (moved in its host's queue) and the lower
        distance, in the same script, so concurrent marks keep the best.
        Fetched URLs stay as they are. Refused URLs are new ones over the
        per-host bound. The batch reserves its orders of marking with one
        INCRBY and numbers its URLs in the order given. On a single Redis the
        whole batch is one script call (its INCRBY inside); on a Redis Cluster,
        whose scripts reach one slot each, the INCRBY, then a script per bucket
        in one pipeline.
        """
        entries = list(entries)
        if not entries:
            return MarkResult(0, 0, 0)
        links = Marking(entries, max_urls_per_host, distance)
        calls, numbered_from = self._mark_calls(links)
        return self._marked(links, numbered_from, self.connection.run_scripts(calls))

    def _marked(self, links: Marking, numbered_from: int, answers: list[Any]) -> MarkResult:
        """The answers of a mark's scripts as one MarkResult, the orders of marking they gave kept (``QueueSeqs``):
        entry ``k`` went to them numbered ``numbered_from + k``."""
        self.connection.queue_seqs.marked(
            ((url, numbered_from + position) for position, (url, _, _) in enumerate(links.entries)),
            int(answers[0][3]), (int(found) for answer in answers for found in answer[4]))
        return _summed(answers)

    def _mark_calls(self, links: Marking) -> tuple[list[tuple[str, list[str], list[Any]]], int]:
        """The script calls ``(script, keys, args)`` that mark ``links`` (``mark``), their URLs grouped by host (in
        the order first given) as their hosts' structures keep them, so the script groups and shortens nothing;
        on a cluster their orders of marking are reserved first, with a round trip of their own. Also the number
        the first entry is given (each next one the next number)."""
        connection = self.connection
        connection.store_buckets()
        head: list[Any] = [-1 if links.max_urls_per_host is None else links.max_urls_per_host, int(links.distance)]
        by_host: dict[str, list[int]] = {}
        for position, (_, host, _) in enumerate(links.entries):
            by_host.setdefault(host, []).append(position)
        hosts = list(by_host)
        groups = connection.by_bucket(hosts)

        def entries(positions: list[int], place: Callable[[int], int], first: int) -> list[Any]:
            """The arguments of the hosts at ``positions`` (of ``hosts``): each host's bucket at ``place``, its
            URLs numbered from ``first``."""
            found: list[Any] = []
            for position in positions:
                host = hosts[position]
                found += [host, place(position), len(by_host[host])]
                for number_given in by_host[host]:
                    url, _, priority = links.entries[number_given]
                    found += [tail_of(host, url), number(priority), first + number_given]
            return found

        count = len(links.entries)
        if connection.single_node:
            keys = [connection.bucket_prefixes[bucket] for bucket in groups] + [connection.key("seq")]
            place = {position: key for key, positions in enumerate(groups.values(), start=1) for position in positions}
            return [("mark", keys, [*head, len(keys), count, *entries(list(range(len(hosts))), place.__getitem__, 0)])], 0
        first = connection.server.incrby(connection.key("seq"), count) - count + 1
        return [("mark", [connection.bucket_prefixes[bucket]],
                 [*head, 0, sum(len(by_host[hosts[position]]) for position in positions),
                  *entries(positions, lambda _: 1, first)])
                for bucket, positions in groups.items()], first

    def remark(self, url: str) -> bool:
        """Mark a known URL for crawling again, unlocked (recycle / re-harvest)."""
        host = host_of(url)
        return bool(self.connection.run(host, "remark", url, host))

    def ready(self, now: float, strategy: str = "BreadthFirstTime", limit: int | None = None, *,
              hold: float = 0.0) -> Round:
        """One round of the strategy (:mod:`combine_scrapy.frontier.strategy`) over the heads of the hosts,
        with ``lease_ahead`` leased to this harvester as it is handed out, so harvesters never race for the same URLs.

        A host takes part when it has a due marked URL and is free, or leased
        (a fetch in flight) for at most ``hold`` seconds more. URLs whose lease or lock has ended
        go back to their hosts' queues first, and those handed out
        ``max_attempts`` times without completion are dropped.

        A harvester alone ranks the whole frontier; on a single Redis its
        BestFirst rounds come from the heads in its memory (solo mode,
        ``solo.py``; ``solo=False`` keeps them in Redis). With others at work, it
        ranks its own share of the buckets (``share``), so harvesters do not
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
                    self.connection.marker.check()
                    return Round(taken)
        if not self.connection.marker.opened:  # opening the frontier upgrades an older layout before it is read
            self.connection.marker.check()
        best = limit if limit is not None and crawl.head_order is not None else None  # only the heads the round reads
        if best is not None and self.solo is not None:
            solo_round = self._solo_round(crawl, now, best, hold)
            if solo_round is not None:
                return solo_round
        share = self.share.buckets if self.lease_ahead else None
        depth = limit if crawl.holds_places and limit else 0
        heads = self._heads(now, crawl.queue, hold, share, depth, best)
        if self.lease_ahead and self.share.buckets != share:  # harvesters came or went: look at the new share
            share = self.share.buckets
            heads = self._heads(now, crawl.queue, hold, share, depth, best)
        round_ = crawl.round(heads, now, limit, self._deeper)
        if share is not None and not round_ and round_.held_until is None:
            heads = self._heads(now, crawl.queue, hold, None, depth, best)
            round_ = crawl.round(heads, now, limit, self._deeper)
        self.connection.marker.check(idle=not heads)
        if not self.lease_ahead:
            return round_
        if crawl.full_round:
            self._round, self._round_key = list(round_), (strategy, now)
            if self._rivals:
                self._turn_round()
            return Round(self._take_from_round(now))
        if best is not None:  # the look read the heads' ranks alone: their URLs and records come with their leases
            return self._take_round_heads(round_, heads, now)
        return Round(self._take(list(round_), now), held_until=round_.held_until)

    def _solo_round(self, crawl: CrawlStrategy, now: float, limit: int, hold: float) -> Round | None:
        """The round of a solo harvester (``solo.py``), ranked from its memory: entered when the last renewal
        found this harvester alone. None when it is not solo (or solo no more): the heads in Redis are read."""
        solo = self.solo
        if solo is None or solo.heads is None and not (self.share.alone and solo.enter(now, crawl)):
            return None
        if not solo.look(now, self.max_attempts, self.lease_seconds) or solo.heads is None:
            return None
        heads = solo.heads.heads(now, limit, hold)
        self._deeper_found = {}
        # Each host's first URLs, then more only where they could take places (one more call, seldom): a
        # host's URLs are elements of Redis's answer, which costs Redis more than the call does.
        round_ = crawl.round(heads, now, limit, self._deeper, first_depth=FIRST_DEPTH)
        self.connection.marker.check(idle=not heads)
        return self._take_round_heads(round_, heads, now)

    def _take_round_heads(self, round_: Round, heads: list[Head], now: float) -> Round:
        """Lease the URLs of a round ranked from ``heads`` read from their hosts' queues alone, without their
        records (``_take_heads``): the round as leased."""
        return Round(self._take_heads([(entry.host, entry.url) for entry in round_], now), held_until=round_.held_until)

    def _heads(self, now: float, queue: str, hold: float, share: list[int] | None, depth: int = 0,
               best: int | None = None, revoked: bool = False) -> list[Head]:
        """The head of every free (or held) host of the buckets ``share`` (None: every bucket), in one pipeline;
        with a ``depth``, what ``_deeper`` answers for their hosts is fetched with them and kept for it.

        With ``best``, only the ``best`` first heads by weighted priority (BestFirst's ``head_order``), in two
        pipelines: each bucket's first ones from its ``heads`` and ``leasedheads``, then the rows of the
        ``best`` first of them all, so the cost is in ``best`` and the buckets, not in the due hosts. A harvester's
        frontier (``lease_ahead``) reads only their ranks, no URL (``_take_heads`` reads those it hands out).

        A harvester's frontier also renews its entry among the job's harvesters in the same pipeline (see
        ``sharing.HARVESTERS_RENEWAL``) and takes its share of the buckets for the next look from the answer.
        With ``best`` on a single Redis the pipeline also reads the ``solo`` key: a harvester in solo mode keeps no
        heads in Redis, so the look ends that mode (``solo.end_solo``) and reads again (``revoked``).
        """
        buckets = range(self.connection.buckets) if share is None else share
        if best is None:
            script, args = "ready", [number(now), self.max_attempts, queue, number(now + hold), depth]
        else:
            first = min(best, max(FIRST_HEADS, math.ceil(3 * best / len(buckets))))
            script, args = "top_heads", [number(now), self.max_attempts, number(now + hold), first]
        renew = self.lease_ahead and self.share.due(buckets)
        # BestFirst reads the heads, which no script keeps while a harvester is solo: a look that finds one ends
        # its solo mode (the heads made anew) and reads them again
        solo_check = best is not None and self.connection.single_node and not revoked

        def also(pipe: Any) -> None:
            if solo_check:
                pipe.get(self.connection.key("solo"))
            if renew:
                self.share.renew(pipe, self.lease_seconds)

        answers = self.connection.run_buckets([(bucket, script, args) for bucket in buckets],
                                              also=also if solo_check or renew else None)
        if renew:
            self.share.renewed(answers[-1])
            answers = answers[:-3]
        if solo_check:
            holder = answers.pop()
            if holder is not None:
                if self.solo is not None:
                    self.solo.heads = None   # this harvester's own solo mode, if the key still names it, ends too
                end_solo(self.connection, holder.decode())
                return self._heads(now, queue, hold, share, depth, best, revoked=True)
        if best is None:
            rows = [row for answer in answers[:len(buckets)] for row in answer]
        else:
            rows = self._best_rows(dict(zip(buckets, answers)), args, depth, best, urls=not self.lease_ahead)
        self._deeper_found = {row[1].decode(): _queue(row[10]) for row in rows if len(row) > 10}
        # BestFirst's row of ranks has no record of its URL: of a host locked at ``now``, or read by a harvester's frontier
        return [
            Head(
                FrontierEntry(url.decode(), host.decode(), float(priority), text(etag), text(last_modified),
                              int(distance)),
                int(seq), float(host_lock), int(fetched), float(relevant),
            )
            for url, host, priority, seq, etag, last_modified, distance, host_lock, fetched, relevant, *_ in rows
        ]

    def _best_rows(self, answers: dict[int, list[Any]], args: list[Any], depth: int, best: int, *, urls: bool) -> list[Any]:
        """The rows (as ``ready.lua`` gives them) of the ``best`` first heads of the buckets, by weighted priority
        then order of marking, as the round ranks them.

        A host's rows read only as much of its 'best' queue (``depth``) as can take places in the round (the
        ``best`` first URLs of the heads' hosts, as BestFirst places them): a host whose head is the n-th (from 0)
        has n better URLs elsewhere, so no more than its ``best - n`` first.

        ``answers`` are each bucket's first few heads (``top_heads.lua`` run with ``args``, its last the few):
        a bucket whose few are all among the ``best`` first so far may hold more of them, and is asked for its
        ``best`` first (another round trip, seldom: the best heads spread over the buckets).

        Without ``urls`` every row is of ranks alone, the URL without its record (``head_rows.lua``); with them, only
        the rows of hosts still locked at the look (``args[0]``, its clock): they hold places in the round, which
        hands out only free hosts' URLs.
        """
        def firsts(bucket: int, answer: list[Any]) -> list[list[tuple[float, int, str, int]]]:
            return [[(float(score), queued_seq(member), member[member[0] - 95:].decode(), bucket)
                     for member, score in zip(found[::2], found[1::2])]   # member: the order of marking as in its
                    for found in answer]                                   # host's queue, then the host

        few = args[-1]
        heads = {bucket: firsts(bucket, answer) for bucket, answer in answers.items()}
        ranked = heapq.nsmallest(best, (head for lists in heads.values() for found in lists for head in found))
        if few < best:
            cut = ranked[-1] if len(ranked) == best else None
            more = [bucket for bucket, lists in heads.items()
                    if any(len(found) == few and (cut is None or found[-1] < cut) for found in lists)]
            if more:
                for bucket, answer in zip(more, self.connection.run_buckets([(bucket, "top_heads", [*args[:-1], best])
                                                                   for bucket in more])):
                    heads[bucket] = firsts(bucket, answer)
                ranked = heapq.nsmallest(best, (head for lists in heads.values() for found in lists for head in found))
        chosen: dict[int, list[Any]] = {}
        for place, (_, _, host, bucket) in enumerate(ranked):
            # the heads before this one are better than every URL of its host: only its first best - place count
            chosen.setdefault(bucket, []).extend((host, min(depth, best - place)))
        rows = "urls" if urls else "ranks"
        calls = [(bucket, "head_rows", [rows, args[0], *hosts_and_depths]) for bucket, hosts_and_depths in chosen.items()]
        return [row for found in (self.connection.run_buckets(calls) if calls else []) for row in found if row]

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
        def leased(positions: list[int], taken: list[int]) -> dict[int, FrontierEntry]:
            return {positions[number_in_call - 1]: entries[positions[number_in_call - 1]] for number_in_call in taken}

        return self._lease("take", [entry.host for entry in entries], [(entry.url, entry.host) for entry in entries], now,
                           leased)

    def _take_heads(self, heads: list[tuple[str, str]], now: float) -> list[FrontierEntry]:
        """Lease the URLs ``(host, URL)`` that are still marked and free, a script per bucket in one pipeline;
        their entries, read with their leases, in order.

        A URL another harvester leased (or fetched) since the look is skipped, as ``_take`` skips it: the next
        look ranks the host again.
        """
        def leased(positions: list[int], answers: list[Any]) -> dict[int, FrontierEntry]:
            found = {}
            for position, answer in zip(positions, answers):
                if answer:  # false: not leased
                    priority, etag, last_modified, distance = answer
                    host, url = heads[position]
                    found[position] = FrontierEntry(url, host, float(priority), text(etag), text(last_modified),
                                                    int(distance))
            return found

        return self._lease("take_heads", [host for host, _ in heads], heads, now, leased, [self.max_attempts])

    def _lease(self, script: str, hosts: list[str], parts: Sequence[tuple[str, str]], now: float,
               leased: Callable[[list[int], Any], dict[int, FrontierEntry]], options: Sequence[Any] = ()) -> list[FrontierEntry]:
        """Run ``script`` (take, take_heads) over URLs on ``hosts``, each named by its ``parts`` (the script's
        arguments, after the clock, the lease's end and ``options``), a call per bucket in one pipeline; the entries
        ``leased`` reads from each call's answer (by the positions of its URLs), in order, noted as leased ahead.
        The URLs not leased were lost to other harvesters."""
        if not hosts:
            return []
        lease_end = number(now + self.lease_seconds)
        groups = list(self.connection.by_bucket(hosts).items())
        calls = [(bucket, script, [number(now), lease_end, *options,
                                   *(part for position in positions for part in parts[position])])
                 for bucket, positions in groups]
        found: dict[int, FrontierEntry] = {}
        for (_, positions), answer in zip(groups, self.connection.run_buckets(calls)):
            found.update(leased(positions, answer))
        taken = [found[position] for position in sorted(found)]
        for entry in taken:
            self._leased_ahead[entry.url] = (lease_end, entry)
        self.lost_races += len(hosts) - len(taken)
        return taken

    def _deeper(self, hosts: list[str], depth: int) -> dict[str, list[tuple[float, int]]]:
        """``(priority, order of marking)`` of the first ``depth`` due URLs of each host, by priority: as the
        last look at the heads fetched them, else from Redis."""
        found = {host: self._deeper_found[host][:depth] for host in hosts if host in self._deeper_found}
        missing = [host for host in hosts if host not in found]
        if missing:
            groups = list(self.connection.by_bucket(missing).items())
            answers = self.connection.run_buckets([(bucket, "deeper", [depth, *(missing[p] for p in positions)])
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
        return bool(self.connection.run(entry.host, "claim", entry.url, entry.host, number(now), number(now + lease), held or ""))

    def lock_host(self, host: str, until: float) -> None:
        self.connection.run(host, "lock_host", host, number(until))

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
        links: Marking | None = None,
    ) -> MarkResult:
        """Record the end of a fetch: locks set, mark cleared unless ``keep_marked``; ``links`` marked first,
        in the same script on a single Redis (``complete_links.lua``), their scripts and this one's in one
        pipeline on a cluster: one round trip.

        An etag, Last-Modified or score of None keeps the one stored. The
        fetch counts for its host's yield, as a new relevant record when ``relevant``.
        """
        given = {
            "status": None if status is None else str(status),
            "etag": etag,
            "last_modified": last_modified,
            "score": None if score is None else number(score),
        }
        marks, numbered_from = self._mark_calls(links) if links is not None and links.entries else ([], 0)
        self.connection.queue_seqs.forget(url)
        complete = [url, host, number(now), number(url_lock_until), number(host_lock_until), int(keep_marked),
                    json.dumps({field: value for field, value in given.items() if value is not None}), int(bool(relevant))]
        page = self.connection.prefix_of(host)
        if self.connection.single_node and marks:
            [(_, keys, args)] = marks
            answers = self.connection.run_scripts([("complete_links", [*keys, page], [len(complete), *complete, *args])])
        else:
            answers = self.connection.run_scripts([*marks, ("complete", [page], complete)])[:-1]
        return self._marked(links, numbered_from, answers) if marks and links is not None else MarkResult(0, 0, 0)

    def release(self, url: str, host: str, host_lock_until: float, now: float | None = None) -> None:
        """Give a leased URL back without counting the attempt (its fetch was put off).

        With ``now``, the host's robots.txt Crawl-delay counts from then, as after a fetch. It goes to Redis with
        this harvester's next call, a round trip less (the page put off for its host's robots.txt is released
        right after the answer is stored): a harvester killed before leaves the URL leased, and the lease ends.
        """
        self.connection.defer("release", [self.connection.prefix_of(host)],
                              [url, host, number(host_lock_until), "" if now is None else number(now)])

    def host_yield(self, host: str) -> tuple[int, float]:
        """``(fetched, relevant)``: the host's completed fetches and its new relevant records, decayed."""
        fetched, relevant = self.connection.server.hmget(self.connection.prefix_of(host) + "host:" + host, "fetched", "relevant")
        return int(fetched or 0), float(relevant or 0)

    def retries(self, url: str) -> int:
        (record,) = read_records(self.connection, [url])
        return int(record[0]) if record else 0

    def statuses(self, urls: Iterable[str]) -> dict[str, int | None]:
        """The last HTTP status of each known URL (None: not fetched yet); unknown URLs left out."""
        urls = list(urls)
        return {
            url: None if record[1] is None else int(record[1])
            for url, record in zip(urls, read_records(self.connection, urls))
            if record
        }

    def set_host_delay(self, host: str, delay: float | None) -> None:
        self.connection.run(host, "host_delay", host, "" if delay is None else number(delay))

    def next_due(self, now: float) -> float | None:
        """When the next marked URL (and its host) becomes free, or None when nothing is marked.

        With other harvesters at work, the next in this harvester's share of the buckets, as long as it has one.
        """
        due = None
        for buckets in ([self.share.buckets] if self.lease_ahead and self.share.buckets else []) + [range(self.connection.buckets)]:
            answers = self.connection.run_buckets([(bucket, "next_due", [NEXT_DUE_SCAN]) for bucket in buckets])
            due = min((float(answer) for answer in answers if answer is not None), default=None)
            if due is not None:
                break
        self.connection.marker.check(idle=due is None)
        return None if due is None else max(due, now)
