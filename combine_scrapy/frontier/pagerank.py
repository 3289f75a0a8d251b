"""PageRank over the crawled link graph, and its topic-weighted variant (iPageRank).

The PageRank strategy orders the frontier by the rank of each URL in the graph
of the pages fetched so far (Combine's "PageRank" crawl strategy). iPageRank
lets a page pass on rank
in proportion to its topic relevance, so links from relevant pages weigh more:
the teleport vector and the out-link weights both follow relevance.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping


def pagerank(
    edges: Iterable[tuple[str, str]],
    relevance: Mapping[str, float] | None = None,
    *,
    damping: float = 0.85,
    iterations: int = 50,
    tolerance: float = 1e-9,
) -> dict[str, float]:
    """Rank every node of ``edges`` (source, target); ranks sum to 1.

    With ``relevance`` (node -> score >= 0, missing = 0) this is iPageRank: a
    source passes on ``damping * rank * relevance`` worth of weight instead of
    all of it, and teleports land on relevant nodes. Dangling rank (pages with
    no out-links, or irrelevant sources) is spread by the teleport vector.
    """
    outlinks: dict[str, list[str]] = defaultdict(list)
    nodes: set[str] = set()
    for source, target in edges:
        if source != target:
            outlinks[source].append(target)
        nodes.update((source, target))
    if not nodes:
        return {}
    order = sorted(nodes)
    teleport = _teleport(order, relevance)
    if relevance is None:
        weight = dict.fromkeys(order, 1.0)
    else:
        top = max(relevance.values(), default=0) or 1.0
        weight = {node: min(max(relevance.get(node, 0.0), 0.0) / top, 1.0) for node in order}
    rank = dict(teleport)
    for _ in range(iterations):
        passed: dict[str, float] = defaultdict(float)
        kept = 0.0
        for source, targets in outlinks.items():
            share = rank[source] * weight[source]
            for target in targets:
                passed[target] += share / len(targets)
            kept += rank[source] * (1.0 - weight[source])
        dangling = sum(rank[node] for node in order if node not in outlinks) + kept
        new = {
            node: (1.0 - damping) * teleport[node] + damping * (passed[node] + dangling * teleport[node])
            for node in order
        }
        delta = sum(abs(new[node] - rank[node]) for node in order)
        rank = new
        if delta < tolerance:
            break
    return rank


def _teleport(order: list[str], relevance: Mapping[str, float] | None) -> dict[str, float]:
    """Uniform, or proportional to relevance when any node is relevant."""
    if relevance:
        positive = {node: max(relevance.get(node, 0.0), 0.0) for node in order}
        total = sum(positive.values())
        if total > 0:
            return {node: value / total for node, value in positive.items()}
    return dict.fromkeys(order, 1.0 / len(order))
