"""Benchmark: export speed, memory and size of every format, over a store of 100,000 records.

    .venv/bin/python -m bench.export --records 100000 --early 10000

Fills a SQLite record store with ``--records`` records made as the crawler
makes them: on-topic pages of the virtual web parsed by ``parse_document`` and
scored by the virtual web's topic definition, the original document kept
(saveHTML = 1), each stored under its own URL and content key. Then exports
the store in every format, each in a fresh process, through the command's own
``export_store``: records per second, bytes per record, and the process's
peak RSS before the export, once ``--early`` records are written and once all
are (flat memory: they agree). Writes bench/results/export.{json,md}.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import io
import multiprocessing
import os
import tempfile
import time
from pathlib import Path

from bench.report import environment, write_report
from bench.virtualweb.job import write_job
from bench.virtualweb.web import VirtualWeb
from combine_scrapy.document.parse import parse_document
from combine_scrapy.job import load_job
from combine_scrapy.records.export import FORMATS, export_store
from combine_scrapy.records.record import Record, RecordLink, TopicClass
from combine_scrapy.records.store.sqlite import SqliteRecordStore
from combine_scrapy.topic.text import Document

DISTINCT_PAGES = 400
COMBINE_KB_PER_RECORD = {"dc": 0.65, "alvis": 42, "alvis-light": 27}  # 3.3.3 of the Combine study


class CountingSink(io.TextIOBase):
    """A text file that keeps nothing but the number of UTF-8 bytes written to it."""

    def __init__(self):
        self.bytes = 0

    def write(self, text: str) -> int:
        self.bytes += len(text.encode("utf-8"))
        return len(text)


def _templates(topics: Path) -> list[Record]:
    """Records of distinct on-topic virtual-web pages, parsed and scored as a crawl would."""
    web = VirtualWeb(seed=1)
    job = load_job(write_job(web, topics / "bench", port=8950, wait=1).name, topics)
    records = []
    for page in range(web.pages):
        if len(records) == DISTINCT_PAGES:
            break
        if not web.is_on_topic_page(page):
            continue
        url = web.url(page)
        response = web.resolve(url)
        if response.status != 200:
            continue
        headers = {"content-type": response.content_type, "server": "VirtualWeb/1"}
        if response.last_modified:
            headers["last-modified"] = response.last_modified
        parsed = parse_document(url, response.body, headers)
        verdict = job.topic_filter.classify(Document.from_page(parsed, web.host_name(web.host_of(page))))
        records.append(Record(
            key="", url=url, title=parsed.title, text=parsed.text, mime_type=parsed.mime_type,
            headings=list(parsed.headings), meta={name: list(values) for name, values in parsed.meta.items()},
            links=[RecordLink(link.url, link.anchor, link.kind) for link in parsed.links],
            html=parsed.html, charset=parsed.charset or "", server=parsed.server or "",
            modified=parsed.modified.timestamp() if parsed.modified else None, checked=time.time(),
            score=verdict.score, normalized=verdict.normalized, algorithm=verdict.algorithm,
            classes=[TopicClass(c.name, c.absolute, c.relative, tuple(c.terms)) for c in verdict.classes],
            terms=list(verdict.terms), language="en",
        ))
    return records


def fill_store(path: Path, count: int, topics: Path) -> float:
    """Store ``count`` records cycling over the templates, each with its own URL and key; returns seconds."""
    templates = _templates(topics)
    store = SqliteRecordStore(path)
    started = time.perf_counter()
    for number in range(count):
        template = templates[number % len(templates)]
        url = f"{template.url}?copy={number}"
        key = hashlib.md5(url.encode()).hexdigest().upper()
        store.store(dataclasses.replace(template, key=key, url=url))
    store.close()
    return time.perf_counter() - started


def _peak_rss_mb() -> float:
    """This process's peak resident set (Linux VmHWM). Not getrusage's ru_maxrss: that one keeps the
    peak of the parent a spawned process was forked from, which hides the child's own smaller peak."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    raise RuntimeError("no VmHWM in /proc/self/status: this benchmark measures memory on Linux only")


def export_once(path: str, format: str, early: int) -> dict:
    """One export in this (fresh) process: time, bytes, peak RSS before, after ``early`` records and at the end."""
    store = SqliteRecordStore(path)
    sink = CountingSink()
    read = 0
    peaks = {"start": _peak_rss_mb()}

    def on_record():
        nonlocal read
        read += 1
        if read == early + 1:  # the first ``early`` records are written
            peaks["early"] = _peak_rss_mb()

    started = time.perf_counter()
    count = export_store(store, format, sink, on_record=on_record)
    seconds = time.perf_counter() - started
    store.close()
    return {
        "records": count,
        "records_per_second": round(count / seconds),
        "seconds": round(seconds, 1),
        "bytes_per_record": round(sink.bytes / count),
        "peak_rss_mb_start": peaks["start"],
        "peak_rss_mb_early": peaks["early"],
        "peak_rss_mb_end": _peak_rss_mb(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--early", type=int, default=10_000, help="also take the peak RSS after this many records")
    args = parser.parse_args()
    if not 0 < args.early < args.records:
        parser.error("--early must be between 0 and --records")
    spawn = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "records.sqlite"
        fill_seconds = fill_store(path, args.records, Path(directory) / "topics")
        store_bytes = path.stat().st_size
        formats = {}
        for format in FORMATS:
            with spawn.Pool(1) as pool:
                formats[format] = pool.apply(export_once, (str(path), format, args.early))
    result = {
        **environment(f"python -m bench.export --records {args.records} --early {args.early}"),
        "records": args.records,
        "store_fill_seconds": round(fill_seconds, 1),
        "store_bytes_per_record": round(store_bytes / args.records),
        "formats": formats,
        "combine_kb_per_record": COMBINE_KB_PER_RECORD,
        "load_average_1min_at_end": round(os.getloadavg()[0], 1),
    }
    write_report("export", result, "Export", [
        f"{args.records:,} records in a SQLite store ({result['store_bytes_per_record']:,} bytes a record,"
        f" original documents kept), made from {DISTINCT_PAGES} on-topic virtual-web pages parsed and scored"
        " as a crawl does; each format exported in a fresh process through `export_store` (what `scrapy export`"
        " runs), to a sink that counts the UTF-8 bytes. Peak RSS is the process's VmHWM: memory is flat when"
        f" the last two columns agree. Load average at the end: {result['load_average_1min_at_end']}"
        " (records/s drop when other work shares the CPUs).",
        "",
        f"| format | records/s | KB per record | Combine's KB per record | peak RSS before | after {args.early:,} | after {args.records:,} |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        *(
            f"| {name} | {f['records_per_second']:,} | {f['bytes_per_record'] / 1024:.2f} |"
            f" {COMBINE_KB_PER_RECORD.get(name, '-')} | {f['peak_rss_mb_start']} MB | {f['peak_rss_mb_early']} MB |"
            f" {f['peak_rss_mb_end']} MB |"
            for name, f in formats.items()
        ),
    ])


if __name__ == "__main__":
    main()
