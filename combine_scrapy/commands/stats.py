"""``scrapy stats JOB``: term and class statistics of a job's records (combineUtil termstat, classtat).

For each term of the topic definition (and any other term stored records
matched, from an earlier definition), the number of records it was found in;
for each class, the number of records classified in it. Terms and classes
no record has are listed with 0: a term that never matches is worth a look.
"""

from __future__ import annotations

import argparse

from combine_scrapy.job import Job
from combine_scrapy.operations.control import CommandError, JobCommand


class Command(JobCommand):
    def short_desc(self) -> str:
        return "Show how many records each topic term was found in and each class holds (termstat, classtat)"

    def long_desc(self) -> str:
        return __doc__.split("\n\n", 1)[1]

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--top", type=int, metavar="N", help="list only the N most frequent terms and classes")

    def run_job(self, job: Job, args: list[str], opts: argparse.Namespace) -> None:
        if opts.top is not None and opts.top < 1:
            raise CommandError(f"--top must be at least 1, got {opts.top}", exitcode=2)
        with self.records(job) as store:
            records, terms, classes = store.count(), store.term_counts(), store.class_counts()
        definition = job.definition
        if definition is not None:
            for term in definition.terms:
                terms.setdefault(term.text, 0)
                for name in term.classes:
                    classes.setdefault(name, 0)
        print(f"job {job.name}: {records} records")
        for title, counts in (("terms", terms), ("classes", classes)):
            rows = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[: opts.top]
            print(f"{title} (records found in):" if title == "terms" else f"{title} (records classified in):")
            width = len(str(max(counts.values(), default=0)))
            for name, count in rows:
                print(f"  {count:>{width}}  {name}")
            if not rows:
                print("  none")
