"""The item that travels through the pipelines: one fetch of one frontier URL."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from combine_scrapy.document.analyse import Analysis
    from combine_scrapy.document.parse import ParsedPage
    from combine_scrapy.frontier import Outcome
    from combine_scrapy.topic.matching import Classification


@dataclass
class Fetch:
    """One fetch of a frontier URL, and what the pipelines learned from it.

    ``status`` is None when no response came back; ``error`` then says why.
    The spider's errback decides ``outcome`` for a fetch that failed (robots.txt
    forbids it, a URL rule refused it, the download failed); the crawl policy
    (``CrawlPolicy.settle_outcome``, run by OutcomePipeline) decides it from the
    status for every other. The policy reads the fetch as the event it is.
    """

    url: str
    host: str
    fetched_at: float
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    error: str | None = None
    outcome: Outcome | None = None  # the errback's, else the policy's from the status
    postponed: bool = False      # the fetch was put off (robots.txt read first)
    response_url: str | None = None  # where a followed redirect ended: the base of the page's relative links
    retry_after: float | None = None  # seconds a 429/503 asked to wait (Retry-After), set by the policy
    page: ParsedPage | None = None  # set by ParsePipeline
    classification: Classification | None = None  # set by TopicPipeline
    analysis: Analysis | None = None  # language and country, set by AnalysePipeline with doAnalyse
    record_key: str | None = None  # MD5 of the content, the key of its record; set by ParsePipeline
    distance: int = 0            # link hops since the last relevant page on the best known path (from the frontier)
    stored_key: str | None = None  # key of the record RecordPipeline stored the page in (a near-duplicate's is another's)
    novel: bool | None = None    # a stored relevant page made a new record (False: it joined a stored one as a duplicate)
    rendered: bool = False       # the body is the page rendered in a browser (Render), not the fetched one
