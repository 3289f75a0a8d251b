"""The crawl policy: what each event of a crawl means for the frontier and the link model.

The one place that decides it, as Frontera's crawling strategy and ACHE's frontier manager are: the
Scrapy components translate Scrapy's objects into the events of a crawl (seeds or URLs added, a URL
claimed, a fetch answered, postponed or done, the crawl's end), and :class:`CrawlPolicy` decides what
the frontier does (which URLs it marks with what priority and distance, claims, locks, completes with
what revisit time, releases, re-ranks) and what the link model does (its lessons, its re-scoring, its
merging with the stored model, the watch for saturation). Which of the marked URLs comes first is the
crawl strategy's (:mod:`combine_scrapy.frontier.strategy`); a new crawl or link strategy is that module
and this one. Pure code: no Scrapy.
"""

from __future__ import annotations

import logging
import random
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urljoin

from combine_scrapy.access.addresses import PRIVATE_ADDRESS, AddressPolicy, written_non_public
from combine_scrapy.access.politeness import OVERLOAD_STATUSES, HostPace, parse_retry_after
from combine_scrapy.access.urls import UrlChecker, host_of
from combine_scrapy.faults import CrawlFault
from combine_scrapy.frontier import (
    LEASE_SECONDS,
    FrontierEntry,
    LinkGraph,
    Marking,
    MarkResult,
    Outcome,
    RevisitHistory,
    UrlQueue,
    locks_for,
    outcome_for_status,
    valid_status,
)
from combine_scrapy.frontier.marks import MarkMemory
from combine_scrapy.frontier.pagerank import pagerank
from combine_scrapy.frontier.revisit import change_rate, revisit_interval
from combine_scrapy.frontier.strategy import strategy_named
from combine_scrapy.items import Fetch
from combine_scrapy.job import ONE_WORD_HOST, Job, one_word_host
from combine_scrapy.links.learned import LearnedLinkScorer
from combine_scrapy.links.online import DamagedModel, OnlineLinkLearner
from combine_scrapy.links.saturation import NoveltyWatch
from combine_scrapy.links.scoring import LinkCandidate, LinkScorer

if TYPE_CHECKING:
    from combine_scrapy.records.store import RecordReader

logger = logging.getLogger(__name__)


class CrawlStats(Protocol):
    """The crawl's counters (a Scrapy stats collector in a crawl)."""

    def inc_value(self, key: str, count: int = 1) -> None: ...

    def max_value(self, key: str, value: Any) -> None: ...

    def set_value(self, key: str, value: Any) -> None: ...


class LinkChooser(Protocol):
    """The job's link method: which links of a page to mark with what priority, and what it learns from a fetch."""

    def select(self, links: Iterable[LinkCandidate], page_score: float, page_relevant: bool, *, distance: int = 0,
               source_url: str = "") -> list[tuple[str, float]]: ...

    def observe(self, url: str, relevant: bool, score: float = 0.0) -> int: ...

    @property
    def learner(self) -> OnlineLinkLearner | None:
        """The online link model (the ``online`` method), else None."""

    @property
    def rescore_due(self) -> bool: ...

    def rescore(self) -> dict[str, float]: ...


class PolicyFrontier(UrlQueue, LinkGraph, RevisitHistory, Protocol):
    """What the policy asks of the frontier: its URLs and locks, its link graph, its revisit history."""


def link_scorer_for(job: Job, url_checker: UrlChecker | None = None) -> LinkScorer | LearnedLinkScorer:
    """The job's link-relevance method; page scores are scaled by the topic filter's total cutoff.

    Its random choices (RWB's boosts) follow the job's RandomSeed. With learned URL rules, the rules
    choose the links on the sites they were learned for. The online model starts empty, without a store:
    a crawl gives it the job's (``context.link_model_store``). ``url_checker`` (the job's rules)
    canonicalizes its links.
    """
    cutoffs = getattr(job.topic_filter.classifier, "cutoffs", None)
    scorer = LinkScorer(
        job.definition,
        job.links.method,
        threshold=job.links.threshold,
        page_weight=job.links.page_weight,
        boost_chance=job.links.boost_chance,
        dynamic=job.links.dynamic_threshold,
        page_scale=cutoffs.total if cutoffs and cutoffs.total > 0 else 1.0,
        rng=random.Random(job.links.random_seed),
        max_tunnel_distance=job.links.max_tunnel_distance,
        learner=(
            OnlineLinkLearner(job.url_rules, credit_hops=job.links.max_tunnel_distance, url_checker=url_checker)
            if job.links.method == "online" else None
        ),
    )
    if job.learned_url_rules is None:
        return scorer
    return LearnedLinkScorer(
        job.learned_url_rules,
        scorer,
        job.url_rules,
        threshold=job.learning.url_rule_threshold,
        drop_rejected=job.learning.url_rule_drop,
    )


