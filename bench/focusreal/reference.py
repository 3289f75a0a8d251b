"""Offline reference crawls of the doc web: what a crawler that knew more could harvest in its first fetches.

    .venv/bin/python -m bench.focusreal.reference [--topics tls,regex] [--seed-sets home,offtopic]
                                                  [--window 500] [--results DIR]

The issue's harvest goal asks a focused crawl for at least 3x the new
relevant records plain breadth-first gets over its first 500 fetches. These
crawls, run over the doc web's link graph without a server or a crawler,
tell whether a cell of bench.focusreal leaves room for that. Each follows
only links it has fetched (as any crawler must) and orders its frontier by
what it is told, first come first served between equals:

- ``breadth_first``: nothing (strict breadth-first, the peer's order);
- ``knows_relevance``: whether the linked page is relevant to the topic;
- ``knows_graph``: the linked page's distance in links to the nearest
  relevant page (0 for a relevant one), from the whole web's graph;
- ``knows_graph_and_copies``: the same, and a relevant page whose content is
  a copy or near-duplicate of one already queued counts as not relevant.

They are greedy, not optimal: a count here is what such a crawl got, a
floor of what an order could get, never a bound. From a seed page off the
topic they are weak (their ties walk the seed's host first). Pages are
judged as bench.focusreal judges a crawl's (bench/focusreal/records.py):
new relevant records by the record store's rule, fetches counted as the
server's log counts them (robots.txt aside). Writes reference.json and
reference.md in the results directory.
"""

from __future__ import annotations

import argparse
import collections
import tempfile
from collections.abc import Callable
from pathlib import Path

from bench.focusreal.benchmark import WINDOW, add_cell_arguments, install_packages, seeds, topic_jobs
from bench.focusreal.docweb import DocWeb, best_first, request_of
from bench.focusreal.records import PageJudge, PageJudgement, new_records
from bench.focusreal.topics import Topic, topic_named
from bench.report import RESULTS, environment, write_report
from bench.virtualweb.harness import command_line
from combine_scrapy.document import neardup

#: A crawl order: how much a URL is worth fetching next (higher first).
Rank = Callable[[str], float]
ORDERS = ("breadth_first", "knows_relevance", "knows_graph", "knows_graph_and_copies")


class LinkGraph:
    """The doc web's links, read once a page; the offline crawls walk it."""

    def __init__(self, web: DocWeb):
        self.web = web
        self.links: dict[str, list[str]] = {}

    def out(self, url: str) -> list[str]:
        """The links of the page ``url`` to the doc web's hosts (a redirect's target too)."""
        if url not in self.links:
            self.links[url] = self.web.links_within(url)
        return self.links[url]

    def crawl(self, start: list[str], cap: int, rank: Rank) -> list[str]:
        """The first ``cap`` URLs a crawl from ``start`` fetches, best ``rank`` first, the first found between equals."""
        return best_first(start, cap, self.out, rank)

    def hops_to(self, targets: set[str]) -> dict[str, int]:
        """Each URL's distance in links to the nearest of ``targets``, over the links read so far (the URLs
        that reach none are left out)."""
        into: dict[str, list[str]] = collections.defaultdict(list)
        for page, links in self.links.items():
            for link in links:
                into[link].append(page)
        hops = dict.fromkeys(targets, 0)
        frontier = collections.deque(targets)
        while frontier:
            url = frontier.popleft()
            for page in into[url]:
                if page not in hops:
                    hops[page] = hops[url] + 1
                    frontier.append(page)
        return hops


