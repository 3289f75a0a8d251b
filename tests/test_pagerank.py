"""PageRank and topic-weighted iPageRank on small graphs with known answers."""

from __future__ import annotations

import pytest

from combine_scrapy.frontier.pagerank import pagerank

EDGES = [("a", "b"), ("b", "c"), ("c", "a"), ("a", "c"), ("d", "c")]


def test_matches_the_reference_values():
    # networkx.pagerank(DiGraph(EDGES), alpha=0.85) gives these.
    rank = pagerank(EDGES, iterations=200, tolerance=1e-14)
    assert rank == pytest.approx({"a": 0.372527, "b": 0.195824, "c": 0.394149, "d": 0.0375}, abs=1e-6)
    assert sum(rank.values()) == pytest.approx(1.0)


def test_cycle_is_uniform_and_empty_graph_is_empty():
    assert pagerank([("x", "y"), ("y", "z"), ("z", "x")]) == pytest.approx(dict.fromkeys("xyz", 1 / 3))
    assert pagerank([]) == {}


def test_ipagerank_moves_rank_towards_relevant_pages():
    plain = pagerank(EDGES)
    topical = pagerank(EDGES, {"a": 1.0, "c": 1.0})
    assert sum(topical.values()) == pytest.approx(1.0)
    assert topical["d"] == 0.0                  # irrelevant, nothing links to it, no teleport
    assert topical["a"] > plain["a"]
    # an irrelevant page passes nothing on: b's only link, to c, carries no rank
    only_via_irrelevant = pagerank([("r", "i"), ("i", "t")], {"r": 1.0, "t": 0.0, "i": 0.0})
    assert only_via_irrelevant["t"] < only_via_irrelevant["r"]
