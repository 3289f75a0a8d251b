"""Benchmark: bytes per queued URL in each frontier backend, and marking speed.

    .venv/bin/python -m bench.frontier_size --urls 100000 [--redis redis://127.0.0.1:6379/0]

Marks ``--urls`` URLs of the virtual web (1,000 hosts) and reports the
backend's growth per URL: the SQLite file (after a checkpoint) with what each
table and index of it takes (``dbstat``), or Redis's ``used_memory``. On
SQLite it then crawls ``--rounds`` rounds without a network (``ready``, and
``claim`` and ``complete`` of each URL handed out) and reports the CPU time
each call takes and the file's size per URL once those URLs are fetched.
Writes bench/results/frontier_size.{json,md}.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from pathlib import Path

from bench.report import RESULTS, environment, write_report
from bench.virtualweb.harness import load_average
from bench.virtualweb.web import VirtualWeb
from combine_scrapy.access.urls import host_of
from combine_scrapy.frontier.sqlite import SqliteFrontier

BATCH = 1000


def _entries(count: int) -> list[tuple[str, str, float]]:
    web = VirtualWeb(seed=1)
    urls = [web.url(page) for page in range(count)]
    return [(url, host_of(url), 0.0) for url in urls]


def _mark_all(frontier, entries) -> float:
    started = time.perf_counter()
    for start in range(0, len(entries), BATCH):
        frontier.mark(entries[start : start + BATCH])
    return time.perf_counter() - started


def _bytes_by_structure(frontier, urls: int) -> dict[str, float]:
    """Bytes per URL of each table and index of the file (pages, free space in them included)."""
    rows = frontier.connection.db.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY SUM(pgsize) DESC")
    return {name: round(size / urls, 1) for name, size in rows}


def _crawl_cpu(frontier, rounds: int) -> dict[str, float]:
    """CPU microseconds per ``ready`` round, per URL of a round, per ``claim`` and per ``complete``."""
    cpu = {"ready": 0.0, "claim": 0.0, "complete": 0.0}
    calls = {"ready": 0, "claim": 0, "complete": 0}
    handed_out = 0
    now = 1_000_000.0
    for _ in range(rounds):
        started = time.process_time()
        entries = frontier.ready(now)
        cpu["ready"] += time.process_time() - started
        calls["ready"] += 1
        handed_out += len(entries)
        for entry in entries:
            started = time.process_time()
            frontier.claim(entry, now, 60.0)
            claimed = time.process_time()
            frontier.complete(entry.url, entry.host, now=now, url_lock_until=now + 86_400, host_lock_until=now + 1,
                              status=200, etag='"e"', last_modified="Mon, 23 Nov 2026 00:00:00 GMT")
            cpu["claim"] += claimed - started
            cpu["complete"] += time.process_time() - claimed
            calls["claim"] += 1
            calls["complete"] += 1
        now += 2
    per_call = {name: round(cpu[name] / calls[name] * 1e6, 1) for name in cpu}
    per_call["ready_per_url"] = round(cpu["ready"] / handed_out * 1e6, 1)
    return per_call


def measure_sqlite(entries, rounds: int) -> dict:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "frontier.sqlite"
        frontier = SqliteFrontier(path)
        empty = path.stat().st_size
        seconds = _mark_all(frontier, entries)
        frontier.connection.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = path.stat().st_size - empty
        structures = _bytes_by_structure(frontier, len(entries))
        cpu = _crawl_cpu(frontier, rounds)
        fetched = frontier.counts(now=0).done
        frontier.connection.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        crawled_size = path.stat().st_size - empty
        frontier.close()
    return {"bytes_per_url": round(size / len(entries), 1), "urls_marked_per_second": round(len(entries) / seconds),
            "bytes_per_url_by_structure": structures, "crawl_rounds": rounds, "cpu_microseconds_per_call": cpu,
            "urls_fetched_in_rounds": fetched, "bytes_per_url_after_rounds": round(crawled_size / len(entries), 1)}


def measure_redis(entries, url: str) -> dict:
    from combine_scrapy.frontier.redis import RedisFrontier

    job = f"bench-{uuid.uuid4().hex[:8]}"
    frontier = RedisFrontier.from_url(url, job)
    server = frontier.server
    before = server.info("memory")["used_memory"]
    seconds = _mark_all(frontier, entries)
    after = server.info("memory")["used_memory"]
    frontier.delete_all()
    frontier.close()
    return {"bytes_per_url": round((after - before) / len(entries), 1),
            "urls_marked_per_second": round(len(entries) / seconds)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=20, help="rounds crawled to time the SQLite frontier's calls")
    parser.add_argument("--redis", help="also measure the Redis frontier at this URL")
    parser.add_argument("--results", type=Path, default=RESULTS, help="directory for frontier_size.{json,md}")
    args = parser.parse_args()
    load = load_average()
    entries = _entries(args.urls)
    backends = {"sqlite": measure_sqlite(entries, args.rounds)}
    if args.redis:
        backends["redis"] = measure_redis(entries, args.redis)
    result = {
        **environment(f"python -m bench.frontier_size --urls {args.urls} --rounds {args.rounds}"
                      + (f" --redis {args.redis}" if args.redis else "")
                      + (f" --results {args.results}" if args.results != RESULTS else "")),
        "load_average_before": load,
        "urls": len(entries),
        "backends": backends,
    }
    sqlite = backends["sqlite"]
    write_report("frontier_size", result, "Frontier size", [
        f"{len(entries):,} URLs of the virtual web marked in batches of {BATCH}. "
        f"Load average before: {' '.join(map(str, load))}.",
        "",
        "| backend | bytes per queued URL | URLs marked per second |",
        "| --- | --- | --- |",
        *(f"| {name} | {b['bytes_per_url']} | {b['urls_marked_per_second']:,} |" for name, b in backends.items()),
        "",
        "The SQLite file per queued URL, by table and index (`dbstat`: their pages, free space included):",
        "",
        "| table or index | bytes per queued URL |",
        "| --- | --- |",
        *(f"| {name} | {size} |" for name, size in sqlite["bytes_per_url_by_structure"].items()),
        "",
        f"CPU per SQLite frontier call over {sqlite['crawl_rounds']} rounds of the queued URLs' hosts "
        "(every URL handed out claimed and completed):",
        "",
        "| call | CPU µs |",
        "| --- | --- |",
        *(f"| {name.replace('_', ' ')} | {cpu} |" for name, cpu in sqlite["cpu_microseconds_per_call"].items()),
        "",
        f"After the rounds ({sqlite['urls_fetched_in_rounds']:,} URLs fetched, with an ETag and a Last-Modified "
        f"each) the file takes {sqlite['bytes_per_url_after_rounds']} bytes per URL.",
    ], args.results)


if __name__ == "__main__":
    main()
