"""Parsing: a successful response becomes a ParsedPage and its content key."""

from __future__ import annotations

import logging

from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.threads import deferToThread

from combine_scrapy.context import CrawlComponent
from combine_scrapy.document.parse import ParsedPage, mime_type_of, parse_document
from combine_scrapy.frontier import Outcome
from combine_scrapy.items import Fetch
from combine_scrapy.records.record import content_key
from combine_scrapy.records.store import RecordReader

logger = logging.getLogger(__name__)


class ParsePipeline(CrawlComponent):
    """Turn a successful response into a ParsedPage (title, headings, meta, text, links) and its content key.

    Parsing runs in a worker thread: a converter may take up to its timeout, and the crawl goes on meanwhile.
    """

    async def process_item(self, item: Fetch) -> Fetch:
        if item.outcome is Outcome.SUCCESS:
            job = self.context.job
            url = item.response_url or item.url
            try:
                page = await maybe_deferred_to_future(deferToThread(
                    parse_document,
                    url,
                    item.body,
                    item.headers,
                    extract_links_from_text=job.links.from_text,
                    converters=job.analysis.converters,
                    limits=job.analysis.converter_limits,
                ))
            except Exception:  # a parser bug must cost one page, not the crawl: logged with its traceback, counted
                logger.exception("parsing %s failed", url)
                page = ParsedPage(url, mime_type_of(item.headers.get("content-type")), failure="error")
            item.page = page
            for conversion in page.conversions:
                self.stats.inc_value(f"convert/{conversion.failure or 'ok'}")
            if page.failure:
                self.stats.inc_value(f"parse/failed/{page.failure}")
            for note in page.notes:
                self.stats.inc_value(f"parse/note/{note}")
            item.record_key = content_key(page.title, page.text, item.url, page.mime_type)
            if page.mime_type.startswith("image/"):
                # After the key: two images shown with the same alt text are still two images.
                self._add_alt_texts(item, page)
        return item

    def _add_alt_texts(self, item: Fetch, page: ParsedPage) -> None:
        """An image says little of itself: the alt texts of stored pages showing it become its meta and text."""
        records: RecordReader = self.context.store
        alts = [anchor for anchor, kind in records.anchors_to(item.url) if kind == "img"]
        if alts:
            page.meta.setdefault("alt", []).extend(alts)
            page.text = "\n".join([*alts, page.text] if page.text else alts)
            self.stats.inc_value("parse/image_alt_texts")
