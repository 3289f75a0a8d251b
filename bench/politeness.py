"""Benchmark: the most requests one host got in any WaitIntervalHost window during a crawl (must be 1).

    .venv/bin/python -m bench.politeness [--seconds 90] [--wait 2] [--full]

One focused harvester crawls the virtual web (1,000 hosts; server aliases
declared, as an operator would) with 32 concurrent requests. The server logs
every request it gets, robots.txt included, with its own clock; for each
host, requests are counted in every window of WaitIntervalHost seconds
(sliding, half open: [t, t + wait)). Hosts are counted both by the name the
crawler asked for and by the server behind the name (``www.`` aliases merged).
Hosts whose robots.txt asks for Crawl-delay 5 should see gaps of at least 5 s.
Writes bench/results/politeness.{json,md}.
"""

from __future__ import annotations

import argparse
import tempfile
from collections import defaultdict
from pathlib import Path

from bench.report import environment, write_report
from bench.virtualweb.harness import (
    FocusedJob,
    ServedWeb,
    add_common_options,
    command_line,
    load_average,
    run_crawl,
    web_from,
)
from bench.virtualweb.web import ROBOTS_NAMES, VirtualWeb

#: Where the web's robots.txt redirects lead (``/robots.txt`` 301 -> here): the crawler follows at once.
ROBOTS_REDIRECT_TARGET = "/static/robots.txt"


def most_in_window(times: list[float], window: float) -> int:
    """The largest number of ``times`` (sorted) in any half-open interval [t, t + window)."""
    most, first = 0, 0
    for last, moment in enumerate(times):
        while moment - times[first] >= window:
            first += 1
        most = max(most, last - first + 1)
    return most


def smallest_gap(times: list[float]) -> float | None:
    """The shortest time between two consecutive requests (sorted times); None for fewer than two."""
    return min((b - a for a, b in zip(times, times[1:])), default=None)


def host_figures(requests: dict[str, list[float]], window: float) -> dict:
    """Worst window count, smallest gap and how many hosts saw repeat visits, over hosts' request times."""
    gaps = [gap for times in requests.values() if (gap := smallest_gap(times)) is not None]
    return {
        "hosts": len(requests),
        "hosts_requested_twice_or_more": len(gaps),
        "requests": sum(len(times) for times in requests.values()),
        "max_requests_in_window": max((most_in_window(times, window) for times in requests.values()), default=0),
        "smallest_gap_seconds": round(min(gaps), 3) if gaps else None,
        "gaps_under_wait": sum(
            1 for times in requests.values() for a, b in zip(times, times[1:]) if b - a < window
        ),
    }


def server_of(web: VirtualWeb, name: str) -> int | str:
    """The server behind a host name (its index, aliases merged); an unknown name stands for itself."""
    server = web.host_index(name)
    return name if server is None else server


def close_pairs(entries: list[dict], window: float, host_key) -> list[dict]:
    """Consecutive requests to one host (as ``host_key`` names it) closer than ``window``: what came too soon."""
    last: dict = {}
    pairs = []
    for entry in entries:
        key = host_key(entry["host"])
        previous = last.get(key)
        if previous is not None and entry["t"] - previous["t"] < window:
            pairs.append({
                "host": entry["host"],
                "gap_seconds": round(entry["t"] - previous["t"], 3),
                "first": f"{previous['path']} ({previous['status']})",
                "then": f"{entry['path']} ({entry['status']})",
            })
        last[key] = entry
    return pairs


def analyse(web: VirtualWeb, entries: list[dict], wait: float) -> dict:
    by_name: dict[str, list[float]] = defaultdict(list)
    by_server: dict[int | str, list[float]] = defaultdict(list)
    without_robots_redirects: dict[int | str, list[float]] = defaultdict(list)
    for entry in entries:  # in arrival order, so each list is sorted
        by_name[entry["host"]].append(entry["t"])
        by_server[server_of(web, entry["host"])].append(entry["t"])
        if entry["path"] != ROBOTS_REDIRECT_TARGET:
            without_robots_redirects[server_of(web, entry["host"])].append(entry["t"])
    crawl_delay = {
        server: times for server, times in by_server.items()
        if isinstance(server, int) and ROBOTS_NAMES[web.host_robots[server]] == "crawl-delay"
    }
    return {
        "by_host_name": host_figures(by_name, wait),
        "by_server": host_figures(by_server, wait),
        "by_server_without_robots_redirects": host_figures(without_robots_redirects, wait),
        "crawl_delay_5_hosts": host_figures(crawl_delay, 5.0),
        "too_soon": close_pairs(entries, wait, lambda name: server_of(web, name)),
    }


def measure(args: argparse.Namespace) -> dict:
    web = web_from(args)
    load = load_average()
    with tempfile.TemporaryDirectory() as directory, ServedWeb(web) as served:
        job = FocusedJob.write(web, Path(directory), served.port, args.wait, serveralias=True)
        since = served.stats()["requests"]
        run = run_crawl(job.command({"CLOSESPIDER_TIMEOUT": args.seconds}), served.proxy, args.seconds + 180).check()
        entries = served.log(since)
    return {
        "web": {"seed": web.seed, "hosts": web.hosts, "pages": web.pages},
        "wait_interval_host": args.wait,
        "crawl_seconds": round(run.wall_seconds, 1),
        "load_average_before": load,
        **analyse(web, entries, args.wait),
    }


def report(result: dict) -> list[str]:
    wait = result["wait_interval_host"]
    lines = [
        "",
        f"One focused harvester, {result['crawl_seconds']} s, WaitIntervalHost {wait:g} s, 32 concurrent requests; "
        f"virtual web seed {result['web']['seed']}, {result['web']['hosts']:,} hosts. Every request the server "
        f"logged counts, robots.txt included, timed by the server. "
        f"Load average before: {' '.join(map(str, result['load_average_before']))}.",
        "",
        "| hosts counted by | window | hosts | hosts requested 2+ times | requests | "
        "**most requests in one window** | smallest gap s | gaps under the window |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for key, label, window in (
        ("by_host_name", "host name", wait),
        ("by_server", "server (www. aliases merged)", wait),
        ("by_server_without_robots_redirects", "server, robots.txt redirect targets left out", wait),
        ("crawl_delay_5_hosts", "servers asking Crawl-delay: 5", 5.0),
    ):
        f = result[key]
        lines.append(
            f"| {label} | {window:g} s | {f['hosts']:,} | {f['hosts_requested_twice_or_more']:,} | {f['requests']:,} | "
            f"**{f['max_requests_in_window']}** | {f['smallest_gap_seconds']} | {f['gaps_under_wait']} |"
        )
    if result["too_soon"]:
        lines += [
            "",
            f"Requests that came too soon after the previous one to their server ({len(result['too_soon'])}; "
            "the first ten):",
            "",
            "| host | gap s | first request (status) | then |",
            "| --- | --- | --- | --- |",
            *(f"| {p['host']} | {p['gap_seconds']} | {p['first']} | {p['then']} |" for p in result["too_soon"][:10]),
        ]
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_options(parser)
    parser.add_argument("--seconds", type=float, default=90, help="length of the crawl")
    parser.add_argument("--wait", type=float, default=2.0, help="WaitIntervalHost, seconds")
    parser.add_argument("--full", action="store_true", help="the full size: a 600 s crawl")
    args = parser.parse_args(argv)
    if args.full:
        args.seconds = 600
    result = {**environment(command_line("bench.politeness", argv)), **measure(args)}
    write_report("politeness", result, "Politeness: requests to one host per WaitIntervalHost", report(result),
                 args.results)


if __name__ == "__main__":
    main()
