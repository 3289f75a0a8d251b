"""``scrapy recycle JOB``: mark the links of stored records for crawling (combineCtrl recyclelinks).

For a job crawled with ``AutoRecycleLinks = 0``, or after changing its URL
rules: every link of every stored record goes through the job's URL rules and
link method, as in a crawl, and new URLs are marked. URLs the frontier knows
keep their state (``scrapy reharvest`` fetches the stored pages again).
"""

from __future__ import annotations

import argparse
from collections import Counter

from combine_scrapy.job import Job
from combine_scrapy.links.scoring import LinkCandidate
from combine_scrapy.operations.control import JobCommand


class Command(JobCommand):
    def short_desc(self) -> str:
        return "Mark the links of a job's stored records for crawling"

    def run_job(self, job: Job, args: list[str], opts: argparse.Namespace) -> None:
        records = links = marked = 0
        rejected: Counter[str] = Counter()
        with self.context(job) as context:
            for record in context.store:
                records += 1
                links += len(record.links)
                candidates = [LinkCandidate(link.url, link.anchor) for link in record.links]
                new, refused = context.policy.recycle_links(candidates, record.score, record.url)
                marked += new
                rejected.update(refused)
        print(f"job {job.name}: {links} links of {records} records, {marked} URLs newly marked, "
              f"{sum(rejected.values())} refused")
        for reason, count in sorted(rejected.items(), key=lambda pair: (-pair[1], pair[0])):
            print(f"  refused, {reason}: {count}")
