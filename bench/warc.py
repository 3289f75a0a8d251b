"""Benchmark: what saveWARC costs a crawl, per fetch: time in the reactor thread and bytes on disk.

    .venv/bin/python -m bench.warc --pages 2000

Writes ``--pages`` virtual-web pages (about 17 KB of HTML each) as request and
response record pairs, gzipped per record, the way WarcMiddleware does during
a crawl (the write runs in the reactor thread, so its time is time the crawl
does nothing else), with a rotation bound small enough to close several
files and sort their CDXJ indexes. Writes bench/results/warc.{json,md}.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from bench.report import environment, write_report
from bench.virtualweb.web import VirtualWeb
from combine_scrapy.records.warc import Exchange, WarcArchive


def exchanges(count: int) -> list[Exchange]:
    web = VirtualWeb(seed=1)
    made = []
    for page in range(count):
        body = web.render(page)
        made.append(Exchange(
            url=web.url(page), method="GET",
            request_headers=[("User-Agent", "combine-scrapy/0.1"), ("Accept-Encoding", "gzip, deflate, br")],
            status=200, protocol="HTTP/1.1",
            response_headers=[("Content-Type", "text/html; charset=utf-8"), ("Content-Length", str(len(body)))],
            body=body, fetched_at=time.time(), ip_address="127.0.0.2",
        ))
    return made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--max-size", type=int, default=5_000_000, help="WARCMaxSize for the run (bytes)")
    args = parser.parse_args()
    batch = exchanges(args.pages)
    body_kb = statistics.mean(len(exchange.body) for exchange in batch) / 1024
    with tempfile.TemporaryDirectory() as directory:
        archive = WarcArchive(Path(directory), prefix="bench", max_size=args.max_size)
        timings = []
        for exchange in batch:
            started = time.perf_counter()
            archive.write(exchange)
            timings.append(time.perf_counter() - started)
        started = time.perf_counter()
        archive.close()
        close_seconds = time.perf_counter() - started
        files = archive.files_written
        warc_bytes = sum(path.stat().st_size for path in files)
        index_bytes = sum(Path(f"{path}.cdxj").stat().st_size for path in files)
    timings.sort()
    result = {
        **environment(f"python -m bench.warc --pages {args.pages} --max-size {args.max_size}"),
        "pages": args.pages,
        "page_kb": round(body_kb, 1),
        "ms_per_fetch_mean": round(statistics.mean(timings) * 1000, 2),
        "ms_per_fetch_p99": round(timings[int(len(timings) * 0.99) - 1] * 1000, 2),
        "fetches_per_second": round(len(timings) / sum(timings)),
        "warc_bytes_per_fetch": round(warc_bytes / args.pages),
        "cdxj_bytes_per_fetch": round(index_bytes / args.pages),
        "files": len(files),
        "last_close_seconds": round(close_seconds, 3),
    }
    write_report("warc", result, "WARC output (saveWARC = 1)", [
        f"{args.pages:,} virtual-web pages ({body_kb:.1f} KB of HTML each) written as WARC/1.1 request and "
        f"response records, each gzipped on its own, into {len(files)} files of at most {args.max_size:,} bytes.",
        "",
        "| per fetch | mean | p99 |",
        "| --- | --- | --- |",
        f"| time in the reactor thread | {result['ms_per_fetch_mean']} ms | {result['ms_per_fetch_p99']} ms |",
        "",
        f"{result['fetches_per_second']:,} fetches a second on one core; "
        f"{result['warc_bytes_per_fetch']:,} bytes of WARC and {result['cdxj_bytes_per_fetch']} bytes of CDXJ "
        f"index a fetch on disk ({result['warc_bytes_per_fetch'] / (body_kb * 1024):.0%} of the page's bytes).",
    ])


if __name__ == "__main__":
    main()
