"""The record store's side of a fetch: relevant pages kept, one record per content."""

from __future__ import annotations

from datetime import datetime

from combine_scrapy.context import CrawlComponent
from combine_scrapy.document.analyse import Analysis
from combine_scrapy.document.neardup import page_fingerprint
from combine_scrapy.frontier import Outcome
from combine_scrapy.items import Fetch
from combine_scrapy.records.record import Record, RecordLink, TopicClass, content_key
from combine_scrapy.records.store import RecordReader, RecordWriter, Stored


def _timestamp(value: datetime | None) -> float | None:
    return value.timestamp() if value is not None else None


class RecordPipeline(CrawlComponent):
    """Keep relevant pages, one record per content (MD5), all its URLs on it.

    A page whose MD5 is new but whose simhash is within the job's
    nearDuplicateDistance of another record joins that record instead (unless
    nearDuplicates = 0). A URL that stopped serving a relevant page leaves its
    record, and the record goes when its last URL has left.
    """

    def process_item(self, item: Fetch) -> Fetch:
        records: RecordWriter = self.context.store
        if item.outcome is Outcome.SUCCESS:
            page, classification = item.page, item.classification
            if page is not None and classification is not None and classification.relevant and not page.robots_noindex:
                job = self.context.job
                stored = records.store(self._record(item), near_duplicate_distance=job.analysis.near_duplicate_join)
                self.stats.inc_value(f"records/{stored.value}")
                item.novel = stored is Stored.NEW
                item.stored_key = self._stored_key(item) if stored is Stored.NEAR_DUPLICATE else item.record_key
                return item
        if item.outcome in (Outcome.SUCCESS, Outcome.NOT_FOUND, Outcome.ROBOTS):
            if records.forget_url(item.url):
                self.stats.inc_value("records/deleted")
        return item

    def _stored_key(self, item: Fetch) -> str | None:
        """The key of the record a near-duplicate page joined: another content's."""
        reader: RecordReader = self.context.store
        return reader.key_for_url(item.url)

    def _record(self, item: Fetch) -> Record:
        page, classification = item.page, item.classification
        if page is None or classification is None:
            raise ValueError(f"{item.url} has no parsed and classified page to keep")
        key = item.record_key or content_key(page.title, page.text, item.url, page.mime_type)  # ParsePipeline's
        job = self.context.job
        analysis = item.analysis or Analysis()
        return Record(
            key=key,
            url=item.url,
            title=page.title,
            text=page.text,
            mime_type=page.mime_type,
            main_text=page.main_text,
            rendered=item.rendered,
            headings=list(page.headings),
            meta={name: list(values) for name, values in page.meta.items()},
            links=[RecordLink(link.url, link.anchor, link.kind) for link in page.links],
            html=page.html if job.archive.save_html else None,
            charset=page.charset,
            server=page.server,
            modified=_timestamp(page.modified),
            expires=_timestamp(page.expires),
            checked=item.fetched_at,
            score=classification.score,
            normalized=classification.normalized,
            algorithm=classification.algorithm,
            classes=[TopicClass(c.name, c.absolute, c.relative, tuple(c.terms)) for c in classification.classes],
            terms=list(classification.terms),
            language=analysis.language,
            country=analysis.country,
            fingerprint=page_fingerprint(page.text, page.main_text),
        )
