"""The Redis frontier's link graph: the crawled edges, the pages' topic scores, and the priorities ranked from them."""

from __future__ import annotations

from collections.abc import Iterable

from combine_scrapy.access.urls import host_of
from combine_scrapy.frontier.redis.connection import RedisPart, queue_member, queue_score
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
        host with their queue scores: those whose order of marking this harvester knows (``QueueSeqs``) as their
        members of the host's queue, the others as kept, whose records Redis reads (``lua/set_priorities.lua``),
        answering their orders of marking, which this harvester keeps."""
        seqs = self.connection.queue_seqs
        # by host: its URLs that go as members and their arguments, then those that go as kept and theirs
        by_host: dict[str, tuple[list[str], list[str], list[str], list[str]]] = {}
        for url, priority in priorities.items():
            host = host_of(url)
            found = by_host.get(host)
            if found is None:
                found = by_host[host] = ([], [], [], [])
            seq, tail = seqs.get(url), tail_of(host, url)
            if seq is None:
                found[2].append(url)
                found[3].extend((tail, queue_score(priority)))
            else:
                found[0].append(url)
                found[1].extend((queue_score(priority), queue_member(seq, tail)))
        if not by_host:
            return
        hosts = list(by_host)
        groups = self.connection.by_bucket(hosts)

        def entries(positions: list[int], key: dict[int, int]) -> tuple[list[str | int], list[str]]:
            found: list[str | int] = []
            urls: list[str] = []
            for position in positions:
                member_urls, as_members, kept_urls, as_kept = by_host[hosts[position]]
                found += [hosts[position], key[position], len(member_urls), len(kept_urls), *as_members, *as_kept]
                urls += member_urls + kept_urls
            return found, urls

        if self.connection.single_node:
            key = {position: place for place, found in enumerate(groups.values(), start=1) for position in found}
            args, urls = entries(list(range(len(hosts))), key)
            [learned] = self.connection.run_scripts([("set_priorities", [self.connection.bucket_prefixes[bucket]
                                                                         for bucket in groups], args)])
            self._learned(urls, learned)
            return
        calls = [(bucket, entries(positions, dict.fromkeys(positions, 1))) for bucket, positions in groups.items()]
        for (_, (_, urls)), learned in zip(calls, self.connection.run_buckets(
                [(bucket, "set_priorities", args) for bucket, (args, _) in calls])):
            self._learned(urls, learned)

    def _learned(self, urls: list[str], learned: list[int]) -> None:
        """Keep the orders of marking a re-scoring answered: ``learned`` holds pairs of a URL's number among
        ``urls`` (from 1) and its order of marking."""
        self.connection.queue_seqs.learned((urls[number - 1], seq) for number, seq in zip(learned[::2], learned[1::2]))
