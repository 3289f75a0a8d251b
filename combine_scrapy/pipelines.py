"""Item pipelines: one Fetch goes through outcome, parse, topic filter, record store and frontier.

Each stage is thin and calls pure code; the order is the way of one URL
through Combine: decide what the fetch means, parse the page, ask the topic
filter, keep relevant pages (one record per content), and mark the links the
job's link strategy chooses for crawling.
"""

from __future__ import annotations

import logging
from urllib.parse import urljoin

from scrapy import signals
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from twisted.internet.threads import deferToThread

from combine_scrapy.access.politeness import OVERLOAD_STATUSES, parse_retry_after
from combine_scrapy.context import CrawlComponent
from combine_scrapy.document.analyse import Analysis, analyse
from combine_scrapy.document.convert import Limits
from combine_scrapy.document.neardup import page_fingerprint
from combine_scrapy.document.parse import ParsedPage, mime_type_of, parse_document
from combine_scrapy.frontier import Outcome, locks_for, outcome_for_status, valid_status
from combine_scrapy.frontier.revisit import change_rate, revisit_interval
from combine_scrapy.items import Fetch
from combine_scrapy.links.online import DamagedModel, store_for
from combine_scrapy.links.saturation import SATURATED, NoveltyWatch
from combine_scrapy.links.scoring import LinkCandidate
from combine_scrapy.records.record import Record, RecordLink, TopicClass, content_key
from combine_scrapy.records.store import Stored
from combine_scrapy.stores import data_directory
from combine_scrapy.topic import Document

logger = logging.getLogger(__name__)


class OutcomePipeline(CrawlComponent):
    """Decide what the fetch means for the frontier; a URL out of retries counts as gone.

    A 429 or 503 with a usable Retry-After is unavailable for as long as it
    asks (at least WaitIntervalHost), not for WaitIntervalHarvesterLockUnavailable.
    """

    def process_item(self, item: Fetch) -> Fetch:
        if item.postponed:
            return item
        if item.outcome is None:
            item.outcome = outcome_for_status(item.status)
            if item.status is not None and not valid_status(item.status):
                self.stats.inc_value("fetch/invalid_status")
                logger.info("%s answered with invalid HTTP status %d: unavailable", item.url, item.status)
        self.stats.inc_value(f"fetch/outcome/{item.outcome.value}")
        if item.outcome is Outcome.UNAVAILABLE and item.status in OVERLOAD_STATUSES:
            item.retry_after = parse_retry_after(item.headers.get("retry-after"), item.fetched_at)
        if item.outcome is Outcome.UNAVAILABLE:
            retries = self.context.frontier.retries(item.url) + 1
            if retries >= self.context.job.fetching.harvest_retries:
                logger.info("giving up on %s after %d tries", item.url, retries)
                item.outcome = Outcome.NOT_FOUND
        return item


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
                    limits=Limits(timeout=job.analysis.converter_timeout, memory=job.analysis.converter_memory * 1024 * 1024),
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
                self._add_alt_texts(item)
        return item

    def _add_alt_texts(self, item: Fetch) -> None:
        """An image says little of itself: the alt texts of stored pages showing it become its meta and text."""
        alts = [anchor for anchor, kind in self.context.store.anchors_to(item.url) if kind == "img"]
        if alts:
            page = item.page
            page.meta.setdefault("alt", []).extend(alts)
            page.text = "\n".join([*alts, page.text] if page.text else alts)
            self.stats.inc_value("parse/image_alt_texts")


class TopicPipeline(CrawlComponent):
    """Ask the job's topic filter whether the page is relevant."""

    def process_item(self, item: Fetch) -> Fetch:
        page = item.page
        if page is None:
            return item
        job = self.context.job
        document = Document.from_page(page, item.host, main_content=job.topic.text == "main")
        item.classification = job.topic_filter.classify(document)
        self.stats.inc_value("topic/relevant" if item.classification.relevant else "topic/irrelevant")
        return item


class AnalysePipeline(CrawlComponent):
    """doAnalyse: the language of a relevant page and the country of its server, for its record."""

    def process_item(self, item: Fetch) -> Fetch:
        page, classification = item.page, item.classification
        if not self.context.job.analysis.do_analyse or page is None or not classification.relevant:
            return item
        item.analysis = analyse(item.url, f"{page.title}\n{page.text}")
        self.stats.inc_value(f"analyse/language/{item.analysis.language or 'unknown'}")
        self.stats.inc_value(f"analyse/country/{item.analysis.country or 'unknown'}")
        return item


def _timestamp(value) -> float | None:
    return value.timestamp() if value is not None else None


