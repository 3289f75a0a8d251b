"""The SQL record store's reader: records, their URLs and links, and tombstones read back."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from combine_scrapy.document import neardup
from combine_scrapy.records.record import Record, RecordLink, TopicClass
from combine_scrapy.records.store import RANK_ORDERS, Deletion
from combine_scrapy.records.store.sql.tables import (
    COLUMNS,
    FIELDS,
    LATER,
    MAIN_TEXT_VERSION,
    PAGE,
    RENDERED_VERSION,
    Cursor,
    Row,
    SqlTables,
    inflate_document,
    stored_text,
)


class SqlRecordReader(SqlTables):
    """Records read by key, by URL, or all of them in pages, with their links and tombstones (``RecordReader``)."""

    def key_for_url(self, url: str) -> str | None:
        return self._read(lambda cursor: self._key_for_url(cursor, url))

    def key_for_id(self, record_id: int) -> str | None:
        row = self._read(lambda cursor: self._one(cursor, "SELECT `key` FROM {p}records WHERE id = ?", (record_id,)))
        return row[0] if row else None

    def urls(self, key: str) -> list[str]:
        rows = self._read(lambda cursor: self._all(cursor, "SELECT url FROM {p}record_urls WHERE `key` = ?", (key,)))
        return sorted(row[0] for row in rows)

    def urls_on_host(self, host: str) -> list[str]:
        rows = self._read(lambda cursor: self._all(cursor, "SELECT url FROM {p}record_urls WHERE host = ?", (host,)))
        return sorted(row[0] for row in rows)

    def url_keys(self) -> Iterator[tuple[str, str]]:
        """Every ``(url, key)``, in pages of PAGE rows by URL hash."""
        last = b""
        while True:
            rows = self._read(
                lambda cursor: self._all(
                    cursor,
                    "SELECT url_hash, url, `key` FROM {p}record_urls WHERE url_hash > ? ORDER BY url_hash LIMIT ?",
                    (last, PAGE),
                )
            )
            if not rows:
                return
            for _, url, key in rows:
                yield url, key
            last = bytes(rows[-1][0])

    def anchors_to(self, url: str, limit: int = 50) -> list[tuple[str, str]]:
        """Distinct non-empty ``(anchor, kind)`` of stored links to ``url``, oldest first: an image's alt texts."""
        column, value = self._link_target(url)
        rows = self._read(
            lambda cursor: self._all(
                cursor,
                f"SELECT anchor, kind FROM {{p}}links WHERE {column} = ? AND anchor <> '' "
                "GROUP BY anchor, kind ORDER BY MIN(record), MIN(position) LIMIT ?",
                (value, limit),
            )
        )
        return [(anchor, kind) for anchor, kind in rows]

    def links_to(self, url: str, limit: int = 100) -> list[tuple[str, str, str, str]]:
        """``(key, url, anchor, kind)`` of stored links to ``url``, oldest first: each link's record and its first URL."""
        column, value = self._link_target(url)
        rows = self._read(
            lambda cursor: self._all(
                cursor,
                "SELECT r.`key`, (SELECT MIN(u.url) FROM {p}record_urls u WHERE u.`key` = r.`key`), l.anchor, l.kind "
                f"FROM {{p}}links l JOIN {{p}}records r ON r.id = l.record WHERE l.{column} = ? "
                "ORDER BY l.record, l.position LIMIT ?",
                (value, limit),
            )
        )
        return [(key, source or "", anchor, kind) for key, source, anchor, kind in rows]

    def get(self, key: str) -> Record | None:
        records = self._read(lambda cursor: self._records(cursor, "`key` = ?", (key,)))
        return records[0][1] if records else None

    def __iter__(self) -> Iterator[Record]:
        """All records, oldest first, read in pages of PAGE so memory stays flat."""
        return self.records()

    def records(self, order: str = "id") -> Iterator[Record]:
        """All records, oldest first (``id``) or highest stored rank first (``pagerank``, ``ipagerank``: the
        records without one after, oldest first), read in pages of PAGE so memory stays flat."""
        if order != "id" and order not in RANK_ORDERS:
            raise ValueError(f"unknown record order {order!r}: use id, {', '.join(RANK_ORDERS)}")
        if order in RANK_ORDERS:
            # Keyset pages over (rank descending, id): each page starts after the last row of the one before.
            page = self._read(lambda cursor: self._records(
                cursor, f"{order} IS NOT NULL ORDER BY {order} DESC, id LIMIT ?", (PAGE,)))
            while page:
                yield from (record for _, record in page)
                last_id, last_rank = page[-1][0], getattr(page[-1][1], order)
                page = self._read(lambda cursor: self._records(
                    cursor,
                    f"{order} IS NOT NULL AND ({order} < ? OR ({order} = ? AND id > ?)) ORDER BY {order} DESC, id LIMIT ?",
                    (last_rank, last_rank, last_id, PAGE),
                ))
        unranked = f"{order} IS NULL AND " if order in RANK_ORDERS else ""
        last = 0
        while True:
            page = self._read(lambda cursor: self._records(cursor, f"{unranked}id > ? ORDER BY id LIMIT ?", (last, PAGE)))
            if not page:
                return
            yield from (record for _, record in page)
            last = page[-1][0]

    def _records(self, cursor: Cursor, where: str, parameters: Sequence[Any]) -> list[tuple[int, Record]]:
        """``(id, record)`` of the records ``where`` selects, with their links and topics (three queries in all)."""
        main_text = "main_text" if self.schema_version >= MAIN_TEXT_VERSION else "NULL"
        rendered = "rendered" if self.schema_version >= RENDERED_VERSION else "0"
        rows = self._all(
            cursor, f"SELECT {', '.join(COLUMNS)}, {main_text}, {rendered} FROM {{p}}records WHERE {where}", parameters
        )
        if not rows:
            return []
        ids = [row[0] for row in rows]
        links: dict[int, list[RecordLink]] = {record_id: [] for record_id in ids}
        classes: dict[int, list[TopicClass]] = {record_id: [] for record_id in ids}
        marks = self._marks(len(ids))
        for record_id, url, anchor, kind in self._all(
            cursor, f"SELECT record, url, anchor, kind FROM {{p}}links WHERE record IN ({marks}) ORDER BY record, position", ids
        ):
            links[record_id].append(RecordLink(url, anchor, kind))
        for record_id, name, absolute, relative, terms in self._all(
            cursor,
            f"SELECT record, class, absolute, relative, terms FROM {{p}}topics WHERE record IN ({marks}) "
            "ORDER BY record, position",
            ids,
        ):
            classes[record_id].append(TopicClass(name, absolute, relative, tuple(json.loads(terms))))
        return [(row[0], self._record(row, links[row[0]], classes[row[0]])) for row in rows]

    @staticmethod
    def _record(row: Row, links: list[RecordLink], classes: list[TopicClass]) -> Record:
        values = dict(zip(("id", "key", *FIELDS, *LATER, "main_text", "rendered"), row))
        del values["id"]
        values["off_topic"] = bool(values["off_topic"])
        values["rendered"] = bool(values["rendered"])
        html, fingerprint, text, main_text = values["html"], values["fingerprint"], stored_text(values["text"]), values["main_text"]
        values.update(
            headings=json.loads(values["headings"]),
            meta=json.loads(values["meta"]),
            terms=json.loads(values["terms"]),
            text=text,
            html=None if html is None else inflate_document(html, text),
            main_text=None if main_text is None else inflate_document(main_text, text),
            fingerprint=None if fingerprint is None else neardup.to_unsigned(fingerprint),
        )
        return Record(**values, links=links, classes=classes)

    def link_graph(self) -> tuple[list[tuple[str, str]], dict[str, float]]:
        """``(source key, target key)`` of every stored link from one record to a URL of another (or the same),
        and every record's topic score by key."""
        column, _ = self._link_target("")

        def work(cursor: Cursor) -> tuple[list[Row], list[Row]]:
            edges = self._all(
                cursor,
                f"SELECT DISTINCT r.`key`, u.`key` FROM {{p}}record_urls u JOIN {{p}}links l ON l.{column} = u.{column} "
                "JOIN {p}records r ON r.id = l.record WHERE l.url = u.url",
            )
            scores = self._all(cursor, "SELECT `key`, score FROM {p}records")
            return edges, scores

        edges, scores = self._read(work)
        return [(source, target) for source, target in edges], {key: float(score) for key, score in scores}

    def deleted_since(self, since: float | None = None, until: float | None = None) -> list[Deletion]:
        """Tombstones of records deleted at or after ``since`` (all: None) and before ``until``, oldest first."""
        return self._deletions(since, until)
