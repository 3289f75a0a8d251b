"""Scrapy feed exporters for the export formats: ``scrapy crawl focused -a job=glass -O glass.xml:oai_dc``.

The spider yields one :class:`~combine_scrapy.items.Fetch` a response; what a
user wants in the feed is what ``scrapy export`` writes: the records. So the
exporter takes from each item only the record RecordPipeline stored it in
(``item.stored``; irrelevant pages, failures and redirects store nothing) and,
when the feed (or one batch of it) is finished, writes each of those records
once, read back from the job's store with all its URLs and rendered by the
very function ``scrapy export`` uses. A page that joined a record later in the
crawl (the same content under another URL) is therefore on the record in the
feed, as it is in ``scrapy export``.

The keys of the records seen are kept in a temporary SQLite file, so memory
stays flat however long the crawl. Formats (the names of ``FEED_EXPORTERS``):
``oai_dc`` (alias ``dc``), ``alvis``, ``alvis-light``, ``jsonl`` (alias
``jsonlines``) and ``markdown``, written by ``scrapy export``'s code; and
Scrapy's own ``json``, ``csv``, ``xml``, ``marshal`` and ``pickle``, written by
Scrapy's exporters with one item a record holding the fields of its JSON Lines
line. A feed's ``item_export_kwargs`` may say ``{"text": "main"}`` to write each
record's main content as its text, as ``scrapy export --text main`` does.

:class:`~combine_scrapy.extensions.feeds.RecordFeeds` replaces Scrapy's
FeedExporter extension in the focused crawl: a fetch that stored no record
reaches no feed, and the count Scrapy logs for a feed ("Stored csv feed (8
items)") is the records written.
"""

from __future__ import annotations

import io
import sqlite3
from collections.abc import Callable, Iterator
from typing import IO, Any, Protocol, Self, cast

from scrapy.crawler import Crawler
from scrapy.exporters import (
    BaseItemExporter,
    CsvItemExporter,
    JsonItemExporter,
    MarshalItemExporter,
    PickleItemExporter,
    XmlItemExporter,
)

from combine_scrapy.records.export import TEXTS, with_text, write_records
from combine_scrapy.records.export.jsonl import record_values
from combine_scrapy.records.record import Record
from combine_scrapy.records.store import RecordReader


class RecordKeys:
    """Distinct record keys in the order first seen, kept on disk (a private temporary SQLite database)."""

    def __init__(self) -> None:
        self._db = sqlite3.connect("")  # "": a temporary file SQLite deletes on close, paged out past its cache
        self._db.execute("CREATE TABLE keys (key TEXT NOT NULL UNIQUE)")

    def add(self, key: str) -> None:
        self._db.execute("INSERT OR IGNORE INTO keys (key) VALUES (?)", (key,))

    def __iter__(self) -> Iterator[str]:
        last = 0
        while rows := self._db.execute("SELECT rowid, key FROM keys WHERE rowid > ? ORDER BY rowid LIMIT 500", (last,)).fetchall():
            yield from (key for _, key in rows)
            last = rows[-1][0]

    def close(self) -> None:
        self._db.close()


def stored_records(store: RecordReader, keys: RecordKeys) -> Iterator[tuple[Record, list[str]]]:
    """``(record, urls)`` of each key still in the store (a record deleted later in the crawl is left out)."""
    for key in keys:
        record = store.get(key)
        if record is not None:
            yield record, store.urls(key)


class _CrawlRecords(Protocol):
    """What the exporters read of the crawl's CrawlContext: its record store."""

    @property
    def store(self) -> RecordReader: ...


class _HarvestingSpider(Protocol):
    """The focused spider, whose from_crawler gives it the job's CrawlContext."""

    context: _CrawlRecords


class RecordFeedExporter(BaseItemExporter):
    """Write the records a crawl stored, in ``export_format``, as ``scrapy export`` writes them."""

    export_format: str = "jsonl"

    def __init__(self, file: IO[bytes], store: RecordReader, text: str = "all", **kwargs: Any):
        super().__init__(dont_fail=True, **kwargs)
        if text not in TEXTS:
            raise ValueError(f"feed option text {text!r}: use one of {', '.join(TEXTS)}")
        self.file = file
        self.store = store
        self.text = text
        self.keys = RecordKeys()
        self.written: int | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler, file: IO[bytes], **kwargs: Any) -> Self:
        # Scrapy makes a feed's exporter when the spider opens: the records are the store of the spider's CrawlContext.
        # Scrapy types Crawler.spider as any Spider or None; these exporters run in the focused spider's crawls only.
        spider = cast(_HarvestingSpider, crawler.spider)
        return cls(file, spider.context.store, **kwargs)

    def export_item(self, item: Any) -> None:
        key = getattr(item, "stored_key", None)
        if key is not None:
            self.keys.add(key)

    def write_stored(self) -> int:
        """Write the records of the items exported (once, when the feed ends); the number written."""
        if self.written is None:
            try:
                self.written = self.write(stored_records(self.store, self.keys))
            finally:
                self.keys.close()
        return self.written

    def write(self, records: Iterator[tuple[Record, list[str]]]) -> int:
        out = io.TextIOWrapper(self.file, encoding="utf-8", newline="\n", write_through=True)
        try:
            count = write_records(self.export_format, records, out, self.store.key_for_url, self.store.links_to,
                                  text=self.text)
            out.flush()
        finally:
            out.detach()  # the file is Scrapy's to close
        return count

    def finish_exporting(self) -> None:
        self.write_stored()


class DublinCoreFeedExporter(RecordFeedExporter):
    export_format = "dc"


class AlvisFeedExporter(RecordFeedExporter):
    export_format = "alvis"


class AlvisLightFeedExporter(RecordFeedExporter):
    export_format = "alvis-light"


class JsonLinesFeedExporter(RecordFeedExporter):
    export_format = "jsonl"


class MarkdownFeedExporter(RecordFeedExporter):
    export_format = "markdown"


class ScrapyFormatFeedExporter(RecordFeedExporter):
    """One of Scrapy's own formats, written by Scrapy's exporter (with the feed's options: fields, indent...),
    one item a record: the values of its JSON Lines line (:func:`record_values`)."""

    item_exporter_class: Callable[..., BaseItemExporter]  # an exporter class of Scrapy's, given the file

    def __init__(self, file: IO[bytes], store: RecordReader, text: str = "all", **kwargs: Any):
        super().__init__(file, store, text)
        self.item_exporter = self.item_exporter_class(file, **kwargs)

    def write(self, records: Iterator[tuple[Record, list[str]]]) -> int:
        self.item_exporter.start_exporting()
        count = 0
        for record, urls in with_text(records, self.text):
            self.item_exporter.export_item(record_values(record, urls))
            count += 1
        self.item_exporter.finish_exporting()
        return count


class JsonFeedExporter(ScrapyFormatFeedExporter):
    item_exporter_class = JsonItemExporter


class CsvFeedExporter(ScrapyFormatFeedExporter):
    item_exporter_class = CsvItemExporter


class XmlFeedExporter(ScrapyFormatFeedExporter):
    item_exporter_class = XmlItemExporter


class MarshalFeedExporter(ScrapyFormatFeedExporter):
    item_exporter_class = MarshalItemExporter


class PickleFeedExporter(ScrapyFormatFeedExporter):
    item_exporter_class = PickleItemExporter
