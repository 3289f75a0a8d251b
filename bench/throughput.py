"""Benchmark: pages per minute of one focused harvester against plain Scrapy on the same virtual web.

    .venv/bin/python -m bench.throughput [--seconds 60] [--rounds 1] [--full]

One virtual web server; the focused harvester (the whole pipeline: parse,
topic scoring, dedup, store, frontier) and plain Scrapy (bench/plainspider.py:
follow every link, nothing else) crawl it back to back from the same seeds for
the same time with the same concurrency and the same politeness: robots.txt
obeyed, at most one request in flight per host, no delay between requests
(WaitIntervalHost = 0, DOWNLOAD_DELAY = 0). Pages are counted by the server
(requests other than robots.txt) after a warm-up, and each crawler's CPU time
is read from the kernel, so the ratio holds even when the machine is shared.
Writes bench/results/throughput.{json,md}.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from collections import Counter
from pathlib import Path

from bench.report import environment, write_report
from bench.virtualweb.harness import (
    FocusedJob,
    ServedWeb,
    add_common_options,
    add_setting_option,
    command_line,
    load_average,
    page_fetches,
    plain_command,
    run_crawl,
    steady_rate,
    web_from,
)

#: Share of each crawl's span left out of the rate: the start, while the frontier holds only the seeds.
WARMUP = 0.2
#: Combine's own figure for one harvester: 50-200 URLs a minute (its documentation, "Commands").
COMBINE_URLS_PER_MINUTE = (50, 200)


def measure_run(served: ServedWeb, command: list[str], seconds: float) -> dict:
    """Run one crawler and describe it as the server and the kernel saw it."""
    since = served.stats()["requests"]
    server_before = served.stats()["cpu_seconds"]
    load = load_average()
    run = run_crawl(command, served.proxy, timeout=seconds + 180).check()
    server_cpu = served.stats()["cpu_seconds"] - server_before
    entries = served.log(since)
    pages = page_fetches(entries)
    rate, counted, span = steady_rate(pages, WARMUP)
    return {
        "pages": len(pages),
        "robots_requests": len(entries) - len(pages),
        "pages_per_minute": round(rate),
        "measured_pages": counted,
        "measured_seconds": round(span, 1),
        "cpu_seconds": round(run.cpu_seconds, 2),
        "cpu_ms_per_page": round(run.cpu_seconds * 1000 / max(1, len(pages)), 2),
        "cpu_share": round(run.cpu_seconds / run.wall_seconds, 2),
        "wall_seconds": round(run.wall_seconds, 1),
        "max_rss_mb": round(run.max_rss_bytes / 2**20, 1),
        "server_cpu_share": round(server_cpu / run.wall_seconds, 2),
        "status": {str(k): v for k, v in sorted(Counter(entry["status"] for entry in pages).items())},
        "load_average_before": load,
    }


def measure(args: argparse.Namespace) -> dict:
    web = web_from(args)
    rounds = []
    with tempfile.TemporaryDirectory() as directory, ServedWeb(web) as served:
        for number in range(args.rounds):
            job = FocusedJob.write(web, Path(directory) / f"round{number}", served.port, wait=0)
            focused = job.command({
                "CLOSESPIDER_TIMEOUT": args.seconds,
                "CONCURRENT_REQUESTS": args.concurrency,
                "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
                **dict(args.setting),
            })
            plain = plain_command(web.seeds(), args.seconds, args.concurrency)
            result = {"focused": measure_run(served, focused, args.seconds)}
            result["focused"]["records_stored"] = job.stored_records()
            result["plain"] = measure_run(served, plain, args.seconds)
            result["ratio"] = round(result["focused"]["pages_per_minute"] / max(1, result["plain"]["pages_per_minute"]), 3)
            result["cpu_ratio"] = round(result["plain"]["cpu_ms_per_page"] / result["focused"]["cpu_ms_per_page"], 3)
            rounds.append(result)
    return {
        "web": {"seed": web.seed, "hosts": web.hosts, "pages": web.pages},
        "seconds_per_crawl": args.seconds,
        "concurrency": args.concurrency,
        "politeness": "robots.txt obeyed; one request in flight per host; no delay "
                      "(WaitIntervalHost = 0 / DOWNLOAD_DELAY = 0, CONCURRENT_REQUESTS_PER_DOMAIN = 1)",
        "warmup_share": WARMUP,
        "rounds": rounds,
        "ratio": statistics.median(r["ratio"] for r in rounds),
        "cpu_ratio": statistics.median(r["cpu_ratio"] for r in rounds),
        "focused_pages_per_minute": round(statistics.median(r["focused"]["pages_per_minute"] for r in rounds)),
        "plain_pages_per_minute": round(statistics.median(r["plain"]["pages_per_minute"] for r in rounds)),
        "combine_urls_per_minute": list(COMBINE_URLS_PER_MINUTE),
        "harvester_settings": dict(args.setting),
    }


def report(result: dict) -> list[str]:
    focused = result["focused_pages_per_minute"]
    low, high = result["combine_urls_per_minute"]
    lines = [
        "",
        f"Virtual web: seed {result['web']['seed']}, {result['web']['hosts']:,} hosts, {result['web']['pages']:,} pages. "
        f"Each crawler runs {result['seconds_per_crawl']:g} s from the same three seeds with "
        f"{result['concurrency']} concurrent requests; politeness: {result['politeness']}. "
        f"Pages are requests other than robots.txt as the server logged them, counted after the first "
        f"{result['warmup_share']:.0%} of each crawl; CPU time and peak RSS are the kernel's for the crawler process."
        + "".join(f" Harvester setting {name} = {value}." for name, value in result["harvester_settings"].items()),
        "",
        "| crawler | pages/min | CPU ms per page | CPU share | peak RSS MB | pages | robots.txt | server CPU | load before |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for number, run in enumerate(result["rounds"], 1):
        for name in ("focused", "plain"):
            r = run[name]
            label = "combine-scrapy (whole pipeline)" if name == "focused" else "plain Scrapy (follow all links)"
            if len(result["rounds"]) > 1:
                label += f", round {number}"
            lines.append(
                f"| {label} | {r['pages_per_minute']:,} | {r['cpu_ms_per_page']} | {r['cpu_share']} | "
                f"{r['max_rss_mb']} | {r['pages']:,} | {r['robots_requests']:,} | {r['server_cpu_share']} | "
                f"{' '.join(map(str, r['load_average_before']))} |"
            )
    lines += [
        "",
        "| figure | value |",
        "| --- | --- |",
        f"| focused / plain, pages per minute | **{result['ratio']:.2f}** |",
        f"| focused / plain, pages per CPU-second | {result['cpu_ratio']:.2f} |",
        f"| combine-scrapy, pages per minute | {focused:,} |",
        f"| Combine, URLs per minute per harvester | {low}-{high} (combine-scrapy: {focused / high:.0f}-{focused / low:.0f}x) |",
    ]
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_options(parser)
    parser.add_argument("--seconds", type=float, default=60, help="length of each crawl")
    parser.add_argument("--rounds", type=int, default=1, help="focused and plain crawls, alternating; medians reported")
    parser.add_argument("--concurrency", type=int, default=32, help="CONCURRENT_REQUESTS of both crawlers")
    parser.add_argument("--full", action="store_true", help="the full size: 300 s crawls, three rounds")
    add_setting_option(parser)
    args = parser.parse_args(argv)
    if args.full:
        args.seconds, args.rounds = 300, 3
    result = {**environment(command_line("bench.throughput", argv)), **measure(args)}
    write_report("throughput", result, "Throughput: one harvester against plain Scrapy", report(result), args.results)


if __name__ == "__main__":
    main()
