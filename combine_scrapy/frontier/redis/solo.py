"""Solo mode: a harvester that works alone on a job keeps its hosts' heads in its memory, not in Redis.

BestFirst's heads (``heads``, ``leasedheads``, ``waiting`` and each host's
``head`` field) exist so that any harvester can read the best hosts of the
frontier; keeping them costs every script that changes a host's best URL,
lock, lease or yield a few commands. A harvester alone on a single Redis
(the only entry of ``harvesters``, ``sharing.py``) sets the job's ``solo``
key to its id and loads the heads once (``solo_enter.lua``); while that key
exists no script keeps them: each notes the hosts it would have placed in the
``solo_log`` list instead (``solo_note`` in lua/library.lua), whoever runs it,
and the solo harvester applies the notes at each look (``solo_look.lua``), so
its memory follows every change. It ranks its rounds from memory with the same
strategy and the same Head objects, and leases with ``take_heads``, which checks
each URL and its host inside Redis: a stale memory can never lease twice.

Another harvester that looks (BestFirst) and finds the key naming someone
else, and the solo harvester that finds others at work or leaves, end solo mode
with ``solo_leave.lua``: the key deleted and every bucket's heads made anew in
one script, so no script runs between the two and a solo harvester killed costs
the next one that looks one rebuild. The solo harvester finds at its next look
that the key no longer names it and drops its memory.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Iterable
from dataclasses import replace

from combine_scrapy.frontier import FrontierEntry
from combine_scrapy.frontier.redis.connection import BEST_SCALE, RedisConnection, number, queued_seq, queued_url
from combine_scrapy.frontier.redis.sharing import HarvesterShare
from combine_scrapy.frontier.strategy import CrawlStrategy, Head, RoundKey

#: Hosts with queued URLs a solo harvester keeps in memory at most: entering and ending solo mode read or place each
#: of them in one script, while Redis answers no one else (~6 commands a host: 50,000 hosts hold it ~0.3 s), and each
#: costs the harvester a Head in memory. A larger frontier keeps its heads in Redis.
SOLO_MAX_HOSTS = 50_000
#: Seconds a harvester refused solo mode (too many hosts) waits before it asks again (an entry costs a ZCARD a bucket).
SOLO_RETRY = 60.0


class SoloHeads:
    """The heads of the hosts with queued URLs, as the notes last gave them, in ``strategy``'s order."""

    def __init__(self, strategy: CrawlStrategy) -> None:
        self.strategy = strategy
        self._hosts: dict[str, tuple[Head, float, RoundKey]] = {}   # host -> (head, leased_until, its key in _order)
        self._order: list[tuple[RoundKey, str]] = []

    def __len__(self) -> int:
        return len(self._hosts)

    def note(self, notes: Iterable[bytes]) -> None:
        """Take each host's note (``solo_note``: host, best URL's member and score in its queue, lock, lease,
        fetched, relevant), in the order written: a host with no queued URL leaves; a note whose member is '=' keeps
        the host's best URL as its last note gave it (its queue unchanged since), and one of the first three alone
        (a re-scoring's) the host's lock, lease and yield."""
        for note in notes:
            host, member, score, *fields = note.decode().split("\n")
            known = self._hosts.pop(host, None)
            if known is not None:
                del self._order[bisect.bisect_left(self._order, (known[2], host))]
            if member == "=":
                if known is None:   # no queued URL at its last note: none still
                    continue
                entry, seq = known[0].entry, known[0].seq
            elif member:
                kept = member.encode()
                entry = FrontierEntry(queued_url(host, kept), host, 0.0 - float(score) / BEST_SCALE)
                seq = queued_seq(kept)
            else:
                continue
            if fields:
                lock_until, leased_until, fetched, relevant = fields
                head = Head(entry, seq, float(lock_until or 0), int(float(fetched or 0)), float(relevant or 0))
                leased = float(leased_until or 0)
            elif known is not None:
                head, leased = replace(known[0], entry=entry, seq=seq), known[1]
            else:   # never: a host with queued URLs has had a note of its fields
                head, leased = Head(entry, seq, 0.0), 0.0
            key = self.strategy.round_key(head)
            self._hosts[host] = (head, leased, key)
            bisect.insort(self._order, (key, host))

    def heads(self, now: float, limit: int, hold: float) -> list[Head]:
        """The first ``limit`` heads in the strategy's order of the hosts free at ``now`` or leased for at most
        ``hold`` seconds more (a lease that ended counts as none), as a look at the heads in Redis reads them."""
        until, found = now + hold, []
        for _, host in self._order:
            head, leased_until, _ = self._hosts[host]
            if head.host_lock_until <= now or leased_until > now and head.host_lock_until <= until:
                found.append(head)
                if len(found) == limit:
                    break
        return found


class SoloMode:
    """This harvester's solo mode: whether it is solo (``heads``, its memory, None when not), entering, looking,
    leaving."""

    def __init__(self, connection: RedisConnection, share: HarvesterShare) -> None:
        self.connection = connection
        self.share = share
        self.heads: SoloHeads | None = None
        self.max_hosts = SOLO_MAX_HOSTS
        self._retry_at = 0.0   # when an entry refused for the frontier's size may be asked again (time.monotonic)

    def enter(self, now: float, strategy: CrawlStrategy) -> bool:
        """Become solo, when this harvester is the only one at work, no other is solo and the frontier has at most
        ``max_hosts`` hosts with queued URLs: its memory loaded. Refused, it asks again after SOLO_RETRY."""
        if time.monotonic() < self._retry_at:
            return False
        connection = self.connection
        notes = connection.run_scripts([("solo_enter", [connection.key("harvesters"), *connection.bucket_prefixes],
                                         [self.share.harvester_id, number(now), self.max_hosts])])[0]
        if notes is None:
            self._retry_at = time.monotonic() + SOLO_RETRY
            return False
        self.heads = SoloHeads(strategy)
        self.heads.note(notes)
        return True

    def look(self, now: float, max_attempts: int, lease_seconds: float) -> bool:
        """Bring the memory up to date for a look at ``now`` (leases and locks that ended are undone first), with
        this harvester's entry among the job's harvesters renewed in the same round trip when due. False, the
        memory dropped, when this harvester is solo no more: revoked, or no longer alone (then it leaves)."""
        heads = self.heads
        if heads is None:
            return False
        connection = self.connection
        renew = self.share.due(range(connection.buckets))
        answers = connection.run_scripts(
            [("solo_look", connection.bucket_prefixes, [self.share.harvester_id, number(now), max_attempts])],
            also=(lambda pipe: self.share.renew(pipe, lease_seconds)) if renew else None)
        if renew:
            self.share.renewed(answers[-1])
        if answers[0] is None:
            self.heads = None
            return False
        heads.note(answers[0])
        if not self.share.alone or len(heads) > self.max_hosts:
            self.leave()
            self._retry_at = time.monotonic() + SOLO_RETRY
            return False
        return True

    def leave(self) -> None:
        """End this harvester's solo mode, if it is solo: the heads made anew in Redis for others to read."""
        if self.heads is not None:
            self.heads = None
            end_solo(self.connection, self.share.harvester_id)


def end_solo(connection: RedisConnection, holder: str) -> bool:
    """End the solo mode of the harvester ``holder`` (another's, when a harvester finds it at a look: it joined, or
    the solo one died), unless the key names someone else by now: whether it did."""
    return bool(connection.run_scripts([("solo_leave", connection.bucket_prefixes, [holder])])[0])
