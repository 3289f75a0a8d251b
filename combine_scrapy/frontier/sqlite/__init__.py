"""The embedded frontier: one SQLite file, one harvester process, nothing to start.

Every method is one short transaction, so a harvester killed at any moment
leaves the file consistent: a marked URL stays marked until a fetch of it has
completed, and a URL leased to a dead harvester comes back when its lease ends.

A URL is kept short, as the Redis frontier keeps it: its host as the number of
the host's row, and the rest with ``http://<host>`` written ``:`` and
``https://<host>`` ``;``. Its number is its order of marking, so the index of
each host's best URLs holds no text. What fetches leave (status, validators,
the revisit history) is kept apart from a URL's first fetch on. A queued URL
of the virtual web costs 79 bytes, 163 before (``bench.frontier_size``).
Methods given only a URL find its host with ``host_of``: a URL is marked
under ``host_of(url)``. The view ``url_states`` shows every URL whole with
its state, for reading the file by hand.

The package's parts: ``connection`` (the file, its layout and upgrades, and
the heads of the hosts, ``heads``, which every write names the hosts of)
shared by one class per concern, each satisfying its protocol of
:mod:`combine_scrapy.frontier`: ``queue`` (UrlQueue), ``robots``
(RobotsCache), ``links`` (LinkGraph), ``revisit`` (RevisitHistory) and
``operations`` (FrontierOperations). SqliteFrontier is all of them over one
connection (``Frontier``).
"""

from __future__ import annotations

from pathlib import Path

from combine_scrapy.frontier.sqlite.connection import SqliteConnection
from combine_scrapy.frontier.sqlite.links import SqliteLinkGraph
from combine_scrapy.frontier.sqlite.operations import SqliteOperations
from combine_scrapy.frontier.sqlite.queue import SqliteQueue
from combine_scrapy.frontier.sqlite.revisit import SqliteRevisitHistory
from combine_scrapy.frontier.sqlite.robots import SqliteRobotsCache

__all__ = ["SqliteFrontier"]


class SqliteFrontier(SqliteQueue, SqliteRobotsCache, SqliteLinkGraph, SqliteRevisitHistory, SqliteOperations):
    """The frontier in one SQLite file, for one harvester process: each part over one connection."""

    def __init__(self, path: str | Path, *, max_attempts: int = 5) -> None:
        super().__init__(SqliteConnection(path), max_attempts=max_attempts)
        self.path = self.connection.path
