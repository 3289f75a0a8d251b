"""``scrapy rank JOB``: rank a job's records by PageRank and by iPageRank in their link graph.

The graph is the stored links from one record to a URL of another. PageRank
treats every link alike; iPageRank (topic-weighted PageRank) lets a record
pass on rank in proportion to its topic score, so links from relevant pages
weigh more. Both are stored with each record (replacing earlier ranks):
``scrapy export JOB --sort pagerank`` (or ``ipagerank``) exports best first,
and every export format carries them (JSON fields, ALVIS properties).
"""

from __future__ import annotations

import argparse

from combine_scrapy.job import Job
from combine_scrapy.operations.control import CommandError, JobCommand
from combine_scrapy.records.store.maintenance import rank_records


class Command(JobCommand):
    def short_desc(self) -> str:
        return "Rank a job's records by PageRank and iPageRank in their link graph, and store the ranks"

    def long_desc(self) -> str:
        return __doc__.split("\n\n", 1)[1]

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--top", type=int, default=10, metavar="N", help="list the N best records of each rank (default 10)")

    def run_job(self, job: Job, args: list[str], opts: argparse.Namespace) -> None:
        if opts.top < 0:
            raise CommandError(f"--top must be 0 or more, got {opts.top}", exitcode=2)
        with self.records(job) as store:
            edges, scores = store.link_graph()
            if not scores:
                print(f"job {job.name}: no records to rank")
                return
            ranks, topic_ranks = rank_records(edges, scores)
            store.set_ranks(ranks, topic_ranks)
            urls = {key: store.urls(key) for key in {*_best(ranks, opts.top), *_best(topic_ranks, opts.top)}}
        links = sum(source != target for source, target in edges)
        print(f"job {job.name}: ranked {len(scores)} records over {links} links between them; ranks stored")
        for name, values in (("PageRank", ranks), ("iPageRank", topic_ranks)):
            if opts.top:
                print(f"best by {name}:")
            for key in _best(values, opts.top):
                print(f"  {values[key]:.4f}  {key}  {(urls[key] or ['(no URL)'])[0]}")


def _best(ranks: dict[str, float], count: int) -> list[str]:
    return sorted(ranks, key=lambda key: (-ranks[key], key))[:count]
