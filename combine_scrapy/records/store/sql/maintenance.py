"""What the operators' commands count and repair in the SQL record store."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Mapping

from combine_scrapy.records.record import TopicClass
from combine_scrapy.records.store.sql.tables import PAGE, Cursor, SqlTables, url_hash


class SqlRecordMaintenance(SqlTables):
    """Statistics, deletions, aliases, ranks and topic scores (``RecordMaintenance``)."""

    def count(self) -> int:
        count: int = self._read(lambda cursor: self._value(cursor, "SELECT COUNT(*) FROM {p}records"))
        return count

    def term_counts(self) -> dict[str, int]:
        """How many records each matched term was found in, read in pages."""
        counts: Counter[str] = Counter()
        last = 0
        while True:
            rows = self._read(lambda cursor: self._all(
                cursor, "SELECT id, terms FROM {p}records WHERE id > ? ORDER BY id LIMIT ?", (last, PAGE)))
            if not rows:
                return dict(counts)
            for _, terms in rows:
                counts.update(set(json.loads(terms)))
            last = rows[-1][0]

    def class_counts(self) -> dict[str, int]:
        """How many records are classified in each topic class."""
        rows = self._read(lambda cursor: self._all(
            cursor, "SELECT class, COUNT(DISTINCT record) FROM {p}topics GROUP BY class"))
        return {name: count for name, count in rows}

    def orphans(self) -> list[str]:
        rows = self._read(
            lambda cursor: self._all(
                cursor,
                "SELECT `key` FROM {p}records r WHERE NOT EXISTS "
                "(SELECT 1 FROM {p}record_urls u WHERE u.`key` = r.`key`) ORDER BY `key`",
            )
        )
        return [row[0] for row in rows]

    def delete(self, key: str) -> list[str]:
        """Delete a record with all its URLs; returns the URLs it had (none: no such record)."""

        def work(cursor: Cursor) -> list[str]:
            urls = [row[0] for row in self._all(cursor, "SELECT url FROM {p}record_urls WHERE `key` = ?", (key,))]
            self._run(cursor, "DELETE FROM {p}record_urls WHERE `key` = ?", (key,))
            self._delete_record(cursor, key, urls)
            return sorted(urls)

        return self._write(work)

    def rename_url(self, old: str, new: str) -> bool:
        """Let ``new`` serve what ``old`` served (``old`` removed); the record ``new`` had is dropped if orphaned."""

        def work(cursor: Cursor) -> bool:
            row = self._one(cursor, "SELECT `key`, checked FROM {p}record_urls WHERE url_hash = ?", (url_hash(old),))
            if row is None:
                return False
            key, checked = row
            replaced = self._key_for_url(cursor, new)
            self._run(cursor, "DELETE FROM {p}record_urls WHERE url_hash = ?", (url_hash(old),))
            self._put_url(cursor, new, key, checked)
            now = time.time()
            self._touch(cursor, [key], now)
            if replaced and replaced != key and not self._drop_if_orphan(cursor, replaced, new):
                self._touch(cursor, [replaced], now)
            return True

        return self._write(work)

    def forget_deletions(self, before: float | None = None) -> int:
        """Drop tombstones of records deleted before ``before`` (all of them: None); returns how many went."""

        def work(cursor: Cursor) -> int:
            if before is None:
                return self._run(cursor, "DELETE FROM {p}deletions").rowcount
            return self._run(cursor, "DELETE FROM {p}deletions WHERE deleted < ?", (before,)).rowcount

        return self._write(work)

    def reclassify(self, key: str, score: float, normalized: float, algorithm: str, classes: list[TopicClass],
                   terms: list[str], off_topic: bool = False) -> None:
        """Replace a record's topic scores, classes and matched terms, and set or clear its off-topic flag."""

        def work(cursor: Cursor) -> None:
            row = self._one(cursor, "SELECT id FROM {p}records WHERE `key` = ?", (key,))
            if row is None:
                return
            record_id = row[0]
            self._run(
                cursor,
                "UPDATE {p}records SET score = ?, normalized = ?, algorithm = ?, terms = ?, off_topic = ? WHERE id = ?",
                (score, normalized, algorithm, json.dumps(list(terms), ensure_ascii=False), int(off_topic), record_id),
            )
            self._run(cursor, "DELETE FROM {p}topics WHERE record = ?", (record_id,))
            self._touch(cursor, [key], time.time())
            if classes:
                cursor.executemany(
                    self._sql(
                        "INSERT INTO {p}topics (record, position, class, absolute, relative, terms) VALUES (?, ?, ?, ?, ?, ?)"
                    ),
                    [
                        (record_id, position, topic.name, topic.absolute, topic.relative,
                         json.dumps(list(topic.terms), ensure_ascii=False))
                        for position, topic in enumerate(classes)
                    ],
                )

        self._write(work)

    def set_ranks(self, pagerank: Mapping[str, float], ipagerank: Mapping[str, float]) -> None:
        """Store each record's ranks in one transaction; a record in neither map is left without ranks."""

        def work(cursor: Cursor) -> None:
            before = {key: (old, old_i) for key, old, old_i in self._all(cursor, "SELECT `key`, pagerank, ipagerank FROM {p}records")}
            self._run(cursor, "UPDATE {p}records SET pagerank = NULL, ipagerank = NULL")
            keys = pagerank.keys() | ipagerank.keys()
            cursor.executemany(
                self._sql("UPDATE {p}records SET pagerank = ?, ipagerank = ? WHERE `key` = ?"),
                [(pagerank.get(key), ipagerank.get(key), key) for key in sorted(keys)],
            )
            self._touch(cursor, sorted(key for key, ranks in before.items()
                                       if ranks != (pagerank.get(key), ipagerank.get(key))), time.time())

        self._write(work)
