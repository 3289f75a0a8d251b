"""Feeds of the records a crawl stores (``-O``, ``FEEDS``): Scrapy's FeedExporter, fed records.

The exporters, one a format, are :mod:`combine_scrapy.records.export.feeds` (the names of ``FEED_EXPORTERS``).
"""

from __future__ import annotations

from typing import Any

from scrapy import Spider
from scrapy.extensions.feedexport import FeedExporter, FeedSlot

from combine_scrapy.records.export.feeds import RecordFeedExporter


class RecordFeeds(FeedExporter):
    """Scrapy's FeedExporter extension, for feeds of records: only a fetch that stored a record goes on to a feed's
    exporter, and the count Scrapy logs for a feed becomes the records it wrote.

    The records are written when a feed slot closes, just before Scrapy stores the file and logs its count:
    the hook is FeedExporter._close_slot, of the Scrapy version requirements.txt pins.
    """

    def item_scraped(self, item: Any, spider: Spider) -> None:
        if getattr(item, "stored_key", None) is not None:
            super().item_scraped(item, spider)

    async def _close_slot(self, slot: FeedSlot, spider: Spider) -> None:
        if slot.itemcount and isinstance(slot.exporter, RecordFeedExporter):
            slot.itemcount = slot.exporter.write_stored()
        await super()._close_slot(slot, spider)
