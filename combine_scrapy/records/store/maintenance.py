"""What combineUtil did to keep a job's records sane, as pure functions over URLs and keys.

``check_sanity`` compares the records' URLs with the frontier and the job's
URL rules; ``find_aliases`` finds hosts that serve the same content under the
same paths (server aliases); ``add_serveralias`` writes them into combine.cfg;
``same_classification`` tells whether the topic filter judges a stored record again as it did
(reclassify; ``records.record.record_document`` reads the record as the filter read its page); ``rank_records`` ranks the records in their link graph (rank).
The commands (sanity, delete, aliases, reclassify, rank) apply the results to the stores.
"""

from __future__ import annotations

import os
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import combinations, islice
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

from combine_scrapy.access.urls import UrlRules, check_url, host_of
from combine_scrapy.frontier import Outcome, outcome_for_status
from combine_scrapy.frontier.pagerank import pagerank
from combine_scrapy.records.record import Record
from combine_scrapy.topic.matching import Classification

T = TypeVar("T")

#: Record URLs looked up in the frontier at a time.
CHUNK = 500
#: Paths two hosts must serve with the same content, and none with different content, to count as aliases.
MIN_SHARED_PATHS = 2


@dataclass
class SanityReport:
    """Where records and frontier disagree, and what restoring does about each."""

    unknown: list[str] = field(default_factory=list)               # URLs the frontier does not know: mark them
    gone: list[str] = field(default_factory=list)                  # URLs the frontier found gone (4xx): forget them
    rejected: list[tuple[str, str]] = field(default_factory=list)  # (URL, reason) the job's rules refuse: forget them
    renamed: list[tuple[str, str]] = field(default_factory=list)   # (URL, canonical URL) under today's rules: rename
    orphans: list[str] = field(default_factory=list)               # keys of records without URLs: delete them

    @property
    def problems(self) -> int:
        return len(self.unknown) + len(self.gone) + len(self.rejected) + len(self.renamed) + len(self.orphans)


def _chunks(items: Iterable[T], size: int) -> Iterator[list[T]]:
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk


def check_sanity(
    url_keys: Iterable[tuple[str, str]],
    statuses: Callable[[list[str]], dict[str, int | None]],
    rules: UrlRules,
    orphans: list[str],
) -> SanityReport:
    """Check every record URL against the job's rules and the frontier's ``statuses``."""
    report = SanityReport(orphans=list(orphans))
    for chunk in _chunks((url for url, _ in url_keys), CHUNK):
        valid = []
        for url in chunk:
            verdict = check_url(url, rules)
            if not verdict.ok:
                report.rejected.append((url, verdict.reason))
            elif verdict.url != url:
                report.renamed.append((url, verdict.url))
            else:
                valid.append(url)
        known = statuses(valid)
        for url in valid:
            if url not in known:
                report.unknown.append(url)
            elif known[url] is not None and outcome_for_status(known[url]) is Outcome.NOT_FOUND:
                report.gone.append(url)
    return report


def find_aliases(url_keys: Iterable[tuple[str, str]], min_shared: int = MIN_SHARED_PATHS) -> list[list[str]]:
    """Groups of hosts serving identical content under identical paths, the host to keep first.

    Two hosts are aliases when at least ``min_shared`` paths give the same
    record on both and no path gives different records. The host kept is the
    one with most record URLs (then the shortest name, then the first in order).
    """
    by_path: dict[str, dict[str, str]] = defaultdict(dict)
    urls_per_host: Counter[str] = Counter()
    for url, key in url_keys:
        parts = urlsplit(url)
        host = host_of(url)
        by_path[parts.path + ("?" + parts.query if parts.query else "")][host] = key
        urls_per_host[host] += 1
    same: Counter[tuple[str, str]] = Counter()
    different: Counter[tuple[str, str]] = Counter()
    for hosts in by_path.values():
        for (a, key_a), (b, key_b) in combinations(sorted(hosts.items()), 2):
            (same if key_a == key_b else different)[a, b] += 1
    parent: dict[str, str] = {}

    def root(host: str) -> str:
        while parent.get(host, host) != host:
            host = parent[host]
        return host

    for (a, b), count in same.items():
        if count >= min_shared and not different[a, b]:
            parent[root(b)] = root(a)
    groups: dict[str, list[str]] = defaultdict(list)
    for host in parent.keys() | set(parent.values()):
        groups[root(host)].append(host)
    ordered = [sorted(hosts, key=lambda h: (-urls_per_host[h], len(h), h)) for hosts in groups.values()]
    return sorted(ordered)


_BLOCK_CLOSE = re.compile(r"^\s*<\s*/\s*serveralias\s*>\s*$", re.IGNORECASE)


def add_serveralias(config: Path, groups: list[list[str]]) -> None:
    """Add ``canonical alias...`` lines to combine.cfg's <serveralias> block (made when missing), atomically."""
    lines = config.read_text(encoding="utf-8").splitlines()
    new = [" ".join(group) for group in groups]
    close = next((number for number, line in enumerate(lines) if _BLOCK_CLOSE.match(line)), None)
    if close is None:
        lines += ["", "# server aliases found by scrapy aliases: records of the later hosts are the first one's", "<serveralias>", *new, "</serveralias>"]
    else:
        lines[close:close] = new
    temporary = config.with_name(config.name + ".tmp")
    temporary.write_text("\n".join(lines) + "\n", encoding="utf-8")
    os.replace(temporary, config)


# -- reclassify and rank (combineUtil's reclassify, and PageRank over the records) --------------------------


def same_classification(record: Record, classification: Classification) -> bool:
    """Whether the filter scores the record as the stored scores say (score, classes and matched terms)."""
    return (
        record.score == classification.score
        and record.normalized == classification.normalized
        and [(c.name, c.absolute, c.relative, tuple(c.terms)) for c in record.classes]
        == [(c.name, c.absolute, c.relative, tuple(c.terms)) for c in classification.classes]
        and list(record.terms) == list(classification.terms)
    )


def rank_records(
    edges: Iterable[tuple[str, str]], scores: dict[str, float]
) -> tuple[dict[str, float], dict[str, float]]:
    """PageRank and iPageRank (relevance: the topic score, negative as 0) of every record of ``scores``.

    The graph is the records' links to each other; a record no link touches
    still gets its teleport share. Each rank sums to 1 over the records.
    """
    graph = [*edges, *((key, key) for key in scores)]  # a self-link makes a node of every record, passes no rank
    relevance = {key: max(score, 0.0) for key, score in scores.items()}
    return pagerank(graph), pagerank(graph, relevance)
