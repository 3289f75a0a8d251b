"""``scrapy reclassify JOB [--flag] [--dry-run]``: run the job's topic filter again over its stored records
(combineUtil reclassify), after the topic definition or the filter's settings changed.

Every record is judged as its page was when crawled (title, meta, headings,
text; the main content block with topicText = main and the original kept).
A record that still passes gets the new scores, classes and matched terms.
One that no longer passes is deleted (a tombstone remembers it for
incremental exports), or with --flag kept, rescored and flagged off_topic
(the crawl clears the flag if it stores the page again).
"""

from __future__ import annotations

import argparse
from collections import Counter

from combine_scrapy.job import Job
from combine_scrapy.operations.control import JobCommand
from combine_scrapy.records.record import TopicClass, record_document
from combine_scrapy.records.store.maintenance import same_classification

#: Records no longer on topic listed by name in the summary.
LISTED = 20


class Command(JobCommand):
    def short_desc(self) -> str:
        return "Run a job's current topic filter over its stored records; remove (or --flag) those that fail"

    def long_desc(self) -> str:
        return __doc__.split("\n\n", 1)[1]

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--flag", action="store_true",
                            help="keep records that no longer pass, flagged off_topic, instead of deleting them")
        parser.add_argument("--dry-run", action="store_true", help="say what would change, change nothing")

    def run_job(self, job: Job, args: list[str], opts: argparse.Namespace) -> None:
        main_content = job.topic.text == "main"
        tally: Counter[str] = Counter()
        failed: list[tuple[str, str, float]] = []
        with self.records(job) as store:
            for record in store.records():
                tally["checked"] += 1
                classification = job.topic_filter.classify(record_document(record, main_content))
                unchanged = same_classification(record, classification)
                if classification.relevant:
                    if unchanged and not record.off_topic:
                        tally["unchanged"] += 1
                        continue
                    tally["rescored"] += 1
                else:
                    failed.append((record.key, record.url, classification.score))
                if opts.dry_run:
                    continue
                if classification.relevant or opts.flag:
                    store.reclassify(
                        record.key, classification.score, classification.normalized, classification.algorithm,
                        [TopicClass(c.name, c.absolute, c.relative, tuple(c.terms)) for c in classification.classes],
                        list(classification.terms), off_topic=not classification.relevant,
                    )
                else:
                    store.delete(record.key)
            left = store.count()
        would = "would be " if opts.dry_run else ""
        fate = "flagged off_topic" if opts.flag else "deleted"
        print(
            f"job {job.name}: {tally['checked']} records judged by its topic filter ({job.topic.classify_plugin}): "
            f"{tally['unchanged']} unchanged, {tally['rescored']} {would}rescored, "
            f"{len(failed)} no longer pass ({would}{fate})"
        )
        for key, url, score in failed[:LISTED]:
            print(f"  {fate if not opts.dry_run else 'fails'}: {key} {url} (score {score:g})")
        if len(failed) > LISTED:
            print(f"  ... and {len(failed) - LISTED} more")
        print(f"records stored: {left}" + (" (dry run: nothing changed)" if opts.dry_run else ""))