def new_relevant(fetch: Fetch) -> bool:
    """Relevant and not a duplicate: a page that joined a stored record adds nothing to the collection,
    so it counts for neither its host's yield nor the link model's positives."""
    return fetch.classification is not None and fetch.classification.relevant and fetch.novel is not False


class CrawlPolicy:
    """What the events of one crawl of a job mean for its frontier and its link model.

    ``stats`` counts what it decides (None: nothing is counted, as in the job's commands). ``addresses``
    and ``pace`` (the hosts that may be on private addresses, this harvester's memory of each host's next
    turn) are the crawl's, which the downloader middlewares share; made from the job on first use (a job's
    seeds may be many, and a command may never need them).
    """

    def __init__(
        self,
        job: Job,
        frontier: PolicyFrontier,
        *,
        link_scorer: LinkChooser | None = None,
        url_checker: UrlChecker | None = None,
        max_urls_per_host: int | None = None,
        lease_seconds: float = LEASE_SECONDS,
        stats: CrawlStats | None = None,
    ) -> None:
        self.job = job
        self.frontier = frontier
        self.link_scorer = link_scorer
        self.url_checker = url_checker
        self._addresses: AddressPolicy | None = None
        self._pace: HostPace | None = None
        self.max_urls_per_host = max_urls_per_host
        self.lease_seconds = lease_seconds
        self.stats = stats
        #: The URLs this harvester leased and has not completed or released yet.
        self.leased: dict[str, FrontierEntry] = {}
        #: What this harvester marked, re-scored and completed: marks that would change nothing are left out.
        self.marks = MarkMemory()
        self._novelty: NoveltyWatch | None = None
        self._saturated = False

    @property
    def addresses(self) -> AddressPolicy:
        """Which hosts may be on loopback or private addresses: those the job names."""
        if self._addresses is None:
            self._addresses = AddressPolicy.for_job(self.job)
        return self._addresses

    @property
    def pace(self) -> HostPace:
        """This harvester's memory of when each host may be asked again (redirect hops, robots.txt, back-off)."""
        if self._pace is None:
            self._pace = HostPace(self.job.locks.host)
        return self._pace

    @property
    def ranks_links(self) -> bool:
        """Whether the strategy orders by PageRank, and so needs the link graph."""
        return strategy_named(self.job.crawling.strategy).ranked

    def _checker(self) -> UrlChecker:
        """check_url with the job's rules, remembered (links repeat from page to page); made on first use."""
        if self.url_checker is None:
            self.url_checker = UrlChecker(self.job.url_rules)
        return self.url_checker

    def _count(self, key: str, count: int = 1) -> None:
        if self.stats is not None:
            self.stats.inc_value(key, count)

    # -- URLs added -------------------------------------------------------------------

    def mark_seeds(self, seeds: list[str]) -> tuple[int, int]:
        """Mark seeds of the job as they are (job loading canonicalized them and checked them against the URL
        rules, and the job names their hosts): how many were new, and how many the per-host bound refused."""
        marked, refused, _ = self.frontier.mark(
            [(url, host_of(url), 0.0) for url in seeds], max_urls_per_host=self.max_urls_per_host
        )
        return marked, refused

    def mark(
        self, candidates: Iterable[tuple[str, float]], source: str | None = None, *, distance: int = 0, seeds: bool = False
    ) -> tuple[int, Counter[str]]:
        """Canonicalize, validate and mark ``(url, priority)`` pairs for crawling, ``distance`` link hops
        from the last relevant page.

        Every URL is canonicalized here, once, before the frontier sees it.
        ``source`` is the page the links were found on, for the link graph.
        ``seeds``: they were given by a person (scrapy seed, the console), who
        means a full host name: a one-word host (``http://x/``) is refused.
        A URL already marked and not yet fetched keeps the better priority and
        distance of the two (counted as ``frontier/raised``). Returns how many
        were new, and the rejected ones counted by reason.
        """
        links, rejected = self._links(candidates, source, distance=distance, seeds=seeds)
        if links is None:
            return 0, rejected
        marks = self.frontier.mark(links.entries, max_urls_per_host=links.max_urls_per_host, distance=links.distance)
        self.marks.marked(links.entries, links.distance)
        return self._marked(marks, rejected), rejected

    def _links(
        self, candidates: Iterable[tuple[str, float]], source: str | None, *, distance: int, seeds: bool = False
    ) -> tuple[Marking | None, Counter[str]]:
        """``mark``'s URLs canonicalized and validated (each the best priority it was given), the link graph
        told of them: what to mark (None: nothing), and the rejected ones counted by reason. URLs whose mark
        would change nothing (:class:`MarkMemory`) are left out and counted."""
        rejected: Counter[str] = Counter()
        accepted: dict[str, float] = {}
        check = self._checker()
        for url, priority in candidates:
            verdict = check(url)
            refusal = self.addresses.refusal(verdict.url) if verdict.ok and written_non_public(verdict.url) else None
            if refusal:
                logger.debug("refused %s: %s, and the job does not name the host", verdict.url, refusal)
                rejected[PRIVATE_ADDRESS] += 1
            elif verdict.ok and seeds and one_word_host(verdict.url):
                rejected[ONE_WORD_HOST] += 1
            elif verdict.ok:
                accepted[verdict.url] = max(priority, accepted.get(verdict.url, priority))
            else:
                rejected[verdict.reason] += 1
        if source is not None and self.ranks_links:
            self.frontier.add_links((source, target) for target in accepted)
        if not accepted:
            return None, rejected
        entries = [(url, host_of(url), priority) for url, priority in self.marks.news(accepted, distance)]
        if len(entries) < len(accepted):
            self._count("frontier/marks_left_out", len(accepted) - len(entries))
        if not entries:
            return None, rejected
        return Marking(entries, self.max_urls_per_host, distance), rejected

    def _marked(self, marks: MarkResult, rejected: Counter[str]) -> int:
        """Count what a mark did (raised URLs; new ones over the per-host bound as rejected): how many were new."""
        if marks.raised:
            self._count("frontier/raised", marks.raised)
        if marks.refused:
            rejected["host_full"] += marks.refused
        return marks.marked

    def mark_changed(self, dated: Iterable[tuple[str, float]], records: RecordReader) -> list[str]:
        """Mark again the stored pages whose ``(url, lastmod)`` (a sitemap's) is later than their record's last
        check; returns those marked again."""
        canonical: dict[str, float] = {}
        check = self._checker()
        for url, lastmod in dated:
            verdict = check(url)
            if verdict.ok:
                canonical[verdict.url] = max(lastmod, canonical.get(verdict.url, lastmod))
        fetched = [url for url, status in self.frontier.statuses(canonical).items() if status == 200]
        marked = []
        for url in fetched:
            key = records.key_for_url(url)
            record = records.get(key) if key else None
            if record is not None and canonical[url] > record.checked and self.frontier.remark(url):
                marked.append(url)
        return marked

    def mark_again(self, urls: Iterable[str]) -> tuple[int, int]:
        """Mark fetched URLs for harvesting again, unlocked (``scrapy reharvest``): how many were marked, and how
        many the frontier does not know (a reset frontier, or another backend's)."""
        marked = missing = 0
        for url in urls:
            if self.frontier.remark(url):
                marked += 1
            else:
                missing += 1
        return marked, missing

    def recycle_links(self, links: Sequence[LinkCandidate], score: float, source: str) -> tuple[int, Counter[str]]:
        """Mark the links the job's link method chooses from a stored record (a relevant page of that score)."""
        if self.link_scorer is None:
            raise ValueError("the crawl has no link method")
        return self.mark(self.link_scorer.select(links, score, True), source)

    # -- leases -------------------------------------------------------------------------

    def claim(self, entry: FrontierEntry, now: float) -> bool:
        """Lease a ready URL to this harvester (and lock its host)."""
        if not self.frontier.claim(entry, now, self.lease_seconds):
            return False
        self.leased[entry.url] = entry
        return True

    def _release(self, url: str, host: str, host_lock_until: float, now: float | None = None) -> None:
        """Give a leased URL back without counting the attempt."""
        self.frontier.release(url, host, host_lock_until, now)
        self.leased.pop(url, None)

    def release_leases(self, now: float) -> None:
        """Give back what this harvester still holds, so the next run need not wait for leases to end."""
        try:
            for entry in list(self.leased.values()):
                self._release(entry.url, entry.host, now + self.job.locks.host)
        except CrawlFault as fault:  # a full disk, a vanished frontier: the leases end by themselves
            logger.warning("%d leased URLs not given back (%s); they come back when their lease ends", len(self.leased), fault)

    def rerank(self) -> int:
        """Recompute the priorities of marked URLs as their PageRank in the crawled graph.

        iPageRank weighs each page by its topic score (negative scores count as 0).
        Returns the number of ranked nodes.
        """
        edges, scores = self.frontier.link_graph()
        relevance = {url: max(score, 0.0) for url, score in scores.items()} if self.job.crawling.strategy == "iPageRank" else None
        ranks = pagerank(edges, relevance)
        self._set_priorities(ranks)
        return len(ranks)

    def _set_priorities(self, priorities: dict[str, float]) -> None:
        """Give marked URLs new priorities, lower or higher, and remember them (a later mark above is sent)."""
        self.frontier.set_priorities(priorities)
        self.marks.rescored(priorities)

    # -- a fetch ------------------------------------------------------------------------

    def settle_outcome(self, fetch: Fetch) -> None:
        """Decide what the fetch means for the frontier (its outcome, and a Retry-After); a URL out of retries
        counts as gone.

        A 429 or 503 with a usable Retry-After is unavailable for as long as it
        asks (at least WaitIntervalHost), not for WaitIntervalHarvesterLockUnavailable.
        """
        if fetch.outcome is None:
            fetch.outcome = outcome_for_status(fetch.status)
            if fetch.status is not None and not valid_status(fetch.status):
                self._count("fetch/invalid_status")
                logger.info("%s answered with invalid HTTP status %d: unavailable", fetch.url, fetch.status)
        self._count(f"fetch/outcome/{fetch.outcome.value}")
        if fetch.outcome is Outcome.UNAVAILABLE and fetch.status in OVERLOAD_STATUSES:
            fetch.retry_after = parse_retry_after(fetch.headers.get("retry-after"), fetch.fetched_at)
        if fetch.outcome is Outcome.UNAVAILABLE:
            retries = self.frontier.retries(fetch.url) + 1
            if retries >= self.job.fetching.harvest_retries:
                logger.info("giving up on %s after %d tries", fetch.url, retries)
                fetch.outcome = Outcome.NOT_FOUND

    def fetch_postponed(self, fetch: Fetch) -> None:
        """The URL goes back for the host's next turn: WaitIntervalHost, or later when a Retry-After holds it."""
        host_lock_until = max(fetch.fetched_at + self.job.locks.host, self.pace.next_turn(fetch.host))
        self._release(fetch.url, fetch.host, host_lock_until, now=fetch.fetched_at)

    def fetch_done(self, fetch: Fetch) -> str | None:
        """Complete the URL in the frontier and mark what it leads to; returns why the crawl is saturated, once,
        when this fetch saturated it (StopWhenSaturated).

        Which links are marked, and with what priority, is the job's link method
        (Combine's: all links of relevant pages, with AutoRecycleLinks); a
        redirect's target is always marked, as Combine recycled redirects. Every
        classified fetch is also a lesson for the online link model, which is
        merged with the job's stored model every few hundred lessons.
        """
        outcome = fetch.outcome
        if outcome is None:
            raise ValueError(f"the fetch of {fetch.url} has no outcome: settle_outcome decides it first")
        relevant = fetch.classification is not None and fetch.classification.relevant
        links, rejected = self._links(self._next_urls(fetch), fetch.url, distance=0 if relevant else fetch.distance + 1)
        locks = locks_for(outcome, self.job.locks, retry_after=fetch.retry_after)
        url_lock = locks.url
        revisit = self.job.crawling.revisit and outcome in (Outcome.SUCCESS, Outcome.NOT_MODIFIED)
        if revisit:
            url_lock = self._revisit_after(fetch)
        marks = self.frontier.complete(
            fetch.url,
            fetch.host,
            now=fetch.fetched_at,
            url_lock_until=fetch.fetched_at + url_lock,
            host_lock_until=fetch.fetched_at + locks.host,
            status=fetch.status,
            keep_marked=outcome is Outcome.UNAVAILABLE or revisit,
            etag=fetch.headers.get("etag") if outcome is Outcome.SUCCESS else None,
            last_modified=fetch.headers.get("last-modified") if outcome is Outcome.SUCCESS else None,
            score=fetch.classification.score if fetch.classification is not None else None,
            relevant=new_relevant(fetch) if fetch.classification is not None else None,
            links=links,
        )
        self.leased.pop(fetch.url, None)
        if links is not None:
            self.marks.marked(links.entries, links.distance)
        self.marks.settled(fetch.url)  # after its links: a page may link to itself
        self._count("frontier/marked", self._marked(marks, rejected))
        for reason, count in rejected.items():
            self._count(f"urls/rejected/{reason}", count)
        if fetch.classification is None:
            return None
        self._learn(fetch)
        return self._watch_novelty(new_relevant(fetch))

    def _revisit_after(self, fetch: Fetch) -> float:
        """Seconds until the page is due again, from how often it was seen to change."""
        job, frontier = self.job, self.frontier
        visits, changes, first_visit, digest = frontier.change_history(fetch.url)
        new_digest = fetch.record_key if fetch.outcome is Outcome.SUCCESS else None
        changed = digest is not None and new_digest is not None and new_digest != digest
        frontier.record_visit(fetch.url, fetch.fetched_at, new_digest, changed)
        self._count("revisit/changed" if changed else "revisit/unchanged" if visits else "revisit/first")
        shortest, longest = job.locks.host, max(job.locks.success, job.locks.host)
        if not visits or first_visit is None:  # nothing known yet: look again once the allowed age has passed
            return min(max(job.crawling.revisit_max_age, shortest), longest)
        rate = change_rate(visits, changes + changed, (fetch.fetched_at - first_visit) / visits)
        return revisit_interval(rate, job.crawling.revisit_max_age, shortest, longest)

    def _next_urls(self, fetch: Fetch) -> list[tuple[str, float]]:
        """(URL, priority) pairs this fetch leads to, before validation."""
        location = fetch.headers.get("location")
        if fetch.outcome is Outcome.REDIRECT and location:
            return [(urljoin(fetch.response_url or fetch.url, location), 0.0)]
        page, classification = fetch.page, fetch.classification
        if (fetch.outcome is not Outcome.SUCCESS or page is None or classification is None or page.robots_nofollow
                or not self.job.crawling.auto_recycle_links or self.link_scorer is None):
            return []
        links = [LinkCandidate(link.url, link.anchor, link.title, link.context) for link in page.links]
        return self.link_scorer.select(
            links, classification.score, classification.relevant, distance=fetch.distance, source_url=fetch.url,
        )

    # -- the link model -------------------------------------------------------------------

    def _learn(self, fetch: Fetch) -> None:
        """The online link model learns what the links to this page led to; the best score is kept for the summary.

        A relevant page that joined a stored record (exact or near-duplicate content) teaches "duplicate", a
        negative lesson, so the links and URL families that lead to copies sink; it is counted apart.
        """
        classification, scorer = fetch.classification, self.link_scorer
        if classification is None:
            return
        if self.stats is not None:
            self.stats.max_value("topic/best_score", classification.score)
        if scorer is None:
            return
        lesson = new_relevant(fetch)
        if classification.relevant and not lesson:
            self._count("links/model/duplicates")
        steps = scorer.observe(fetch.url, lesson, classification.score)
        if steps:
            self._count("links/model/lessons", steps)
        if scorer.rescore_due:
            rescored = scorer.rescore()
            self._set_priorities(rescored)
            self._count("links/model/rescored", len(rescored))
        learner = scorer.learner
        if learner is not None and learner.sync_due:
            self.sync_link_model()

    def _watch_novelty(self, new: bool) -> str | None:
        """Count the fetch for the recent rate of new relevant records; why the crawl is saturated, the first
        time it is (StopWhenSaturated)."""
        if self._novelty is None:
            self._novelty = NoveltyWatch(self.job.crawling.stop_when_saturated)
        novelty = self._novelty
        novelty.add(new)
        if self.stats is not None:
            self.stats.set_value("records/recent_new_rate", round(novelty.recent_rate, 4))
        learner = self.link_scorer.learner if self.link_scorer is not None else None
        if self._saturated or not novelty.saturated(
            lambda best: learner.expected_new(best) if learner is not None else None
        ):
            return None
        self._saturated = True
        reason = novelty.reason()
        logger.info("saturated: %s; ending the crawl (StopWhenSaturated = %d)", reason, novelty.stop_after)
        if self.stats is not None:
            self.stats.set_value("saturation/reason", reason)
        return reason

    def sync_link_model(self, *, closing: bool = False) -> None:
        """Merge the online link model with the job's stored one (loading it at the start); ``closing``: the crawl
        ends, so the model names its strongest features for scrapy report."""
        learner = self.link_scorer.learner if self.link_scorer is not None else None
        if learner is None or learner.store is None:
            return
        if closing:
            learner.name_features()
        try:
            learner.sync()
        except DamagedModel as e:
            logger.warning("link model: %s", e)
            self._count("links/model/damaged")
        except Exception as e:  # a full disk, a Redis outage: the crawl goes on with the model in memory
            logger.error("link model not saved to %s: %s", learner.store.location, e)
            self._count("links/model/sync_failed")
            return
        self._count("links/model/synced")
        if self.stats is not None:
            model = learner.model
            self.stats.set_value("links/model/relevant_seen", model.positives)
            self.stats.set_value("links/model/irrelevant_seen", model.negatives)
