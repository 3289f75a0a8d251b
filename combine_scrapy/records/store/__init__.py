"""Record stores: one interface, an embedded SQLite default and MySQL/MariaDB for servers."""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import NamedTuple, Protocol

from combine_scrapy.records.record import Record, TopicClass
from combine_scrapy.records.store.listing import RecordListing
from combine_scrapy.records.store.search import SearchHit

RECORDS_FILE = "records.sqlite"


class Stored(enum.Enum):
    """What storing a page did; the value is the crawl statistic it counts under (``records/<value>``)."""

    NEW = "new"                        # new content: a new record
    KNOWN = "known_content"            # the MD5 of a stored record: the URL joined it
    NEAR_DUPLICATE = "near_duplicate"  # new MD5, but within the simhash distance of a stored record: the URL joined it


class Deletion(NamedTuple):
    """A record's tombstone: it was deleted at ``deleted`` (Unix time), served under ``urls`` until then.

    An OAI-PMH repository lists it as a header with status="deleted"; an
    incremental export (``scrapy export JOB --since T``) as a deleted entry.
    """

    key: str
    urls: list[str]
    deleted: float


#: Orders records can be read in besides the default (oldest first): by a rank that ``scrapy rank`` stored.
RANK_ORDERS = ("pagerank", "ipagerank")


class RecordWriter(Protocol):
    """What a crawl writes: pages stored, URLs that went."""

    def store(self, record: Record, near_duplicate_distance: int | None = None) -> Stored:
        """Store under ``record.url``, in one transaction.

        With ``near_duplicate_distance``, content whose MD5 is unknown but whose
        fingerprint is that close to another record's joins that record.
        """

    def forget_url(self, url: str) -> str | None:
        """Drop a URL from its record; returns the record's key if that deleted the record."""


class RecordReader(Protocol):
    """Records and their URLs and links read back, by key, by URL, or all of them in pages."""

    location: str  # where the records are, for people (a file path, a server URL without password)

    def key_for_url(self, url: str) -> str | None: ...

    def key_for_id(self, record_id: int) -> str | None: ...

    def urls(self, key: str) -> list[str]: ...

    def get(self, key: str) -> Record | None: ...

    def __iter__(self) -> Iterator[Record]:
        """Every record, oldest first, read in pages so memory stays flat."""

    def records(self, order: str = "id") -> Iterator[Record]:
        """Every record, oldest first (``id``) or by a stored rank, highest first (``pagerank``, ``ipagerank``;
        records without one come last, oldest first), read in pages."""

    def url_keys(self) -> Iterator[tuple[str, str]]:
        """Every ``(url, key)``, read in pages."""

    def urls_on_host(self, host: str) -> list[str]: ...

    def anchors_to(self, url: str, limit: int = 50) -> list[tuple[str, str]]:
        """Distinct non-empty ``(anchor, kind)`` of stored links to ``url`` (an ``img`` link's anchor is its alt text)."""

    def links_to(self, url: str, limit: int = 100) -> list[tuple[str, str, str, str]]:
        """``(key, url, anchor, kind)`` of stored links to ``url``: the record holding each and its first URL."""

    def link_graph(self) -> tuple[list[tuple[str, str]], dict[str, float]]:
        """Links between records as ``(source key, target key)`` edges, and every record's topic score by key."""

    def deleted_since(self, since: float | None = None, until: float | None = None) -> list[Deletion]:
        """Tombstones of records deleted at or after ``since`` (all: None) and before ``until``, oldest first.

        A record that came back (the same content stored again) has no tombstone.
        """


class RecordSearch(Protocol):
    """Records found by their words or by their content's fingerprint."""

    def search(self, query: str, limit: int = 10) -> list[SearchHit]:
        """Records matching any word of ``query``, best first."""

    def near_duplicate(self, fingerprint: int, distance: int) -> tuple[str, int] | None:
        """The key and distance of the stored record nearest to ``fingerprint``, if within ``distance``."""


class RecordMaintenance(Protocol):
    """What the operators' commands count and repair: statistics, deletions, aliases, ranks, topic scores."""

    def count(self) -> int: ...

    def term_counts(self) -> dict[str, int]:
        """Records each matched term was found in (Combine's termstat)."""

    def class_counts(self) -> dict[str, int]:
        """Records classified in each topic class (Combine's classtat)."""

    def orphans(self) -> list[str]:
        """Keys of records left without any URL (they should not exist)."""

    def delete(self, key: str) -> list[str]:
        """Delete a record with all its URLs; returns the URLs it had."""

    def rename_url(self, old: str, new: str) -> bool:
        """Move a URL's record to another URL (a server alias resolved); False if ``old`` is unknown."""

    def forget_deletions(self, before: float | None = None) -> int:
        """Drop the tombstones of records deleted before ``before`` (all: None); returns how many."""

    def reclassify(self, key: str, score: float, normalized: float, algorithm: str, classes: list[TopicClass],
                   terms: list[str], off_topic: bool = False) -> None:
        """Replace a record's topic scores, classes and matched terms (a topic filter run again), and its flag."""

    def set_ranks(self, pagerank: Mapping[str, float], ipagerank: Mapping[str, float]) -> None:
        """Store the ranks of records by key, in one transaction; records missing from a map get none."""


class RecordListings(Protocol):
    """A store's selective lists of its records (the console, OAI-PMH)."""

    @property
    def listing(self) -> RecordListing: ...


class RecordStore(RecordWriter, RecordReader, RecordSearch, RecordMaintenance, RecordListings, Protocol):
    """Records keyed by the MD5 of their content, each with all the URLs that served it (SQLite, MySQL/MariaDB)."""

    def close(self) -> None: ...


def open_store(job: str, data_dir: str | Path, mysql_url: str | None = None, *, create: bool = True,
               outage_patience: float | None = None) -> RecordStore:
    """The job's record store: its tables in MySQL when ``mysql_url`` is given, else ``data_dir/<job>/records.sqlite``.

    With ``create=False`` a job without records raises FileNotFoundError instead of starting an empty file.
    ``outage_patience``: seconds a MySQL server that cannot be reached is waited for, at the start and later
    (a harvester's COMBINE_OUTAGE_PATIENCE); without it, not at the start and up to a minute later.
    """
    if mysql_url:
        from combine_scrapy.records.store.mysql import MysqlRecordStore  # MySQLdb only when asked for

        if outage_patience is None:
            return MysqlRecordStore.from_url(mysql_url, job)
        return MysqlRecordStore.from_url(mysql_url, job, reconnect_timeout=outage_patience,
                                         connect_patience=outage_patience)
    from combine_scrapy.records.store.sqlite import SqliteRecordStore

    path = Path(data_dir) / job / RECORDS_FILE
    if not create and not path.exists():
        raise FileNotFoundError(f"job {job} has no records yet ({path} does not exist)")
    return SqliteRecordStore(path)
