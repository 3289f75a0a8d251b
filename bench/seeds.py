"""Benchmark: a crawl whose seeds.txt lists a million URLs: how long its seeds take to mark, once.

    .venv/bin/python -m bench.seeds [--seeds 1000000]

The job's seeds are URLs of one loopback host (COMBINE_MAX_URLS_PER_HOST=0,
so the per-host bound does not refuse them) with WaitIntervalHost = 1000:
one page is fetched, then the host is locked and the crawl ends as idle
(COMBINE_IDLE_HORIZON=5) once its seeds are marked (it does not end while
they are being marked). Three runs of ``scrapy crawl`` as a user runs it:
the first marks the seeds (in batches, the reactor free between them), the
second finds them marked and does not mark them again, a third, on a
fresh data directory, gets SIGTERM while it marks, and a fourth gets SIGTERM
while the job loads (its seeds checked against the URL rules, before the
crawl starts). Writes bench/results/seeds.{json,md}.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.children import ends_with_bench
from bench.report import environment, write_report
from combine_scrapy.operations.sampleweb import LoopbackWeb, Page

PROJECT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.2"
MARKED = re.compile(r"the (\d+) seeds of seeds.txt marked in ([\d.]+) s")


def crawl(topics: Path, data: Path, log: Path) -> subprocess.Popen:
    command = [sys.executable, "-m", "scrapy", "crawl", "focused", "-a", "job=t", "-s", f"COMBINE_TOPICS_DIR={topics}",
               "-s", f"COMBINE_DATA_DIR={data}", "-s", "COMBINE_MAX_URLS_PER_HOST=0", "-s", "COMBINE_IDLE_HORIZON=5"]
    with log.open("w") as output:
        return subprocess.Popen(command, cwd=PROJECT, stdout=output, stderr=subprocess.STDOUT,
                                preexec_fn=ends_with_bench())


def stopped_after(process: subprocess.Popen, log: Path, mark: str, delay: float) -> float:
    """Send SIGTERM ``delay`` seconds after ``mark`` is in the log; seconds until the process ended."""
    deadline = time.monotonic() + 600
    while mark not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(delay)
    signalled = time.monotonic()
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=600)
    return time.monotonic() - signalled


def timed_run(topics: Path, data: Path, log: Path) -> float:
    started = time.monotonic()
    process = crawl(topics, data, log)
    process.wait(timeout=3600)
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=1_000_000)
    args = parser.parse_args()
    load_before = os.getloadavg()[0]   # other work on the machine slows every figure below
    root = Path(tempfile.mkdtemp(prefix="bench-seeds-"))
    topics, job = root / "topics", root / "topics" / "t"
    job.mkdir(parents=True)
    (job / "combine.cfg").write_text("WaitIntervalHost = 1000\n")
    (job / "topicdefinition.txt").write_text("50: carnivorous plants=CP\n")
    site = {"/robots.txt": Page("", status=404)}
    with LoopbackWeb({HOST: site}) as web:
        (job / "seeds.txt").write_text("".join(f"{web.url(HOST, f'/s{n}.html')}\n" for n in range(args.seeds)))
        first = timed_run(topics, root / "data", root / "first.log")
        second = timed_run(topics, root / "data", root / "second.log")
        while_marking = stopped_after(crawl(topics, root / "data3", root / "third.log"), root / "third.log",
                                      "Spider opened", 1)
        while_loading = stopped_after(crawl(topics, root / "data4", root / "fourth.log"), root / "fourth.log",
                                      "Scrapy", 5)
    first_log, second_log, third_log, fourth_log = (
        (root / name).read_text() for name in ("first.log", "second.log", "third.log", "fourth.log"))
    marked = MARKED.search(first_log)
    result = {
        **environment(f"python -m bench.seeds --seeds {args.seeds}"),
        "seeds": args.seeds,
        "first_run_seconds": round(first, 1),
        "seeds_marked_seconds": float(marked.group(2)) if marked else None,
        "second_run_seconds": round(second, 1),
        "second_run_marked_again": "not marked again" not in second_log,
        "sigterm_while_marking_exit_seconds": round(while_marking, 2),
        "sigterm_summary_printed": "== combine-scrapy: job t finished" in third_log,
        "sigterm_while_loading_exit_seconds": round(while_loading, 2),
        "sigterm_while_loading_summary_printed": "== combine-scrapy: job t finished" in fourth_log
        and "Spider opened" not in fourth_log,
        "load_average_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "closed_database_errors": sum(log.count("Cannot operate on a closed database") for log in (first_log, second_log, third_log, fourth_log)),
    }
    rows = [
        ("seeds in seeds.txt", f"{args.seeds:,}"),
        ("first run: marking the seeds (log line)", f"{result['seeds_marked_seconds']} s"),
        ("first run, start to exit (job loading, marking, one page, 5 s idle)", f"{result['first_run_seconds']} s"),
        ("second run, start to exit (seeds not marked again; 5 s idle)", f"{result['second_run_seconds']} s"),
        ("second run marked the seeds again", "yes" if result["second_run_marked_again"] else "no"),
        ("SIGTERM 1 s after 'Spider opened' (marking): exit after", f"{result['sigterm_while_marking_exit_seconds']} s"),
        ("summary printed after that SIGTERM", "yes" if result["sigterm_summary_printed"] else "no"),
        ("SIGTERM 5 s after the start (the job loading, its seeds checked): exit after",
         f"{result['sigterm_while_loading_exit_seconds']} s"),
        ("summary printed after that SIGTERM, before the crawl started", "yes" if result["sigterm_while_loading_summary_printed"] else "no"),
        ("'Cannot operate on a closed database' in the four logs", str(result["closed_database_errors"])),
        ("machine load (1-minute load average) before / after", " / ".join(map(str, result["load_average_1min"]))),
    ]
    body = ["", "| figure | value |", "| --- | --- |", *(f"| {name} | {value} |" for name, value in rows)]
    write_report("seeds", result, "A million seeds: marked in batches, once", body)


if __name__ == "__main__":
    main()