class RecordPipeline(CrawlComponent):
    """Keep relevant pages, one record per content (MD5), all its URLs on it.

    A page whose MD5 is new but whose simhash is within the job's
    nearDuplicateDistance of another record joins that record instead (unless
    nearDuplicates = 0). A URL that stopped serving a relevant page leaves its
    record, and the record goes when its last URL has left.
    """

    def process_item(self, item: Fetch) -> Fetch:
        store = self.context.store
        if item.outcome is Outcome.SUCCESS:
            page, classification = item.page, item.classification
            if classification.relevant and not page.robots_noindex:
                job = self.context.job
                near = job.analysis.near_duplicate_distance if job.analysis.near_duplicates else None
                stored = store.store(self._record(item), near_duplicate_distance=near)
                self.stats.inc_value(f"records/{stored.value}")
                item.novel = stored is Stored.NEW
                item.stored_key = store.key_for_url(item.url) if stored is Stored.NEAR_DUPLICATE else item.record_key
                return item
        if item.outcome in (Outcome.SUCCESS, Outcome.NOT_FOUND, Outcome.ROBOTS):
            if store.forget_url(item.url):
                self.stats.inc_value("records/deleted")
        return item

    def _record(self, item: Fetch) -> Record:
        page, classification = item.page, item.classification
        job = self.context.job
        analysis = item.analysis or Analysis()
        return Record(
            key=item.record_key,
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


class FrontierPipeline(CrawlComponent):
    """Complete the URL in the frontier and mark what it leads to.

    Which links are marked, and with what priority, is the job's link method
    (Combine's: all links of relevant pages, with AutoRecycleLinks); a
    redirect's target is always marked, as Combine recycled redirects. Every
    classified fetch is also a lesson for the online link model, which is
    merged with the job's stored model when the crawl opens, every few
    hundred lessons, and when it closes.
    """

    @classmethod
    def from_crawler(cls, crawler):
        pipeline = super().from_crawler(crawler)
        crawler.signals.connect(pipeline.sync_link_model, signal=signals.spider_closed)
        return pipeline

    def spider_opened(self, spider) -> None:
        super().spider_opened(spider)
        self.novelty = NoveltyWatch(self.context.job.crawling.stop_when_saturated)
        self.sync_link_model()

    def process_item(self, item: Fetch) -> Fetch:
        context = self.context
        if item.postponed:  # the host's next turn: WaitIntervalHost, or later when a Retry-After holds it
            host_lock_until = max(item.fetched_at + context.job.locks.host, context.pace.next_turn(item.host))
            context.release(item.url, item.host, host_lock_until, now=item.fetched_at)
            return item
        self._mark(self._next_urls(item), item.url, distance=0 if self._relevant(item) else item.distance + 1)
        if item.classification is not None:
            self._learn(item)
            self._watch_novelty(self._new_relevant(item))
        locks = locks_for(item.outcome, context.job.locks, retry_after=item.retry_after)
        url_lock = locks.url
        revisit = context.job.crawling.revisit and item.outcome in (Outcome.SUCCESS, Outcome.NOT_MODIFIED)
        if revisit:
            url_lock = self._revisit_after(item)
        context.complete(
            item.url,
            item.host,
            now=item.fetched_at,
            url_lock_until=item.fetched_at + url_lock,
            host_lock_until=item.fetched_at + locks.host,
            status=item.status,
            keep_marked=item.outcome is Outcome.UNAVAILABLE or revisit,
            etag=item.headers.get("etag") if item.outcome is Outcome.SUCCESS else None,
            last_modified=item.headers.get("last-modified") if item.outcome is Outcome.SUCCESS else None,
            score=item.classification.score if item.classification is not None else None,
            relevant=self._new_relevant(item) if item.classification is not None else None,
        )
        return item

    def _revisit_after(self, item: Fetch) -> float:
        """Seconds until the page is due again, from how often it was seen to change."""
        job, frontier = self.context.job, self.context.frontier
        visits, changes, first_visit, digest = frontier.change_history(item.url)
        new_digest = item.record_key if item.outcome is Outcome.SUCCESS else None
        changed = digest is not None and new_digest is not None and new_digest != digest
        frontier.record_visit(item.url, item.fetched_at, new_digest, changed)
        self.stats.inc_value("revisit/changed" if changed else "revisit/unchanged" if visits else "revisit/first")
        shortest, longest = job.locks.host, max(job.locks.success, job.locks.host)
        if not visits:  # nothing known yet: look again once the allowed age has passed
            return min(max(job.crawling.revisit_max_age, shortest), longest)
        rate = change_rate(visits, changes + changed, (item.fetched_at - first_visit) / visits)
        return revisit_interval(rate, job.crawling.revisit_max_age, shortest, longest)

    def _next_urls(self, item: Fetch) -> list[tuple[str, float]]:
        """(URL, priority) pairs this fetch leads to, before validation."""
        if item.outcome is Outcome.REDIRECT and item.headers.get("location"):
            return [(urljoin(item.response_url or item.url, item.headers["location"]), 0.0)]
        page, classification = item.page, item.classification
        if item.outcome is not Outcome.SUCCESS or page.robots_nofollow or not self.context.job.crawling.auto_recycle_links:
            return []
        links = [LinkCandidate(link.url, link.anchor, link.title, link.context) for link in page.links]
        return self.context.link_scorer.select(
            links, classification.score, classification.relevant, distance=item.distance, source_url=item.url,
        )

    @staticmethod
    def _relevant(item: Fetch) -> bool:
        return item.classification is not None and item.classification.relevant

    @staticmethod
    def _new_relevant(item: Fetch) -> bool:
        """Relevant and not a duplicate: a page that joined a stored record adds nothing to the collection,
        so it counts for neither its host's yield nor the link model's positives."""
        return item.classification is not None and item.classification.relevant and item.novel is not False

    def _learn(self, item: Fetch) -> None:
        """The online link model learns what the links to this page led to; the best score is kept for the summary.

        A relevant page that joined a stored record (exact or near-duplicate content) teaches "duplicate", a
        negative lesson, so the links and URL families that lead to copies sink; it is counted apart.
        """
        classification = item.classification
        self.stats.max_value("topic/best_score", classification.score)
        scorer = self.context.link_scorer
        new_relevant = self._new_relevant(item)
        if classification.relevant and not new_relevant:
            self.stats.inc_value("links/model/duplicates")
        steps = scorer.observe(item.url, new_relevant, classification.score)
        if steps:
            self.stats.inc_value("links/model/lessons", steps)
        if getattr(scorer, "rescore_due", False):  # a scorer without a model (the trial's) has none
            rescored = scorer.rescore()
            self.context.frontier.set_priorities(rescored)
            self.stats.inc_value("links/model/rescored", len(rescored))
        learner = getattr(scorer, "learner", None)
        if learner is not None and learner.sync_due:
            self.sync_link_model()

    def _watch_novelty(self, new_relevant: bool) -> None:
        """Count the fetch for the recent rate of new relevant records; end a saturated crawl (StopWhenSaturated)."""
        novelty = self.novelty
        novelty.add(new_relevant)
        self.stats.set_value("records/recent_new_rate", round(novelty.recent_rate, 4))
        learner = getattr(self.context.link_scorer, "learner", None)
        if self.stats.get_value("saturation/reason") is None and novelty.saturated(
            lambda best: learner.expected_new(best) if learner is not None else None
        ):
            reason = novelty.reason()
            logger.info("saturated: %s; ending the crawl (StopWhenSaturated = %d)", reason, novelty.stop_after)
            self.stats.set_value("saturation/reason", reason)
            deferred_from_coro(self.crawler.engine.close_spider_async(reason=SATURATED))

    def sync_link_model(self, spider=None, reason=None) -> None:
        """Merge the online link model with the job's stored one (loading it at the start)."""
        context = self.context
        learner = getattr(context.link_scorer, "learner", None)
        if learner is None:
            return
        if learner.store is None:
            learner.store = store_for(context.frontier, data_directory(self.crawler.settings), context.job.name)
        if reason is not None:  # the crawl ends: name the strongest features for scrapy report
            learner.name_features()
        try:
            learner.sync()
        except DamagedModel as e:
            logger.warning("link model: %s", e)
            self.stats.inc_value("links/model/damaged")
        except Exception as e:  # a full disk, a Redis outage: the crawl goes on with the model in memory
            logger.error("link model not saved to %s: %s", learner.store.location, e)
            self.stats.inc_value("links/model/sync_failed")
            return
        self.stats.inc_value("links/model/synced")
        model = learner.model
        self.stats.set_value("links/model/relevant_seen", model.positives)
        self.stats.set_value("links/model/irrelevant_seen", model.negatives)

    def _mark(self, urls: list[tuple[str, float]], source: str, distance: int = 0) -> None:
        marked, rejected = self.context.mark(urls, source, distance=distance)
        self.stats.inc_value("frontier/marked", marked)
        for reason, count in rejected.items():
            self.stats.inc_value(f"urls/rejected/{reason}", count)
