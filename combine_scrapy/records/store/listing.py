"""The record store's listings: what the console and the OAI-PMH provider page through.

Selective lists (by check date, topic class, host, after an id) for OAI-PMH
paging and search filters, run as SQL on the store's own tables so a page of
100 records costs one query, not a scan. They go through the SQL layer the
SQLite and MySQL stores share (``{p}`` table prefix, ``?`` parameters, one
read transaction), so both backends answer them: the store hands :class:`SqlRecordListing` a function that runs
one read query, and one that lists its tombstones, so this module needs nothing of the store's.

:class:`RecordListing` is what a consumer (the console, the OAI-PMH provider) may call: ``store.listing``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

#: Runs one read query of the store (``{p}`` table prefix, ``?`` parameters) and returns its rows.
ReadQuery = Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]
#: The store's tombstones deleted in ``[since, until)``, oldest first.
ReadTombstones = Callable[[float | None, float | None], list["Tombstone"]]


@dataclass(frozen=True)
class RecordHead:
    """What a list shows of a record: enough for an OAI header or a search filter."""

    id: int
    key: str
    changed: float  # the record's datestamp (records.changed)
    classes: tuple[str, ...]


@dataclass(frozen=True)
class Tombstone:
    key: str
    deleted: float


def _like_prefix(text: str) -> str:
    """``text`` escaped for ``LIKE ... ESCAPE '!'``, to be followed by a wildcard."""
    return text.replace("!", "!!").replace("%", "!%").replace("_", "!_")


def class_condition(topic_class: str | None) -> tuple[str, list[Any]]:
    """SQL selecting records of a class or any of its sub-classes (``CP`` takes ``CP.Drosera``)."""
    if topic_class is None:
        return "", []
    return (
        " AND r.id IN (SELECT t.record FROM {p}topics t WHERE t.class = ? OR t.class LIKE ? ESCAPE '!')",
        [topic_class, _like_prefix(topic_class) + ".%"],
    )


def on_host(host_port: str, host: str) -> bool:
    """Whether a URL's ``host[:port]`` is ``host``, given with its port or without."""
    return host_port == host or host_port.rpartition(":")[0] == host


class RecordListing(Protocol):
    """Selective lists of a job's records, by datestamp, topic class and host: what the console and OAI-PMH page through."""

    def heads(
        self, *, since: float | None = None, until: float | None = None, topic_class: str | None = None,
        host: str | None = None, after_id: int = 0, limit: int = 100, newest_first: bool = False,
    ) -> list[RecordHead]:
        """Records changed (their datestamp) in ``[since, until)``, of a class and with a URL on a host, by id."""

    def count(
        self, *, since: float | None = None, until: float | None = None, topic_class: str | None = None,
        host: str | None = None,
    ) -> int: ...

    def head(self, key: str) -> RecordHead | None: ...

    def head_by_id(self, record_id: int) -> RecordHead | None: ...

    def earliest(self) -> float | None:
        """The earliest datestamp (None: no record)."""

    def classes(self) -> list[tuple[str, int]]:
        """Every topic class with the number of records that have it, by name."""

    def hosts(self, limit: int = 1000) -> list[tuple[str, int]]:
        """Hosts with stored URLs, most records first."""

    def outlinks(self, record_id: int) -> list[tuple[str, str, str]]:
        """``(url, anchor, kind)`` of the record's links, in page order."""

    def tombstones(self, since: float | None = None, until: float | None = None) -> list[Tombstone]:
        """Records deleted in ``[since, until)``, oldest first."""


