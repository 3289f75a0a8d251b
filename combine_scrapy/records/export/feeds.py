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
``oai_dc`` (alias ``dc``), ``alvis``, ``alvis-light``, ``jsonl``, which
replaces Scrapy's own JSON Lines exporter (it would write the raw fetches),
and ``markdown``. A feed's ``item_export_kwargs`` may say ``{"text": "main"}``
to write each record's main content as its text, as ``scrapy export --text main`` does.
"""

from __future__ import annotations

import io
import sqlite3
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, Any, Protocol, Self, cast

from scrapy.crawler import Crawler
from scrapy.exporters import BaseItemExporter

from combine_scrapy.records.export import TEXTS, write_records
from combine_scrapy.records.record import Record
from combine_scrapy.records.store import RecordReader

if TYPE_CHECKING:
    from combine_scrapy.context import CrawlContext


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


class _HarvestingSpider(Protocol):
    """The focused spider, whose from_crawler gives it the job's CrawlContext."""

    context: CrawlContext


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

    def finish_exporting(self) -> None:
        out = io.TextIOWrapper(self.file, encoding="utf-8", newline="\n", write_through=True)
        try:
            write_records(
                self.export_format, stored_records(self.store, self.keys), out, self.store.key_for_url, self.store.links_to,
                text=self.text,
            )
            out.flush()
        finally:
            out.detach()  # the file is Scrapy's to close
            self.keys.close()


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

