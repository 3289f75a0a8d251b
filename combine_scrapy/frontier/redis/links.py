"""The Redis frontier's link graph: the crawled edges, the pages' topic scores, and the priorities ranked from them."""

from __future__ import annotations

from collections.abc import Iterable

from combine_scrapy.access.urls import host_of
from combine_scrapy.frontier.redis.connection import RedisPart, queue_score
from combine_scrapy.frontier.tails import tail_of


class RedisLinkGraph(RedisPart):
    """The crawled link graph in ``links`` and each bucket's ``scores`` (``LinkGraph``, for the PageRank strategies)."""

    def add_links(self, edges: Iterable[tuple[str, str]]) -> None:
        """Remember ``(source, target)`` edges of the crawled graph."""
        members = [f"{source}\n{target}" for source, target in edges]
        if members:
            self.connection.server.sadd(self.connection.key("links"), *members)

    def link_graph(self) -> tuple[list[tuple[str, str]], dict[str, float]]:
        """The crawled graph's edges (sorted, so PageRank runs the same on every harvester) and topic scores."""
        links = self.connection.key("links")
        edges = sorted(tuple(edge.decode().split("\n", 1)) for edge in self.connection.server.sscan_iter(links, count=1000))
        scores = {
            url.decode(): float(score)
            for prefix in self.connection.bucket_prefixes
            for url, score in self.connection.server.hscan_iter(prefix + "scores", count=1000)
        }
        return edges, scores

    def set_priorities(self, priorities: dict[str, float]) -> None:
        """Overwrite the priority of marked URLs (a PageRank recomputation, the link model's re-scoring): on a
        single Redis one script call, on a Redis Cluster one a bucket in one pipeline. The URLs go grouped by
        host, as their hosts' structures keep them, with their queue scores, so the script parses no more than
        it writes."""
        by_host: dict[str, list[str]] = {}
        for url, priority in priorities.items():
            host = host_of(url)
            by_host.setdefault(host, []).extend((tail_of(host, url), queue_score(priority)))
        if not by_host:
            return
        hosts = list(by_host)
        groups = self.connection.by_bucket(hosts)

        def entries(positions: list[int], key: dict[int, int]) -> list[str | int]:
            found: list[str | int] = []
            for position in positions:
                urls = by_host[hosts[position]]
                found += [hosts[position], key[position], len(urls) // 2, *urls]
            return found

        if self.connection.single_node:
            key = {position: place for place, found in enumerate(groups.values(), start=1) for position in found}
            self.connection.run_scripts([("set_priorities", [self.connection.bucket_prefixes[bucket] for bucket in groups],
                                          entries(list(range(len(hosts))), key))])
            return
        self.connection.run_buckets([(bucket, "set_priorities", entries(positions, dict.fromkeys(positions, 1)))
                                     for bucket, positions in groups.items()])
