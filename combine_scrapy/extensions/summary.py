"""What the crawl did, printed when it ends."""

from __future__ import annotations

import time
from typing import Any, Self

from scrapy import signals
from scrapy.crawler import Crawler

from combine_scrapy.context import CrawlComponent, CrawlContext
from combine_scrapy.faults import FAULT_REASONS
from combine_scrapy.frontier import FrontierOperations
from combine_scrapy.job import Job
from combine_scrapy.links.saturation import SATURATED
from combine_scrapy.operations.harvestlog import format_rate, harvest_rate
from combine_scrapy.records.store import RecordMaintenance
from combine_scrapy.signals import JobSpider
from combine_scrapy.stats import PAGES_STAT


def summary_head(job: str, stats: dict[str, Any], reason: str) -> list[str]:
    """The first lines of a crawl's summary: how it finished, what it fetched."""
    relevant = stats.get("topic/relevant", 0)
    rate = format_rate(harvest_rate(relevant, relevant + stats.get("topic/irrelevant", 0)))
    return [
        f"== combine-scrapy: job {job} finished ({reason}) ==",
        f"pages fetched: {stats.get(PAGES_STAT, 0)}   relevant: {relevant}   harvest rate: {rate}",
    ]


def fault_summary(job: str, stats: dict[str, Any], reason: str, why: str | None) -> str:
    """The summary of a crawl stopped before it was done (a fault, or a signal before the crawl started): only
    what this process counted, and why it stopped (its backends may not answer)."""
    return "\n".join([*summary_head(job, stats, reason), f"stopped: {why}"])


class HarvestSummary(CrawlComponent):
    """Print what the crawl did when it ends: fetched, relevant, stored, harvest rate, and where it went."""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        extension = super().from_crawler(crawler)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def spider_closed(self, spider: JobSpider, reason: str) -> None:
        print(self.summary(self.context, self.stats.get_stats(), reason), flush=True)
        if spider.seed_problem:
            print(f"no usable seed: {spider.seed_problem}", flush=True)

    @staticmethod
    def summary(context: CrawlContext, stats: dict[str, Any], reason: str) -> str:
        """What the crawl did; after a fault, only what this process counted (its backends may not answer)."""
        fetched = stats.get(PAGES_STAT, 0)
        relevant = stats.get("topic/relevant", 0)
        job = context.job.name
        if reason in FAULT_REASONS:
            return fault_summary(job, stats, reason, stats.get("fault/message"))
        head = summary_head(job, stats, reason)
        if reason == SATURATED:
            head.append(f"saturated (StopWhenSaturated = {context.job.crawling.stop_when_saturated}): "
                        f"{stats.get('saturation/reason')}")
        frontier: FrontierOperations = context.frontier
        store: RecordMaintenance = context.store
        counts = frontier.counts(time.time())
        return "\n".join([
            *head,
            f"records: {stats.get('records/new', 0)} new this run "
            f"({stats.get('records/near_duplicate', 0)} near-duplicate pages joined a record), "
            f"{store.count()} stored in all",
            f"frontier: {counts.urls} URLs on {counts.hosts} hosts, {counts.marked} still marked",
            f"records are in {context.store.location}",
            f"export them:  scrapy export {job} -o {job}.jsonl",
            *HarvestSummary.nothing_found(context.job, stats, fetched, relevant, reason),
        ])

    @staticmethod
    def nothing_found(job: Job, stats: dict[str, Any], fetched: int, relevant: int, reason: str) -> list[str]:
        """When no page was relevant: why, and what to change."""
        if relevant:
            return []
        if not fetched:
            return ["no page was fetched: the seeds were refused by the job's URL rules, unreachable or forbidden by "
                    "robots.txt (see urls/rejected/* and fetch/outcome/* in the stats above)"]
        cutoffs = getattr(job.topic_filter.classifier, "cutoffs", None)
        best = stats.get("topic/best_score")
        cutoff = cutoffs.total if cutoffs is not None else getattr(job.topic_filter.classifier, "threshold", None)
        why = f"0 relevant pages in {fetched} fetched: no page reached the topic's cutoff"
        if best is not None and cutoff is not None:
            why += f" (best score {best:g}, cutoff {cutoff:g})"
        tries = []
        if job.links.method == "propagate":
            tries.append("LinkStrategy = online, to follow the links of irrelevant pages too "
                         "(propagate follows only the links of relevant pages)")
        elif reason == "finished":
            tries.append(f"a larger MaxTunnelDistance (now {job.links.max_tunnel_distance}): the crawl ran out of links "
                         "that many irrelevant pages from the seeds")
        else:
            tries.append("a longer crawl (it was stopped)")
        if best is not None and cutoff is not None and 0 < best < cutoff:
            tries.append(f"a lower tot_cutoff (the best page scored {best:g})")
        tries.append("seeds nearer the topic, or more terms (synonyms, abbreviations) in the topic definition")
        return [why, "try " + "; or ".join(tries)]
