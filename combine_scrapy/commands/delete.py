"""``scrapy delete JOB --netloc H | --path REGEX | --md5 KEY | --id N`` (combineUtil deleteNetLoc, deletePath,
deleteMD5, deleteRecordid).

By host or path, the matching URLs leave their records, and a record goes
with its last URL (one served elsewhere too stays, under its other URLs). By
MD5 or id, the record goes with all its URLs. The frontier keeps the URLs: to
keep them from coming back, exclude them in the job's combine.cfg.
"""

from __future__ import annotations

import argparse
import re
from urllib.parse import urlsplit

from combine_scrapy.job import Job
from combine_scrapy.operations.control import CommandError, JobCommand


class Command(JobCommand):
    def syntax(self) -> str:
        return "[options] <job> (--netloc HOST | --path REGEX | --md5 KEY | --id N)"

    def short_desc(self) -> str:
        return "Delete a job's records by host, URL path, MD5 key or record id"

    def long_desc(self) -> str:
        return __doc__.split("\n\n", 1)[1]

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        which = parser.add_mutually_exclusive_group()
        which.add_argument("--netloc", metavar="HOST", help="URLs on this host (host or host:port)")
        which.add_argument("--path", metavar="REGEX", help="URLs whose path (and query) this regular expression matches")
        which.add_argument("--md5", metavar="KEY", help="the record with this MD5 content key")
        which.add_argument("--id", type=int, metavar="N", help="the record with this record id")

    def run_job(self, job: Job, args: list[str], opts: argparse.Namespace) -> None:
        if not any(value is not None for value in (opts.netloc, opts.path, opts.md5, opts.id)):
            raise CommandError("say what to delete: --netloc H, --path REGEX, --md5 KEY or --id N", exitcode=2)
        try:
            pattern = re.compile(opts.path) if opts.path is not None else None
        except re.error as e:
            raise CommandError(f"--path {opts.path!r} is not a regular expression: {e}", exitcode=2) from e
        with self.records(job) as store:
            if opts.md5 is not None or opts.id is not None:
                key = opts.md5.upper() if opts.md5 is not None else store.key_for_id(opts.id)
                if key is None or store.get(key) is None:
                    what = f"MD5 {opts.md5}" if opts.md5 is not None else f"id {opts.id}"
                    raise CommandError(f"job {job.name} has no record with {what}")
                urls = store.delete(key)
                print(f"deleted record {key} and its {len(urls)} URLs")
                return
            if pattern is None:  # --netloc (the options exclude each other)
                urls = store.urls_on_host(opts.netloc.lower().rstrip("."))
            else:
                urls = [url for url, _ in store.url_keys() if pattern.search(_path(url))]
            deleted = sum(1 for url in urls if store.forget_url(url))
            print(f"removed {len(urls)} URLs; {deleted} records went with their last URL")


def _path(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + ("?" + parts.query if parts.query else "")