class SqlRecordListing:
    """:class:`RecordListing` over a SQL record store (SQLite or MySQL), through its read query and tombstones."""

    def __init__(self, read: ReadQuery, tombstones: ReadTombstones) -> None:
        self._read = read
        self._tombstones = tombstones

    def _rows(self, text: str, parameters: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._read(text, list(parameters))

    def heads(
        self,
        *,
        since: float | None = None,
        until: float | None = None,
        topic_class: str | None = None,
        host: str | None = None,
        after_id: int = 0,
        limit: int = 100,
        newest_first: bool = False,
    ) -> list[RecordHead]:
        """Records changed (their datestamp) in ``[since, until)``, of a class and with a URL on a host, by id."""
        where, parameters = self._where(since, until, topic_class, host)
        if newest_first:
            order, bound = "DESC", " AND r.id < ?" if after_id else ""
        else:
            order, bound = "ASC", " AND r.id > ?"
        if bound:
            where, parameters = where + bound, [*parameters, after_id]
        rows = self._rows(
            f"SELECT r.id, r.`key`, r.changed FROM {{p}}records r WHERE 1 = 1{where} ORDER BY r.id {order} LIMIT ?",
            [*parameters, limit],
        )
        return self._with_classes(rows)

    def count(
        self, *, since: float | None = None, until: float | None = None, topic_class: str | None = None,
        host: str | None = None,
    ) -> int:
        where, parameters = self._where(since, until, topic_class, host)
        count: int = self._rows(f"SELECT COUNT(*) FROM {{p}}records r WHERE 1 = 1{where}", parameters)[0][0]
        return count

    def head(self, key: str) -> RecordHead | None:
        rows = self._with_classes(self._rows("SELECT r.id, r.`key`, r.changed FROM {p}records r WHERE r.`key` = ?", [key]))
        return rows[0] if rows else None

    def head_by_id(self, record_id: int) -> RecordHead | None:
        rows = self._with_classes(self._rows("SELECT r.id, r.`key`, r.changed FROM {p}records r WHERE r.id = ?", [record_id]))
        return rows[0] if rows else None

    def earliest(self) -> float | None:
        earliest: float | None = self._rows("SELECT MIN(changed) FROM {p}records")[0][0]
        return earliest

    def classes(self) -> list[tuple[str, int]]:
        """Every topic class with the number of records that have it, by name."""
        return [(name, count) for name, count in self._rows(
            "SELECT class, COUNT(DISTINCT record) FROM {p}topics GROUP BY class ORDER BY class"
        )]

    def hosts(self, limit: int = 1000) -> list[tuple[str, int]]:
        """Hosts with stored URLs, most records first."""
        return [(host, count) for host, count in self._rows(
            "SELECT host, COUNT(DISTINCT `key`) FROM {p}record_urls GROUP BY host ORDER BY COUNT(DISTINCT `key`) DESC, host "
            "LIMIT ?", [limit]
        )]

    def outlinks(self, record_id: int) -> list[tuple[str, str, str]]:
        """``(url, anchor, kind)`` of the record's links, in page order."""
        return [(url, anchor, kind) for url, anchor, kind in self._rows(
            "SELECT url, anchor, kind FROM {p}links WHERE record = ? ORDER BY position", [record_id]
        )]

    def tombstones(self, since: float | None = None, until: float | None = None) -> list[Tombstone]:
        """Records deleted in ``[since, until)``, oldest first (the store drops a tombstone when the
        record is stored again)."""
        return self._tombstones(since, until)

    @staticmethod
    def _where(
        since: float | None, until: float | None, topic_class: str | None, host: str | None
    ) -> tuple[str, list[Any]]:
        where = ""
        parameters: list[Any] = []
        if since is not None:
            where, parameters = where + " AND r.changed >= ?", [*parameters, since]
        if until is not None:
            where, parameters = where + " AND r.changed < ?", [*parameters, until]
        condition, values = class_condition(topic_class)
        where, parameters = where + condition, [*parameters, *values]
        if host is not None:  # with its port or without
            where += " AND r.`key` IN (SELECT u.`key` FROM {p}record_urls u WHERE u.host = ? OR u.host LIKE ? ESCAPE '!')"
            parameters += [host, _like_prefix(host) + ":%"]
        return where, parameters

    def _with_classes(self, rows: list[tuple[Any, ...]]) -> list[RecordHead]:
        if not rows:
            return []
        ids = [row[0] for row in rows]
        classes: dict[int, list[str]] = {record_id: [] for record_id in ids}
        for record_id, name in self._rows(
            f"SELECT record, class FROM {{p}}topics WHERE record IN ({', '.join('?' * len(ids))}) ORDER BY record, position",
            ids,
        ):
            classes[record_id].append(name)
        return [RecordHead(record_id, key, changed, tuple(classes[record_id])) for record_id, key, changed in rows]