class References:
    """The offline crawls of one topic, judged by the pages' judge."""

    def __init__(self, web: DocWeb, graph: LinkGraph, pages: PageJudge, topic: Topic):
        self.web, self.graph, self.pages, self.topic = web, graph, pages, topic
        self.distance = pages.near_duplicate_distance
        self.whole = graph.crawl([*web.homes(), *filter(None, [topic.offtopic])], 10 ** 7, lambda url: 0)
        self.relevant = {url for url in self.whole if self.is_relevant(url)}
        self.hops = graph.hops_to(self.relevant)

    def judged(self, url: str) -> PageJudgement | None:
        return self.pages.judge(*request_of(url))

    def is_relevant(self, url: str) -> bool:
        judgement = self.judged(url)
        return judgement is not None and self.topic.key in judgement.relevant

    def records(self, order: list[str]) -> int:
        """New relevant records among the fetches ``order``, by the record store's rule."""
        return len(new_records(((n, self.judged(url)) for n, url in enumerate(order, start=1)), self.topic.key,
                               self.distance))

    def records_in_web(self) -> int:
        """New relevant records of the whole web (every page reachable from the home pages and the topic's
        off-topic seed), crawled breadth-first."""
        return self.records(self.whole)

    def rank(self, order: str) -> Rank:
        if order == "breadth_first":
            return lambda url: 0
        if order == "knows_relevance":
            return lambda url: 1 if self.is_relevant(url) else 0
        if order == "knows_graph":
            return lambda url: -self.hops.get(url, len(self.hops))
        return self._rank_without_copies()

    def _rank_without_copies(self) -> Rank:
        keys: set[str] = set()
        marks: list[int] = []

        def rank(url: str) -> float:
            hops = self.hops.get(url, len(self.hops))
            if hops:
                return -hops
            judgement = self.judged(url)
            assert judgement is not None  # relevant
            mark = judgement.fingerprint
            if judgement.key in keys or (self.distance is not None and mark is not None and any(
                    neardup.distance(mark, other) <= self.distance for other in marks)):
                return -1
            keys.add(judgement.key)
            if mark is not None:
                marks.append(mark)
            return 0

        return rank

    def measure(self, seed_set: str, window: int) -> dict[str, int]:
        """New relevant records over the first ``window`` fetches of each order, from ``seed_set``."""
        start = seeds(self.web, seed_set, self.topic)
        return {order: self.records(self.graph.crawl(start, window, self.rank(order))) for order in ORDERS}


def report(result: dict) -> list[str]:
    lines = [
        "",
        f"New relevant records over the first {result['window']} fetches of each offline order (bench/focusreal/"
        "reference.py: greedy orders over the doc web's links, no server, no crawler; a floor of what an order "
        "could get, not a bound). \"3x\": three times breadth-first's, the issue's harvest goal.",
        "",
        "| topic | records in the web | seed set | breadth-first | 3x | knows relevance | knows the graph | "
        "knows the graph and copies |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for key, figures in result["topics"].items():
        for seed_set in result["seed_sets"]:
            row = figures[seed_set]
            lines.append(f"| {key} | {figures['records_in_web']:,} | {seed_set} | {row['breadth_first']} | "
                         f"{3 * row['breadth_first']} | {row['knows_relevance']} | {row['knows_graph']} | "
                         f"{row['knows_graph_and_copies']} |")
    return lines


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m bench.focusreal.reference", description=__doc__.splitlines()[0])
    add_cell_arguments(parser)
    parser.add_argument("--window", type=int, default=WINDOW, help="fetches counted")
    parser.add_argument("--results", type=Path, default=RESULTS, help="directory for reference.{json,md}")
    args = parser.parse_args(argv)
    install_packages()
    web, topics = DocWeb(), [topic_named(key) for key in args.topics]
    graph = LinkGraph(web)
    with tempfile.TemporaryDirectory() as directory:
        pages = PageJudge(web, topic_jobs(topics, Path(directory)))
        figures = {}
        for topic in topics:
            references = References(web, graph, pages, topic)
            figures[topic.key] = {"records_in_web": references.records_in_web(),
                                  **{seed_set: references.measure(seed_set, args.window) for seed_set in args.seed_sets}}
    result = {**environment(command_line("bench.focusreal.reference", argv)), "window": args.window,
              "seed_sets": args.seed_sets, "topics": figures}
    write_report("reference", result, "Offline reference crawls of the doc web", report(result), args.results)
    return result


if __name__ == "__main__":
    main()
