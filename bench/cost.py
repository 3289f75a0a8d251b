"""Benchmark: what a harvester costs, peak memory during a crawl, bytes per queued URL and per stored record.

    .venv/bin/python -m bench.cost [--responses 5000] [--full]

Peak memory is the kernel's maximum resident set size of the harvester
process (``wait4``) over a crawl of ``--responses`` responses of the virtual web,
beside plain Scrapy (bench/plainspider.py) crawling as many from the same
seeds: plain Scrapy keeps its queue in memory, the harvester in its frontier.
Bytes per queued URL come from bench/results/frontier_size.json (measured now
with 20,000 URLs when it is missing) and, for this crawl, from the size of
its frontier file; bytes per stored record from bench/results/record_size.json
when bench/record_size.py has been run. Writes bench/results/cost.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import tempfile
from pathlib import Path

from bench.report import RESULTS, environment, write_report
from bench.virtualweb.harness import (
    FocusedJob,
    ServedWeb,
    add_common_options,
    command_line,
    load_average,
    page_fetches,
    plain_command,
    run_crawl,
    web_from,
)

FRONTIER_SIZE_URLS = 20_000


def queued_url_bytes() -> dict:
    """Bytes per queued URL of each frontier backend, from frontier_size's results (or measured now)."""
    path = RESULTS / "frontier_size.json"
    if path.exists():
        stored = json.loads(path.read_text())
        return {name: figures["bytes_per_url"] for name, figures in stored["backends"].items()} | {
            "source": f"bench/results/frontier_size.json ({stored['urls']:,} URLs, {stored['date']})"
        }
    from bench.frontier_size import _entries, measure_sqlite

    figures = measure_sqlite(_entries(FRONTIER_SIZE_URLS))
    return {"sqlite": figures["bytes_per_url"], "source": f"bench.frontier_size, {FRONTIER_SIZE_URLS:,} URLs, now"}


def stored_record_bytes() -> dict | None:
    """Bench/record_size.py's figures, when its results exist: every ``*bytes*`` number in them."""
    path = RESULTS / "record_size.json"
    if not path.exists():
        return None
    figures: dict[str, float] = {}

    def collect(value, path: tuple[str, ...]) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                collect(inner, (*path, key))
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and "bytes" in path[-1]:
            context = path[1:-1] if len(path) > 2 else path[:-1]  # {"stores": {"sqlite": {...}}} -> "sqlite"
            name = path[-1].replace("_", " ")
            figures[f"{name} ({', '.join(context)})" if context else name] = value

    stored = json.loads(path.read_text())
    collect(stored, ())
    return {"figures": figures, "source": f"bench/results/record_size.json ({stored.get('date', 'undated')})"}


def frontier_file_bytes(job: FocusedJob) -> tuple[int, int]:
    """The crawl's frontier file size after a checkpoint, and the URLs it knows."""
    path = job.data / job.name / "frontier.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path.stat().st_size, job.queued_urls()


def crawler_figures(run, pages: int) -> dict:
    return {
        "pages": pages,
        "max_rss_mb": round(run.max_rss_bytes / 2**20, 1),
        "cpu_seconds": round(run.cpu_seconds, 1),
        "wall_seconds": round(run.wall_seconds, 1),
    }


def measure(args: argparse.Namespace) -> dict:
    web = web_from(args)
    load = load_average()
    with tempfile.TemporaryDirectory() as directory, ServedWeb(web) as served:
        job = FocusedJob.write(web, Path(directory), served.port, wait=0)
        since = served.stats()["requests"]
        settings = {"CLOSESPIDER_PAGECOUNT": args.responses, "CLOSESPIDER_TIMEOUT": args.timeout}
        focused_run = run_crawl(job.command(settings), served.proxy, args.timeout + 180).check()
        focused = crawler_figures(focused_run, len(page_fetches(served.log(since))))
        size, urls = frontier_file_bytes(job)
        focused.update(records=job.stored_records(), frontier_urls=urls, frontier_bytes_per_url=round(size / urls, 1))
        since = served.stats()["requests"]
        plain_run = run_crawl(
            plain_command(web.seeds(), args.timeout, 32, max_pages=args.responses), served.proxy, args.timeout + 180
        ).check()
        plain = crawler_figures(plain_run, len(page_fetches(served.log(since))))
    return {
        "web": {"seed": web.seed, "hosts": web.hosts, "pages": web.pages},
        "responses": args.responses,
        "load_average_before": load,
        "focused": focused,
        "plain": plain,
        "queued_url_bytes": queued_url_bytes(),
        "stored_record_bytes": stored_record_bytes(),
    }


def report(result: dict) -> list[str]:
    focused, plain, queued = result["focused"], result["plain"], result["queued_url_bytes"]
    lines = [
        "",
        f"Crawls of {result['responses']:,} responses (robots.txt included) of the virtual web, seed "
        f"{result['web']['seed']}, {result['web']['hosts']:,} hosts, 32 concurrent requests, no host delay. "
        f"Load average before: {' '.join(map(str, result['load_average_before']))}.",
        "",
        "| figure | value |",
        "| --- | --- |",
        f"| peak memory (max RSS) of one harvester, {focused['pages']:,} pages, "
        f"{focused['frontier_urls']:,} URLs known, {focused['records']:,} records | **{focused['max_rss_mb']} MB** |",
        f"| peak memory of plain Scrapy, {plain['pages']:,} pages (queue in memory) | {plain['max_rss_mb']} MB |",
        *(f"| bytes per queued URL, {name} frontier | **{value}** |" for name, value in queued.items() if name != "source"),
        f"| bytes per known URL in this crawl's frontier file (URLs, hosts, robots.txt) | "
        f"{focused['frontier_bytes_per_url']} |",
    ]
    records = result["stored_record_bytes"]
    if records:
        lines += [f"| {name} | **{value:,}** |" for name, value in records["figures"].items()]
    else:
        lines.append("| bytes per stored record | run `python -m bench.record_size` |")
    lines += ["", f"Bytes per queued URL: {queued['source']}."]
    if records:
        lines.append(f"Bytes per stored record: {records['source']}.")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_options(parser)
    parser.add_argument("--responses", type=int, default=5000, help="responses per crawl")
    parser.add_argument("--timeout", type=float, default=240, help="longest crawl, seconds")
    parser.add_argument("--full", action="store_true", help="the full size: 50,000 responses per crawl")
    args = parser.parse_args(argv)
    if args.full:
        args.responses, args.timeout = 50_000, 1800
    result = {**environment(command_line("bench.cost", argv)), **measure(args)}
    write_report("cost", result, "Cost: memory per harvester, bytes per URL and per record", report(result),
                 args.results)


if __name__ == "__main__":
    main()
