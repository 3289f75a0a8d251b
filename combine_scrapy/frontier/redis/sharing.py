"""How the harvesters of a job share the Redis frontier's buckets, so they do not race for the same hosts.

Each harvester that leases ahead keeps an entry in the job's ``harvesters``
key, scored by when it expires, and renews it in the pipeline of its looks
at the heads. From the ids at work it takes its share of the buckets to look
at first: the part, in the order of their nodes, at its place among them.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable
from typing import Any

from combine_scrapy.frontier.redis.connection import RedisConnection

#: Seconds between two renewals of a harvester's entry among the job's harvesters, at most: its share of the
#: buckets follows harvesters that come or go within this (one that dies leaves it when its entry ends, after a
#: lease). A look that reaches the node of the job-wide keys anyway (always, on a single Redis) renews it too.
HARVESTERS_RENEWAL = 5.0


class HarvesterShare:
    """This harvester's entry among the job's harvesters, and the buckets it looks at first (``buckets``)."""

    def __init__(self, connection: RedisConnection) -> None:
        self.connection = connection
        self.harvester_id = uuid.uuid4().hex   # this harvester's entry among the job's harvesters
        self.buckets: list[int] | None = None   # the buckets this harvester looks at first (None: all)
        self._renewed = -HARVESTERS_RENEWAL   # when this harvester last renewed its entry (time.monotonic)
        self._registered = False   # it has an entry among the job's harvesters (so leaving removes it)
        self.alone = False   # the last renewal found no other harvester at work

    def due(self, buckets: Iterable[int]) -> bool:
        """Whether a look at ``buckets`` renews the entry: after HARVESTERS_RENEWAL, or when it costs nothing."""
        return time.monotonic() - self._renewed >= HARVESTERS_RENEWAL or self.connection.reaches_job_keys(buckets)

    def renew(self, pipe: Any, lease_seconds: float) -> None:
        """Queue the renewal in a look's pipeline: the entry for a lease, the expired ones dropped, the ids read
        (the pipeline's last three answers; ``renewed`` takes the last)."""
        harvesters, clock = self.connection.key("harvesters"), time.time()
        pipe.zadd(harvesters, {self.harvester_id: clock + lease_seconds})
        pipe.zremrangebyscore(harvesters, "-inf", clock)
        pipe.zrange(harvesters, 0, -1)

    def renewed(self, harvesters: list[bytes]) -> None:
        """Take this harvester's share from the ids at work that the renewal read."""
        self._renewed, self._registered = time.monotonic(), True
        ids = sorted(member.decode() for member in harvesters)
        self.alone = ids == [self.harvester_id]
        self.buckets = self._share_of(ids)

    @property
    def registered(self) -> bool:
        """Whether this harvester has an entry among the job's harvesters."""
        return self._registered

    def leave(self) -> None:
        """Remove this harvester's entry, if it has one."""
        if self._registered:
            self.connection.server.zrem(self.connection.key("harvesters"), self.harvester_id)

    def _share_of(self, harvesters: list[str]) -> list[int] | None:
        """This harvester's buckets among ``harvesters`` (the ids at work, sorted): the part of the buckets (in
        the order of their nodes) at its place; None (every bucket) when it works alone."""
        if len(harvesters) < 2 or self.harvester_id not in harvesters:
            return None
        place, count = harvesters.index(self.harvester_id), len(harvesters)
        buckets, order = self.connection.buckets, self.connection.bucket_order
        if count > buckets:
            return [order[place % buckets]]
        return sorted(order[place * buckets // count:(place + 1) * buckets // count])
