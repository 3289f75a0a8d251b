"""``scrapy export JOB``: write a job's records out (combineExport)."""

from __future__ import annotations

import sys
from pathlib import Path

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from combine_scrapy.export.jsonl import write_jsonl
from combine_scrapy.job import JobConfigError, find_job_dir
from combine_scrapy.store.sqlite import SqliteRecordStore


class Command(ScrapyCommand):
    requires_project = True
    default_settings = {"LOG_ENABLED": False}

    def syntax(self):
        return "[options] <job>"

    def short_desc(self):
        return "Export a job's records (JSON Lines)"

    def add_options(self, parser):
        super().add_options(parser)
        parser.add_argument("-o", "--output", metavar="FILE", help="write here instead of standard output")

    def run(self, args, opts):
        if len(args) != 1:
            raise UsageError("name one job: scrapy export JOB")
        try:
            job_dir = find_job_dir(args[0], self.settings.get("COMBINE_TOPICS_DIR"))
        except JobConfigError as e:
            print(f"error: {e}", file=sys.stderr)
            self.exitcode = 2
            return
        path = Path(self.settings.get("COMBINE_DATA_DIR")) / job_dir.name / "records.sqlite"
        if not path.exists():
            print(f"error: job {job_dir.name} has no records yet ({path} does not exist)", file=sys.stderr)
            self.exitcode = 1
            return
        store = SqliteRecordStore(path)
        try:
            pairs = ((record, store.urls(record.key)) for record in store)
            if opts.output:
                with open(opts.output, "w", encoding="utf-8") as out:
                    count = write_jsonl(pairs, out)
                print(f"exported {count} records of job {job_dir.name} to {opts.output}", file=sys.stderr)
            else:
                write_jsonl(pairs, sys.stdout)
        finally:
            store.close()
