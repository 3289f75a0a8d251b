"""The SQLite frontier's link graph: the crawled edges, the pages' topic scores, and the priorities ranked from them."""

from __future__ import annotations

from collections.abc import Iterable

from combine_scrapy.frontier.sqlite.connection import SqlitePart
from combine_scrapy.frontier.sqlite.tails import keys_of
from combine_scrapy.sqlitetx import write_transaction


class SqliteLinkGraph(SqlitePart):
    """The crawled link graph in ``links`` and each fetched page's score (``LinkGraph``, for the PageRank strategies).

    Setting priorities changes the heads of the hosts named, so it names them in the connection's head cache.
    """

    def add_links(self, edges: Iterable[tuple[str, str]]) -> None:
        """Remember ``(source, target)`` edges of the crawled graph."""
        self.connection.db.executemany("INSERT OR IGNORE INTO links (source, target) VALUES (?, ?)", edges)

    def link_graph(self) -> tuple[list[tuple[str, str]], dict[str, float]]:
        """The crawled graph's edges, and the topic score of every fetched page."""
        edges = self.connection.db.execute("SELECT source, target FROM links").fetchall()
        scores = dict(self.connection.db.execute("SELECT url, score FROM url_states WHERE score IS NOT NULL").fetchall())
        return edges, scores

    def set_priorities(self, priorities: dict[str, float]) -> None:
        """Overwrite the priority of marked URLs (a PageRank recomputation, a rescoring by the link model).

        Only the heads of the hosts named are read again, unless they are most of the frontier's hosts."""
        db = self.connection.statements
        with write_transaction(db):
            numbers: dict[str, int | None] = {}
            rows = []
            for (host, tail), rank in zip(keys_of(priorities), priorities.values()):
                if host not in numbers:
                    row = db.execute("SELECT id FROM hosts WHERE host = ?", (host,)).fetchone()
                    numbers[host] = None if row is None else row[0]
                if numbers[host] is not None:
                    rows.append((rank, numbers[host], tail))
            db.executemany(  # an unchanged priority is not written (nor its index entry)
                "UPDATE urls SET priority = ?1 WHERE host_id = ?2 AND tail = ?3 AND marked = 1 AND priority <> ?1",
                rows,
            )
        cache = self.connection.heads
        if 2 * len(numbers) > len(cache.hosts):
            cache.everything = True
        else:
            cache.changed.update(host for host, number in numbers.items() if number is not None)
