"""``scrapy export JOB``: write a job's records out (combineExport), streamed record by record."""

from __future__ import annotations

import argparse
import io
import os
import sys
from typing import Never

from tqdm import tqdm

from combine_scrapy.job import Job
from combine_scrapy.operations.control import CommandError, JobCommand
from combine_scrapy.records.export import FORMATS, TEXTS, export_store
from combine_scrapy.records.export.select import DATE_FIELDS, Selection, parse_date
from combine_scrapy.records.store import RANK_ORDERS, Deletion, RecordReader


class Command(JobCommand):
    def short_desc(self) -> str:
        return "Export a job's records as Dublin Core, ALVIS XML, JSON Lines or Markdown"

    def long_desc(self) -> str:
        return (
            "Export a job's records, one at a time, in constant memory. Formats: dc (Dublin Core, one "
            "oai_dc:dc element a record), alvis (ALVIS enriched XML with the original document), "
            "alvis-light (Combine's compact XML), jsonl (every field, one JSON object a line), markdown (each "
            "record's main content with its headings, lists and links). --text main writes each record's main "
            "content (the article without menus) as its text. "
            "A progress bar goes to standard error when it is a terminal. With --since, the records "
            "deleted since then follow the others as deleted entries (status deleted, as OAI-PMH marks them); "
            "--reset forgets those deletions (Combine's resetOAI)."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "-f", "--format", default="jsonl", metavar="FORMAT",
            help=f"one of {', '.join(FORMATS)} (default: jsonl)",
        )
        parser.add_argument("-o", "--output", metavar="FILE", help="write here instead of standard output")
        parser.add_argument(
            "--text", default="all", metavar="TEXT",
            help="all (the page's whole text, the default) or main (its main content where it has one)",
        )
        parser.add_argument(
            "--class", dest="topic_class", metavar="NAME",
            help="only records classified in topic class NAME or one of its sub-classes (NAME.x)",
        )
        parser.add_argument("--since", metavar="DATE", help="only records dated on or after DATE (YYYY-MM-DD or ISO 8601, UTC)")
        parser.add_argument("--until", metavar="DATE", help="only records dated before DATE; a bare date includes that day")
        parser.add_argument(
            "--date", dest="date_field", default="changed", metavar="FIELD",
            help=f"the date --since/--until look at: {', '.join(DATE_FIELDS)} (default changed, when what an export "
                 "writes of the record last changed: checked again, rescored, ranked, a URL added or gone)",
        )
        parser.add_argument(
            "--sort", default="id", metavar="ORDER",
            help=f"id (oldest first, the default) or {' or '.join(RANK_ORDERS)} (highest first, as scrapy rank stored it)",
        )
        parser.add_argument(
            "--reset", action="store_true",
            help="forget every deletion recorded so far (Combine's resetOAI), and export nothing",
        )

    def run_job(self, job: Job, args: list[str], opts: argparse.Namespace) -> None:
        try:
            selection = self._selection(opts)
        except ValueError as e:
            raise CommandError(str(e), exitcode=2) from e
        with self.records(job) as store:
            if opts.reset:
                print(f"job {job.name}: forgot {store.forget_deletions()} deletions; "
                      "a --since export now lists none before this moment")
                return
            deletions = store.deleted_since(selection.since, selection.until) if selection.since is not None else []
            try:
                total, location = store.count(), store.location
                with tqdm(total=total, unit=" records", desc=f"export {job.name}", file=sys.stderr,
                          disable=not sys.stderr.isatty()) as progress:
                    count = self._export(store, selection, opts, progress, deletions)
            except BrokenPipeError:  # the reader went away (scrapy export JOB | head): JobCommand ends quietly
                raise
            except OSError as e:
                raise CommandError(f"cannot write {e.filename or opts.output}: {e.strerror}") from e
        where = opts.output or "standard output"
        deleted = f" and {len(deletions)} deletions" if selection.since is not None else ""
        print(f"exported {count} of {total} records{deleted} of job {job.name} as {opts.format} to {where}", file=sys.stderr)
        if not total:
            print(f"note: {location} holds no record of job {job.name}", file=sys.stderr)

    @staticmethod
    def _selection(opts: argparse.Namespace) -> Selection:
        if opts.format not in FORMATS:
            raise ValueError(f"unknown format {opts.format!r}: use one of {', '.join(FORMATS)}")
        if opts.text not in TEXTS:
            raise ValueError(f"unknown --text {opts.text!r}: use one of {', '.join(TEXTS)}")
        if opts.sort != "id" and opts.sort not in RANK_ORDERS:
            raise ValueError(f"unknown --sort {opts.sort!r}: use id, {', '.join(RANK_ORDERS)}")
        return Selection(
            topic_class=opts.topic_class,
            since=parse_date(opts.since) if opts.since else None,
            until=parse_date(opts.until, end_of_day=True) if opts.until else None,
            date_field=opts.date_field,
        )

    @staticmethod
    def _export(store: RecordReader, selection: Selection, opts: argparse.Namespace, progress: tqdm[Never],
                deletions: list[Deletion]) -> int:
        if not opts.output:
            if isinstance(sys.stdout, io.TextIOWrapper):  # typed as any text stream; the interpreter's is this one
                sys.stdout.reconfigure(encoding="utf-8", newline="\n")
            return export_store(store, opts.format, sys.stdout, selection, progress.update, opts.sort, deletions, opts.text)
        # Written beside the target and renamed when complete: a failed export never looks finished.
        partial = f"{opts.output}.part"
        try:
            with open(partial, "w", encoding="utf-8", newline="\n", buffering=1 << 20) as out:
                count = export_store(store, opts.format, out, selection, progress.update, opts.sort, deletions, opts.text)
            os.replace(partial, opts.output)
        finally:
            if os.path.exists(partial):
                os.remove(partial)
        return count
