"""What operators read and set in the Redis frontier: counts, the busiest hosts, the pause switch, the seeds marked."""

from __future__ import annotations

from typing import cast

from combine_scrapy.frontier import FrontierCounts, HostCounts
from combine_scrapy.frontier.redis.connection import RedisPart, number, text


class RedisOperations(RedisPart):
    """Counts over every bucket, the busiest hosts, the pause switch and the seeds fingerprint (``FrontierOperations``)."""

    def hosts(self, now: float, limit: int = 20) -> list[tuple[str, int, float]]:
        """Hosts with marked URLs, most first (then by name): ``(host, marked URLs, seconds until unlocked)``.

        Counted when read, a script per bucket in one pipeline (``busiest.lua``), which reads every host with
        queued URLs: no script keeps a count a host.
        """
        answers = self.connection.run_buckets([(bucket, "busiest", [limit]) for bucket in range(self.connection.buckets)])
        busiest = sorted((-int(count), host.decode(), float(lock)) for found in answers for host, count, lock in found)
        return [(host, -count, max(lock - now, 0)) for count, host, lock in busiest[:limit]]

    def host_counts(self, now: float) -> HostCounts:
        """The hosts with marked URLs: those of each bucket's ``hostq`` (queued URLs, scored by their host's lock)
        counted by Redis, and those with only leased or retry-waiting URLs (``locked``), a script per bucket in
        one pipeline (``host_counts.lua``); no host's queue is read."""
        answers = self.connection.run_buckets([(bucket, "host_counts", [number(now)])
                                               for bucket in range(self.connection.buckets)])
        firsts = [float(first) for _, _, first in answers if first]
        return HostCounts(marked=sum(int(marked) for marked, _, _ in answers),
                          waiting=sum(int(waiting) for _, waiting, _ in answers),
                          next_free=min(firsts) - now if firsts else None)

    def counts(self, now: float) -> FrontierCounts:
        """URLs by state, for the crawl summary and status commands."""
        with self.connection.server.pipeline(transaction=False) as pipe:
            for prefix in self.connection.bucket_prefixes:
                pipe.hmget(prefix + "stats", "urls", "dropped", "done")
                pipe.zcount(prefix + "locked", f"({number(now)}", "+inf")
                pipe.scard(prefix + "hosts")
            answers = pipe.execute()
        urls = dropped = done = marked_locked = hosts = 0
        for (bucket_urls, bucket_dropped, bucket_done), bucket_locked, bucket_hosts in zip(
            answers[::3], answers[1::3], answers[2::3]
        ):
            urls += int(bucket_urls or 0)
            dropped += int(bucket_dropped or 0)
            done += int(bucket_done or 0)
            marked_locked += bucket_locked
            hosts += bucket_hosts
        marked = urls - dropped - done   # every URL is marked, done (unmarked with a status) or dropped
        return FrontierCounts(
            urls=urls, marked_ready=marked - marked_locked, marked_locked=marked_locked, done=done, hosts=hosts,
        )

    def set_paused(self, paused: bool) -> None:
        """Pause or resume every harvester of the job, on every machine."""
        if paused:
            self.connection.server.set(self.connection.key("paused"), b"1")
        else:
            self.connection.server.delete(self.connection.key("paused"))

    def paused(self) -> bool:
        return bool(self.connection.server.exists(self.connection.key("paused")))

    def seeds_marked(self) -> str | None:
        return text(cast("bytes | None", self.connection.server.get(self.connection.key("seeds"))))

    def set_seeds_marked(self, fingerprint: str) -> None:
        self.connection.server.set(self.connection.key("seeds"), fingerprint.encode())

    def close(self) -> None:
        """Close the connection."""
        self.connection.close()
