"""New relevant records: the fetched pages the crawler's record store would keep as new records, for a topic.

The issue's harvest goal counts *new relevant records*, not hand-picked
targets. A fetched page is one when it is relevant to the topic and adds a
record: the record store keeps one record per content (the MD5 content key)
and joins a page whose simhash is within the near-duplicate distance of a
stored record to that record (combine_scrapy/itempipelines/record.py). Plain
Scrapy has no topic filter and no store, so every crawl is judged here,
offline and the same way: each page is parsed as the crawler's ParsePipeline
parses it, classified by the topic filter of the job the bench writes for the
topic (TopicPipeline's text and cut-off), and fingerprinted as the record it
would be; :func:`new_records` then replays the store's duplicate rule over a
crawl's fetches in order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from bench.focusreal.docweb import DocWeb
from combine_scrapy.access.urls import host_of
from combine_scrapy.document import neardup
from combine_scrapy.document.parse import ParsedPage, parse_document
from combine_scrapy.job import Job
from combine_scrapy.records.record import content_key
from combine_scrapy.topic import Classification, Document


def read_page(url: str, body: bytes, content_type: str, jobs: Mapping[str, Job]) -> tuple[ParsedPage, dict[str, Classification]]:
    """A served page as the crawl's pipelines read it: parsed as ParsePipeline parses it (the jobs share their
    parse settings) and classified by each topic's filter as TopicPipeline classifies it."""
    any_job = next(iter(jobs.values()))
    page = parse_document(url, body, {"content-type": content_type}, extract_links_from_text=any_job.links.from_text,
                          converters=any_job.analysis.converters, limits=any_job.analysis.converter_limits)
    return page, {topic: job.topic_filter.classify(Document.from_page(page, host_of(url), main_content=job.topic.text == "main"))
                  for topic, job in jobs.items()}


@dataclass(frozen=True)
class PageJudgement:
    """What the record store would see of one served page."""

    key: str  # the content key (MD5 of text and title), as ParsePipeline computes it
    fingerprint: int | None  # the record's simhash (None: too short to compare, or relevant to no topic)
    relevant: frozenset[str]  # the topics whose filter keeps the page


class PageJudge:
    """Judges served pages for every topic at once, each page (host and request target) once."""

    def __init__(self, web: DocWeb, jobs: Mapping[str, Job]):
        self.web = web
        self.jobs = dict(jobs)
        self.cache: dict[tuple[str, str], PageJudgement | None] = {}

    @property
    def near_duplicate_distance(self) -> int | None:
        """The distance the crawl's record store applies (None: near-duplicates off), from the jobs' settings."""
        distances = {job.analysis.near_duplicate_join for job in self.jobs.values()}
        if len(distances) != 1:
            raise ValueError(f"the topics' jobs disagree on the near-duplicate distance: {distances}")
        return distances.pop()

    def judge(self, host: str, target: str) -> PageJudgement | None:
        """The page a request got, or None when it got no page (not 200)."""
        if (host, target) not in self.cache:
            self.cache[host, target] = self._judge(host, target)
        return self.cache[host, target]

    def _judge(self, host: str, target: str) -> PageJudgement | None:
        response = self.web.respond(host, target)
        if response.status != 200:
            return None
        url = f"http://{host}{target}"
        page, verdicts = read_page(url, response.body, response.content_type, self.jobs)
        relevant = frozenset(topic for topic, verdict in verdicts.items() if verdict.relevant and not page.robots_noindex)
        fingerprint = neardup.page_fingerprint(page.text, page.main_text) if relevant else None
        return PageJudgement(content_key(page.title, page.text, url, page.mime_type), fingerprint, relevant)


class NewRecords:
    """The record store's rule, one relevant page at a time: a page whose content key is a stored record's is that
    record; one whose fingerprint is within ``distance`` bits of a stored record's joins it (no check when
    ``distance`` is None, or for a page too short to fingerprint); any other is stored, a new record. Only new
    records are stored, so only their keys and fingerprints are compared with."""

    def __init__(self, distance: int | None):
        self.distance = distance
        self.keys: set[str] = set()
        self.fingerprints: list[int] = []

    def add(self, key: str, fingerprint: int | None) -> bool:
        """Store a relevant page: whether it made a new record."""
        if key in self.keys or (self.distance is not None and fingerprint is not None and any(
                neardup.distance(fingerprint, other) <= self.distance for other in self.fingerprints)):
            return False
        self.keys.add(key)
        if fingerprint is not None:
            self.fingerprints.append(fingerprint)
        return True


def new_records(fetches: Iterable[tuple[int, PageJudgement | None]], topic: str, distance: int | None) -> list[int]:
    """The fetch numbers, in order, of the pages that add a new record for ``topic`` (:class:`NewRecords`)."""
    store = NewRecords(distance)
    return [fetch for fetch, judgement in fetches
            if judgement is not None and topic in judgement.relevant and store.add(judgement.key, judgement.fingerprint)]
